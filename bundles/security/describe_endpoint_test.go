package security

import (
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

type deAnswer struct {
	EndpointKind     string         `json:"endpoint_kind"`
	Endpoint         string         `json:"endpoint"`
	Dialogs          int            `json:"dialogs"`
	ByMethod         map[string]int `json:"by_method"`
	ByState          map[string]int `json:"by_state"`
	MessagesSent     int            `json:"messages_sent"`
	MessagesReceived int            `json:"messages_received"`
	Calls            struct {
		Invites         int            `json:"invites"`
		WithFinalStatus int            `json:"with_final_status"`
		Failed          int            `json:"failed"`
		FailureRatePct  *float64       `json:"failure_rate_pct"`
		ByFinalStatus   map[string]int `json:"by_final_status"`
	} `json:"calls"`
	Registration struct {
		Applicable     bool     `json:"applicable"`
		Dialogs        int      `json:"dialogs"`
		Requests       int      `json:"requests"`
		Succeeded      int      `json:"succeeded"`
		Failed         int      `json:"failed"`
		AuthLoops      int      `json:"auth_loops"`
		ProblemCallIDs []string `json:"problem_call_ids"`
	} `json:"registration"`
	UserAgents []struct {
		Header string `json:"header"`
		Value  string `json:"value"`
		Count  int    `json:"count"`
	} `json:"user_agents"`
	Stack struct {
		BranchCookie  string `json:"branch_cookie"`
		TagShape      string `json:"tag_shape"`
		CallIDHasHost *bool  `json:"callid_has_host"`
		Inference     string `json:"inference"`
		Confidence    int    `json:"confidence"`
		RequestsRead  int    `json:"requests_read"`
		Mixed         bool   `json:"mixed"`
	} `json:"stack"`
	Streams struct {
		Count       int      `json:"count"`
		Orphaned    int      `json:"orphaned"`
		Packets     uint64   `json:"packets"`
		LostPackets int64    `json:"lost_packets"`
		MaxJitterMs *float64 `json:"max_jitter_ms"`
		Codecs      []string `json:"codecs"`
	} `json:"streams"`
	Findings struct {
		Selectable     bool     `json:"selectable"`
		Findings       []string `json:"findings"`
		ArmedKinds     []string `json:"armed_kinds"`
		DetectionArmed bool     `json:"detection_armed"`
		Note           string   `json:"note"`
	} `json:"findings"`
	ContactRewrite *struct {
		Observation struct {
			ContactHost        string `json:"contact_host"`
			ContactHostPrivate *bool  `json:"contact_host_private"`
			SourcePublic       bool   `json:"source_public"`
			RewriteRequired    bool   `json:"rewrite_required"`
		} `json:"observation"`
		Verdict           string `json:"verdict"`
		RequestsToContact int    `json:"requests_to_contact"`
		RequestsToSource  int    `json:"requests_to_source"`
		IsFinding         bool   `json:"is_finding"`
	} `json:"contact_rewrite"`
	RecentDialogs []struct {
		CallID   string `json:"call_id"`
		FromUser string `json:"from_user"`
	} `json:"recent_dialogs"`
	Truncated bool `json:"truncated"`
}

// TestDescribeEndpointByIPMatchesTshark: 172.16.98.145 in
// b2bua-asterisk.pcapng, hand-verified with tshark:
//
//	-Y 'sip && ip.src==172.16.98.145' → 20 messages; ip.dst → 21
//	Call-IDs with a message to or from it → 9 (1 INVITE, 1 REGISTER,
//	  4 SUBSCRIBE, 3 PUBLISH)
//	-Y 'rtp && (ip.src==172.16.98.145 || ip.dst==172.16.98.145)' → SSRCs
//	  0x6ab21e82 (355 packets) and 0x44830d58 (1): 356 packets, PCMU
//	User-Agent of its 13 requests: Z 3.9.32144 r32121
func TestDescribeEndpointByIPMatchesTshark(t *testing.T) {
	var got deAnswer
	call(t, load(t, "b2bua-asterisk.pcapng"), "describe_endpoint", `{"ip":"172.16.98.145"}`, &got)
	if got.EndpointKind != "ip" || got.Endpoint != "172.16.98.145" || got.Dialogs != 9 || got.MessagesSent != 20 || got.MessagesReceived != 21 {
		t.Errorf("kind %s %s dialogs %d sent %d received %d; want ip, 9, 20, 21", got.EndpointKind, got.Endpoint, got.Dialogs, got.MessagesSent, got.MessagesReceived)
	}
	if m := got.ByMethod; m["INVITE"] != 1 || m["REGISTER"] != 1 || m["SUBSCRIBE"] != 4 || m["PUBLISH"] != 3 {
		t.Errorf("by_method %v", m)
	}
	if c := got.Calls; c.Invites != 1 || c.WithFinalStatus != 1 || c.Failed != 0 || c.FailureRatePct == nil || *c.FailureRatePct != 0 || c.ByFinalStatus["200"] != 1 {
		t.Errorf("calls %+v", c)
	}
	if r := got.Registration; !r.Applicable || r.Dialogs != 1 || r.Succeeded != 1 || r.Failed != 0 || len(r.ProblemCallIDs) != 0 {
		t.Errorf("registration %+v", r)
	}
	if len(got.UserAgents) != 1 || got.UserAgents[0].Header != "User-Agent" || unfence(got.UserAgents[0].Value) != "Z 3.9.32144 r32121" ||
		got.UserAgents[0].Value == "Z 3.9.32144 r32121" || got.UserAgents[0].Count != 13 {
		t.Errorf("user_agents %+v, want one fenced banner on 13 requests", got.UserAgents)
	}
	if s := got.Streams; s.Count != 2 || s.Packets != 356 || s.Orphaned != 0 || len(s.Codecs) != 1 || unfence(s.Codecs[0]) != "PCMU" {
		t.Errorf("streams %+v", s)
	}
	if got.Stack.RequestsRead != 13 || got.Stack.BranchCookie != "z9hG4bK" || got.Stack.Inference != "" {
		t.Errorf("stack %+v: 13 requests, no library inferred (one observation at most)", got.Stack)
	}
	if f := got.Findings; !f.Selectable || f.DetectionArmed || len(f.Findings) != 0 || len(f.ArmedKinds) != 0 || f.Note == "" {
		t.Errorf("findings %+v: selectable by ip, nothing armed, said so", f)
	}
	// The phone's Contact is its own (private) address, the registrar on
	// its LAN: nothing to rewrite, so nothing is a finding.
	if cr := got.ContactRewrite; cr == nil || cr.Observation.ContactHost != "172.16.98.145:40216" || cr.Observation.RewriteRequired || cr.IsFinding {
		t.Errorf("contact_rewrite %+v", cr)
	}
	if len(got.RecentDialogs) != 9 || got.Truncated {
		t.Errorf("recent_dialogs %d truncated %v, want 9, false", len(got.RecentDialogs), got.Truncated)
	}
}

// TestDescribeEndpointByUser: telephone1 is the From or To user of 3
// dialogs (a REGISTER and two INVITE legs); a user has no socket, so no
// messages sent or received; its requests' syntax (hex branch, as-hex
// From tags) reads as chan_sip with two agreeing observations, mixed
// because the B2BUA's legs and the phone's differ; findings are not
// selectable by user.
func TestDescribeEndpointByUser(t *testing.T) {
	var got deAnswer
	call(t, load(t, "b2bua-asterisk.pcapng"), "describe_endpoint", `{"user":"telephone1","limit":1}`, &got)
	if got.EndpointKind != "user" || got.Dialogs != 3 || got.MessagesSent != 0 || got.MessagesReceived != 0 || got.ByMethod["INVITE"] != 2 {
		t.Errorf("got %+v", got)
	}
	if got.Stack.Inference != "chan_sip" || got.Stack.Confidence != 2 || !got.Stack.Mixed {
		t.Errorf("stack %+v", got.Stack)
	}
	if got.Findings.Selectable {
		t.Error("findings selectable by user")
	}
	if len(got.RecentDialogs) != 1 || !got.Truncated {
		t.Errorf("limit 1: %d recent dialogs, truncated %v", len(got.RecentDialogs), got.Truncated)
	}
}

// TestDescribeEndpointRegistrationFailure: 172.16.98.1 in
// sip-auth-failure.pcapng sent a REGISTER refused 403 after a 401 (tshark
// frames 1-4); with no INVITE, the failure rate is null, not 0.
func TestDescribeEndpointRegistrationFailure(t *testing.T) {
	var got deAnswer
	call(t, load(t, "sip-auth-failure.pcapng"), "describe_endpoint", `{"ip":"172.16.98.1"}`, &got)
	r := got.Registration
	if !r.Applicable || r.Dialogs != 1 || r.Requests != 2 || r.Succeeded != 0 || r.Failed != 1 ||
		len(r.ProblemCallIDs) != 1 || r.ProblemCallIDs[0] != "YzAwMDllYjUyNmVlZWFhZjE0NDViMWRkNDUyNzJmZDU." {
		t.Errorf("registration %+v", r)
	}
	if got.Calls.Invites != 0 || got.Calls.FailureRatePct != nil {
		t.Errorf("calls %+v: no INVITE, rate null", got.Calls)
	}
}

// TestDescribeEndpointWithoutRegisterSaysNotApplicable: the sample
// capture's caller sent no REGISTER: registration is not applicable and
// contact_rewrite is absent.
func TestDescribeEndpointWithoutRegisterSaysNotApplicable(t *testing.T) {
	var got deAnswer
	call(t, load(t, "sip-rtp-g711.pcap"), "describe_endpoint", `{"ip":"10.0.2.20"}`, &got)
	if got.Registration.Applicable || got.ContactRewrite != nil || got.Dialogs != 2 || got.Calls.Invites != 2 {
		t.Errorf("got %+v", got)
	}
}

// registerThenInvite feeds a REGISTER from a public address with a private
// Contact, its 200, then an INVITE to the AoR the proxy sends to inviteTo.
func registerThenInvite(t *testing.T, inviteTo string) *engine.Capture {
	t.Helper()
	c := engine.New(engine.Config{Node: "test"}, nil)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.HandlePacket(sipPacket(t0, "203.0.113.9:5060", "198.51.100.1:5060", `REGISTER sip:example.com SIP/2.0
Via: SIP/2.0/UDP 192.168.1.50:5060;branch=z9hG4bKreg1
From: <sip:alice@example.com>;tag=r1
To: <sip:alice@example.com>
Call-ID: reg-1
CSeq: 1 REGISTER
Contact: <sip:alice@192.168.1.50:5060>
Expires: 3600
Content-Length: 0

`))
	c.HandlePacket(sipPacket(t0.Add(10*time.Millisecond), "198.51.100.1:5060", "203.0.113.9:5060", `SIP/2.0 200 OK
Via: SIP/2.0/UDP 192.168.1.50:5060;branch=z9hG4bKreg1
From: <sip:alice@example.com>;tag=r1
To: <sip:alice@example.com>;tag=s1
Call-ID: reg-1
CSeq: 1 REGISTER
Contact: <sip:alice@192.168.1.50:5060>;expires=3600
Content-Length: 0

`))
	if inviteTo != "" {
		c.HandlePacket(sipPacket(t0.Add(time.Minute), "198.51.100.1:5060", inviteTo, `INVITE sip:alice@192.168.1.50:5060 SIP/2.0
Via: SIP/2.0/UDP 198.51.100.1:5060;branch=z9hG4bKinv1
From: <sip:bob@example.com>;tag=b1
To: <sip:alice@example.com>
Call-ID: inv-1
CSeq: 1 INVITE
Contact: <sip:bob@198.51.100.1>
Content-Length: 0

`))
	}
	return c
}

// TestDescribeEndpointPrivateContactNeedsALaterRequest: a private Contact
// from a public source is an observation; it becomes a finding only when a
// later request to the AoR goes to the private host.
func TestDescribeEndpointPrivateContactNeedsALaterRequest(t *testing.T) {
	for _, tc := range []struct {
		name, inviteTo, verdict string
		toContact, toSource     int
		finding                 bool
	}{
		{"the proxy sent the INVITE to the private host", "192.168.1.50:5060", "not-rewritten", 1, 0, true},
		{"the proxy sent it where the REGISTER came from", "203.0.113.9:5060", "rewritten", 0, 1, false},
		{"no later request: open, not clean", "", "no-later-requests", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got deAnswer
			call(t, registerThenInvite(t, tc.inviteTo), "describe_endpoint", `{"ip":"203.0.113.9"}`, &got)
			cr := got.ContactRewrite
			if cr == nil {
				t.Fatal("no contact_rewrite")
			}
			o := cr.Observation
			if o.ContactHost != "192.168.1.50:5060" || o.ContactHostPrivate == nil || !*o.ContactHostPrivate || !o.SourcePublic || !o.RewriteRequired {
				t.Errorf("observation %+v", o)
			}
			if cr.Verdict != tc.verdict || cr.RequestsToContact != tc.toContact || cr.RequestsToSource != tc.toSource || cr.IsFinding != tc.finding {
				t.Errorf("got %+v, want %s %d/%d finding %v", cr, tc.verdict, tc.toContact, tc.toSource, tc.finding)
			}
		})
	}
}

// TestDescribeEndpointRefusals: neither selector, both, or an ip that is
// not an address are invalid arguments (-32602).
func TestDescribeEndpointRefusals(t *testing.T) {
	c := load(t, "sip-register.pcap")
	for _, args := range []string{`{}`, `{"ip":"10.33.6.101","user":"201"}`, `{"ip":"10.33.6"}`} {
		e := callErr(t, c, "describe_endpoint", args)
		if e.Code != sdk.CodeInvalidParams || e.StableKind() != sdk.KindInvalidArgument {
			t.Errorf("%s: got %d %s (%s)", args, e.Code, e.StableKind(), e.Message)
		}
	}
}
