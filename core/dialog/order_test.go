package dialog

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// extraFromMessages is Extra as the retained messages show it, parsed
// again: what the aggregations read before Extra was noted on arrival. The
// addresses and To host are those of the primary leg's first retained
// message (the first retained message's addresses, and no To host, when
// the primary leg has none retained); the next hop is the primary leg's
// last out-of-dialog request of the row's method.
func extraFromMessages(d Detail) Extra {
	if len(d.Messages) == 0 {
		return Extra{}
	}
	prim := -2
	for i, l := range d.Legs {
		if l.Primary {
			prim = i
		}
	}
	e := Extra{Retained: true, Src: d.Messages[0].Src, Dst: d.Messages[0].Dst}
	for _, m := range d.Messages {
		if m.Leg == prim {
			e.Src, e.Dst = m.Src, m.Dst
			if m.Msg != nil {
				e.ToHost = m.Msg.To.Host
			}
			break
		}
	}
	for _, m := range d.Messages {
		if m.Msg == nil {
			continue
		}
		if e.UA == "" {
			e.UA = m.Msg.UserAgent
		}
		if m.Leg == prim && m.Msg.IsRequest && m.Msg.Method == d.Method && m.Msg.To.Tag == "" && m.Dst.IsValid() {
			e.NextHop = m.Dst
		}
	}
	return e
}

// checkStore checks what the store keeps up to date as messages arrive
// against the same facts computed from scratch: the created_at index, the
// per-method counts, the final status, the extras, and the reads built on
// them (Summaries, SliceCreated, ExtrasAt, Tally).
func checkStore(t *testing.T, s *Store) {
	t.Helper()
	s.mu.RLock()
	var all []*dialog
	for d := range s.byID.all() {
		all = append(all, d)
	}
	slices.SortFunc(all, cmpCreated)
	idx := s.created.merged(nil)
	if len(idx) != len(all) {
		t.Fatalf("index holds %d dialogs, store %d", len(idx), len(all))
	}
	methods := map[string]int{}
	for i, d := range idx {
		if d != all[i] || d.gone {
			t.Fatalf("index position %d: %q (gone %v), want %q", i, d.callID, d.gone, all[i].callID)
		}
		methods[d.method()]++
		if got, want := d.final, d.decideFinal(); got != want {
			t.Fatalf("%q: final status transaction %p, decided again %p", d.callID, got, want)
		}
		if d.final != nil && int(d.finalCode) != d.final.finalCode || d.final == nil && d.finalCode != 0 {
			t.Fatalf("%q: final code %d does not match its transaction", d.callID, d.finalCode)
		}
	}
	if !reflect.DeepEqual(methods, s.methods) {
		t.Fatalf("methods: got %v, want %v", s.methods, methods)
	}
	s.mu.RUnlock()

	rows := s.Summaries(ByCreated)
	if !slices.IsSortedFunc(rows, func(a, b Summary) int { return ByCreated.cmp(&a, &b) }) || len(rows) != len(all) {
		t.Fatalf("Summaries(ByCreated): %d rows, sorted %v", len(rows), slices.IsSortedFunc(rows, func(a, b Summary) int { return ByCreated.cmp(&a, &b) }))
	}
	upd := s.Summaries(ByUpdated)
	if !slices.IsSortedFunc(upd, func(a, b Summary) int { return ByUpdated.cmp(&a, &b) }) || len(upd) != len(all) {
		t.Fatalf("Summaries(ByUpdated) not sorted or %d rows", len(upd))
	}
	extras := s.ExtrasAt(s.Revision(), len(rows))
	if len(rows) > 0 && extras == nil {
		t.Fatal("ExtrasAt: nil on an unchanged store")
	}
	byField := map[TallyField]Tallies{}
	for f := TallyState; f <= TallyDstAddr; f++ {
		byField[f] = Tallies{Text: map[string]int{}, Codes: map[int]int{}, Addrs: map[netip.Addr]int{}}
	}
	count := func(f TallyField, text string, code int, addr netip.Addr) {
		tl := byField[f]
		tl.Total++
		switch {
		case text != "":
			tl.Text[text]++
		case code != 0:
			tl.Codes[code]++
		case addr.IsValid():
			tl.Addrs[addr.Unmap()]++
		default:
			tl.Absent++
		}
		byField[f] = tl
	}
	for i := range rows {
		r := &rows[i]
		d, ok := s.Get(r.CallID)
		if !ok {
			t.Fatalf("%q listed, not found", r.CallID)
		}
		if d.Summary.FinalStatusCode != r.FinalStatusCode {
			t.Fatalf("%q: final status %d in the row, %d in the detail", r.CallID, r.FinalStatusCode, d.FinalStatusCode)
		}
		wantExtra := extraFromMessages(d)
		got, ok := s.Extra(r.CallID)
		if !ok || got != wantExtra {
			t.Fatalf("%q: Extra\n got %+v\nwant %+v", r.CallID, got, wantExtra)
		}
		if extras[i] != wantExtra {
			t.Fatalf("%q: ExtrasAt[%d]\n got %+v\nwant %+v", r.CallID, i, extras[i], wantExtra)
		}
		count(TallyState, r.State, 0, netip.Addr{})
		count(TallyMethod, r.Method, 0, netip.Addr{})
		count(TallyFromUser, r.FromUser, 0, netip.Addr{})
		count(TallyToUser, r.ToUser, 0, netip.Addr{})
		count(TallyFinalStatus, "", r.FinalStatusCode, netip.Addr{})
		count(TallyUA, wantExtra.UA, 0, netip.Addr{})
		count(TallySrcAddr, "", 0, wantExtra.Src.Addr())
		count(TallyDstAddr, "", 0, wantExtra.Dst.Addr())
	}
	for f, w := range byField {
		if got := s.Tally(f); !reflect.DeepEqual(got, w) {
			t.Fatalf("Tally(%d):\n got %+v\nwant %+v", f, got, w)
		}
	}
	// Paging SliceCreated by three returns Summaries' rows.
	var paged []Summary
	var past func(time.Time, string) bool
	for {
		sl := s.SliceCreated(past, 3)
		if sl.Total != len(rows) || !reflect.DeepEqual(sl.Methods, s.methodsCopy()) {
			t.Fatalf("SliceCreated: total %d methods %v", sl.Total, sl.Methods)
		}
		paged = append(paged, sl.Rows...)
		if !sl.More {
			break
		}
		last := sl.Rows[len(sl.Rows)-1]
		past = func(at time.Time, id string) bool {
			if c := at.Compare(last.CreatedAt); c != 0 {
				return c > 0
			}
			return id > last.CallID
		}
	}
	if len(rows) == 0 {
		paged = []Summary{}
		rows = []Summary{}
	}
	if !reflect.DeepEqual(paged, rows) {
		t.Fatalf("SliceCreated paged %d rows, Summaries %d (or they differ)", len(paged), len(rows))
	}
}

func (s *Store) methodsCopy() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]int{}
	for k, v := range s.methods {
		out[k] = v
	}
	return out
}

// mixedDialog is dialog i of a mixed population: answered and failed
// calls (a challenge first), registrations, a dialog seen from a response,
// OPTIONS with the User-Agent only on its answer, an INVITE re-sent to a
// second hop.
func mixedDialog(i int) []step {
	cid := fmt.Sprintf("m%05d", i)
	h := hdr{callID: cid, fromTag: "f" + cid, cseq: 1, branch: "z9hG4bK-" + cid}
	ht := h
	ht.toTag = "t" + cid
	switch i % 6 {
	case 0:
		re := ht
		re.cseq, re.branch = 5, h.branch+"-re"
		return append(basicCall(cid), step{70000, bob, alice, req("INVITE", re)}) // in-dialog: no next hop
	case 1:
		h2 := h
		h2.cseq, h2.branch = 2, h.branch+"-2"
		ht2 := ht
		ht2.cseq, ht2.branch = 2, h2.branch
		h.extra = []string{"User-Agent: phone/" + fmt.Sprint(i%3)}
		return []step{
			{0, alice, bob, req("INVITE", h)},
			{10, bob, alice, resp(407, withMeth(ht, "INVITE"))},
			{20, alice, bob, req("INVITE", h2)},
			{900, bob, alice, resp(486, withMeth(ht2, "INVITE"))},
		}
	case 2:
		h.extra = []string{"User-Agent: reg"}
		return []step{
			{0, alice, proxy, req("REGISTER", h)},
			{5, proxy, alice, resp(200, withMeth(ht, "REGISTER"))},
		}
	case 3:
		return []step{{0, bob, alice, resp(200, withMeth(ht, "INVITE"))}}
	case 4:
		ht.extra = []string{"Server: gw"}
		return []step{
			{0, alice, bob, req("OPTIONS", h)},
			{3, bob, alice, resp(200, withMeth(ht, "OPTIONS"))},
		}
	}
	return []step{
		{0, alice, proxy, req("INVITE", h)},
		{1, proxy, bob, req("INVITE", h)},
		{30, bob, proxy, resp(603, withMeth(ht, "INVITE"))},
	}
}

// TestCreatedIndex applies a mixed population in several arrival orders
// (in time order, reversed, shuffled, many dialogs on one instant), with
// and without eviction, and checks the store's kept-up-to-date state at
// every step against the same facts computed from scratch.
func TestCreatedIndex(t *testing.T) {
	const n = 300
	base := make([]int, n)
	for i := range base {
		base[i] = i
	}
	shuffled := slices.Clone(base)
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	reversed := slices.Clone(base)
	slices.Reverse(reversed)
	for _, tc := range []struct {
		name       string
		order      []int
		tie        int // dialogs per millisecond
		maxDialogs int
	}{
		{"in time order", base, 1, 0},
		{"reversed", reversed, 1, 0},
		{"shuffled", shuffled, 1, 0},
		{"ties", shuffled, 50, 0},
		{"reversed with eviction", reversed, 1, 100},
		{"shuffled with eviction", shuffled, 3, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{MaxDialogs: tc.maxDialogs})
			for step, i := range tc.order {
				at := t0.Add(time.Duration(i/tc.tie) * time.Hour)
				for _, st := range mixedDialog(i) {
					m, err := sip.Parse([]byte(st.text))
					if err != nil {
						t.Fatal(err)
					}
					s.Apply(Observation{Msg: m, TS: at.Add(time.Duration(st.ms) * time.Millisecond),
						Src: netip.MustParseAddrPort(st.src), Dst: netip.MustParseAddrPort(st.dst)})
				}
				if step%7 == 0 || step == n-1 {
					checkStore(t, s)
				}
			}
			if want := min(n, tc.maxDialogs); tc.maxDialogs > 0 && s.Len() > want {
				t.Errorf("holds %d dialogs, cap %d", s.Len(), want)
			}
		})
	}
}

// TestCreatedIndexPendingMerge drives the pending list past its bound
// (dialogs opening in reverse time order) and checks the index stays whole
// and sorted.
func TestCreatedIndexPendingMerge(t *testing.T) {
	s := New(Config{})
	const n = nearEnd + 3*maxPending
	for i := n; i > 0; i-- {
		m := parsed(t, req("OPTIONS", hdr{callID: fmt.Sprintf("p%06d", i), fromTag: "x", cseq: 1, branch: "z9hG4bK"}))
		s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Second)})
		if got := len(s.created.pending); got >= maxPending {
			t.Fatalf("pending holds %d, bound %d", got, maxPending)
		}
	}
	ids := s.CallIDs()
	if len(ids) != n || !slices.IsSorted(ids) {
		t.Fatalf("got %d Call-IDs (sorted %v), want %d in order", len(ids), slices.IsSorted(ids), n)
	}
	checkStore(t, s)
}

// TestMethodCountsFlood opens 50,000 dialogs with distinct methods in a
// store capped at 1,000: the per-method counts never hold more keys than
// dialogs held.
func TestMethodCountsFlood(t *testing.T) {
	const cap = 1000
	s := New(Config{MaxDialogs: cap})
	for i := 0; i < 50000; i++ {
		method := "X" + strings.ToUpper(fmt.Sprintf("%x", i))
		m := parsed(t, req(method, hdr{callID: fmt.Sprintf("f%d", i), fromTag: "x", cseq: 1, branch: "z9hG4bK"}))
		s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Millisecond)})
		s.mu.RLock()
		keys, held := len(s.methods), s.byID.len()
		s.mu.RUnlock()
		if keys > held || held > cap {
			t.Fatalf("after %d dialogs: %d method keys for %d dialogs held (cap %d)", i+1, keys, held, cap)
		}
	}
	checkStore(t, s)
}
