package dialog

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// icmpQuote is a port unreachable from the host of dst about a UDP message
// sent src → dst at ms, quoting the first n bytes of text (n < 0: all).
func icmpQuote(ms int, src, dst, text string, n int) *ICMPQuote {
	q := &ICMPQuote{
		TS: t0.Add(time.Duration(ms) * time.Millisecond), Type: 3, Code: 3,
		Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Reporter: netip.MustParseAddrPort(dst).Addr(), Transport: packet.TransportUDP, HasPorts: true,
		Frame: packet.FrameRef{Source: "icmp.pcap", Ordinal: uint64(ms), Digest: [8]byte{2}},
	}
	switch {
	case n < 0:
		q.Payload = []byte(text)
	case n < len(text):
		q.Payload, q.Truncated = []byte(text[:n]), true
	default:
		q.Payload = []byte(text)
	}
	return q
}

func TestMatchICMP(t *testing.T) {
	inviteA := req("INVITE", hdr{callID: "a@x", fromTag: "1", cseq: 1, branch: "z9hG4bKa"})
	inviteB := req("INVITE", hdr{callID: "b@x", fromTag: "2", cseq: 1, branch: "z9hG4bKb"})
	optsC := req("OPTIONS", hdr{callID: "c@x", fromTag: "3", cseq: 1, branch: "z9hG4bKc"})
	tests := []struct {
		name   string
		steps  []step
		quote  *ICMPQuote
		want   ICMPMatch
		msgIdx int // the quoted message's index (-1: none)
	}{
		{"a quote holding the Call-ID names the dialog even when another shares the 5-tuple",
			[]step{{0, alice, bob, inviteA}, {5, alice, bob, inviteB}},
			icmpQuote(6, alice, bob, inviteA, -1), ICMPMatch{CallID: "a@x", By: "call_id"}, 0},
		{"a Call-ID cut by the quote's end is not read: the 5-tuple decides",
			[]step{{0, alice, bob, inviteA}},
			icmpQuote(1, alice, bob, inviteA, 120), ICMPMatch{CallID: "a@x", By: "tuple"}, 0},
		{"an 8-byte quote (RFC 792) matches by 5-tuple the one dialog that sent on it",
			[]step{{0, alice, bob, inviteA}, {10, alice, proxy, inviteB}},
			icmpQuote(11, alice, bob, inviteA, 0), ICMPMatch{CallID: "a@x", By: "tuple"}, 0},
		{"an 8-byte quote is ambiguous when two dialogs sent on its 5-tuple in the window",
			[]step{{0, alice, bob, inviteA}, {10, alice, bob, inviteB}},
			icmpQuote(11, alice, bob, inviteA, 0), ICMPMatch{Reason: "ambiguous"}, -1},
		{"the quoted bytes pick the dialog among those sharing the 5-tuple",
			[]step{{0, alice, bob, inviteA}, {10, alice, bob, optsC}},
			icmpQuote(11, alice, bob, inviteA, 40), ICMPMatch{CallID: "a@x", By: "tuple"}, 0},
		{"a message sent before the window is not matched by 5-tuple",
			[]step{{0, alice, bob, inviteA}},
			icmpQuote(5000, alice, bob, inviteA, 0), ICMPMatch{Reason: "no_message"}, -1},
		{"a message sent after the error is not what it quotes",
			[]step{{20, alice, bob, inviteA}},
			icmpQuote(10, alice, bob, inviteA, 0), ICMPMatch{Reason: "no_message"}, -1},
		{"a quoted Call-ID the store does not hold is not matched",
			[]step{{0, alice, bob, inviteA}},
			icmpQuote(1, alice, bob, inviteB, -1), ICMPMatch{Reason: "call_id_not_held"}, -1},
		{"the latest copy before the error is the one quoted",
			[]step{{0, alice, bob, inviteA}, {500, alice, bob, inviteA}, {1500, alice, bob, inviteA}},
			icmpQuote(501, alice, bob, inviteA, -1), ICMPMatch{CallID: "a@x", By: "call_id"}, 1},
		{"a quote without ports is not matched",
			[]step{{0, alice, bob, inviteA}},
			func() *ICMPQuote { q := icmpQuote(1, alice, bob, inviteA, 0); q.HasPorts = false; return q }(),
			ICMPMatch{Reason: "no_ports"}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{})
			play(t, s, tc.steps)
			got := s.MatchICMP(tc.quote)
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			st := s.ICMPStats()
			if st.Offered != 1 || st.MatchedByCallID+st.MatchedByTuple+st.Unmatched != 1 {
				t.Errorf("stats %+v: want one offered, counted once", st)
			}
			if tc.want.CallID == "" {
				if st.UnmatchedBy[tc.want.Reason] != 1 || len(st.UnmatchedExamples) != 1 || st.UnmatchedExamples[0].Reason != tc.want.Reason {
					t.Errorf("stats %+v: want the error counted and kept as unmatched (%s)", st, tc.want.Reason)
				}
				return
			}
			det, _ := s.Get(tc.want.CallID)
			if len(det.ICMPErrors) != 1 || det.ICMPErrorCount != 1 {
				t.Fatalf("icmp errors %+v (count %d), want one", det.ICMPErrors, det.ICMPErrorCount)
			}
			e := det.ICMPErrors[0]
			if e.Kind != ICMPPortUnreachable || e.MatchedBy != tc.want.By || e.Endpoint != bob || e.Source != alice ||
				e.Reporter != "10.0.0.3" || e.QuoteTruncated != tc.quote.Truncated || e.Frame == "" {
				t.Errorf("error %+v", e)
			}
			if e.Message == nil || *e.Message != tc.msgIdx {
				t.Errorf("quoted message %v, want %d", e.Message, tc.msgIdx)
			}
		})
	}
}

// The ICMP table is bounded: a dialog keeps MaxICMPPerDialog errors and
// counts them all; at most MaxICMPDialogs dialogs hold errors, the rest
// counted as not kept; a dialog's errors leave with it.
func TestICMPTableBounds(t *testing.T) {
	s := New(Config{MaxDialogs: 2 * MaxICMPDialogs})
	invite := req("INVITE", hdr{callID: "a@x", fromTag: "1", cseq: 1, branch: "z9hG4bKa"})
	play(t, s, []step{{0, alice, bob, invite}})
	for i := 0; i < 3*MaxICMPPerDialog; i++ {
		s.MatchICMP(icmpQuote(1, alice, bob, invite, -1))
	}
	det, _ := s.Get("a@x")
	if len(det.ICMPErrors) != MaxICMPPerDialog || det.ICMPErrorCount != 3*MaxICMPPerDialog {
		t.Fatalf("kept %d of %d, want %d of %d", len(det.ICMPErrors), det.ICMPErrorCount, MaxICMPPerDialog, 3*MaxICMPPerDialog)
	}
	if st := s.ICMPStats(); st.RowsNotKept != 2*MaxICMPPerDialog {
		t.Errorf("rows not kept %d, want %d", st.RowsNotKept, 2*MaxICMPPerDialog)
	}
	for i := 0; i < MaxICMPDialogs+50; i++ {
		m := parsed(t, req("OPTIONS", hdr{callID: fmt.Sprintf("f%d", i), fromTag: "1", cseq: 1, branch: "z9hG4bKf"}))
		s.Apply(Observation{Msg: m, TS: t0, Src: netip.MustParseAddrPort(alice), Dst: netip.MustParseAddrPort(proxy), Transport: packet.TransportUDP})
		q := icmpQuote(0, alice, proxy, string(m.Raw), -1)
		s.MatchICMP(q)
		if st := s.ICMPStats(); st.Dialogs > MaxICMPDialogs {
			t.Fatalf("after %d: %d dialogs hold errors, cap %d", i, st.Dialogs, MaxICMPDialogs)
		}
	}
	st := s.ICMPStats()
	if st.Dialogs != MaxICMPDialogs || st.RowsNotKept != 2*MaxICMPPerDialog+51 || st.MatchedByCallID != uint64(3*MaxICMPPerDialog+MaxICMPDialogs+50) {
		t.Errorf("stats %+v: want %d dialogs, %d rows not kept", st, MaxICMPDialogs, 2*MaxICMPPerDialog+51)
	}
	// An unmatched flood keeps MaxICMPUnmatched examples and counts all.
	for i := 0; i < 1000; i++ {
		s.MatchICMP(icmpQuote(0, alice, "192.0.2.9:5060", "", 0))
	}
	if st := s.ICMPStats(); len(st.UnmatchedExamples) != MaxICMPUnmatched || st.UnmatchedBy["no_message"] != 1000 {
		t.Errorf("unmatched: %d examples, %d counted; want %d and 1000", len(st.UnmatchedExamples), st.UnmatchedBy["no_message"], MaxICMPUnmatched)
	}
	// Evicting the dialog drops its errors.
	s.mu.Lock()
	s.dropLocked(s.lookup("a@x"))
	s.mu.Unlock()
	if _, ok := s.icmp.byID["a@x"]; ok {
		t.Errorf("the evicted dialog's errors stayed")
	}
}

func TestQuotedCallID(t *testing.T) {
	tests := []struct{ name, quote, want string }{
		{"a request's Call-ID", "INVITE sip:b@x SIP/2.0\r\nVia: SIP/2.0/UDP h\r\nCall-ID: abc@h\r\nCSeq: 1 INVITE\r\n", "abc@h"},
		{"the compact form, any case", "SIP/2.0 200 OK\r\ni:  q1 \r\n", "q1"},
		{"a line cut by the quote's end is not read", "INVITE sip:b@x SIP/2.0\r\nCall-ID: abc", ""},
		{"a folded Call-ID is not read", "INVITE sip:b@x SIP/2.0\r\nCall-ID: abc\r\n def\r\n", ""},
		{"not SIP", "GET / HTTP/1.1\r\nCall-ID: x\r\n", ""},
		{"headers end before a Call-ID", "OPTIONS sip:b@x SIP/2.0\r\n\r\nCall-ID: x\r\n", ""},
		{"RTP is not SIP", "\x80\x00\x01\x02 Call-ID: x\r\n", ""},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(quotedCallID([]byte(tc.quote))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestICMPKind(t *testing.T) {
	tests := []struct {
		v6        bool
		typ, code uint8
		want      string
	}{
		{false, 3, 3, ICMPPortUnreachable}, {false, 3, 1, ICMPHostUnreachable}, {false, 3, 0, ICMPNetUnreachable},
		{false, 3, 13, ICMPAdminProhibited}, {false, 3, 9, ICMPAdminProhibited}, {false, 3, 10, ICMPHostUnreachable},
		{false, 3, 4, ICMPFragmentationNeeded}, {false, 11, 0, ICMPTimeExceeded}, {false, 12, 0, ICMPOther},
		{true, 1, 4, ICMPPortUnreachable}, {true, 1, 3, ICMPHostUnreachable}, {true, 1, 0, ICMPNetUnreachable},
		{true, 1, 1, ICMPAdminProhibited}, {true, 2, 0, ICMPFragmentationNeeded}, {true, 3, 0, ICMPTimeExceeded},
		{true, 4, 0, ICMPOther},
	}
	for _, tc := range tests {
		if got := ICMPKind(tc.v6, tc.typ, tc.code); got != tc.want {
			t.Errorf("v6 %v type %d code %d: got %s, want %s", tc.v6, tc.typ, tc.code, got, tc.want)
		}
	}
}

func FuzzQuotedCallID(f *testing.F) {
	f.Add([]byte("INVITE sip:b@x SIP/2.0\r\nCall-ID: abc@h\r\n"))
	f.Add([]byte("SIP/2.0 200 OK\r\ni: q\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v := quotedCallID(b)
		if len(v) > len(b) {
			t.Fatalf("value longer than the quote")
		}
	})
}
