package dialog

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// FuzzApply feeds a sequence of arbitrary SIP messages (separated by a NUL
// byte) to a small store and reads every view back: no input may panic, and
// msg_count must count every message that carried a Call-ID.
func FuzzApply(f *testing.F) {
	var seed bytes.Buffer
	for _, st := range basicCall("seed") {
		seed.WriteString(st.text)
		seed.WriteByte(0)
	}
	f.Add(seed.Bytes())
	f.Add([]byte(req("REGISTER", hdr{callID: "r", fromTag: "x", cseq: 1, branch: "z9hG4bK", extra: []string{"Expires: 0", "Contact: *"}}) + "\x00" +
		resp(200, hdr{callID: "r", fromTag: "x", toTag: "y", cseq: 1, cseqMeth: "REGISTER", branch: "z9hG4bK"})))
	f.Add([]byte(req("NOTIFY", hdr{callID: "n", fromTag: "a", toTag: "b", cseq: 3, branch: "z9hG4bK", extra: []string{"Subscription-State: terminated"}}) + "\x00" +
		req("BYE", hdr{callID: "n", fromTag: "b", toTag: "a", cseq: 9, branch: "z9hG4bK", extra: []string{`Reason: Q.850;cause=16;text="x"`, "X-Asterisk-HangupCauseCode: 17"}})))
	f.Add([]byte(req("INFO", hdr{callID: "i", fromTag: "a", toTag: "b", cseq: 3, branch: "z9hG4bK", ctype: "application/dtmf-relay", body: "Signal=#\r\nDuration=999999999\r\n"})))
	f.Add([]byte("SIP/2.0 200 OK\r\nCall-ID: x\r\n\r\n\x00SIP/2.0 487 X\r\nCall-ID: x\r\nCSeq: 4294967295 INVITE\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := New(Config{MaxDialogs: 4, MaxMessages: 8, MaxSeen: 8})
		want := map[string]int{}
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
			r := s.Apply(Observation{Msg: m, TS: time.Unix(int64(i), 0), Src: src, Dst: dst})
			if m.CallID != "" && !r.Refused {
				if r.Evicted > 0 {
					want = map[string]int{}
					for _, id := range s.CallIDs() {
						d, _ := s.Lookup(id)
						want[id] = d.MsgCount
					}
					continue
				}
				want[m.CallID]++
			}
		}
		if s.Len() > 4 {
			t.Fatalf("store holds %d dialogs over its cap", s.Len())
		}
		checkStore(t, s)
		for _, row := range s.Summaries(ByUpdated) {
			d, ok := s.GetWith(row.CallID, Options{RevealDigits: true})
			if !ok {
				t.Fatalf("listed %q not found", row.CallID)
			}
			if n, ok := want[row.CallID]; ok && d.MsgCount != n {
				t.Fatalf("%q: msg_count %d, want %d", row.CallID, d.MsgCount, n)
			}
			if d.Retained > 8 || len(d.Messages) != d.Retained {
				t.Fatalf("%q: retained %d (%d)", row.CallID, d.Retained, len(d.Messages))
			}
			if _, ok := ParseState(d.State); !ok {
				t.Fatalf("%q: state %q is not a state name", row.CallID, d.State)
			}
		}
	})
}
