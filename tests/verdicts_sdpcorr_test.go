package tests

// Verdict corpus, SDP and correlation class: offer/answer outcomes (a T.38
// re-INVITE refused 488, then the audio fallback), leg correlation across an
// SBC that rewrites addresses beside a constant SDP sess-id, and Wireshark
// commands for SIP on a non-standard TCP port.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

func init() {
	registerVerdictCapture(verdictCapture{
		Name:  "t38-reinvite-488-then-audio.pcap",
		Class: "A T.38 re-INVITE refused 488, then an audio re-INVITE accepted",
		Doc: "A G.711 call 10.20.0.1 (caller, Call-ID t38-fallback-1) to 10.20.0.2 (callee, a fax gateway): " +
			"INVITE offering PCMU/PCMA, 200 answering PCMU, ACK; 25 RTP packets each way (SSRC 0x11110001 caller, 0x22220002 callee). " +
			"The callee re-INVITEs to T.38 (m=audio 0, m=image 30000 udptl t38, its own CSeq 1): the caller refuses 488, the callee ACKs; " +
			"25 more RTP each way on the unchanged G.711 session. The callee re-INVITEs audio (PCMU, CSeq 2): 200 with PCMU, ACK; 25 more each way; BYE, 200. " +
			"Right answer: check_codec_negotiation lists the T.38 offer rejected with rejected_code 488 and t38 refused (never no_answer), " +
			"the audio re-offer ok with the fallback noted; get_sdp_timeline puts T38Switch under the refused offer's proposed_events, " +
			"never in events, and marks the audio re-offer T38Fallback.",
		Build: buildT38Fallback,
	})
	registerVerdictCapture(verdictCapture{
		Name:  "b2bua-sbc-rewrite.pcap",
		Class: "Two B2BUA legs through an SBC that rewrites addresses, beside phones sharing a constant SDP sess-id",
		Doc: "Leg A: phone 10.30.0.10 to the SBC's inside address 10.30.0.1 (Call-ID legA-7f3a9c@10.30.0.10, From +493012345678 tag ph7c1e5a90, " +
			"To +494098765432, o=phone 880123 1 IN IP4 10.30.0.10). Leg B, 15 ms later: the SBC's outside address 203.0.113.1 to the carrier 198.51.100.20 " +
			"(Call-ID sbc-b-91d2e0, From 493012345678 tag sbc-ph7c1e5a90-b, To 04098765432, o=phone 880123 1 IN IP4 203.0.113.1: the SBC kept " +
			"sess-id and version and rewrote the address). The legs share no address. Meanwhile two unrelated calls: phones-c-1 (10.40.0.5 to 10.40.0.6) " +
			"whose offer and answer both carry sess-id 12345 version 1, and phones-d-1 (10.40.0.7 to 10.40.0.8) whose offer carries 12345 1 too. " +
			"Right answer: find_correlated ties leg A and leg B (sdp_origin, an identifier) and never the phones' calls to each other " +
			"(12345 is sent by both phones of one call: a constant); a phone call with no other leg is hop unknown, not a proxy.",
		Build: buildB2BUARewrite,
	})
	registerVerdictCapture(verdictCapture{
		Name:  "sip-tcp-6060.pcap",
		Class: "SIP on TCP port 6060 with RTP, beside a call on UDP 5060",
		Doc: "Call tcp6060-call-1: 10.50.0.1:40001 to 10.50.0.2:6060 over one TCP connection (INVITE with PCMU SDP, 100, 200 with SDP, ACK, BYE, 200; " +
			"one message per segment), 20 RTP packets each way (10.50.0.1:16000 SSRC 0x60600001, 10.50.0.2:17000 SSRC 0x60600002). " +
			"Beside it call udp5060-other-1 on UDP 5060 (10.50.0.3 to 10.50.0.4, 10 RTP each way). tshark decodes port 5060 as SIP by default, not 6060. " +
			"Right answer: generate_wireshark_filter's command carries -d tcp.port==6060,sip and, run as given, selects the call's 6 SIP frames and 40 RTP frames, " +
			"nothing of the other call.",
		Build: buildSIPTCP6060,
	})
}

// scParty is one SIP endpoint of the sdpcorr corpus.
type scParty struct {
	addr, user, tag string
}

// scReq writes a request from `from` to `to`; toTag marks an in-dialog one.
func scReq(method, callID string, cseq int, from, to scParty, toTag, body string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s sip:%s@%s SIP/2.0\r\n", method, to.user, to.addr)
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP %s;branch=z9hG4bK-%s-%s-%d-%s\r\n", from.addr, callID, from.tag, cseq, method)
	b.WriteString("Max-Forwards: 70\r\n")
	fmt.Fprintf(&b, "From: <sip:%s@%s>;tag=%s\r\n", from.user, from.addr, from.tag)
	if toTag != "" {
		fmt.Fprintf(&b, "To: <sip:%s@%s>;tag=%s\r\n", to.user, to.addr, toTag)
	} else {
		fmt.Fprintf(&b, "To: <sip:%s@%s>\r\n", to.user, to.addr)
	}
	fmt.Fprintf(&b, "Call-ID: %s\r\nCSeq: %d %s\r\nContact: <sip:%s@%s>\r\n", callID, cseq, method, from.user, from.addr)
	if body != "" {
		b.WriteString("Content-Type: application/sdp\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// scResp answers a request of `req` (its sender) from `resp`.
func scResp(code int, reason, method, callID string, cseq int, req, resp scParty, toTag, body string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "SIP/2.0 %d %s\r\n", code, reason)
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP %s;branch=z9hG4bK-%s-%s-%d-%s\r\n", req.addr, callID, req.tag, cseq, method)
	fmt.Fprintf(&b, "From: <sip:%s@%s>;tag=%s\r\n", req.user, req.addr, req.tag)
	if toTag != "" {
		fmt.Fprintf(&b, "To: <sip:%s@%s>;tag=%s\r\n", resp.user, resp.addr, toTag)
	} else {
		fmt.Fprintf(&b, "To: <sip:%s@%s>\r\n", resp.user, resp.addr)
	}
	fmt.Fprintf(&b, "Call-ID: %s\r\nCSeq: %d %s\r\n", callID, cseq, method)
	if body != "" {
		b.WriteString("Content-Type: application/sdp\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// scSDP is one description: origin "user sess-id version", the connection
// address, and m= lines ("audio 20000 0 8", "image 30000 t38").
func scSDP(origin, addr string, media ...string) string {
	var b strings.Builder
	o := strings.Fields(origin)
	fmt.Fprintf(&b, "v=0\r\no=%s %s %s IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\n", o[0], o[1], o[2], addr, addr)
	for _, m := range media {
		f := strings.Fields(m)
		switch f[0] {
		case "image":
			fmt.Fprintf(&b, "m=image %s udptl t38\r\na=T38FaxVersion:0\r\na=T38FaxRateManagement:transferredTCF\r\n", f[1])
		default:
			fmt.Fprintf(&b, "m=audio %s RTP/AVP %s\r\n", f[1], strings.Join(f[2:], " "))
			for _, pt := range f[2:] {
				switch pt {
				case "0":
					b.WriteString("a=rtpmap:0 PCMU/8000\r\n")
				case "8":
					b.WriteString("a=rtpmap:8 PCMA/8000\r\n")
				}
			}
			b.WriteString("a=ptime:20\r\na=sendrecv\r\n")
		}
	}
	return b.String()
}

// scFrames collects frames in time order.
type scFrames struct {
	t      *testing.T
	frames []accFrame
}

func (f *scFrames) udp(at time.Time, src, dst string, payload []byte) {
	f.frames = append(f.frames, accFrame{at, accIPEth(accUDP(f.t, src, dst, payload))})
}

// rtp adds n packets each way, 20 ms apart, from start; seq and ts follow
// on from *seqA/*seqB (G.711: 160 samples per packet).
func (f *scFrames) rtp(start time.Time, n int, a, b string, ssrcA, ssrcB uint32, seqA, seqB *uint16) {
	payload := make([]byte, 160)
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(i) * 20 * time.Millisecond)
		f.udp(at, a, b, accRTP(0, false, *seqA, uint32(*seqA)*160, ssrcA, payload))
		f.udp(at.Add(3*time.Millisecond), b, a, accRTP(0, false, *seqB, uint32(*seqB)*160, ssrcB, payload))
		*seqA++
		*seqB++
	}
}

func buildT38Fallback(t *testing.T, path string) {
	const id = "t38-fallback-1"
	a := scParty{"10.20.0.1", "2001", "t38caller01"}
	b := scParty{"10.20.0.2", "fax", "t38callee02"}
	sa, sb := "10.20.0.1:5060", "10.20.0.2:5060"
	ma, mb := "10.20.0.1:20000", "10.20.0.2:30000"
	f := &scFrames{t: t}
	at := accT0
	step := func(d time.Duration) time.Time { at = at.Add(d); return at }
	f.udp(step(0), sa, sb, scReq("INVITE", id, 1, a, b, "", scSDP("gw 5001 1", a.addr, "audio 20000 0 8")))
	f.udp(step(5*time.Millisecond), sb, sa, scResp(100, "Trying", "INVITE", id, 1, a, b, "", ""))
	f.udp(step(200*time.Millisecond), sb, sa, scResp(200, "OK", "INVITE", id, 1, a, b, b.tag, scSDP("fax 7001 1", b.addr, "audio 30000 0")))
	f.udp(step(5*time.Millisecond), sa, sb, scReq("ACK", id, 1, a, b, b.tag, ""))
	var qa, qb uint16 = 1000, 5000
	f.rtp(step(20*time.Millisecond), 25, ma, mb, 0x11110001, 0x22220002, &qa, &qb)
	// The callee (fax gateway) re-INVITEs to T.38 on its audio port.
	f.udp(step(time.Second), sb, sa, scReq("INVITE", id, 1, b, a, a.tag, scSDP("fax 7001 2", b.addr, "audio 0 0", "image 30000")))
	f.udp(step(5*time.Millisecond), sa, sb, scResp(488, "Not Acceptable Here", "INVITE", id, 1, b, a, a.tag, ""))
	f.udp(step(5*time.Millisecond), sb, sa, scReq("ACK", id, 1, b, a, a.tag, ""))
	f.rtp(step(20*time.Millisecond), 25, ma, mb, 0x11110001, 0x22220002, &qa, &qb)
	// The fallback: audio again.
	f.udp(step(time.Second), sb, sa, scReq("INVITE", id, 2, b, a, a.tag, scSDP("fax 7001 3", b.addr, "audio 30000 0")))
	f.udp(step(5*time.Millisecond), sa, sb, scResp(200, "OK", "INVITE", id, 2, b, a, a.tag, scSDP("gw 5001 2", a.addr, "audio 20000 0")))
	f.udp(step(5*time.Millisecond), sb, sa, scReq("ACK", id, 2, b, a, a.tag, ""))
	f.rtp(step(20*time.Millisecond), 25, ma, mb, 0x11110001, 0x22220002, &qa, &qb)
	f.udp(step(time.Second), sa, sb, scReq("BYE", id, 2, a, b, b.tag, ""))
	f.udp(step(5*time.Millisecond), sb, sa, scResp(200, "OK", "BYE", id, 2, a, b, b.tag, ""))
	accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, false, f.frames)
}

// scCall adds one INVITE dialog (INVITE, 100, 200, ACK, then BYE, 200 after
// hold) between caller and callee.
func scCall(f *scFrames, start time.Time, hold time.Duration, id string, caller, callee scParty, offer, answer string) {
	sa, sb := caller.addr+":5060", callee.addr+":5060"
	f.udp(start, sa, sb, scReq("INVITE", id, 1, caller, callee, "", offer))
	f.udp(start.Add(4*time.Millisecond), sb, sa, scResp(100, "Trying", "INVITE", id, 1, caller, callee, "", ""))
	f.udp(start.Add(300*time.Millisecond), sb, sa, scResp(200, "OK", "INVITE", id, 1, caller, callee, callee.tag, answer))
	f.udp(start.Add(305*time.Millisecond), sa, sb, scReq("ACK", id, 1, caller, callee, callee.tag, ""))
	f.udp(start.Add(hold), sa, sb, scReq("BYE", id, 2, caller, callee, callee.tag, ""))
	f.udp(start.Add(hold+4*time.Millisecond), sb, sa, scResp(200, "OK", "BYE", id, 2, caller, callee, callee.tag, ""))
}

func buildB2BUARewrite(t *testing.T, path string) {
	f := &scFrames{t: t}
	phone := scParty{"10.30.0.10", "+493012345678", "ph7c1e5a90"}
	sbcIn := scParty{"10.30.0.1", "+494098765432", "sbcin4411a2"}
	sbcOut := scParty{"203.0.113.1", "493012345678", "sbc-ph7c1e5a90-b"}
	carrier := scParty{"198.51.100.20", "04098765432", "car88e1f0c3"}
	scCall(f, accT0, 8*time.Second, "legA-7f3a9c@10.30.0.10", phone, sbcIn,
		scSDP("phone 880123 1", phone.addr, "audio 40000 0 8"), scSDP("sbc 330001 1", sbcIn.addr, "audio 50000 0"))
	scCall(f, accT0.Add(15*time.Millisecond), 8*time.Second-20*time.Millisecond, "sbc-b-91d2e0", sbcOut, carrier,
		scSDP("phone 880123 1", sbcOut.addr, "audio 52000 0 8"), scSDP("carrier 99120077 1", carrier.addr, "audio 60000 0"))
	// Two unrelated calls whose phones send the constant sess-id 12345.
	p1 := scParty{"10.40.0.5", "3001", "pc1aa00001"}
	p2 := scParty{"10.40.0.6", "3002", "pc2bb00002"}
	p3 := scParty{"10.40.0.7", "3003", "pd3cc00003"}
	p4 := scParty{"10.40.0.8", "3004", "pd4dd00004"}
	scCall(f, accT0.Add(200*time.Millisecond), 5*time.Second, "phones-c-1", p1, p2,
		scSDP("- 12345 1", p1.addr, "audio 7000 0"), scSDP("- 12345 1", p2.addr, "audio 7002 0"))
	scCall(f, accT0.Add(700*time.Millisecond), 5*time.Second, "phones-d-1", p3, p4,
		scSDP("- 12345 1", p3.addr, "audio 7004 0"), scSDP("- 67890 1", p4.addr, "audio 7006 0"))
	sortFrames(f.frames)
	accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, false, f.frames)
}

func buildSIPTCP6060(t *testing.T, path string) {
	f := &scFrames{t: t}
	const id = "tcp6060-call-1"
	a := scParty{"10.50.0.1", "4001", "tcpa0001"}
	b := scParty{"10.50.0.2", "4002", "tcpb0002"}
	ca, cb := "10.50.0.1:40001", "10.50.0.2:6060"
	seqA, seqB := uint32(1000), uint32(9000)
	tcp := func(at time.Time, fromA bool, msg []byte) {
		msg = []byte(strings.ReplaceAll(string(msg), "SIP/2.0/UDP", "SIP/2.0/TCP"))
		if fromA {
			f.frames = append(f.frames, accFrame{at, accIPEth(accTCP(t, ca, cb, seqA, false, msg))})
			seqA += uint32(len(msg))
		} else {
			f.frames = append(f.frames, accFrame{at, accIPEth(accTCP(t, cb, ca, seqB, false, msg))})
			seqB += uint32(len(msg))
		}
	}
	at := accT0
	tcp(at, true, scReq("INVITE", id, 1, a, b, "", scSDP("a 61001 1", a.addr, "audio 16000 0")))
	tcp(at.Add(5*time.Millisecond), false, scResp(100, "Trying", "INVITE", id, 1, a, b, "", ""))
	tcp(at.Add(400*time.Millisecond), false, scResp(200, "OK", "INVITE", id, 1, a, b, b.tag, scSDP("b 62002 1", b.addr, "audio 17000 0")))
	tcp(at.Add(410*time.Millisecond), true, scReq("ACK", id, 1, a, b, b.tag, ""))
	var qa, qb uint16 = 1, 1
	f.rtp(at.Add(430*time.Millisecond), 20, "10.50.0.1:16000", "10.50.0.2:17000", 0x60600001, 0x60600002, &qa, &qb)
	tcp(at.Add(2*time.Second), true, scReq("BYE", id, 2, a, b, b.tag, ""))
	tcp(at.Add(2*time.Second+5*time.Millisecond), false, scResp(200, "OK", "BYE", id, 2, a, b, b.tag, ""))
	// Another call on UDP 5060.
	c := scParty{"10.50.0.3", "5003", "udpc0003"}
	d := scParty{"10.50.0.4", "5004", "udpd0004"}
	scCall(f, accT0.Add(100*time.Millisecond), 2500*time.Millisecond, "udp5060-other-1", c, d,
		scSDP("c 63003 1", c.addr, "audio 18000 0"), scSDP("d 64004 1", d.addr, "audio 19000 0"))
	var qc, qd uint16 = 1, 1
	f.rtp(accT0.Add(500*time.Millisecond), 10, "10.50.0.3:18000", "10.50.0.4:19000", 0x50600003, 0x50600004, &qc, &qd)
	sortFrames(f.frames)
	accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, false, f.frames)
}

// scDecode decodes a tool's first block into v.
func scDecode(t *testing.T, r toolResult, v any) {
	t.Helper()
	if r.Err != nil || r.IsError || len(r.Content) == 0 {
		t.Fatalf("error %+v %s", r.Err, r.Response)
	}
	if err := json.Unmarshal([]byte(r.Content[0].Text), v); err != nil {
		t.Fatalf("%v\n%s", err, r.Content[0].Text)
	}
}

// TestVerdictT38RefusedThenAudioE2E: the T.38 re-INVITE refused 488 is
// rejected with its code, never no_answer; T38Switch is only proposed; the
// audio re-INVITE is the fallback.
func TestVerdictT38RefusedThenAudioE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "-I", verdictPath("t38-reinvite-488-then-audio.pcap"))
	s.waitLoaded()
	var neg struct {
		Result       string `json:"result"`
		Negotiations []struct {
			Transaction       string   `json:"transaction"`
			OfferMessageIndex int      `json:"offer_message_index"`
			Result            string   `json:"result"`
			RejectedCode      int      `json:"rejected_code"`
			T38               string   `json:"t38"`
			Notes             []string `json:"notes"`
		} `json:"negotiations"`
	}
	scDecode(t, s.call("check_codec_negotiation", map[string]any{"call_id": "t38-fallback-1"}), &neg)
	got := []string{}
	for _, n := range neg.Negotiations {
		got = append(got, fmt.Sprintf("%d %s %s %d %s", n.OfferMessageIndex, n.Transaction, n.Result, n.RejectedCode, n.T38))
	}
	want := []string{"0 INVITE ok 0 ", "4 re-INVITE rejected 488 refused", "7 re-INVITE ok 0 "}
	if strings.Join(got, "|") != strings.Join(want, "|") || neg.Result != "ok" {
		t.Fatalf("got %s %q, want ok %q", neg.Result, got, want)
	}
	if n := strings.Join(neg.Negotiations[1].Notes, "|"); !strings.Contains(n, "refused with 488") || !strings.Contains(n, "RFC 3261 §14.1") {
		t.Errorf("T.38 offer notes %q: want the 488 and RFC 3261 §14.1", n)
	}
	if n := strings.Join(neg.Negotiations[2].Notes, "|"); !strings.Contains(n, "fallback to audio: the T.38 offer at message 4 was refused with 488") {
		t.Errorf("audio re-offer notes %q: want the fallback named", n)
	}

	var tl struct {
		Exchanges []struct {
			MessageIndex   int      `json:"message_index"`
			Direction      string   `json:"direction"`
			Outcome        string   `json:"outcome"`
			RejectedCode   int      `json:"rejected_code"`
			Events         []string `json:"events"`
			ProposedEvents []string `json:"proposed_events"`
			T38            string   `json:"t38"`
			Frame          string   `json:"frame"`
		} `json:"exchanges"`
	}
	scDecode(t, s.call("get_sdp_timeline", map[string]any{"call_id": "t38-fallback-1"}), &tl)
	got = got[:0]
	for _, e := range tl.Exchanges {
		got = append(got, fmt.Sprintf("%d %s %s %d ev=%s proposed=%s t38=%s", e.MessageIndex, e.Direction, e.Outcome, e.RejectedCode,
			strings.Join(e.Events, ","), strings.Join(e.ProposedEvents, ","), e.T38))
	}
	want = []string{
		"0 offer answered 0 ev= proposed= t38=",
		"2 answer  0 ev= proposed= t38=",
		"4 offer rejected 488 ev= proposed=T38Switch t38=refused",
		"7 offer answered 0 ev=T38Fallback proposed= t38=",
		"8 answer  0 ev= proposed= t38=",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(tl.Exchanges[2].Frame, "t38-reinvite-488-then-audio.pcap#55@") {
		t.Errorf("T.38 offer frame %q, want frame 55", tl.Exchanges[2].Frame)
	}
}

// TestVerdictB2BUARewriteE2E: the SBC's legs are tied across the address
// rewrite by sess-id and version; the phones' constant sess-id ties
// nothing, and a call with no other leg is not called a proxy.
func TestVerdictB2BUARewriteE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "-I", verdictPath("b2bua-sbc-rewrite.pcap"))
	s.waitLoaded()
	type legs struct {
		Legs []struct {
			CallID          string `json:"call_id"`
			Strategy        string `json:"strategy"`
			Score           int    `json:"score"`
			IdentifierMatch bool   `json:"identifier_match"`
		} `json:"legs"`
		Hop         string          `json:"hop"`
		HopEvidence string          `json:"hop_evidence"`
		TimingClock json.RawMessage `json:"timing_clock"`
	}
	for _, tc := range []struct{ src, want, hop string }{
		{"legA-7f3a9c@10.30.0.10", "sbc-b-91d2e0 sdp_origin 90 true", ""},
		{"sbc-b-91d2e0", "legA-7f3a9c@10.30.0.10 sdp_origin 90 true", ""},
		{"phones-c-1", "", "unknown"},
		{"phones-d-1", "", "unknown"},
	} {
		var got legs
		scDecode(t, s.call("find_correlated", map[string]any{"call_id": tc.src}), &got)
		var lines []string
		for _, l := range got.Legs {
			lines = append(lines, fmt.Sprintf("%s %s %d %v", l.CallID, l.Strategy, l.Score, l.IdentifierMatch))
		}
		if strings.Join(lines, "|") != tc.want || got.Hop != tc.hop || got.HopEvidence != "" || got.TimingClock != nil {
			t.Errorf("%s: got %q hop %q %q clock %s, want %q hop %q", tc.src, lines, got.Hop, got.HopEvidence, got.TimingClock, tc.want, tc.hop)
		}
	}
}

// TestVerdictSIPOnTCP6060E2E: the generated command carries the decode-as
// and, run as given, selects exactly the call's 6 SIP and 40 RTP frames.
func TestVerdictSIPOnTCP6060E2E(t *testing.T) {
	// the operator names the call's port to the port gate, as to tshark
	s := startRaw(t, "-N", "--mcp", "--portrange", "5060-5061,6060", "-I", verdictPath("sip-tcp-6060.pcap"))
	s.waitLoaded()
	var wf struct {
		Tshark   string   `json:"tshark"`
		DecodeAs []string `json:"decode_as"`
	}
	scDecode(t, s.call("generate_wireshark_filter", map[string]any{"call_id": "tcp6060-call-1"}), &wf)
	if strings.Join(wf.DecodeAs, " ") != "tcp.port==6060,sip" || !strings.Contains(wf.Tshark, " -d tcp.port==6060,sip ") {
		t.Fatalf("got decode_as %q, command %s: want -d tcp.port==6060,sip", wf.DecodeAs, wf.Tshark)
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed: the command cannot be run")
	}
	out, err := exec.Command("sh", "-c", wf.Tshark+" -T fields -e frame.number -e sip.Call-ID -e rtp.ssrc").Output()
	if err != nil {
		t.Fatalf("%s: %v", wf.Tshark, err)
	}
	sip, rtp := 0, map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "\t")
		switch {
		case len(f) > 1 && f[1] == "tcp6060-call-1":
			sip++
		case len(f) > 2 && f[2] != "":
			rtp[f[2]]++
		default:
			t.Errorf("frame %q selected: not the call's", l)
		}
	}
	if sip != 6 || rtp["0x60600001"] != 20 || rtp["0x60600002"] != 20 || len(rtp) != 2 {
		t.Errorf("tshark selected %d SIP frames and RTP %v; want 6 and 20 each of 0x60600001, 0x60600002", sip, rtp)
	}
}
