package lint

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/media"
)

// ruleCase is one rule's pair of crafted inputs: one that breaks the rule
// (wantIndex is the message the finding must point at) and one that keeps it.
type ruleCase struct {
	rule      string
	fail      func(t *testing.T) Input
	wantIndex int
	pass      func(t *testing.T) Input
}

// one wraps a single message as a dialog.
func one(b *mb) func(t *testing.T) Input {
	return func(t *testing.T) Input { return Input{Messages: msgs(t, b)} }
}

// seq wraps a message sequence as a dialog.
func seq(bs ...*mb) func(t *testing.T) Input {
	return func(t *testing.T) Input { return Input{Messages: msgs(t, bs...)} }
}

// withStreams wraps a message sequence and streams as a dialog.
func withStreams(bs []*mb, ss ...media.StreamInfo) func(t *testing.T) Input {
	return func(t *testing.T) Input { return Input{Messages: msgs(t, bs...), Streams: ss} }
}

// reinvite is an in-dialog INVITE from A with its own branch and CSeq 2.
func reinvite(body string) *mb {
	return req("INVITE").set("Via", "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKre").
		set("To", "Bob <sip:bob@example.com>;tag=b1").set("CSeq", "2 INVITE").withSDP(body)
}

func reinviteOK(body string) *mb {
	return resp(200, "OK", "INVITE").set("Via", "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKre").
		set("CSeq", "2 INVITE").withSDP(body)
}

var ruleCases = []ruleCase{
	{rule: "SIP-3261-8.1.1-MANDATORY-HEADER-MISSING",
		fail: one(req("INVITE").del("Via")), pass: one(req("INVITE"))},
	{rule: "SIP-3261-20.16-CSEQ-MALFORMED",
		fail: one(req("INVITE").set("CSeq", "one INVITE")), pass: one(req("INVITE"))},
	{rule: "SIP-3261-20.14-CONTENT-LENGTH-MISMATCH",
		fail: one(req("MESSAGE").set("Content-Type", "text/plain").set("Content-Length", "100").withBody("hello")),
		pass: one(req("MESSAGE").set("Content-Type", "text/plain").withBody("hello"))},
	{rule: "SIP-3261-20.14-CONTENT-LENGTH-MALFORMED",
		fail: one(req("MESSAGE").set("Content-Type", "text/plain").set("Content-Length", "abc").withBody("hello")),
		pass: one(req("MESSAGE").set("Content-Type", "text/plain").set("Content-Length", "5").withBody("hello"))},
	{rule: "SIP-3261-20.14-CONTENT-LENGTH-MALFORMED",
		fail: one(req("INVITE").set("Content-Length", "-5")),
		pass: one(req("INVITE").set("Content-Length", "0"))},
	{rule: "SIP-3261-7.5-JUNK-BEFORE-START-LINE",
		fail: one(req("OPTIONS").junk("\x00\x01garbage\r\n")),
		pass: one(req("OPTIONS").junk("\r\n\r\n"))},
	{rule: "SIP-3261-25.1-HEADER-CONTROL-BYTE",
		fail: one(req("INVITE").set("Subject", "lunch\x01today")),
		pass: one(req("INVITE").set("Subject", "lunch\r\n today"))},
	{rule: "SIP-3261-20-URI-BRACKETS",
		fail: one(req("INVITE").set("To", "sip:bob@example.com?subject=lunch")),
		pass: one(req("INVITE").set("To", "<sip:bob@example.com?subject=lunch>").set("From", "sip:alice@example.com;tag=a1"))},
	{rule: "SIP-3261-19.1.1-URI-PARAM-DEMOTED",
		fail: one(req("INVITE").set("Contact", "sip:alice@10.0.0.1:5060;transport=tcp")),
		pass: one(req("INVITE").set("Contact", "<sip:alice@10.0.0.1:5060;transport=tcp>").set("From", "sip:alice@example.com;tag=a1"))},
	{rule: "SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING",
		fail: one(req("OPTIONS").del("Max-Forwards")), pass: one(req("OPTIONS"))},
	{rule: "SIP-3261-20.22-MAX-FORWARDS-RANGE",
		fail: one(req("INVITE").set("Max-Forwards", "0")), pass: one(req("INVITE").set("Max-Forwards", "70"))},
	{rule: "SIP-3261-8.1.1.7-BRANCH-COOKIE",
		fail: one(req("INVITE").set("Via", "SIP/2.0/UDP 10.0.0.1:5060;branch=1234")), pass: one(req("INVITE"))},
	{rule: "SIP-3261-8.1.1.5-CSEQ-METHOD-MISMATCH",
		fail: one(req("INVITE").set("CSeq", "1 ACK")), pass: one(req("INVITE"))},
	{rule: "SIP-3261-12.1.1-CONTACT-MISSING-IN-2XX",
		fail: one(resp(200, "OK", "INVITE").del("Contact")), pass: one(resp(200, "OK", "INVITE"))},
	{rule: "SIP-3262-3-RELIABLE-PROVISIONAL-WITHOUT-RSEQ",
		fail: one(resp(183, "Session Progress", "INVITE").set("Require", "100rel")),
		pass: one(resp(183, "Session Progress", "INVITE").set("Require", "100rel").set("RSeq", "1"))},
	{rule: "SIP-4028-7.1-SESSION-EXPIRES-BELOW-MIN-SE",
		fail: one(req("INVITE").set("Session-Expires", "100").set("Min-SE", "120")),
		pass: one(req("INVITE").set("Session-Expires", "1800").set("Min-SE", "90"))},
	{rule: "SIP-4028-4-SESSION-EXPIRES-TOO-SMALL",
		fail: one(req("INVITE").set("x", "60")), pass: one(req("INVITE").set("Session-Expires", "1800"))},
	{rule: "SIP-4028-5-MIN-SE-TOO-SMALL",
		fail: one(req("INVITE").set("Min-SE", "30")), pass: one(req("INVITE").set("Min-SE", "90"))},
	{rule: "SIP-4028-9-REFRESHER-MISSING",
		fail: one(resp(200, "OK", "INVITE").set("Session-Expires", "1800")),
		pass: one(resp(200, "OK", "INVITE").set("Session-Expires", "1800;refresher=uac"))},
	{rule: "SIP-7989-5-SESSION-ID-MALFORMED",
		fail: one(req("INVITE").set("Session-ID", "ab30317f1a784dc48ff824d0d37;remote=00000000000000000000000000000000")),
		pass: one(req("INVITE").set("Session-ID", "ab30317f1a784dc48ff824d0d3715d86;remote=00000000000000000000000000000000"))},
	{rule: "SIP-7989-5-SESSION-ID-UPPERCASE",
		fail: one(req("INVITE").set("Session-ID", "AB30317F1A784DC48FF824D0D3715D86;remote=00000000000000000000000000000000")),
		pass: one(req("INVITE").set("Session-ID", "ab30317f1a784dc48ff824d0d3715d86;remote=00000000000000000000000000000000"))},
	{rule: "SIP-7989-11-SESSION-ID-LEGACY-FORM",
		fail: one(req("INVITE").set("Session-ID", "ab30317f1a784dc48ff824d0d3715d86")),
		pass: one(req("INVITE").set("Session-ID", "ab30317f1a784dc48ff824d0d3715d86;remote=47755a9de7794ba387653f2099600ef2"))},
	{rule: "SIP-3261-20.15-CONTENT-TYPE-MISSING",
		fail: one(req("MESSAGE").withBody("hello")),
		pass: one(req("MESSAGE").set("Content-Type", "text/plain").withBody("hello"))},
	{rule: "SIP-3261-8.2.6.2-TO-TAG-MISSING-IN-RESPONSE",
		fail: one(resp(180, "Ringing", "INVITE").set("To", "Bob <sip:bob@example.com>")),
		// 100 Trying is the one response that may go without a tag.
		pass: one(resp(100, "Trying", "INVITE").set("To", "Bob <sip:bob@example.com>"))},
	{rule: "SIP-3261-10.2.2-CONTACT-STAR-MISUSE",
		fail: one(req("REGISTER").set("Contact", "*").set("Expires", "3600")),
		pass: one(req("REGISTER").set("Contact", "*").set("Expires", "0"))},
	{rule: "SIP-3261-8.1.1.2-TO-TAG-IN-INITIAL-REQUEST",
		fail: seq(req("INVITE").set("To", "Bob <sip:bob@example.com>;tag=stale"), resp(200, "OK", "INVITE")),
		// A re-INVITE carries the tag its 200 echoes.
		pass: seq(req("INVITE").set("To", "Bob <sip:bob@example.com>;tag=b1"), resp(200, "OK", "INVITE"))},
	{rule: "SIP-3261-17.1.1.3-ACK-CSEQ-MISMATCH",
		fail: seq(req("INVITE"), resp(200, "OK", "INVITE"), req("ACK").set("CSeq", "2 ACK")), wantIndex: 2,
		pass: seq(req("INVITE"), resp(200, "OK", "INVITE"), req("ACK"))},
	{rule: "SIP-3262-4-PRACK-MISSING",
		fail: seq(req("INVITE").set("Supported", "100rel"),
			resp(183, "Session Progress", "INVITE").set("Require", "100rel").set("RSeq", "1"),
			resp(200, "OK", "INVITE")), wantIndex: 1,
		pass: seq(req("INVITE").set("Supported", "100rel"),
			resp(183, "Session Progress", "INVITE").set("Require", "100rel").set("RSeq", "1"),
			req("PRACK").set("CSeq", "2 PRACK").set("RAck", "1 1 INVITE"),
			resp(200, "OK", "INVITE"))},
	{rule: "SDP-3264-6.1-ANSWER-NO-COMMON-FORMAT",
		fail: seq(call(sdpA(1), strings.Replace(strings.Replace(sdpB(1), "RTP/AVP 0", "RTP/AVP 8", 1), "0 PCMU", "8 PCMA", 1))...), wantIndex: 1,
		pass: seq(call(sdpA(1), sdpB(1))...)},
	{rule: "SDP-3264-6.1-ANSWER-EXTRA-FORMAT",
		fail: seq(call(sdpA(1), strings.Replace(sdpB(1), "RTP/AVP 0", "RTP/AVP 0 8", 1))...), wantIndex: 1,
		pass: seq(call(sdpA(1), sdpB(1))...)},
	{rule: "SDP-3264-6.1-ANSWER-DIRECTION-ILLEGAL",
		fail: seq(call(sdpA(1, "a=sendonly"), sdpB(1, "a=sendonly"))...), wantIndex: 1,
		pass: seq(call(sdpA(1, "a=sendonly"), sdpB(1, "a=recvonly"))...)},
	{rule: "SDP-3264-8.4-HOLD-CONNECTION-ZERO",
		fail: seq(append(call(sdpA(1), sdpB(1)),
			reinvite(strings.Replace(sdpA(2), "c=IN IP4 10.0.0.1", "c=IN IP4 0.0.0.0", 1)), reinviteOK(sdpB(2, "a=recvonly")))...), wantIndex: 3,
		pass: seq(append(call(sdpA(1), sdpB(1)), reinvite(sdpA(2, "a=sendonly")), reinviteOK(sdpB(2, "a=recvonly")))...)},
	{rule: "SDP-4566-5-MANDATORY-LINE-MISSING",
		fail: seq(call(strings.Replace(sdpA(1), "s=-\n", "", 1), sdpB(1))...),
		pass: seq(call(sdpA(1), sdpB(1))...)},
	{rule: "SDP-4566-5.7-CONNECTION-MISSING",
		fail: seq(call(sdpA(1), strings.Replace(sdpB(1), "c=IN IP4 10.0.0.2\n", "", 1))...), wantIndex: 1,
		pass: seq(call(sdpA(1), sdpB(1))...)},
	{rule: "SDP-3264-6-ANSWER-MEDIA-COUNT-MISMATCH",
		fail: seq(call(sdpA(1)+"m=video 6002 RTP/AVP 34\n", sdpB(1))...), wantIndex: 1,
		pass: seq(call(sdpA(1)+"m=video 6002 RTP/AVP 34\n", sdpB(1)+"m=video 0 RTP/AVP 34\n")...)},
	{rule: "SDP-3264-8-ORIGIN-VERSION-NOT-INCREMENTED",
		fail: seq(append(call(sdpA(1), sdpB(1)), reinvite(sdpA(1, "a=sendonly")), reinviteOK(sdpB(2, "a=recvonly")))...), wantIndex: 3,
		pass: seq(append(call(sdpA(1), sdpB(1)), reinvite(sdpA(2, "a=sendonly")), reinviteOK(sdpB(2, "a=recvonly")))...)},
	{rule: "OBS-3264-6.1-PT-UNDECLARED",
		fail: withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "G729", 18, 100, 20, 20)), wantIndex: 0,
		pass: withStreams(call(sdpA(1), sdpB(1)), withPT(stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20), 13, 5))},
	{rule: "OBS-4566-5.14-MEDIA-PORT-MISMATCH",
		fail: withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6400", "PCMU", 0, 100, 160, 20)), wantIndex: 1,
		pass: withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20))},
	{rule: "OBS-3264-6.1-DIRECTION-UNMET",
		fail: withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20)), wantIndex: 1,
		pass: withStreams(call(sdpA(1), sdpB(1)),
			stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20),
			stream("10.0.0.1:6000", "10.0.0.2:7000", "PCMU", 0, 100, 160, 20))},
	{rule: "OBS-4566-6-PTIME-MISMATCH",
		fail: withStreams(call(sdpA(1, "a=ptime:20"), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 480, 60)), wantIndex: 0,
		pass: withStreams(call(sdpA(1, "a=ptime:20"), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20))},
	{rule: "OBS-3551-4.2-FRAME-SIZE-IMPOSSIBLE",
		// 160 bytes of PCMU (20 ms) every 10 ms: twice the media of the time spanned.
		fail: withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 500, 160, 10)), wantIndex: 0,
		pass: withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 500, 160, 20))},
	{rule: "OBS-4566-6-MAXPTIME-EXCEEDED",
		fail: withStreams(call(sdpA(1, "a=maxptime:40"), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 480, 60)), wantIndex: 0,
		pass: withStreams(call(sdpA(1, "a=maxptime:40"), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 320, 40))},
	{rule: "OBS-3264-6.1-SENT-TO-NON-RECEIVER",
		fail: withStreams(holdCall(), withIntervals(stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 3000, 160, 20),
			iv{10 * time.Second, 250}, iv{20 * time.Second, 250})), wantIndex: 3,
		// Media stops once the hold is answered; one keepalive-like trickle is not sending.
		pass: withStreams(holdCall(), withIntervals(stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 300, 160, 20),
			iv{0, 250}, iv{20 * time.Second, 2}))},
}

// holdCall is a call A puts on hold at t0+5 s (re-INVITE sendonly,
// answered recvonly at 5.1 s).
func holdCall() []*mb {
	return append(call(sdpA(1), sdpB(1)),
		reinvite(sdpA(2, "a=sendonly")).after(5*time.Second),
		reinviteOK(sdpB(2, "a=recvonly")).after(5*time.Second+100*time.Millisecond))
}

// iv is one 5 s quality interval: its start after t0 and its packets.
type iv struct {
	at time.Duration
	n  uint32
}

// withIntervals gives a stream quality intervals.
func withIntervals(s media.StreamInfo, ivs ...iv) media.StreamInfo {
	for _, v := range ivs {
		s.QualityIntervals = append(s.QualityIntervals, media.Interval{Timestamp: t0.Add(v.at), Packets: v.n, Verdict: media.VerdictAcceptable})
	}
	return s
}

// withPT adds packets of another payload type to a stream.
func withPT(s media.StreamInfo, pt int, packets uint64) media.StreamInfo {
	s.PayloadTypes = append(s.PayloadTypes, media.PTCount{PayloadType: pt, Packets: packets})
	s.Packets += packets
	return s
}

// withBody sets a body without a Content-Type.
func (b *mb) withBody(s string) *mb {
	b.body = s
	return b
}

// only selects one rule.
func only(t *testing.T, id string) *Selection {
	t.Helper()
	s := &Selection{Names: []string{id}}
	i, ok := byID[id]
	if !ok {
		t.Fatalf("no rule %s", id)
	}
	s.on[i] = true
	return s
}

// TestEveryRuleFailsAndPasses runs each rule alone over a crafted dialog
// that breaks it and one that keeps it.
func TestEveryRuleFailsAndPasses(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range ruleCases {
		covered[tc.rule] = true
		t.Run(tc.rule, func(t *testing.T) {
			rule, ok := Lookup(tc.rule)
			if !ok {
				t.Fatalf("rule %s is not in the catalogue", tc.rule)
			}
			opt := Options{Selection: only(t, tc.rule)}
			res := Lint(tc.fail(t), opt)
			if len(res.Findings) == 0 {
				t.Fatalf("failing case: got no finding, want one (not evaluated: %v)", res.NotEvaluated)
			}
			f := res.Findings[0]
			if f.RuleID != tc.rule || f.Severity != rule.Severity || f.Basis != rule.Basis || f.RFC != rule.RFC || f.Section != rule.Section {
				t.Errorf("failing case: got finding %+v, want the rule's id, severity, basis, rfc and section", f)
			}
			if f.MessageIndex != tc.wantIndex {
				t.Errorf("failing case: got message_index %d, want %d", f.MessageIndex, tc.wantIndex)
			}
			if f.Observed == "" || f.Expected == "" || f.Explanation == "" {
				t.Errorf("failing case: got empty observed/expected/explanation in %+v", f)
			}
			if want := "crafted#" + strconv.Itoa(f.MessageIndex+1) + "@"; !strings.HasPrefix(f.FrameRef, want) {
				t.Errorf("failing case: got frame_ref %q, want the pointer of message %d", f.FrameRef, f.MessageIndex)
			}
			if res := Lint(tc.pass(t), opt); len(res.Findings) != 0 || res.Raised[tc.rule] != 0 {
				t.Errorf("passing case: got findings %+v, want none", res.Findings)
			}
		})
	}
	t.Run("OBS-5761-5.1.1-RTCP-MUX-UNANSWERED", func(t *testing.T) {
		covered["OBS-5761-5.1.1-RTCP-MUX-UNANSWERED"] = true
		// rtcp-mux offered, not answered, RTP flowing: the rule would have
		// grounds, but the landing port of RTCP is not kept, so it never runs.
		in := withStreams(call(sdpA(1, "a=rtcp-mux"), sdpB(1)),
			stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20))(t)
		res := Lint(in, Options{Selection: only(t, "OBS-5761-5.1.1-RTCP-MUX-UNANSWERED")})
		if len(res.Findings) != 0 {
			t.Errorf("got findings %+v, want none: the rule is never raised", res.Findings)
		}
		want := []NotEvaluated{{Reason: ReasonRTCPPort, RuleIDs: []string{"OBS-5761-5.1.1-RTCP-MUX-UNANSWERED"}}}
		if !equalNotEvaluated(res.NotEvaluated, want) {
			t.Errorf("got rules_not_evaluated %+v, want %+v", res.NotEvaluated, want)
		}
	})
	for _, id := range IDs() {
		if !covered[id] {
			t.Errorf("rule %s has no failing/passing case", id)
		}
	}
	if len(covered) != RuleCount {
		t.Errorf("got %d rules covered, want %d", len(covered), RuleCount)
	}
}

func equalNotEvaluated(a, b []NotEvaluated) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Reason != b[i].Reason || strings.Join(a[i].RuleIDs, ",") != strings.Join(b[i].RuleIDs, ",") {
			return false
		}
	}
	return true
}
