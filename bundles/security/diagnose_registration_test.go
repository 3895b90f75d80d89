package security

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

type drAnswer struct {
	CallID          string `json:"call_id"`
	Applicable      bool   `json:"applicable"`
	Reason          string `json:"reason"`
	Requests        *int   `json:"requests"`
	FinalStatusCode int    `json:"final_status_code"`
	Registered      *bool  `json:"registered"`
	AuthLoop        *bool  `json:"auth_loop"`
	AuthLoopDetail  *struct {
		Kind       string `json:"kind"`
		Challenges int    `json:"challenges"`
	} `json:"auth_loop_detail"`
	RegistrationFailure *struct {
		Kind     string `json:"kind"`
		Code     int    `json:"code"`
		Evidence []struct {
			MessageIndex int    `json:"message_index"`
			Frame        string `json:"frame"`
		} `json:"evidence"`
		RequestedExpirySec *int64 `json:"requested_expiry_sec"`
		GrantedExpirySec   *int64 `json:"granted_expiry_sec"`
	} `json:"registration_failure"`
	ContactRewrite *struct {
		ContactHost     string `json:"contact_host"`
		RewriteRequired bool   `json:"rewrite_required"`
		Verdict         string `json:"verdict"`
		IsFinding       bool   `json:"is_finding"`
	} `json:"contact_rewrite"`
	Hints []string `json:"hints"`
}

// frameNo is the ordinal (tshark's frame.number) of an evidence pointer
// <source>#<ordinal>@<digest>.
func frameNo(t *testing.T, p string) int {
	t.Helper()
	_, rest, _ := strings.Cut(p, "#")
	ord, _, _ := strings.Cut(rest, "@")
	n, err := strconv.Atoi(ord)
	if err != nil {
		t.Fatalf("pointer %q: %v", p, err)
	}
	return n
}

// TestDiagnoseRegistrationOnPublicCaptures, hand-verified with tshark
// (-T fields -e frame.number -e sip.Method -e sip.Status-Code -e
// sip.Contact):
//
//	sip-register.pcap: 1 REGISTER Contact ...;expires=180, 2 200 with
//	  Contact ...;expires=20: granted 20 s of the 180 s asked
//	sip-auth-failure.pcapng: 1 REGISTER, 2 401, 3 REGISTER (credentials),
//	  4 403: rejected, the evidence is frames 3 and 4
func TestDiagnoseRegistrationOnPublicCaptures(t *testing.T) {
	for _, tc := range []struct {
		capture, callID, kind string
		code, final           int
		registered            bool
		requested             int64
		granted               *int64
		frames                []int
	}{
		{"sip-register.pcap", "17190996207220106510@10.33.6.101", "shortened_expiry", 200, 200, true, 180, ptr(int64(20)), []int{1, 2}},
		{"sip-auth-failure.pcapng", "YzAwMDllYjUyNmVlZWFhZjE0NDViMWRkNDUyNzJmZDU.", "rejected", 403, 403, false, 3600, nil, []int{3, 4}},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			var got drAnswer
			call(t, load(t, tc.capture), "diagnose_registration", `{"call_id":"`+tc.callID+`"}`, &got)
			if !got.Applicable || got.FinalStatusCode != tc.final || got.Registered == nil || *got.Registered != tc.registered ||
				got.AuthLoop == nil || *got.AuthLoop {
				t.Errorf("got %+v", got)
			}
			f := got.RegistrationFailure
			if f == nil {
				t.Fatal("no registration_failure")
			}
			if f.Kind != tc.kind || f.Code != tc.code || f.RequestedExpirySec == nil || *f.RequestedExpirySec != tc.requested ||
				(f.GrantedExpirySec == nil) != (tc.granted == nil) || tc.granted != nil && *f.GrantedExpirySec != *tc.granted {
				t.Errorf("registration_failure %+v", f)
			}
			if len(f.Evidence) != len(tc.frames) {
				t.Fatalf("evidence %+v, want frames %v", f.Evidence, tc.frames)
			}
			for i, e := range f.Evidence {
				if frameNo(t, e.Frame) != tc.frames[i] {
					t.Errorf("evidence %d: %s, want frame %d", i, e.Frame, tc.frames[i])
				}
			}
			if len(got.Hints) == 0 || got.ContactRewrite == nil || got.ContactRewrite.RewriteRequired || got.ContactRewrite.IsFinding {
				t.Errorf("hints %v contact_rewrite %+v", got.Hints, got.ContactRewrite)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestDiagnoseRegistrationAuthLoop: three credentialed REGISTERs each
// challenged 401 and never accepted are an auth loop (credential_failure),
// core/analysis' registration_failure of kind auth_loop.
func TestDiagnoseRegistrationAuthLoop(t *testing.T) {
	c := engine.New(engine.Config{Node: "test"}, nil)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= 3; i++ {
		auth := ""
		if i > 1 {
			auth = "Authorization: Digest username=\"alice\", realm=\"example.com\", nonce=\"n\", uri=\"sip:example.com\", response=\"00\"\n"
		}
		c.HandlePacket(sipPacket(t0.Add(time.Duration(i)*time.Second), "192.0.2.10:5060", "192.0.2.1:5060", fmt.Sprintf(`REGISTER sip:example.com SIP/2.0
Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKr%d
From: <sip:alice@example.com>;tag=a1
To: <sip:alice@example.com>
Call-ID: loop-1
CSeq: %d REGISTER
Contact: <sip:alice@192.0.2.10>
%sContent-Length: 0

`, i, i, auth)))
		c.HandlePacket(sipPacket(t0.Add(time.Duration(i)*time.Second+10*time.Millisecond), "192.0.2.1:5060", "192.0.2.10:5060", fmt.Sprintf(`SIP/2.0 401 Unauthorized
Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKr%d
From: <sip:alice@example.com>;tag=a1
To: <sip:alice@example.com>;tag=s%d
Call-ID: loop-1
CSeq: %d REGISTER
WWW-Authenticate: Digest realm="example.com", nonce="n%d"
Content-Length: 0

`, i, i, i, i)))
	}
	var got drAnswer
	call(t, c, "diagnose_registration", `{"call_id":"loop-1"}`, &got)
	if !got.Applicable || got.AuthLoop == nil || !*got.AuthLoop || got.AuthLoopDetail == nil || got.AuthLoopDetail.Challenges != 3 ||
		got.AuthLoopDetail.Kind != "credential_failure" || got.RegistrationFailure == nil || got.RegistrationFailure.Kind != "auth_loop" ||
		got.RegistrationFailure.Code != 401 || got.FinalStatusCode != 401 || *got.Registered || *got.Requests != 3 {
		t.Errorf("got %+v loop %+v failure %+v", got, got.AuthLoopDetail, got.RegistrationFailure)
	}
}

// TestDiagnoseRegistrationOfACallIsNotApplicable: an INVITE dialog answers
// applicable false with the call_id and a reason, nothing else.
func TestDiagnoseRegistrationOfACallIsNotApplicable(t *testing.T) {
	var got drAnswer
	call(t, load(t, "sip-rtp-g711.pcap"), "diagnose_registration", `{"call_id":"1-1966@10.0.2.20"}`, &got)
	if got.Applicable || got.CallID != "1-1966@10.0.2.20" || got.Reason == "" || got.Requests != nil || got.AuthLoop != nil || got.ContactRewrite != nil {
		t.Errorf("got %+v", got)
	}
}

// TestDiagnoseRegistrationRefusals: an unknown Call-ID is unknown_id, an
// empty one missing_argument, both -32602.
func TestDiagnoseRegistrationRefusals(t *testing.T) {
	c := load(t, "sip-register.pcap")
	for _, tc := range []struct {
		args string
		kind sdk.Kind
	}{
		{`{"call_id":"nope@nowhere"}`, sdk.KindUnknownID},
		{`{"call_id":""}`, sdk.KindMissingArgument},
	} {
		e := callErr(t, c, "diagnose_registration", tc.args)
		if e.Code != sdk.CodeInvalidParams || e.StableKind() != tc.kind {
			t.Errorf("%s: got %d %s (%s)", tc.args, e.Code, e.StableKind(), e.Message)
		}
	}
}
