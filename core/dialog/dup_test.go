package dialog

import (
	"fmt"
	"hash/maphash"
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// copyStep is one message as the capture saw it: at, from src to dst.
type copyStep struct {
	at       time.Duration // after t0
	src, dst string
	text     string
	origin   packet.Origin
	ipID     int // IPv4 Identification + 1; 0: none
}

func playCopies(t *testing.T, s *Store, steps []copyStep) []Result {
	t.Helper()
	out := make([]Result, 0, len(steps))
	for i, st := range steps {
		m, err := sip.Parse([]byte(st.text))
		if err != nil {
			t.Fatalf("step %d: parse: %v", i, err)
		}
		o := st.origin
		if o == 0 {
			o = packet.OriginWire
		}
		out = append(out, s.Apply(Observation{
			Msg: m, TS: t0.Add(st.at), Src: netip.MustParseAddrPort(st.src), Dst: netip.MustParseAddrPort(st.dst),
			Transport: packet.TransportUDP, Origin: o,
			Frame: packet.FrameRef{Source: "test.pcap", Ordinal: uint64(i + 1), Digest: [8]byte{1}},
			IPID:  uint16(st.ipID - 1), HasIPID: st.ipID > 0,
		}))
	}
	return out
}

// twice returns every step of a call followed by a copy of it gap later
// (from the same addresses when move is false).
func twice(steps []step, gap time.Duration, origin packet.Origin) []copyStep {
	var out []copyStep
	for _, st := range steps {
		at := time.Duration(st.ms) * time.Millisecond
		out = append(out, copyStep{at, st.src, st.dst, st.text, origin, 0}, copyStep{at + gap, st.src, st.dst, st.text, origin, 0})
	}
	return out
}

// unansweredInvite is an INVITE its sender re-sends on Timer A (T1 = 500
// ms doubling: 0, 0.5, 1.5, 3.5, 7.5 s) with no answer.
func unansweredInvite() []copyStep {
	h := hdr{callID: "c", fromTag: "a1", cseq: 1, branch: "z9hG4bK-inv"}
	var out []copyStep
	for _, ms := range []int{0, 500, 1500, 3500, 7500} {
		out = append(out, copyStep{at: time.Duration(ms) * time.Millisecond, src: alice, dst: bob, text: req("INVITE", h)})
	}
	return out
}

func mirrored(steps []copyStep, gap time.Duration) []copyStep {
	var out []copyStep
	for _, st := range steps {
		c := st
		c.at += gap
		out = append(out, st, c)
	}
	return out
}

// TestDuplicatesAreNotRetransmissions: copies of one message seen twice at
// the capture point (a mirrored copy 0.1 ms later, a second HEP agent 2 ms
// later, a copy seen first with a later timestamp) are counted as
// duplicates and change nothing else; the sender's own re-sends on the RFC
// 3261 timers stay retransmissions, mirrored or not.
func TestDuplicatesAreNotRetransmissions(t *testing.T) {
	call := basicCall("c")
	reversed := twice(call, -300*time.Microsecond, packet.OriginWire)
	cases := []struct {
		name                        string
		steps                       []copyStep
		window                      time.Duration
		state                       string
		msgs, retrans, dups, copies int
		unansweredCount, perMsgDups int
		wantDupResults, wantRetrans int
	}{
		{name: "mirrored call, copies 0.1 ms apart", steps: twice(call, 100*time.Microsecond, packet.OriginWire),
			state: "Completed", msgs: 7, dups: 7, perMsgDups: 1, wantDupResults: 7},
		{name: "HEP copies from two agents, 2 ms apart", steps: twice(call, 2*time.Millisecond, packet.OriginHEP),
			state: "Completed", msgs: 7, dups: 7, perMsgDups: 1, wantDupResults: 7},
		{name: "copy with an earlier timestamp (two interfaces)", steps: reversed,
			state: "Completed", msgs: 7, dups: 7, perMsgDups: 1, wantDupResults: 7},
		{name: "INVITE re-sent on Timer A, unanswered", steps: unansweredInvite(),
			state: "Trying", msgs: 5, retrans: 4, unansweredCount: 5, wantRetrans: 4},
		{name: "INVITE re-sent on Timer A, every frame mirrored", steps: mirrored(unansweredInvite(), 100*time.Microsecond),
			state: "Trying", msgs: 5, retrans: 4, dups: 5, unansweredCount: 5, perMsgDups: 1, wantDupResults: 5, wantRetrans: 4},
		{name: "same bytes 60 ms apart: past the window, a retransmission", steps: twice(call[:1], 60*time.Millisecond, packet.OriginWire),
			state: "Trying", msgs: 2, retrans: 1, unansweredCount: 2, wantRetrans: 1},
		{name: "recognition off: copies are retransmissions again", steps: twice(call, 100*time.Microsecond, packet.OriginWire),
			window: -1, state: "Completed", msgs: 14, retrans: 7, wantRetrans: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{DuplicateWindow: tc.window})
			res := playCopies(t, s, tc.steps)
			var dupRes, retRes int
			for _, r := range res {
				if r.Duplicate {
					dupRes++
				}
				if r.Retransmission {
					retRes++
				}
				if r.Duplicate && r.Retransmission {
					t.Errorf("a result is both duplicate and retransmission: %+v", r)
				}
			}
			if dupRes != tc.wantDupResults || retRes != tc.wantRetrans {
				t.Errorf("results: got %d duplicates %d retransmissions, want %d %d", dupRes, retRes, tc.wantDupResults, tc.wantRetrans)
			}
			d, ok := s.Get("c")
			if !ok {
				t.Fatal("dialog not found")
			}
			if d.State != tc.state || d.MsgCount != tc.msgs || d.Timing.Retransmits != tc.retrans || d.Timing.Duplicates != tc.dups {
				t.Errorf("got state %s msg_count %d retransmits %d duplicates %d, want %s %d %d %d",
					d.State, d.MsgCount, d.Timing.Retransmits, d.Timing.Duplicates, tc.state, tc.msgs, tc.retrans, tc.dups)
			}
			if len(d.Messages) != tc.msgs {
				t.Errorf("retained %d messages, want %d (duplicates are not retained)", len(d.Messages), tc.msgs)
			}
			for _, m := range d.Messages {
				if m.Duplicates != tc.perMsgDups {
					t.Errorf("message %d: duplicates %d, want %d", m.Index, m.Duplicates, tc.perMsgDups)
				}
				if v := m.View(); v.Duplicates != tc.perMsgDups {
					t.Errorf("message %d view: duplicates %d, want %d", m.Index, v.Duplicates, tc.perMsgDups)
				}
			}
			st := s.Stats()
			if st.Messages != uint64(len(tc.steps)) || st.Duplicates != uint64(tc.dups) || st.Retransmissions != uint64(tc.retrans) {
				t.Errorf("stats: messages %d duplicates %d retransmissions %d, want %d %d %d",
					st.Messages, st.Duplicates, st.Retransmissions, len(tc.steps), tc.dups, tc.retrans)
			}
			var counts []int
			for _, u := range d.RetransmittedNoResponse {
				counts = append(counts, u.Count)
			}
			if tc.unansweredCount == 0 && len(counts) != 0 || tc.unansweredCount > 0 && (len(counts) != 1 || counts[0] != tc.unansweredCount) {
				t.Errorf("retransmitted_no_response counts %v, want [%d]", counts, tc.unansweredCount)
			}
		})
	}
}

// TestDuplicateMovesNothing: a mirrored call keeps the timing, the
// transactions, the transitions and the span of the same call seen once.
func TestDuplicateMovesNothing(t *testing.T) {
	once := New(Config{})
	play(t, once, basicCall("c"))
	dup := New(Config{})
	playCopies(t, dup, twice(basicCall("c"), 100*time.Microsecond, packet.OriginWire))
	a, _ := once.Get("c")
	b, _ := dup.Get("c")
	if !eqPtr(a.Timing.PDDMs, b.Timing.PDDMs) || !eqPtr(a.Timing.SetupMs, b.Timing.SetupMs) || !eqPtr(a.Timing.DurationMs, b.Timing.DurationMs) {
		t.Errorf("timing: pdd %s setup %s duration %s, want %s %s %s", fmtPtr(b.Timing.PDDMs), fmtPtr(b.Timing.SetupMs), fmtPtr(b.Timing.DurationMs),
			fmtPtr(a.Timing.PDDMs), fmtPtr(a.Timing.SetupMs), fmtPtr(a.Timing.DurationMs))
	}
	if a.DurationSec != b.DurationSec || !a.UpdatedAt.Equal(b.UpdatedAt) {
		t.Errorf("span: %v until %v, want %v until %v", b.DurationSec, b.UpdatedAt, a.DurationSec, a.UpdatedAt)
	}
	if len(a.Legs) != 1 || len(b.Legs) != 1 || len(a.Legs[0].Transitions) != len(b.Legs[0].Transitions) || a.Legs[0].MsgCount != b.Legs[0].MsgCount {
		t.Fatalf("legs differ: %+v vs %+v", b.Legs, a.Legs)
	}
	if fa, fb := a.Legs[0].Forks, b.Legs[0].Forks; len(fa) != len(fb) || len(fa) > 0 && fa[0] != fb[0] {
		t.Errorf("forks: got %+v, want %+v", fb, fa)
	}
	dup.mu.RLock()
	txs := len(dup.lookup("c").txOrder)
	dup.mu.RUnlock()
	once.mu.RLock()
	want := len(once.lookup("c").txOrder)
	once.mu.RUnlock()
	if txs != want {
		t.Errorf("transactions: got %d, want %d (a duplicate opens none)", txs, want)
	}
}

// TestDuplicateNeedsTheSameAddresses: the same bytes between other
// addresses inside the window are the message on another hop, a message of
// its own and not a retransmission (the identity has the direction).
func TestDuplicateNeedsTheSameAddresses(t *testing.T) {
	inv := basicCall("c")[0].text
	s := New(Config{})
	res := playCopies(t, s, []copyStep{
		{0, alice, proxy, inv, 0, 0},
		{time.Millisecond, proxy, bob, inv, 0, 0},
	})
	if res[1].Duplicate || res[1].Retransmission {
		t.Errorf("second hop: got %+v, want a message of its own", res[1])
	}
	d, _ := s.Get("c")
	if d.MsgCount != 2 || d.Timing.Duplicates != 0 {
		t.Errorf("msg_count %d duplicates %d, want 2 0", d.MsgCount, d.Timing.Duplicates)
	}
}

// TestDuplicatePastTheRetentionCap: copies of a message past the
// per-dialog retention cap are still recognized (the table does not need
// the retained message).
func TestDuplicatePastTheRetentionCap(t *testing.T) {
	s := New(Config{MaxMessages: 2})
	playCopies(t, s, twice(basicCall("c"), 100*time.Microsecond, packet.OriginWire))
	d, _ := s.Get("c")
	if d.MsgCount != 7 || d.Timing.Duplicates != 7 || d.Timing.Retransmits != 0 || d.Retained != 2 {
		t.Errorf("msg_count %d duplicates %d retransmits %d retained %d, want 7 7 0 2", d.MsgCount, d.Timing.Duplicates, d.Timing.Retransmits, d.Retained)
	}
}

// TestDuplicateTableBounded: the table never grows past its entries, and a
// message forgotten while still inside the window is counted.
func TestDuplicateTableBounded(t *testing.T) {
	s := New(Config{MaxMessages: 10})
	const n = dupSets*dupWays + 1000
	for i := 0; i < n; i++ {
		m, err := sip.Parse([]byte(req("OPTIONS", hdr{callID: "flood", fromTag: "a1", cseq: i + 1, branch: fmt.Sprintf("z9hG4bK-%d", i)})))
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Microsecond), Src: netip.MustParseAddrPort(alice), Dst: netip.MustParseAddrPort(bob)})
	}
	if got := len(s.dup.e); got != dupSets*dupWays {
		t.Errorf("table holds %d entries, want %d", got, dupSets*dupWays)
	}
	// n messages within 5 ms: at least n - dupSets*dupWays were forgotten
	// inside the window.
	if st := s.Stats(); st.DuplicateEntriesEvicted < n-dupSets*dupWays || st.Duplicates != 0 {
		t.Errorf("evicted inside the window %d (want >= %d), duplicates %d (want 0)", st.DuplicateEntriesEvicted, n-dupSets*dupWays, st.Duplicates)
	}
}

// TestDuplicateApplyAllocatesNothing: recognizing a duplicate costs no
// allocation.
func TestDuplicateApplyAllocatesNothing(t *testing.T) {
	s := New(Config{})
	m, err := sip.Parse([]byte(basicCall("c")[0].text))
	if err != nil {
		t.Fatal(err)
	}
	o := Observation{Msg: m, TS: t0, Src: netip.MustParseAddrPort(alice), Dst: netip.MustParseAddrPort(bob)}
	s.Apply(o)
	o.TS = t0.Add(100 * time.Microsecond)
	if n := testing.AllocsPerRun(100, func() {
		if r := s.Apply(o); !r.Duplicate {
			t.Fatal("not a duplicate")
		}
	}); n != 0 {
		t.Errorf("a duplicate costs %v allocations, want 0", n)
	}
}

// TestReliableProvisionals: a reliable provisional re-sent with its RSeq is
// a retransmission; the next one, with the next RSeq, is a message of its
// own (RFC 3262 §3), even with the same status, CSeq and tags.
func TestReliableProvisionals(t *testing.T) {
	inv := hdr{callID: "c", fromTag: "a1", cseq: 1, branch: "z9hG4bK-inv"}
	p183 := func(rseq int) string {
		h := withMeth(inv, "INVITE")
		h.toTag = "b1"
		h.extra = []string{"Require: 100rel", fmt.Sprintf("RSeq: %d", rseq)}
		return resp(183, h)
	}
	s := New(Config{})
	res := playCopies(t, s, []copyStep{
		{0, alice, bob, req("INVITE", inv), 0, 0},
		{100 * time.Millisecond, bob, alice, p183(1), 0, 0},
		{600 * time.Millisecond, bob, alice, p183(1), 0, 0}, // re-sent on T1: a retransmission
		{700 * time.Millisecond, bob, alice, p183(2), 0, 0}, // the next reliable provisional
	})
	want := []bool{false, false, true, false}
	for i, r := range res {
		if r.Retransmission != want[i] || r.Duplicate {
			t.Errorf("message %d: retransmission %v duplicate %v, want %v false", i, r.Retransmission, r.Duplicate, want[i])
		}
	}
}

// TestDuplicateIPIdentification: two copies 0.3 ms apart with the same
// bytes are one datagram seen twice when their IPv4 Identification is the
// same, or unknown on either side, and two datagrams (the sender sent the
// message twice: a retransmission, as b2bua-asterisk.pcapng's two 100
// Trying 0x0a27 and 0x0a28) when it differs.
func TestDuplicateIPIdentification(t *testing.T) {
	trying := resp(100, withMeth(hdr{callID: "c", fromTag: "a1", cseq: 1, branch: "z9hG4bK-inv"}, "INVITE"))
	inv := req("INVITE", hdr{callID: "c", fromTag: "a1", cseq: 1, branch: "z9hG4bK-inv"})
	cases := []struct {
		name       string
		a, b       int // ipID+1 of each copy; 0: none
		dup, retra bool
	}{
		{"same Identification", 0x0a27 + 1, 0x0a27 + 1, true, false},
		{"same Identification 0 (DF set)", 1, 1, true, false},
		{"Identification differs: two datagrams", 0x0a27 + 1, 0x0a28 + 1, false, true},
		{"first without Identification (HEP)", 0, 0x0a28 + 1, true, false},
		{"neither with Identification", 0, 0, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{})
			res := playCopies(t, s, []copyStep{
				{0, alice, bob, inv, 0, 0},
				{10 * time.Millisecond, bob, alice, trying, 0, tc.a},
				{10*time.Millisecond + 300*time.Microsecond, bob, alice, trying, 0, tc.b},
			})
			if r := res[2]; r.Duplicate != tc.dup || r.Retransmission != tc.retra {
				t.Errorf("second copy: duplicate %v retransmission %v, want %v %v", r.Duplicate, r.Retransmission, tc.dup, tc.retra)
			}
		})
	}
}

// TestDuplicateEvictionsDoNotDependOnTheSeed: which messages share a set of
// the duplicate table does not follow the per-process fingerprint seed, so
// a capture read twice reports the same forgotten entries (and the same
// duplicates) whatever the seed. 6,000 messages of 600 dialogs inside one
// window overfill some sets; the counts must be equal under three seeds.
func TestDuplicateEvictionsDoNotDependOnTheSeed(t *testing.T) {
	msgs := make([]*sip.Message, 0, 6000)
	for i := 0; i < 6000; i++ {
		m, err := sip.Parse([]byte(req("OPTIONS", hdr{callID: fmt.Sprintf("c%d", i%600), fromTag: "a1", cseq: i + 1, branch: fmt.Sprintf("z9hG4bK-%d", i)})))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	run := func() Stats {
		s := New(Config{MaxMessages: 20})
		for i, m := range msgs {
			o := Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Microsecond), Src: netip.MustParseAddrPort(alice), Dst: netip.MustParseAddrPort(bob)}
			s.Apply(o)
			if i%7 == 0 { // a mirrored copy of every seventh message
				o.TS = o.TS.Add(100 * time.Microsecond)
				s.Apply(o)
			}
		}
		return s.Stats()
	}
	saved := dupSeed
	defer func() { dupSeed = saved }()
	first := run()
	if first.DuplicateEntriesEvicted == 0 || first.Duplicates == 0 {
		t.Fatalf("the workload must overfill sets and hold duplicates: evicted %d, duplicates %d", first.DuplicateEntriesEvicted, first.Duplicates)
	}
	for i := 0; i < 2; i++ {
		dupSeed = maphash.MakeSeed()
		if got := run(); got.DuplicateEntriesEvicted != first.DuplicateEntriesEvicted || got.Duplicates != first.Duplicates {
			t.Errorf("seed %d: evicted %d, duplicates %d; first seed: evicted %d, duplicates %d", i+2, got.DuplicateEntriesEvicted, got.Duplicates, first.DuplicateEntriesEvicted, first.Duplicates)
		}
	}
}

// TestDuplicateSetsSpreadTheMessagesOfOneDialog: the set is chosen from
// what the parser read (length, status, CSeq number, top Via branch, last
// bytes), not from every byte; the messages of one dialog that differ
// only there must still spread over the table, not crowd a few sets.
// Each case: 4,096 messages, one per set on average; a uniform spread
// leaves about 1024*(1-e^-4) = 1,005 sets used.
func TestDuplicateSetsSpreadTheMessagesOfOneDialog(t *testing.T) {
	for _, tc := range []struct {
		name string
		text func(i int) string
	}{
		{"CSeq and branch differ", func(i int) string {
			return req("OPTIONS", hdr{callID: "one", fromTag: "a1", cseq: i + 1, branch: fmt.Sprintf("z9hG4bK-%d", i)})
		}},
		{"only the branch differs", func(i int) string {
			return req("OPTIONS", hdr{callID: "one", fromTag: "a1", cseq: 1, branch: fmt.Sprintf("z9hG4bK-%08d", i)})
		}},
		{"only the body's last bytes differ", func(i int) string {
			return req("MESSAGE", hdr{callID: "one", fromTag: "a1", cseq: 1, branch: "z9hG4bK-1", ctype: "text/plain", body: fmt.Sprintf("hello %08d", i)})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets := map[uint32]bool{}
			for i := 0; i < dupSets*dupWays; i++ {
				m, err := sip.Parse([]byte(tc.text(i)))
				if err != nil {
					t.Fatal(err)
				}
				o := Observation{Msg: m, Src: netip.MustParseAddrPort(alice), Dst: netip.MustParseAddrPort(bob)}
				var ab addrBytes
				putAddrPorts(ab[:], o.Src, o.Dst)
				sets[dupKey(&o, 1, &ab).set&(dupSets-1)] = true
			}
			if len(sets) < 950 {
				t.Errorf("%d messages used %d of %d sets, want at least 950", dupSets*dupWays, len(sets), dupSets)
			}
		})
	}
}
