package lint

import (
	"fmt"
	"strings"
	"testing"
)

// thirtyRequests is a dialog of 30 OPTIONS, each without Max-Forwards and
// with a branch lacking the magic cookie: two warnings per message.
func thirtyRequests(t *testing.T) Input {
	bs := make([]*mb, 30)
	for i := range bs {
		bs[i] = req("OPTIONS").del("Max-Forwards").set("CSeq", fmt.Sprintf("%d OPTIONS", i+1)).
			set("Via", fmt.Sprintf("SIP/2.0/UDP 10.0.0.1:5060;branch=old%d", i))
	}
	return Input{Messages: msgs(t, bs...)}
}

func TestCapAndWithheldCounts(t *testing.T) {
	in := thirtyRequests(t)
	const mf, br = "SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING", "SIP-3261-8.1.1.7-BRANCH-COOKIE"
	cases := []struct {
		name      string
		opt       Options
		reported  int
		withheld  Withheld
		perRule   map[string]int
		firstRule string
	}{
		{"cap 25 per rule", Options{}, 50, Withheld{Capped: 10}, map[string]int{mf: 25, br: 25}, mf},
		{"suppression is counted, never short-circuits", Options{Suppression: &Suppression{Patterns: []string{"SIP-3261-8.1.1.6-*"}}},
			25, Withheld{Suppressed: 30, Capped: 5}, map[string]int{br: 25}, br},
		{"severity floor is exact", Options{SeverityMin: Error}, 0, Withheld{BelowSeverity: 60}, map[string]int{}, ""},
		{"own cap", Options{Cap: 3}, 6, Withheld{Capped: 54}, map[string]int{mf: 3, br: 3}, mf},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Lint(in, tc.opt)
			if len(res.Findings) != tc.reported || res.Withheld != tc.withheld {
				t.Errorf("got %d reported, withheld %+v; want %d, %+v", len(res.Findings), res.Withheld, tc.reported, tc.withheld)
			}
			got := map[string]int{}
			for _, f := range res.Findings {
				got[f.RuleID]++
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.perRule) {
				t.Errorf("got per rule %v, want %v", got, tc.perRule)
			}
			if res.Raised[mf] != 30 || res.Raised[br] != 30 {
				t.Errorf("got raised %v, want 30 of each: every rule runs whatever is withheld", res.Raised)
			}
			if res.Counts.Warning != tc.reported {
				t.Errorf("got severity counts %+v, want %d warnings", res.Counts, tc.reported)
			}
			if tc.firstRule != "" && (res.Findings[0].RuleID != tc.firstRule || res.Findings[0].MessageIndex != 0) {
				t.Errorf("got first finding %s at %d, want %s at 0 (message order, then catalogue order)",
					res.Findings[0].RuleID, res.Findings[0].MessageIndex, tc.firstRule)
			}
		})
	}
	t.Run("kept findings are the earliest", func(t *testing.T) {
		res := Lint(in, Options{Cap: 2, Selection: only(t, mf)})
		if len(res.Findings) != 2 || res.Findings[0].MessageIndex != 0 || res.Findings[1].MessageIndex != 1 {
			t.Errorf("got %+v, want messages 0 and 1", res.Findings)
		}
	})
}

func TestNotEvaluated(t *testing.T) {
	t.Run("no RTP", func(t *testing.T) {
		res := Lint(Input{Messages: msgs(t, call(sdpA(1), sdpB(1))...)}, Options{})
		if len(res.NotEvaluated) != 2 {
			t.Fatalf("got %+v, want two reasons", res.NotEvaluated)
		}
		if r := res.NotEvaluated[0]; r.Reason != ReasonNoRTP || len(r.RuleIDs) != 7 || !strings.HasPrefix(r.RuleIDs[0], "OBS-") {
			t.Errorf("got %+v, want the 7 observation rules that need RTP", r)
		}
		if r := res.NotEvaluated[1]; r.Reason != ReasonRTCPPort || strings.Join(r.RuleIDs, "") != rtcpMuxRule {
			t.Errorf("got %+v, want the RTCP-mux rule alone", r)
		}
	})
	t.Run("only selected rules are listed", func(t *testing.T) {
		s, _ := Select([]string{"syntax"})
		res := Lint(Input{Messages: msgs(t, req("INVITE"))}, Options{Selection: s})
		if len(res.NotEvaluated) != 0 {
			t.Errorf("got %+v, want none: no media rule was selected", res.NotEvaluated)
		}
	})
	t.Run("with RTP", func(t *testing.T) {
		in := withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20),
			stream("10.0.0.1:6000", "10.0.0.2:7000", "PCMU", 0, 100, 160, 20))(t)
		res := Lint(in, Options{})
		if len(res.NotEvaluated) != 1 || res.NotEvaluated[0].Reason != ReasonRTCPPort {
			t.Errorf("got %+v, want only the RTCP-mux rule", res.NotEvaluated)
		}
		if len(res.Findings) != 0 {
			t.Errorf("got %+v, want a clean call", res.Findings)
		}
	})
	t.Run("single message", func(t *testing.T) {
		m := msgs(t, req("INVITE").del("Max-Forwards"))[0]
		res := LintMessage(m, Options{})
		if len(res.NotEvaluated) != 1 || res.NotEvaluated[0].Reason != ReasonSingleMessage || len(res.NotEvaluated[0].RuleIDs) != 19 {
			t.Fatalf("got %+v, want the 19 dialog and media rules under one reason", res.NotEvaluated)
		}
		if len(res.Findings) != 1 || res.Findings[0].RuleID != "SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING" {
			t.Errorf("got %+v, want the missing Max-Forwards", res.Findings)
		}
	})
}

// TestRuleEdges pins the exemptions and the traps each rule was designed
// around.
func TestRuleEdges(t *testing.T) {
	cases := []struct {
		name string
		rule string
		in   func(t *testing.T) Input
		want int
	}{
		{"NOTIFY answered with the subscriber's tag is not a new dialog", "SIP-3261-8.1.1.2-TO-TAG-IN-INITIAL-REQUEST", seq(
			req("SUBSCRIBE"), resp(200, "OK", "SUBSCRIBE"),
			// B's NOTIFY: To carries A's tag, its 200 echoes it.
			(&mb{start: "NOTIFY sip:alice@10.0.0.1 SIP/2.0", fromB: true, hdrs: [][2]string{
				{"Via", "SIP/2.0/UDP 10.0.0.2:5060;branch=z9hG4bKn1"}, {"Max-Forwards", "70"},
				{"To", "Alice <sip:alice@example.com>;tag=a1"}, {"From", "Bob <sip:bob@example.com>;tag=b1"},
				{"Call-ID", "call-1@example.com"}, {"CSeq", "1 NOTIFY"}, {"Contact", "<sip:bob@10.0.0.2>"}}}),
			(&mb{start: "SIP/2.0 200 OK", hdrs: [][2]string{
				{"Via", "SIP/2.0/UDP 10.0.0.2:5060;branch=z9hG4bKn1"},
				{"To", "Alice <sip:alice@example.com>;tag=a1"}, {"From", "Bob <sip:bob@example.com>;tag=b1"},
				{"Call-ID", "call-1@example.com"}, {"CSeq", "1 NOTIFY"}}}),
		), 0},
		{"REGISTER with a To tag", "SIP-3261-8.1.1.2-TO-TAG-IN-INITIAL-REQUEST", one(req("REGISTER").set("To", "<sip:alice@example.com>;tag=x")), 1},
		{"RTP on the declared RTCP port is exempt", "OBS-4566-5.14-MEDIA-PORT-MISMATCH",
			withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6001", "PCMU", 0, 10, 160, 20)), 0},
		{"RTP on an a=rtcp port is exempt", "OBS-4566-5.14-MEDIA-PORT-MISMATCH",
			withStreams(call(sdpA(1, "a=rtcp:6500"), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6500", "PCMU", 0, 10, 160, 20)), 0},
		{"an initial offer may use 0.0.0.0", "SDP-3264-8.4-HOLD-CONNECTION-ZERO",
			seq(call(strings.Replace(sdpA(1), "c=IN IP4 10.0.0.1", "c=IN IP4 0.0.0.0", 1), sdpB(1))...), 0},
		{"a declined stream in the answer is not judged", "SDP-3264-6.1-ANSWER-NO-COMMON-FORMAT",
			seq(call(sdpA(1)+"m=video 6002 RTP/AVP 34\n", sdpB(1)+"m=video 0 RTP/AVP 31\n")...), 0},
		{"a dynamic type renumbered by the answer is the same format", "SDP-3264-6.1-ANSWER-EXTRA-FORMAT",
			seq(call(strings.Replace(sdpA(1), "RTP/AVP 0", "RTP/AVP 0 101", 1)+"a=rtpmap:101 telephone-event/8000\n",
				strings.Replace(sdpB(1), "RTP/AVP 0", "RTP/AVP 0 96", 1)+"a=rtpmap:96 telephone-event/8000\n")...), 0},
		{"a format the offer lacked", "SDP-3264-6.1-ANSWER-EXTRA-FORMAT",
			seq(call(sdpA(1), strings.Replace(sdpB(1), "RTP/AVP 0", "RTP/AVP 0 96", 1)+"a=rtpmap:96 telephone-event/8000\n")...), 1},
		{"answer without rtpmap for an offered dynamic type", "SDP-3264-6.1-ANSWER-EXTRA-FORMAT",
			seq(call(strings.Replace(sdpA(1), "RTP/AVP 0", "RTP/AVP 0 101", 1)+"a=rtpmap:101 telephone-event/8000\n",
				strings.Replace(sdpB(1), "RTP/AVP 0", "RTP/AVP 0 101", 1))...), 0},
		{"an ACK before any INVITE is not judged", "SIP-3261-17.1.1.3-ACK-CSEQ-MISMATCH", one(req("ACK").set("CSeq", "9 ACK")), 0},
		{"a PRACK owed past the end of the capture is not judged", "SIP-3262-4-PRACK-MISSING", seq(
			req("INVITE"), resp(183, "Session Progress", "INVITE").set("Require", "100rel").set("RSeq", "1")), 0},
		{"an unchanged SDP may keep its version", "SDP-3264-8-ORIGIN-VERSION-NOT-INCREMENTED",
			seq(append(call(sdpA(1), sdpB(1)), reinvite(sdpA(1)), reinviteOK(sdpB(1)))...), 0},
		{"early media stays one-way until answered", "OBS-3264-6.1-DIRECTION-UNMET", withStreams([]*mb{
			req("INVITE").withSDP(sdpA(1)), resp(183, "Session Progress", "INVITE").withSDP(sdpB(1)), resp(487, "Request Terminated", "INVITE")},
			stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 160, 20)), 0},
		{"payload-size packetization under a=ptime", "OBS-4566-6-PTIME-MISMATCH",
			withStreams(call(sdpA(1, "a=ptime:30"), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMU", 0, 100, 320, 40)), 0},
		{"opus packetization from RTP timestamps", "OBS-4566-6-PTIME-MISMATCH",
			withStreams(call(sdpA(1, "a=ptime:20"), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "opus", 96, 100, 90, 60)), 1},
		{"more than 200 ms per packet", "OBS-3551-4.2-FRAME-SIZE-IMPOSSIBLE",
			withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "PCMA", 8, 3, 2000, 250)), 1},
		{"variable-rate codecs are not judged by size", "OBS-3551-4.2-FRAME-SIZE-IMPOSSIBLE",
			withStreams(call(sdpA(1), sdpB(1)), stream("10.0.0.2:7000", "10.0.0.1:6000", "opus", 96, 500, 400, 10)), 0},
		{"proxy hops pair offers and answers per branch", "SDP-3264-6.1-ANSWER-DIRECTION-ILLEGAL", seq(
			req("INVITE").withSDP(sdpA(1, "a=sendonly")),
			req("INVITE").set("Via", "SIP/2.0/UDP 10.0.0.9:5060;branch=z9hG4bKhop2, SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKinvite").withSDP(sdpA(1, "a=recvonly")),
			// hop 2's answer: sendonly, legal for its recvonly offer
			resp(200, "OK", "INVITE").set("Via", "SIP/2.0/UDP 10.0.0.9:5060;branch=z9hG4bKhop2, SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKinvite").withSDP(sdpB(1, "a=sendonly")),
			// hop 1's answer: recvonly, legal for its sendonly offer
			resp(200, "OK", "INVITE").withSDP(sdpB(1, "a=recvonly"))), 0},
		{"offer in 200, answer in ACK", "SDP-3264-6.1-ANSWER-NO-COMMON-FORMAT", seq(
			req("INVITE"), resp(200, "OK", "INVITE").withSDP(sdpB(1)),
			req("ACK").withSDP(strings.Replace(strings.Replace(sdpA(1), "RTP/AVP 0", "RTP/AVP 8", 1), "0 PCMU", "8 PCMA", 1))), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Lint(tc.in(t), Options{Selection: only(t, tc.rule)})
			if got := res.Raised[tc.rule]; got != tc.want {
				t.Errorf("got %d findings %+v, want %d", got, res.Findings, tc.want)
			}
		})
	}
}
