package analysis_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/testcap"
)

var s0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

const (
	caller = "192.0.2.10:5060"
	callee = "198.51.100.20:5060"
)

// sm is one scripted SIP message of a crafted dialog.
type sm struct {
	at     time.Duration
	up     bool   // caller → callee
	start  string // "INVITE" or a status code ("200")
	cseq   int
	method string // CSeq method; defaults to start for requests
	branch string
	toTag  string
	extra  []string
}

func (m sm) text(callID string) string {
	var b strings.Builder
	if code := m.start; code[0] >= '0' && code[0] <= '9' {
		fmt.Fprintf(&b, "SIP/2.0 %s Phrase\r\n", code)
	} else {
		fmt.Fprintf(&b, "%s sip:bob@example.com SIP/2.0\r\n", m.start)
		if m.method == "" {
			m.method = m.start
		}
	}
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP 192.0.2.10:5060;branch=%s\r\n", m.branch)
	from := "From: <sip:alice@example.com>;tag=a1"
	var extra []string
	for _, e := range m.extra {
		if strings.HasPrefix(e, "From:") {
			from = e // another From tag (a retry under a new tag)
		} else {
			extra = append(extra, e)
		}
	}
	m.extra = extra
	b.WriteString(from + "\r\n")
	if m.toTag != "" {
		fmt.Fprintf(&b, "To: <sip:bob@example.com>;tag=%s\r\n", m.toTag)
	} else {
		b.WriteString("To: <sip:bob@example.com>\r\n")
	}
	fmt.Fprintf(&b, "Call-ID: %s\r\nCSeq: %d %s\r\n", callID, m.cseq, m.method)
	for _, e := range m.extra {
		b.WriteString(e + "\r\n")
	}
	b.WriteString("Content-Length: 0\r\n\r\n")
	return b.String()
}

// crafted plays one dialog into a store and returns its facts.
func crafted(t *testing.T, callID string, msgs []sm) analysis.DialogFacts {
	t.Helper()
	ds := dialog.New(dialog.Config{})
	for i, m := range msgs {
		parsed, err := sip.Parse([]byte(m.text(callID)))
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		src, dst := netip.MustParseAddrPort(callee), netip.MustParseAddrPort(caller)
		if m.up {
			src, dst = dst, src
		}
		ds.Apply(dialog.Observation{Msg: parsed, TS: s0.Add(m.at), Src: src, Dst: dst, Transport: packet.TransportUDP})
	}
	d, ok := ds.Get(callID)
	if !ok {
		t.Fatalf("no dialog %q", callID)
	}
	return analysis.FactsFrom(d)
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

const auth = `Authorization: Digest username="alice", realm="example.com", nonce="n", uri="sip:example.com", response="r"`

// TestSignalingDetectionsCrafted checks each detection on a dialog built
// message by message, the message indexes counted by hand.
func TestSignalingDetectionsCrafted(t *testing.T) {
	tests := []struct {
		name    string
		msgs    []sm
		opts    analysis.Options
		verdict string
		check   func(t *testing.T, s *analysis.SignalingDiagnosis, nj []analysis.NotJudged)
	}{
		{
			name: "auth loop, credentials sent and re-challenged",
			msgs: []sm{
				{0, true, "REGISTER", 1, "", "r1", "", []string{"Contact: <sip:alice@192.0.2.10>;expires=3600"}},
				{sec(0.01), false, "401", 1, "REGISTER", "r1", "s1", nil},
				{sec(0.02), true, "REGISTER", 2, "", "r2", "", []string{auth}},
				{sec(0.03), false, "401", 2, "REGISTER", "r2", "s2", nil},
				{sec(0.04), true, "REGISTER", 3, "", "r3", "", []string{auth}},
				{sec(0.05), false, "401", 3, "REGISTER", "r3", "s3", nil},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				a := s.AuthLoop
				if a == nil || a.Kind != "credential_failure" || a.Method != "REGISTER" || a.Challenges != 3 || a.AuthorizedRequests != 2 || a.Code != 401 ||
					!slices.Equal(a.Evidence, []int{1, 2, 3, 4, 5}) {
					t.Errorf("auth_loop: got %+v", a)
				}
				r := s.RegistrationFailure
				if r == nil || r.Kind != "auth_loop" || r.Code != 401 {
					t.Errorf("registration_failure: got %+v", r)
				}
				if ff := s.FinalFailure; ff == nil || ff.Code != 401 || ff.Class != "challenge" || ff.Method != "REGISTER" || !slices.Equal(ff.Evidence, []int{5}) {
					t.Errorf("final_failure: got %+v", ff)
				}
			},
		},
		{
			name: "auth loop, credentials never sent",
			msgs: []sm{
				{0, true, "INVITE", 1, "", "i1", "", nil},
				{sec(0.01), false, "407", 1, "INVITE", "i1", "s1", nil},
				{sec(0.02), true, "ACK", 1, "", "i1", "s1", nil},
				{sec(1), true, "INVITE", 2, "", "i2", "", nil},
				{sec(1.01), false, "407", 2, "INVITE", "i2", "s2", nil},
				{sec(1.02), true, "ACK", 2, "", "i2", "s2", nil},
				{sec(2), true, "INVITE", 3, "", "i3", "", nil},
				{sec(2.01), false, "407", 3, "INVITE", "i3", "s3", nil},
				{sec(2.02), true, "ACK", 3, "", "i3", "s3", nil},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				a := s.AuthLoop
				if a == nil || a.Kind != "silent_drop" || a.Method != "INVITE" || a.Challenges != 3 || a.AuthorizedRequests != 0 || a.Code != 407 ||
					!slices.Equal(a.Evidence, []int{1, 4, 7}) {
					t.Errorf("auth_loop: got %+v", a)
				}
				if s.RegistrationFailure != nil || s.Abandoned != nil || s.AckMissing != nil {
					t.Errorf("got registration %+v abandoned %+v ack %+v, want none", s.RegistrationFailure, s.Abandoned, s.AckMissing)
				}
			},
		},
		{
			name: "two challenges are not a loop",
			msgs: []sm{
				{0, true, "REGISTER", 1, "", "r1", "", nil},
				{sec(0.01), false, "401", 1, "REGISTER", "r1", "s1", nil},
				{sec(0.02), true, "REGISTER", 2, "", "r2", "", []string{auth}},
				{sec(0.03), false, "401", 2, "REGISTER", "r2", "s2", nil},
				{sec(0.04), true, "REGISTER", 3, "", "r3", "", []string{auth}},
				{sec(0.05), false, "200", 3, "REGISTER", "r3", "s3", nil},
			},
			verdict: "none",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				if s != nil {
					t.Errorf("got %+v, want nothing fired", s)
				}
			},
		},
		{
			name: "request retransmitted with no response",
			msgs: []sm{
				{0, true, "OPTIONS", 5, "", "o5", "", nil},
				{sec(0.5), true, "OPTIONS", 5, "", "o5", "", nil},
				{sec(1.5), true, "OPTIONS", 5, "", "o5", "", nil},
				{sec(3.5), true, "OPTIONS", 5, "", "o5", "", nil},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				if len(s.Retransmissions) != 1 {
					t.Fatalf("retransmissions: got %+v", s.Retransmissions)
				}
				r := s.Retransmissions[0]
				if r.Method != "OPTIONS" || r.CSeq != 5 || r.Branch != "o5" || r.Count != 4 || r.SpanMs != 3500 || !slices.Equal(r.Evidence, []int{0, 1, 2, 3}) {
					t.Errorf("got %+v", r)
				}
			},
		},
		{
			name: "2xx never acknowledged past Timer H",
			msgs: []sm{
				{0, true, "INVITE", 1, "", "i1", "", nil},
				{sec(0.1), false, "180", 1, "INVITE", "i1", "b1", nil},
				{sec(2), false, "200", 1, "INVITE", "i1", "b1", nil},
				{sec(2.5), false, "200", 1, "INVITE", "i1", "b1", nil},
				{sec(3.5), false, "200", 1, "INVITE", "i1", "b1", nil},
				{sec(5.5), false, "200", 1, "INVITE", "i1", "b1", nil},
				{sec(34.5), false, "BYE", 1, "", "x1", "a1", nil},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, nj []analysis.NotJudged) {
				a := s.AckMissing
				if a == nil || a.CSeq != 1 || a.AnswerCode != 200 || a.AnswerCopies != 4 || a.WaitedMs != 32500 || a.TimerHMs != 32000 ||
					!slices.Equal(a.Evidence, []int{2, 3, 4, 5}) {
					t.Errorf("ack_missing: got %+v", a)
				}
				if len(nj) != 0 {
					t.Errorf("not judged: got %+v", nj)
				}
			},
		},
		{
			name: "2xx without ACK, capture ends before Timer H",
			msgs: []sm{
				{0, true, "INVITE", 1, "", "i1", "", nil},
				{sec(2), false, "200", 1, "INVITE", "i1", "b1", nil},
				{sec(2.5), false, "200", 1, "INVITE", "i1", "b1", nil},
			},
			opts:    analysis.Options{CaptureEnd: s0.Add(sec(20))},
			verdict: "none",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, nj []analysis.NotJudged) {
				if s != nil {
					t.Errorf("got %+v, want nothing fired", s)
				}
				if len(nj) != 1 || nj[0].Detection != "ack_missing" || !strings.Contains(nj[0].Reason, "18.0 s after it") {
					t.Errorf("not judged: got %+v", nj)
				}
			},
		},
		{
			name: "no final response past Timer C",
			msgs: []sm{
				{0, true, "INVITE", 1, "", "i1", "", nil},
				{sec(0.05), false, "100", 1, "INVITE", "i1", "", nil},
				{sec(1), false, "180", 1, "INVITE", "i1", "b1", nil},
			},
			opts:    analysis.Options{CaptureEnd: s0.Add(sec(200))},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				a := s.Abandoned
				if a == nil || a.Kind != "no_final_response" || a.CSeq != 1 || a.WaitedMs != 200000 || a.TimerCMs != 180000 || a.Answered || !slices.Equal(a.Evidence, []int{0}) {
					t.Errorf("abandoned: got %+v", a)
				}
			},
		},
		{
			name: "no final response, capture ends before Timer C",
			msgs: []sm{
				{0, true, "INVITE", 1, "", "i1", "", nil},
				{sec(1), false, "180", 1, "INVITE", "i1", "b1", nil},
			},
			opts:    analysis.Options{CaptureEnd: s0.Add(sec(60))},
			verdict: "none",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, nj []analysis.NotJudged) {
				if s != nil {
					t.Errorf("got %+v, want nothing fired", s)
				}
				if len(nj) != 1 || nj[0].Detection != "abandoned" {
					t.Errorf("not judged: got %+v", nj)
				}
			},
		},
		{
			name: "cancelled before an answer",
			msgs: []sm{
				{0, true, "INVITE", 1, "", "i1", "", nil},
				{sec(0.05), false, "180", 1, "INVITE", "i1", "b1", nil},
				{sec(4), true, "CANCEL", 1, "", "i1", "", nil},
				{sec(4.01), false, "200", 1, "CANCEL", "i1", "b1", nil},
				{sec(4.02), false, "487", 1, "INVITE", "i1", "b1", nil},
				{sec(4.03), true, "ACK", 1, "", "i1", "b1", nil},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				a := s.Abandoned
				if a == nil || a.Kind != "cancelled" || a.CSeq != 1 || a.FinalCode != 487 || a.Answered || !slices.Equal(a.Evidence, []int{2, 4}) {
					t.Errorf("abandoned: got %+v", a)
				}
				if ff := s.FinalFailure; ff == nil || ff.Code != 487 || ff.Class != "canceled" {
					t.Errorf("final_failure: got %+v", ff)
				}
			},
		},
		{
			name: "REGISTER challenged, retried with credentials under a new From tag, registered",
			msgs: []sm{
				{0, true, "REGISTER", 1, "", "r1", "", []string{"Contact: <sip:alice@192.0.2.10>", "Expires: 600"}},
				{sec(0.01), false, "401", 1, "REGISTER", "r1", "s1", nil},
				{sec(0.02), true, "REGISTER", 2, "", "r2", "", []string{"From: <sip:alice@example.com>;tag=a2", auth, "Contact: <sip:alice@192.0.2.10>", "Expires: 600"}},
				{sec(0.03), false, "200", 2, "REGISTER", "r2", "s2", []string{"From: <sip:alice@example.com>;tag=a2", "Contact: <sip:alice@192.0.2.10>;expires=600"}},
			},
			verdict: "none",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				if s != nil {
					t.Errorf("got %+v, want nothing fired: the retry was registered", s)
				}
			},
		},
		{
			name: "REGISTER challenged, retried under a new From tag, refused",
			msgs: []sm{
				{0, true, "REGISTER", 1, "", "r1", "", nil},
				{sec(0.01), false, "401", 1, "REGISTER", "r1", "s1", nil},
				{sec(0.02), true, "REGISTER", 2, "", "r2", "", []string{"From: <sip:alice@example.com>;tag=a2", auth}},
				{sec(0.03), false, "403", 2, "REGISTER", "r2", "s2", []string{"From: <sip:alice@example.com>;tag=a2"}},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				if r := s.RegistrationFailure; r == nil || r.Kind != "rejected" || r.Code != 403 || !slices.Equal(r.Evidence, []int{2, 3}) {
					t.Errorf("registration_failure: got %+v, want rejected 403 on the retry", r)
				}
			},
		},
		{
			name: "registrar grants a shorter expiry",
			msgs: []sm{
				{0, true, "REGISTER", 1, "", "r1", "", []string{"Contact: <sip:alice@192.0.2.10>;expires=3600"}},
				{sec(0.01), false, "200", 1, "REGISTER", "r1", "s1", []string{"Contact: <sip:alice@192.0.2.99>;expires=60, <sip:alice@192.0.2.10>;expires=300"}},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				r := s.RegistrationFailure
				if r == nil || r.Kind != "shortened_expiry" || r.Code != 200 || r.RequestedExpirySec == nil || *r.RequestedExpirySec != 3600 ||
					r.GrantedExpirySec == nil || *r.GrantedExpirySec != 300 || !slices.Equal(r.Evidence, []int{0, 1}) {
					t.Errorf("registration_failure: got %+v", r)
				}
				if s.FinalFailure != nil {
					t.Errorf("final_failure: got %+v, want none", s.FinalFailure)
				}
			},
		},
		{
			name: "registrar grants what was asked",
			msgs: []sm{
				{0, true, "REGISTER", 1, "", "r1", "", []string{"Contact: <sip:alice@192.0.2.10>", "Expires: 600"}},
				{sec(0.01), false, "200", 1, "REGISTER", "r1", "s1", []string{"Contact: <sip:alice@192.0.2.10>;expires=600"}},
			},
			verdict: "none",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				if s != nil {
					t.Errorf("got %+v, want nothing fired", s)
				}
			},
		},
		{
			name: "registration refused with a Warning",
			msgs: []sm{
				{0, true, "REGISTER", 1, "", "r1", "", nil},
				{sec(0.01), false, "403", 1, "REGISTER", "r1", "s1", []string{`Warning: 399 registrar "account disabled"`, `Reason: SIP;cause=403;text="disabled"`}},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				ff := s.FinalFailure
				if ff == nil || ff.Code != 403 || ff.Method != "REGISTER" || ff.Warning != `399 registrar "account disabled"` ||
					ff.ReasonHeader != `SIP;cause=403;text="disabled"` || !slices.Equal(ff.Evidence, []int{1}) {
					t.Errorf("final_failure: got %+v", ff)
				}
				if r := s.RegistrationFailure; r == nil || r.Kind != "rejected" || r.Code != 403 || r.RequestedExpirySec != nil {
					t.Errorf("registration_failure: got %+v", r)
				}
			},
		},
		{
			name: "post-dial delay over the threshold",
			msgs: []sm{
				{0, true, "INVITE", 1, "", "i1", "", nil},
				{sec(0.2), false, "100", 1, "INVITE", "i1", "", nil},
				{sec(12.5), false, "180", 1, "INVITE", "i1", "b1", nil},
				{sec(15), false, "200", 1, "INVITE", "i1", "b1", nil},
				{sec(15.1), true, "ACK", 1, "", "k1", "b1", nil},
			},
			verdict: "signaling",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				p := s.PostDialDelay
				if p == nil || p.PDDMs != 12500 || p.ThresholdMs != 11000 || !slices.Equal(p.Evidence, []int{0, 2}) {
					t.Errorf("post_dial_delay: got %+v", p)
				}
				if ss := s.SlowSetup; ss == nil || ss.PDDMs != 12500 {
					t.Errorf("slow_setup: got %+v", ss)
				}
			},
		},
		{
			name: "post-dial delay under a raised threshold",
			msgs: []sm{
				{0, true, "INVITE", 1, "", "i1", "", nil},
				{sec(12.5), false, "180", 1, "INVITE", "i1", "b1", nil},
				{sec(15), false, "200", 1, "INVITE", "i1", "b1", nil},
				{sec(15.1), true, "ACK", 1, "", "k1", "b1", nil},
			},
			opts:    analysis.Options{SlowSetup: 13 * time.Second},
			verdict: "none",
			check: func(t *testing.T, s *analysis.SignalingDiagnosis, _ []analysis.NotJudged) {
				if s != nil {
					t.Errorf("got %+v, want nothing fired", s)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := crafted(t, "crafted-1", tc.msgs)
			d := analysis.Diagnose(f, media.NewStore(media.Config{}), tc.opts)
			if d.Verdict != tc.verdict {
				t.Errorf("verdict: got %s, want %s", d.Verdict, tc.verdict)
			}
			if d.Signaling != nil {
				// every detection is present in the JSON, null when clean
				b, _ := json.Marshal(d.Signaling)
				for _, k := range []string{"final_failure", "auth_loop", "retransmissions", "ack_missing", "abandoned", "post_dial_delay", "registration_failure"} {
					if !strings.Contains(string(b), `"`+k+`":`) {
						t.Errorf("%s missing from %s", k, b)
					}
				}
			}
			tc.check(t, d.Signaling, d.NotJudged)
		})
	}
}

// TestSignalingReadWithoutMessages: a detail read without its messages
// says which detections it could not judge.
func TestSignalingReadWithoutMessages(t *testing.T) {
	ds := dialog.New(dialog.Config{})
	m, _ := sip.Parse([]byte(sm{0, true, "REGISTER", 1, "", "r1", "", nil}.text("x")))
	ds.Apply(dialog.Observation{Msg: m, TS: s0})
	det, _ := ds.GetWith("x", dialog.Options{NoMessages: true})
	d := analysis.Diagnose(analysis.FactsFrom(det), media.NewStore(media.Config{}), analysis.Options{})
	var got []string
	for _, n := range d.NotJudged {
		got = append(got, n.Detection)
	}
	if want := []string{"final_failure", "auth_loop", "ack_missing", "abandoned", "registration_failure"}; !slices.Equal(got, want) || d.Signaling != nil {
		t.Errorf("got not judged %v signaling %+v, want %v and none", got, d.Signaling, want)
	}
}

// truthDialogs reads the per-Call-ID tshark answers of a capture.
type truthDialog struct {
	CallID            string         `json:"call_id"`
	Requests          map[string]int `json:"requests"`
	Responses         map[string]int `json:"responses"`
	InviteFinalStatus *int           `json:"invite_final_status"`
}

func truthDialogs(t *testing.T, name string) []truthDialog {
	t.Helper()
	doc := testcap.LoadTruth[struct {
		SIP struct {
			Dialogs []truthDialog `json:"dialogs"`
		} `json:"sip"`
	}](t, name)
	return doc.SIP.Dialogs
}

// TestFinalFailureAgainstTshark: on every public capture (each of whose
// dialogs carries at most one failure code), every dialog with a 4xx-6xx
// other than a challenge in tshark's answer has final_failure with that
// code on a method it sent, and no other dialog has one.
func TestFinalFailureAgainstTshark(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			st := media.NewStore(media.Config{})
			ds := dialog.New(dialog.Config{})
			if _, err := mediatest.Feed(t, testcap.Public(name), st, ds); err != nil {
				if strings.Contains(err.Error(), "unsupported capture format") {
					t.Skipf("%s: %v", name, err)
				}
				t.Fatalf("reading %s: %v", name, err)
			}
			facts := analysis.FactsFromStore(ds)
			got := map[string]*analysis.FinalFailure{}
			for _, f := range facts {
				if s := analysis.Diagnose(f, st, analysis.Options{}).Signaling; s != nil {
					got[f.CallID] = s.FinalFailure
				}
			}
			byCode := map[int]int{}
			for _, td := range truthDialogs(t, name) {
				want := 0
				for c, n := range td.Responses {
					var code int
					fmt.Sscan(c, &code)
					if code >= 400 && code != 401 && code != 407 && n > 0 {
						if want != 0 {
							t.Fatalf("%s: two failure codes in tshark's answer", td.CallID)
						}
						want = code
					}
				}
				ff := got[td.CallID]
				switch {
				case want == 0 && ff != nil:
					t.Errorf("%s: got final_failure %d, want none", td.CallID, ff.Code)
				case want != 0 && (ff == nil || ff.Code != want || td.Requests[ff.Method] == 0):
					t.Errorf("%s: got final_failure %+v, want %d on a request it sent (%v)", td.CallID, ff, want, td.Requests)
				case want != 0:
					byCode[want]++
				}
			}
			t.Logf("failures by code: %v", byCode)
		})
	}
}

// TestSignalingPublicCaptures checks values read from the messages with
// tshark (message index = position among the Call-ID's frames, from 0).
func TestSignalingPublicCaptures(t *testing.T) {
	tests := []struct {
		capture, callID string
		verdict         string
		check           func(t *testing.T, s *analysis.SignalingDiagnosis)
	}{
		{"sip-auth-failure.pcapng", "YzAwMDllYjUyNmVlZWFhZjE0NDViMWRkNDUyNzJmZDU.", "signaling", func(t *testing.T, s *analysis.SignalingDiagnosis) {
			// frames 1-4: REGISTER, 401, REGISTER with credentials, 403
			r := s.RegistrationFailure
			if r == nil || r.Kind != "rejected" || r.Code != 403 || !slices.Equal(r.Evidence, []int{2, 3}) || r.RequestedExpirySec == nil || *r.RequestedExpirySec != 3600 {
				t.Errorf("registration_failure: got %+v", r)
			}
			if ff := s.FinalFailure; ff == nil || ff.Code != 403 || ff.Reason != "Forbidden" || ff.Method != "REGISTER" || !slices.Equal(ff.Evidence, []int{3}) {
				t.Errorf("final_failure: got %+v", ff)
			}
			if s.AuthLoop != nil {
				t.Errorf("auth_loop: got %+v after one challenge", s.AuthLoop)
			}
		}},
		{"sip-auth-failure.pcapng", "MGJmNzkwZTBmYjg4NDAyMjM2ODRmMDMyYTdkNjZiNDU.", "signaling", func(t *testing.T, s *analysis.SignalingDiagnosis) {
			// frames 5-8: SUBSCRIBE, 401, SUBSCRIBE with credentials, 403
			if ff := s.FinalFailure; ff == nil || ff.Code != 403 || ff.Method != "SUBSCRIBE" || !slices.Equal(ff.Evidence, []int{3}) {
				t.Errorf("final_failure: got %+v", ff)
			}
			if s.RegistrationFailure != nil {
				t.Errorf("registration_failure: got %+v on a SUBSCRIBE", s.RegistrationFailure)
			}
		}},
		{"sip-488-codec-reject.pcapng", "NA4y5nr9Jk", "signaling", func(t *testing.T, s *analysis.SignalingDiagnosis) {
			// frames 7-13: INVITE, 401, ACK, INVITE with credentials, 100, 488, ACK
			if ff := s.FinalFailure; ff == nil || ff.Code != 488 || ff.Method != "INVITE" || ff.Class != "failure" || !slices.Equal(ff.Evidence, []int{5}) {
				t.Errorf("final_failure: got %+v", ff)
			}
			if s.AuthLoop != nil || s.AckMissing != nil || s.Abandoned != nil {
				t.Errorf("got auth %+v ack %+v abandoned %+v, want none", s.AuthLoop, s.AckMissing, s.Abandoned)
			}
		}},
		// media is not judged: the capture holds no RTP at all (media_not_captured), so the verdict is signaling (was both, on no_media)
		{"DTMFsipinfo.pcap", "2091060b-146f-e011-809a-0019cb53db77@admind-desktop", "signaling", func(t *testing.T, s *analysis.SignalingDiagnosis) {
			// frame 6 CANCELs INVITE CSeq 2, whose 200 (frame 10) crossed it
			a := s.Abandoned
			if a == nil || a.Kind != "cancelled" || a.CSeq != 2 || a.FinalCode != 200 || !a.Answered || !slices.Equal(a.Evidence, []int{5, 9}) {
				t.Errorf("abandoned: got %+v", a)
			}
			if s.FinalFailure != nil || s.AckMissing != nil {
				t.Errorf("got final %+v ack %+v, want none", s.FinalFailure, s.AckMissing)
			}
		}},
		{"sip-register.pcap", "17190996207220106510@10.33.6.101", "signaling", func(t *testing.T, s *analysis.SignalingDiagnosis) {
			// Contact expires=180 asked, expires=20 granted
			r := s.RegistrationFailure
			if r == nil || r.Kind != "shortened_expiry" || *r.RequestedExpirySec != 180 || *r.GrantedExpirySec != 20 || !slices.Equal(r.Evidence, []int{0, 1}) {
				t.Errorf("registration_failure: got %+v", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.capture+"/"+tc.callID, func(t *testing.T) {
			d := diagnose(t, tc.capture, tc.callID)
			if d.Verdict != tc.verdict || d.Signaling == nil {
				t.Fatalf("got verdict %s signaling %+v, want %s", d.Verdict, d.Signaling, tc.verdict)
			}
			tc.check(t, d.Signaling)
		})
	}
}

// TestSippBranchScenario: the INVITEs tshark saw refused 403 (1148
// Call-IDs) are exactly the dialogs whose final_failure is 403; the one
// 200 never acknowledged (254-4461@127.0.1.1, frame 1747 at 25.299 s,
// capture ends at 133.300 s) is the capture report's ack_missing. Each row
// is the call (docs/data-model.md), so the calls answered with SDP are
// counted too; the capture holds no RTP at all, so their media is not judged:
// one media_not_captured observation says so, never a no_media per call.
func TestSippBranchScenario(t *testing.T) {
	const name = "sipp-branch-scenario.pcapng"
	st, facts := load(t, name)
	want := map[string]bool{}
	for _, td := range truthDialogs(t, name) {
		if td.InviteFinalStatus != nil && *td.InviteFinalStatus == 403 {
			want[td.CallID] = true
		}
	}
	if len(want) != 1148 {
		t.Fatalf("tshark: %d Call-IDs refused 403, want 1148", len(want))
	}
	got := 0
	for _, f := range facts {
		s := analysis.Diagnose(f, st, analysis.Options{}).Signaling
		is403 := s != nil && s.FinalFailure != nil && s.FinalFailure.Code == 403
		if is403 != want[f.CallID] {
			t.Errorf("%s: got final_failure 403 %v, want %v", f.CallID, is403, want[f.CallID])
		}
		if is403 {
			got++
		}
	}
	if got != 1148 {
		t.Errorf("got %d dialogs with final_failure 403, want 1148", got)
	}
	r := analysis.CaptureReport(facts, st, analysis.CaptureFacts{SourceExhausted: true}, analysis.Options{})
	var ack, ff, nm, nc *analysis.Finding
	for i := range r.Findings {
		switch r.Findings[i].Kind {
		case "ack_missing":
			ack = &r.Findings[i]
		case "final_failure":
			ff = &r.Findings[i]
		case "no_media":
			nm = &r.Findings[i]
		case "media_not_captured":
			nc = &r.Findings[i]
		}
	}
	if nm != nil {
		t.Errorf("no_media: got %+v, want none (the capture holds no RTP)", nm)
	}
	if nc == nil || nc.Occurrences != 1 || len(nc.Evidence) != 1 || nc.Evidence[0].Counts["answered_calls_with_sdp"] != 5 {
		t.Errorf("media_not_captured: got %+v, want once, over 5 answered calls with SDP", nc)
	}
	if ff == nil || ff.Occurrences != 1148 || len(ff.Evidence) != analysis.MaxEvidence || ff.EvidenceOmitted != 1148-analysis.MaxEvidence {
		t.Errorf("final_failure: got %+v", ff)
	}
	if ack == nil || ack.Occurrences != 1 || ack.Evidence[0].CallID != "254-4461@127.0.1.1" ||
		ack.Evidence[0].Counts["waited_ms"] != 108001 || !slices.Equal(ack.Evidence[0].Messages, []int{5}) || ack.Evidence[0].Counts["answer_copies"] != 1 ||
		len(ack.Evidence[0].Frames) != 1 || !strings.HasPrefix(ack.Evidence[0].Frames[0], "sipp-branch-scenario.pcapng#1747@") ||
		ack.Rule != "ack_missing" || ack.Threshold["waited_ms"] != 32000 {
		t.Errorf("ack_missing: got %+v", ack)
	}
	if len(r.Findings) != 3 {
		for _, f := range r.Findings {
			t.Logf("%s %d", f.Kind, f.Occurrences)
		}
		t.Errorf("got %d findings, want 3", len(r.Findings))
	}
}

// TestCaptureReportSignaling: sip-auth-failure.pcapng is no longer clean.
func TestCaptureReportSignaling(t *testing.T) {
	tests := []struct {
		capture string
		want    map[string]int64 // kind → occurrences
	}{
		{"sip-auth-failure.pcapng", map[string]int64{"registration_failure": 1, "final_failure": 2}},
		{"DTMFsipinfo.pcap", map[string]int64{"abandoned_cancelled": 1}},
		{"b2bua-asterisk.pcapng", map[string]int64{"final_failure": 8}},     // 489 ×6, 404, 480
		{"sip-routing-error.pcapng", map[string]int64{"final_failure": 16}}, // 480 ×5, 489 ×8, 404 ×3
	}
	for _, tc := range tests {
		t.Run(tc.capture, func(t *testing.T) {
			st, facts := load(t, tc.capture)
			r := analysis.CaptureReport(facts, st, analysis.CaptureFacts{SourceExhausted: true}, analysis.Options{})
			if r.Clean {
				t.Errorf("got clean")
			}
			got := map[string]int64{}
			for _, f := range r.Findings {
				if _, ok := tc.want[f.Kind]; ok {
					got[f.Kind] = f.Occurrences
				}
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: got %d, want %d", k, got[k], v)
				}
			}
		})
	}
}
