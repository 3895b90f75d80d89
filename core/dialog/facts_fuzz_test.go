package dialog

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// FuzzSignalingFacts feeds a sequence of arbitrary SIP messages (separated
// by a NUL byte) to a store and reads the transaction facts of every
// dialog: no input may panic, the counts bound the index lists, and a
// transaction's deciding final response is one of its responses.
func FuzzSignalingFacts(f *testing.F) {
	var seed bytes.Buffer
	for _, st := range basicCall("seed") {
		seed.WriteString(st.text)
		seed.WriteByte(0)
	}
	f.Add(seed.Bytes())
	f.Add([]byte(req("REGISTER", hdr{callID: "r", fromTag: "x", cseq: 1, branch: "b", extra: []string{"Contact: <sip:a@h>;expires=3600", "Expires: 99999999999"}}) + "\x00" +
		resp(200, hdr{callID: "r", fromTag: "x", toTag: "y", cseq: 1, cseqMeth: "REGISTER", branch: "b", extra: []string{`Contact: "x,y" <sip:a@h>;expires=-5, <sip:b@h>;expires=60`}})))
	f.Add([]byte(req("INVITE", hdr{callID: "c", fromTag: "a", cseq: 2, branch: "i", extra: []string{`Proxy-Authorization: Digest x`}}) + "\x00" +
		resp(407, hdr{callID: "c", fromTag: "a", toTag: "t", cseq: 2, cseqMeth: "INVITE", branch: "i", extra: []string{`Warning: 399 h "` + string(make([]byte, 300)) + `"`}}) + "\x00" +
		req("CANCEL", hdr{callID: "c", fromTag: "a", cseq: 2, branch: "i"})))
	f.Add([]byte("SIP/2.0 99 X\r\nCall-ID: x\r\nCSeq: 1 ACK\r\n\r\n\x00SIP/2.0 700 X\r\nCall-ID: x\r\nCSeq: 1 INVITE\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := New(Config{MaxDialogs: 4, MaxMessages: 32, MaxSeen: 8})
		src := netip.MustParseAddrPort("10.0.0.1:5060")
		dst := netip.MustParseAddrPort("10.0.0.2:5060")
		for i, part := range bytes.Split(data, []byte{0}) {
			m, err := sip.Parse(part)
			if err != nil {
				continue
			}
			if i%2 == 1 {
				src, dst = dst, src
			}
			s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Second), Src: src, Dst: dst})
		}
		for _, id := range s.CallIDs() {
			d, ok := s.Get(id)
			if !ok {
				continue
			}
			sf := SignalingFactsOf(&d)
			if !sf.Read {
				t.Fatalf("%q: a detail with its messages read as unread", id)
			}
			for _, x := range sf.Transactions {
				if len(x.RequestIndexes) > min(x.Requests, maxFactIndexes) || len(x.ChallengeIndexes) > min(x.Challenges, maxFactIndexes) ||
					len(x.FinalIndexes) > min(x.FinalCopies, maxFactIndexes) {
					t.Fatalf("%q: index lists exceed their counts: %+v", id, x)
				}
				if (x.FinalCode == 0) != (x.FinalIndex < 0) || x.FinalCode != 0 && (x.FinalCode < 200 || x.FinalCode > 699) {
					t.Fatalf("%q: final %d at %d", id, x.FinalCode, x.FinalIndex)
				}
				if x.RequestedExpiry < -1 || x.GrantedExpiry < -1 || len(x.FinalWarning) > 4*maxFactText || len(x.FinalReasonHeader) > 4*maxFactText {
					t.Fatalf("%q: out of range: %+v", id, x)
				}
			}
		}
	})
}

// TestSignalingFactsFlood: 5,000 distinct transactions under one Call-ID
// (300 times the retention) never hold more transactions than the dialog
// retains messages, checked after every message. BenchmarkSignalingFactsFlood
// times a message of a 50,000-transaction flood.
func TestSignalingFactsFlood(t *testing.T) {
	const retained = 16
	s := New(Config{MaxMessages: retained})
	src := netip.MustParseAddrPort(alice)
	dst := netip.MustParseAddrPort(bob)
	for i := 0; i < 5000; i++ {
		m, err := sip.Parse([]byte(req("OPTIONS", hdr{callID: "flood", fromTag: "f", cseq: i + 1, branch: "b" + string(rune('a'+i%26))})))
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Millisecond), Src: src, Dst: dst})
		d, _ := s.Get("flood")
		sf := SignalingFactsOf(&d)
		if got, want := len(sf.Transactions), min(i+1, retained); got != want {
			t.Fatalf("after %d messages: got %d transactions, want %d", i+1, got, want)
		}
		if want := max(0, i+1-retained); sf.NotRetained != want {
			t.Fatalf("after %d messages: got %d not retained, want %d", i+1, sf.NotRetained, want)
		}
	}
}

// BenchmarkSignalingFactsFlood applies one more OPTIONS transaction to a
// Call-ID already flooded with 50,000 and reads its signaling facts.
func BenchmarkSignalingFactsFlood(b *testing.B) {
	const retained = 16
	s := New(Config{MaxMessages: retained})
	src := netip.MustParseAddrPort(alice)
	dst := netip.MustParseAddrPort(bob)
	msg := func(i int) *sip.Message {
		m, err := sip.Parse([]byte(req("OPTIONS", hdr{callID: "flood", fromTag: "f", cseq: i + 1, branch: "b" + string(rune('a'+i%26))})))
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	i := 0
	for ; i < 50000; i++ {
		s.Apply(Observation{Msg: msg(i), TS: t0.Add(time.Duration(i) * time.Millisecond), Src: src, Dst: dst})
	}
	for b.Loop() {
		s.Apply(Observation{Msg: msg(i), TS: t0.Add(time.Duration(i) * time.Millisecond), Src: src, Dst: dst})
		d, _ := s.Get("flood")
		if sf := SignalingFactsOf(&d); len(sf.Transactions) != retained {
			b.Fatalf("%d transactions, want %d", len(sf.Transactions), retained)
		}
		i++
	}
}
