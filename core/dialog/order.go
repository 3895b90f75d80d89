package dialog

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// createdIndex keeps every dialog held in (created_at, Call-ID) order as
// dialogs open and leave, so a listing in that order (list_dialogs) copies
// it instead of sorting the store on every read. Both keys are fixed when a
// dialog opens.
//
// Dialogs mostly open in time order and are appended. One that opens
// earlier than the newest few (a capture merged from several interfaces, a
// hostile file written in reverse) goes to pending, a short sorted list
// merged into main when it fills, so no arrival order costs more than
// O(n/maxPending) moves per dialog.
type createdIndex struct {
	main    []*dialog // sorted
	pending []*dialog // sorted, at most maxPending
	pos     []int     // drop's buffer of positions in main
	walks   int       // times drop fell back to dropGone (never expected)
}

const (
	// nearEnd is how far from main's end an arrival is inserted directly.
	nearEnd = 256
	// maxPending bounds pending before it is merged into main.
	maxPending = 1024
)

// cmpCreated orders dialogs by created_at, then Call-ID (unique in a store).
func cmpCreated(a, b *dialog) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	return strings.Compare(a.callID, b.callID)
}

func (x *createdIndex) len() int { return len(x.main) + len(x.pending) }

// add inserts a dialog that just opened.
func (x *createdIndex) add(d *dialog) {
	n := len(x.main)
	if n == 0 || cmpCreated(x.main[n-1], d) <= 0 {
		x.main = append(x.main, d)
		return
	}
	lo := max(n-nearEnd, 0)
	if cmpCreated(x.main[lo], d) <= 0 {
		i, _ := slices.BinarySearchFunc(x.main[lo:], d, cmpCreated)
		x.main = slices.Insert(x.main, lo+i, d)
		return
	}
	i, _ := slices.BinarySearchFunc(x.pending, d, cmpCreated)
	x.pending = slices.Insert(x.pending, i, d)
	if len(x.pending) >= maxPending {
		x.main = x.merged(make([]*dialog, 0, x.len()+x.len()/4))
		clear(x.pending)
		x.pending = x.pending[:0]
	}
}

// merged appends main and pending, merged in order, to dst.
func (x *createdIndex) merged(dst []*dialog) []*dialog {
	a, b := x.main, x.pending
	for len(a) > 0 && len(b) > 0 {
		if cmpCreated(a[0], b[0]) <= 0 {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	dst = append(dst, a...)
	return append(dst, b...)
}

// dropGone removes the dialogs marked gone (evicted) by walking the whole
// index: a read of every dialog, which at a million dialogs is a cache miss
// each. drop is the cheap way; this is its fallback.
func (x *createdIndex) dropGone() {
	gone := func(d *dialog) bool { return d.gone }
	x.main = slices.DeleteFunc(x.main, gone)
	x.pending = slices.DeleteFunc(x.pending, gone)
}

// drop removes the dialogs of victims (just evicted: each marked gone, held
// in the index once) and leaves the index exactly as dropGone would, without
// reading every dialog held: the victims are sorted, each is found in main
// by a search that starts past the previous one (so victims that sit
// together, as the oldest do, cost a compare or two each), and main is
// closed up by moving pointers, never reading the dialogs they point to,
// from whichever side moves fewer. This runs under the store's write lock
// on every eviction batch. victims is reordered.
func (x *createdIndex) drop(victims []*dialog) {
	if len(victims) == 0 {
		return
	}
	slices.SortFunc(victims, cmpCreated)
	inPending := len(x.pending)
	x.pending = slices.DeleteFunc(x.pending, func(d *dialog) bool { return d.gone })
	inPending -= len(x.pending)
	pos := x.pos[:0]
	lo := 0
	for _, d := range victims {
		if i, ok := find(x.main, lo, d); ok {
			pos = append(pos, i)
			lo = i + 1
		}
	}
	x.pos = pos[:0]
	if len(pos)+inPending != len(victims) {
		// a victim was not where the order says: never expected, but the
		// index must not keep a dialog that left
		x.walks++
		x.dropGone()
		return
	}
	x.main = closeUp(x.main, pos)
}

// find returns the index of d in a, searching from lo (every element
// before lo sorts before d) with steps that double, then by halving.
func find(a []*dialog, lo int, d *dialog) (int, bool) {
	hi, step := lo, 1
	for hi < len(a) && cmpCreated(a[hi], d) < 0 {
		lo = hi + 1
		hi += step
		step *= 2
	}
	// a[:lo] sorts before d; a[hi] (when held) does not
	i, _ := slices.BinarySearchFunc(a[lo:min(hi+1, len(a))], d, cmpCreated)
	i += lo
	return i, i < len(a) && a[i] == d
}

// closeUp removes a's elements at the ascending positions pos, keeping the
// others in order, and returns what is left. It moves the elements before
// the last position toward the end or those after the first toward the
// start, whichever are fewer, and clears the slots left so the dialogs
// they held can be freed.
func closeUp(a []*dialog, pos []int) []*dialog {
	k, n := len(pos), len(a)
	if k == 0 {
		return a
	}
	if pos[k-1] < n-pos[0] {
		w := pos[k-1] + 1 // a[w:] is in place
		for j := k - 1; j >= 0; j-- {
			start := 0
			if j > 0 {
				start = pos[j-1] + 1
			}
			w -= copy(a[w-(pos[j]-start):w], a[start:pos[j]])
		}
		clear(a[:k])
		return a[k:]
	}
	w := pos[0] // a[:w] is in place
	for j := 0; j < k; j++ {
		end := n
		if j+1 < k {
			end = pos[j+1]
		}
		w += copy(a[w:], a[pos[j]+1:end])
	}
	clear(a[n-k:])
	return a[:n-k]
}

// Extra returns what the aggregations read of one Call-ID's retained
// messages (see Extra), without parsing them.
func (s *Store) Extra(callID string) (Extra, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.lookup(callID)
	if d == nil {
		return Extra{}, false
	}
	return d.extra(), true
}

// ExtrasAt returns the Extra of every row of Summaries(ByCreated) as read
// at revision rev, in the same order, when the store still holds exactly
// those n rows at that revision; nil when it has moved since (then read
// them one at a time with Extra). The read lock is taken a chunk at a time.
func (s *Store) ExtrasAt(rev uint64, n int) []Extra {
	s.mu.RLock()
	if s.rev.Load() != rev || s.created.len() != n {
		s.mu.RUnlock()
		return nil
	}
	ds := s.created.merged(make([]*dialog, 0, n))
	s.mu.RUnlock()
	out := make([]Extra, n)
	for i := 0; i < n; i += chunk {
		s.mu.RLock()
		if s.rev.Load() != rev {
			s.mu.RUnlock()
			return nil
		}
		for j := i; j < min(i+chunk, n); j++ {
			out[j] = ds[j].extra()
		}
		s.mu.RUnlock()
	}
	return out
}

// Slice is a page of every row in created_at order, read in one hold of
// the read lock.
type Slice struct {
	// Rows are the page's rows.
	Rows []Summary
	// Total counts every row held.
	Total int
	// Methods counts every row held by its method ("" when none).
	Methods map[string]int
	// More: rows remain after the page.
	More bool
}

// SliceCreated returns up to limit rows (at least one) in created_at order
// starting at the first row past a position: past reports whether a row
// (created_at, Call-ID) sorts after it, false for every row up to the
// position and true from there on; nil starts at the first row. The cost
// is the page's rows, whatever the store's size.
func (s *Store) SliceCreated(past func(at time.Time, callID string) bool, limit int) Slice {
	limit = max(limit, 1)
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, b := s.created.main, s.created.pending
	if past != nil {
		first := func(ds []*dialog) int {
			i, _ := slices.BinarySearchFunc(ds, 0, func(d *dialog, _ int) int {
				if past(d.created, d.callID) {
					return 1
				}
				return -1
			})
			return i
		}
		a, b = a[first(a):], b[first(b):]
	}
	out := Slice{Total: s.created.len(), Methods: make(map[string]int, len(s.methods))}
	for k, v := range s.methods {
		out.Methods[k] = v
	}
	out.Rows = make([]Summary, 0, min(limit, len(a)+len(b)))
	for len(out.Rows) < limit && len(a)+len(b) > 0 {
		var d *dialog
		if len(b) == 0 || len(a) > 0 && cmpCreated(a[0], b[0]) <= 0 {
			d, a = a[0], a[1:]
		} else {
			d, b = b[0], b[1:]
		}
		out.Rows = append(out.Rows, d.summary())
	}
	out.More = len(a)+len(b) > 0
	return out
}

// TallyField names the value Tally counts the dialogs by.
type TallyField uint8

// The values Tally counts by, each as the row (Summary) or Extra shows it.
const (
	TallyState       TallyField = iota // Summary.State
	TallyMethod                        // Summary.Method
	TallyFromUser                      // Summary.FromUser
	TallyToUser                        // Summary.ToUser
	TallyFinalStatus                   // Summary.FinalStatusCode
	TallyUA                            // Extra.UA
	TallySrcAddr                       // Extra.Src's address
	TallyDstAddr                       // Extra.Dst's address
)

// Tallies counts every dialog held by one value. A dialog counts in
// exactly one of Text, Codes, Addrs (by the value's type) or Absent (the
// value is empty, zero or invalid), so their sum is Total.
type Tallies struct {
	Text  map[string]int
	Codes map[int]int
	Addrs map[netip.Addr]int
	// Absent counts the dialogs without the value.
	Absent int
	// Total counts the dialogs counted.
	Total int
}

// Tally counts every dialog held by one field, reading that field alone:
// no row is built, so it costs a fraction of Summaries. The dialogs are
// taken in created_at order a chunk at a time under the read lock, like
// Summaries; one evicted during the walk is not counted.
func (s *Store) Tally(f TallyField) Tallies {
	t := Tallies{Text: map[string]int{}, Codes: map[int]int{}, Addrs: map[netip.Addr]int{}}
	s.mu.RLock()
	if f == TallyMethod {
		// kept up to date as dialogs open and leave
		for m, n := range s.methods {
			if m == "" {
				t.Absent += n
			} else {
				t.Text[m] += n
			}
			t.Total += n
		}
		s.mu.RUnlock()
		return t
	}
	ds := s.created.merged(make([]*dialog, 0, s.created.len()))
	s.mu.RUnlock()
	for i := 0; i < len(ds); i += chunk {
		s.mu.RLock()
		for _, d := range ds[i:min(i+chunk, len(ds))] {
			if d.gone {
				continue
			}
			t.Total++
			if !d.tally(f, &t) {
				t.Absent++
			}
		}
		s.mu.RUnlock()
	}
	return t
}

// tally counts d's value of f in t; false when d has none.
func (d *dialog) tally(f TallyField, t *Tallies) bool {
	text := ""
	switch f {
	case TallyState, TallyMethod, TallyFromUser, TallyToUser:
		l := d.primary()
		if l == nil {
			return false
		}
		switch f {
		case TallyState:
			text = l.effectiveState().String()
		case TallyMethod:
			text = l.method
		case TallyFromUser:
			text = l.fromUser
		default:
			text = l.toUser
		}
	case TallyFinalStatus:
		if d.finalCode == 0 {
			return false
		}
		t.Codes[int(d.finalCode)]++
		return true
	case TallyUA:
		if len(d.msgs) == 0 {
			return false
		}
		text = d.ua
	case TallySrcAddr, TallyDstAddr:
		if len(d.msgs) == 0 {
			return false
		}
		src, dst := d.addrsOf(d.firstPos())
		a := src.Addr()
		if f == TallyDstAddr {
			a = dst.Addr()
		}
		if !a.IsValid() {
			return false
		}
		t.Addrs[a.Unmap()]++
		return true
	default:
		return false
	}
	if text == "" {
		return false
	}
	t.Text[text]++
	return true
}
