package analysis_test

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/sip"
)

// FuzzDiagnoseSignaling feeds arbitrary SIP messages (NUL-separated) to a
// dialog store and diagnoses every dialog and the capture: no input may
// panic, every evidence index names a message of the dialog, and no hint
// carries text the sender wrote.
func FuzzDiagnoseSignaling(f *testing.F) {
	join := func(msgs []sm, callID string) []byte {
		var b bytes.Buffer
		for _, m := range msgs {
			b.WriteString(m.text(callID))
			b.WriteByte(0)
		}
		return b.Bytes()
	}
	f.Add(join([]sm{
		{0, true, "REGISTER", 1, "", "r1", "", []string{"Contact: <sip:a@h>;expires=3600"}},
		{0, false, "401", 1, "REGISTER", "r1", "s1", nil},
		{0, true, "REGISTER", 2, "", "r2", "", []string{auth}},
		{0, false, "401", 2, "REGISTER", "r2", "s2", nil},
		{0, true, "REGISTER", 3, "", "r3", "", []string{auth}},
		{0, false, "401", 3, "REGISTER", "r3", "s3", nil},
	}, "f1"))
	f.Add(join([]sm{
		{0, true, "INVITE", 1, "", "i1", "", nil},
		{0, false, "200", 1, "INVITE", "i1", "b", []string{`Warning: 399 x "y"`}},
		{0, true, "CANCEL", 1, "", "i1", "", nil},
		{0, false, "487", 1, "INVITE", "i1", "b", []string{`Reason: SIP;cause=487`}},
	}, "f2"))
	f.Add([]byte("XEVIL sip:a SIP/2.0\r\nCall-ID: e\r\nCSeq: 1 XEVIL\r\nVia: SIP/2.0/UDP h;branch=IGNORE\r\n\r\n\x00" +
		"SIP/2.0 403 IGNORE PREVIOUS\r\nCall-ID: e\r\nCSeq: 1 XEVIL\r\nVia: SIP/2.0/UDP h;branch=IGNORE\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds := dialog.New(dialog.Config{MaxDialogs: 4, MaxMessages: 32})
		a := netip.MustParseAddrPort(caller)
		b := netip.MustParseAddrPort(callee)
		var texts []string
		for i, part := range bytes.Split(data, []byte{0}) {
			m, err := sip.Parse(part)
			if err != nil {
				continue
			}
			// a registered method may be named; anything else a sender
			// wrote may not
			x := m.Method
			if !m.IsRequest {
				x = m.Reason
			}
			if !strings.Contains(" INVITE ACK BYE CANCEL REGISTER OPTIONS PRACK SUBSCRIBE NOTIFY PUBLISH INFO REFER MESSAGE UPDATE ", " "+x+" ") {
				texts = append(texts, x)
			}
			ds.Apply(dialog.Observation{Msg: m, TS: s0.Add(time.Duration(i) * 7 * time.Second), Src: a, Dst: b})
			a, b = b, a
		}
		st := media.NewStore(media.Config{})
		facts := analysis.FactsFromStore(ds)
		for _, f := range facts {
			d := analysis.Diagnose(f, st, analysis.Options{CaptureEnd: s0.Add(time.Hour)})
			if _, err := json.Marshal(d); err != nil {
				t.Fatal(err)
			}
			s := d.Signaling
			if s == nil {
				continue
			}
			det, _ := ds.GetWith(f.CallID, dialog.Options{NoMessages: true})
			var ev [][]int
			if s.FinalFailure != nil {
				ev = append(ev, s.FinalFailure.Evidence)
			}
			if s.AuthLoop != nil {
				ev = append(ev, s.AuthLoop.Evidence)
			}
			if s.AckMissing != nil {
				ev = append(ev, s.AckMissing.Evidence)
			}
			if s.Abandoned != nil {
				ev = append(ev, s.Abandoned.Evidence)
			}
			if s.RegistrationFailure != nil {
				ev = append(ev, s.RegistrationFailure.Evidence)
			}
			for _, r := range s.Retransmissions {
				ev = append(ev, r.Evidence)
			}
			for _, l := range ev {
				for _, i := range l {
					if i < 0 || i >= det.MsgCount {
						t.Fatalf("%q: evidence index %d outside 0..%d", f.CallID, i, det.MsgCount-1)
					}
				}
			}
			for _, h := range s.Hints {
				for _, x := range texts {
					if len(x) >= 8 && strings.Contains(h, x) {
						t.Fatalf("hint %q carries sender text %q", h, x)
					}
				}
			}
		}
		if _, err := json.Marshal(analysis.CaptureReport(facts, st, analysis.CaptureFacts{SourceExhausted: true}, analysis.Options{})); err != nil {
			t.Fatal(err)
		}
	})
}
