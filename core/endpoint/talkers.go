package endpoint

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/sip"
)

// Bounds of the tables keyed by sender-written text.
const (
	// MaxKeys is the most talkers (or banners) one answer tracks; a key
	// past it is not tracked and the credits it would have had are counted
	// (Tally.KeysDropped, Tally.CreditsDropped).
	MaxKeys = 1 << 16
	// MaxKeyBytes cuts a key (a banner) before it is tracked; two banners
	// that differ only past it share a row, and Tally.KeysCut counts the
	// cuts.
	MaxKeyBytes = 256
	// DefaultPrefixDigits is the prefix width top_talkers uses when none
	// is asked for: four leading digits of the dialed number.
	DefaultPrefixDigits = 4
	// MaxPrefixDigits bounds prefix_digits: E.164 numbers have at most 15
	// digits (ITU-T E.164 §6), so a wider prefix is the whole number.
	MaxPrefixDigits = 15
)

// The prefix keys of a dialog whose dialed number has no leading digit:
// sipnab's own words, never the sender's.
const (
	// NoDestination: the dialog's To URI has no user part.
	NoDestination = "(none)"
	// NonNumericDestination: the To user starts with no digit (a name,
	// not a number).
	NonNumericDestination = "(non-numeric)"
)

// Dimension is what top_talkers ranks by.
type Dimension string

// The dimensions.
const (
	// ByIP ranks the addresses that sent messages (each message's source,
	// whichever end of the dialog it came from).
	ByIP Dimension = "ip"
	// ByUA ranks the banners senders wrote about themselves: User-Agent
	// on requests, Server on responses (RFC 3261 §20.41, §20.35).
	ByUA Dimension = "ua"
	// ByPrefix ranks the leading digits of the dialed number (the To
	// user): one key per dialog.
	ByPrefix Dimension = "prefix"
)

// ParseDimension checks top_talkers' by and prefix_digits: digits 0 means
// DefaultPrefixDigits and is ignored for ip and ua.
func ParseDimension(by string, digits int) (Dimension, int, error) {
	switch d := Dimension(by); d {
	case ByIP, ByUA:
		return d, 0, nil
	case ByPrefix:
		if digits == 0 {
			digits = DefaultPrefixDigits
		}
		if digits < 1 || digits > MaxPrefixDigits {
			return "", 0, fmt.Errorf("prefix_digits %d: want 1 to %d (E.164 numbers have at most 15 digits)", digits, MaxPrefixDigits)
		}
		return d, digits, nil
	}
	return "", 0, fmt.Errorf("cannot rank by %q: want ip, ua or prefix", by)
}

// Fenced reports whether the dimension's keys are sender-written text a
// surface must fence: only ua. An address is sipnab's own reading of the
// packet, and a prefix is digits sipnab extracted or one of its literals.
func (d Dimension) Fenced() bool { return d == ByUA }

// Talker is what one talker did, summed over the dialogs it took part in.
type Talker struct {
	// Key is the address, banner (raw, unfenced) or prefix.
	Key string
	// Dialogs counts the dialogs the talker took part in (once each).
	Dialogs int
	// Messages counts the messages attributed to it: sent by the address,
	// carrying the banner, or every message of the dialog for a prefix.
	Messages int
	// Invites counts its INVITE dialogs; Answered those whose INVITE got a
	// 2xx, Failed those that ended 4xx-6xx (the row's final_status_code).
	Invites, Answered, Failed int
}

// Tally ranks talkers over the dialogs credited to it.
type Tally struct {
	dim    Dimension
	digits int
	keys   map[string]*Talker
	// Dialogs counts the dialogs credited.
	Dialogs int
	// KeysDropped counts distinct keys past MaxKeys, not tracked;
	// CreditsDropped the dialog credits they would have had.
	KeysDropped, CreditsDropped int
	dropped                     map[string]struct{}
	// KeysCut counts keys cut to MaxKeyBytes.
	KeysCut int
	// MessagesNotRead counts messages past the per-dialog retention cap,
	// which ip and ua could not attribute (prefix counts them: it reads
	// the dialog's msg_count).
	MessagesNotRead int
	per             map[string]int // scratch: one dialog's keys
}

// NewTally starts a ranking by dim; digits is the prefix width
// (ParseDimension's).
func NewTally(dim Dimension, digits int) *Tally {
	return &Tally{dim: dim, digits: digits, keys: map[string]*Talker{}, per: map[string]int{}}
}

// Credit counts one dialog for every talker that took part in it, once
// each, with the messages attributed to that talker.
func (t *Tally) Credit(d *dialog.Detail) {
	t.Dialogs++
	clear(t.per)
	switch t.dim {
	case ByIP:
		for i := range d.Messages {
			if a := d.Messages[i].Src.Addr(); a.IsValid() {
				t.per[a.Unmap().String()]++
			}
		}
		t.MessagesNotRead += d.Bounds.MessagesNotRetained
	case ByUA:
		for i := range d.Messages {
			if _, v, ok := Banner(d.Messages[i].Msg); ok {
				t.per[t.cut(v)]++
			}
		}
		t.MessagesNotRead += d.Bounds.MessagesNotRetained
	case ByPrefix:
		t.per[PrefixKey(d.ToUser, t.digits)] = d.MsgCount
	}
	invite := d.Method == "INVITE"
	code := d.FinalStatusCode
	for k, n := range t.per {
		tk := t.keys[k]
		if tk == nil {
			if len(t.keys) >= MaxKeys {
				t.drop(k)
				continue
			}
			tk = &Talker{Key: k}
			t.keys[k] = tk
		}
		tk.Dialogs++
		tk.Messages += n
		if invite {
			tk.Invites++
			if code >= 200 && code < 300 {
				tk.Answered++
			}
			if code >= 400 {
				tk.Failed++
			}
		}
	}
}

// drop counts a credit to a key the table has no room for; distinct
// dropped keys are counted up to MaxKeys more (a lower bound past it).
func (t *Tally) drop(k string) {
	t.CreditsDropped++
	if t.dropped == nil {
		t.dropped = map[string]struct{}{}
	}
	if _, ok := t.dropped[k]; !ok {
		if len(t.dropped) < MaxKeys {
			t.dropped[k] = struct{}{}
		}
		t.KeysDropped++
	}
}

func (t *Tally) cut(v string) string {
	if len(v) <= MaxKeyBytes {
		return v
	}
	t.KeysCut++
	return cutUTF8(v, MaxKeyBytes)
}

// cutUTF8 cuts s to at most n bytes without splitting a character: the
// cut backs up over continuation bytes (10xxxxxx).
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Distinct counts the talkers tracked.
func (t *Tally) Distinct() int { return len(t.keys) }

// Ranked returns the talkers busiest first: by dialogs, then messages,
// then key, so two runs over one capture cannot disagree.
func (t *Tally) Ranked() []Talker {
	out := make([]Talker, 0, len(t.keys))
	for _, tk := range t.keys {
		out = append(out, *tk)
	}
	slices.SortFunc(out, func(a, b Talker) int {
		if c := cmp.Compare(b.Dialogs, a.Dialogs); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Messages, a.Messages); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// PrefixKey is the prefix bucket of a dialed number: up to digits leading
// digits after an optional '+' (an E.164 number is written both ways on
// one wire), NoDestination without a To user, NonNumericDestination when
// it starts with no digit.
func PrefixKey(toUser string, digits int) string {
	if toUser == "" {
		return NoDestination
	}
	u := strings.TrimPrefix(toUser, "+")
	n := 0
	for n < len(u) && n < digits && u[n] >= '0' && u[n] <= '9' {
		n++
	}
	if n == 0 {
		return NonNumericDestination
	}
	return u[:n]
}

// Banner is the banner a message carries about its own sender: User-Agent
// on a request (RFC 3261 §20.41), Server on a response (§20.35). A
// request's Server or a response's User-Agent would name the other side,
// so neither is read. ok is false when the message carries none.
func Banner(m *sip.Message) (header, value string, ok bool) {
	if m == nil {
		return "", "", false
	}
	if m.IsRequest {
		v, ok := m.Header(sip.HdrUserAgent)
		v = strings.TrimSpace(v)
		return "User-Agent", v, ok && v != ""
	}
	v, ok := m.Header(sip.HdrServer)
	v = strings.TrimSpace(v)
	return "Server", v, ok && v != ""
}

// TopTalkers credits every dialog of the store the filter matches (nil
// matches all) to a Tally by dim. Rows come from the query layer in
// created_at order; each matching dialog is read once with its messages.
func TopTalkers(ctx context.Context, q *query.Querier, ds *dialog.Store, f *filter.Filter, dim Dimension, digits int) (*Tally, error) {
	t := NewTally(dim, digits)
	var sc dialog.Scratch
	rows := q.Rows(dialog.ByCreated)
	for i := range rows {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		row := &rows[i]
		if f != nil && !f.Match(q.Record(row)) {
			continue
		}
		opt := dialog.Options{Scratch: &sc, NoMessages: dim == ByPrefix}
		d, ok := ds.GetWith(row.CallID, opt)
		if !ok {
			continue // evicted since the rows were read
		}
		t.Credit(&d)
	}
	return t, nil
}
