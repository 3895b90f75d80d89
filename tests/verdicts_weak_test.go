package tests

// Weak signals stay observations: a private SDP address
// with media that flowed, ICE srflx/relay candidates, a capture with no RTP
// at all, ARP/ICMP/LLDP noise, and SIP the parser flagged (junk before the
// start line, a Content-Length that is not a number).

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// weakCall is one answered INVITE between a (caller) and b (callee), both
// "ip:port" signaling addresses, with the given SDP bodies; rtp are the
// directions of media (each "src>dst") that flowed during the call, 55
// packets of 20 ms PCMU each.
type weakCall struct {
	callID, a, b  string
	offer, answer string
	rtp           []string
	at            time.Duration
}

func weakCallFrames(t *testing.T, c weakCall) []accFrame {
	t.Helper()
	t0 := accT0.Add(c.at)
	var fs []accFrame
	sig := func(d time.Duration, src, dst string, b []byte) {
		fs = append(fs, accFrame{t0.Add(d), accIPEth(accUDP(t, src, dst, b))})
	}
	sig(0, c.a, c.b, accReq("INVITE", c.callID, 1, "", c.offer))
	sig(20*time.Millisecond, c.b, c.a, accResp(100, "Trying", "INVITE", c.callID, 1, ""))
	sig(300*time.Millisecond, c.b, c.a, accResp(200, "OK", "INVITE", c.callID, 1, c.answer))
	sig(310*time.Millisecond, c.a, c.b, accReq("ACK", c.callID, 1, "bt1", ""))
	for k, dir := range c.rtp {
		src, dst, _ := strings.Cut(dir, ">")
		ssrc := uint32(0x1000 + k)
		for i := 0; i < 55; i++ {
			p := accRTP(0, i == 0, uint16(100+i), uint32(i*160), ssrc, bytes.Repeat([]byte{0xff}, 160))
			d := 400*time.Millisecond + time.Duration(i)*20*time.Millisecond + time.Duration(k)*time.Millisecond
			fs = append(fs, accFrame{t0.Add(d), accIPEth(accUDP(t, src, dst, p))})
		}
	}
	sig(1600*time.Millisecond, c.a, c.b, accReq("BYE", c.callID, 2, "bt1", ""))
	sig(1620*time.Millisecond, c.b, c.a, accResp(200, "OK", "BYE", c.callID, 2, ""))
	return fs
}

// weakWrite sorts frames by time (stable) and writes a little-endian
// microsecond Ethernet pcap.
func weakWrite(t *testing.T, path string, fs []accFrame) {
	t.Helper()
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].ts.Before(fs[j-1].ts); j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
	accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, false, fs)
}

const (
	weakPhonePriv = "192.168.1.10"  // the phone's LAN address, in its SDP
	weakPhoneNAT  = "198.51.100.7"  // the phone's NAT public address
	weakServer    = "203.0.113.20"  // the public peer (a PBX or carrier)
	weakRelay     = "203.0.113.99"  // a TURN relay
	weakCallerPub = "198.51.100.50" // a public caller
)

func init() {
	natCall := func(id string, offer string) weakCall {
		return weakCall{
			callID: id, a: weakPhoneNAT + ":5060", b: weakServer + ":5060",
			offer: offer, answer: accSDP(weakServer, 30000, "0"),
			rtp: []string{weakPhoneNAT + ":4000>" + weakServer + ":30000", weakServer + ":30000>" + weakPhoneNAT + ":4000"},
		}
	}
	registerVerdictCapture(verdictCapture{
		Name:  "private-sdp-two-way-rtp.pcap",
		Class: "private SDP address with two-way RTP (a phone behind NAT, symmetric RTP)",
		Doc: "A phone behind NAT signals from its public address 198.51.100.7 and offers c=192.168.1.10:4000; the server 203.0.113.20 answers " +
			"c=203.0.113.20:30000. RTP flows both ways between 198.51.100.7:4000 and 203.0.113.20:30000 (55 packets each way). " +
			"Right answer: verdict none; the private address and the NAT-rewritten source are observations, never private_media_address or nat_mismatch.",
		Build: func(t *testing.T, path string) {
			weakWrite(t, path, weakCallFrames(t, natCall("nat-two-way@weak", accSDP(weakPhonePriv, 4000, "0"))))
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "webrtc-srflx-offer.pcap",
		Class: "private SDP address with ICE srflx/relay candidates (WebRTC-style offer)",
		Doc: "As private-sdp-two-way-rtp.pcap, but the offer carries ICE candidates: host 192.168.1.10 4000, srflx 198.51.100.7 4000 and relay " +
			"203.0.113.99 50000 (RFC 8839). RTP flows both ways. Right answer: verdict none; the private c= is only ICE's default candidate (an observation).",
		Build: func(t *testing.T, path string) {
			offer := accSDP(weakPhonePriv, 4000, "0",
				"candidate:1 1 udp 2122260223 192.168.1.10 4000 typ host",
				"candidate:2 1 udp 1686052607 198.51.100.7 4000 typ srflx raddr 192.168.1.10 rport 4000",
				"candidate:3 1 udp 41885439 203.0.113.99 50000 typ relay raddr 198.51.100.7 rport 4000")
			weakWrite(t, path, weakCallFrames(t, natCall("webrtc-srflx@weak", offer)))
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "private-sdp-media-failed.pcap",
		Class: "private SDP address where media towards it failed (absent or one-way)",
		Doc: "Three calls to the server 203.0.113.20. pub-ok@weak: a public caller, RTP both ways (no problem). " +
			"priv-no-rtp@weak: the phone behind NAT offers c=192.168.1.10:4002, the call is answered and no RTP at all flows while other calls carry RTP " +
			"(no_media and private_media_address). priv-one-way@weak: the phone offers c=192.168.1.10:4004 and only its own RTP reaches the server; " +
			"nothing flows towards it (one_way_audio and private_media_address).",
		Build: func(t *testing.T, path string) {
			var fs []accFrame
			fs = append(fs, weakCallFrames(t, weakCall{callID: "pub-ok@weak", a: weakCallerPub + ":5060", b: weakServer + ":5060",
				offer: accSDP(weakCallerPub, 4100, "0"), answer: accSDP(weakServer, 30100, "0"),
				rtp: []string{weakCallerPub + ":4100>" + weakServer + ":30100", weakServer + ":30100>" + weakCallerPub + ":4100"}})...)
			fs = append(fs, weakCallFrames(t, weakCall{callID: "priv-no-rtp@weak", a: weakPhoneNAT + ":5060", b: weakServer + ":5060",
				offer: accSDP(weakPhonePriv, 4002, "0"), answer: accSDP(weakServer, 30002, "0"), at: 2 * time.Second})...)
			fs = append(fs, weakCallFrames(t, weakCall{callID: "priv-one-way@weak", a: weakPhoneNAT + ":5060", b: weakServer + ":5060",
				offer: accSDP(weakPhonePriv, 4004, "0"), answer: accSDP(weakServer, 30004, "0"), at: 4 * time.Second,
				rtp: []string{weakPhoneNAT + ":4004>" + weakServer + ":30004"}})...)
			weakWrite(t, path, fs)
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "signaling-only.pcap",
		Class: "signaling-only capture point (no RTP at all)",
		Doc: "Three answered calls with offer and answer (so-1, so-2, so-3 @weak), each ended by BYE, and no RTP anywhere in the capture. " +
			"Right answer: one capture-level observation that media was not captured at this point (media_not_captured), zero no_media findings, " +
			"each call's media not judged (applicable false).",
		Build: func(t *testing.T, path string) {
			var fs []accFrame
			for i := 1; i <= 3; i++ {
				fs = append(fs, weakCallFrames(t, weakCall{callID: fmt.Sprintf("so-%d@weak", i), a: weakCallerPub + ":5060", b: weakServer + ":5060",
					offer: accSDP(weakCallerPub, 4100+2*i, "0"), answer: accSDP(weakServer, 30100+2*i, "0"), at: time.Duration(i) * 2 * time.Second})...)
			}
			weakWrite(t, path, fs)
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "arp-icmp-noise.pcap",
		Class: "a normal call among ARP, ICMP echo and LLDP frames",
		Doc: "One answered call with RTP both ways between public addresses (noise@weak), plus 2 ARP frames, an ICMP echo request and its reply " +
			"and 1 LLDP frame. Right answer: capture complete and not degraded, no undecodable frames, no INCOMPLETE RUN; " +
			"other traffic counted by kind (arp 2, icmp 2, lldp 1).",
		Build: func(t *testing.T, path string) {
			fs := weakCallFrames(t, weakCall{callID: "noise@weak", a: weakCallerPub + ":5060", b: weakServer + ":5060",
				offer: accSDP(weakCallerPub, 4100, "0"), answer: accSDP(weakServer, 30100, "0"),
				rtp: []string{weakCallerPub + ":4100>" + weakServer + ":30100", weakServer + ":30100>" + weakCallerPub + ":4100"}})
			arp := make([]byte, 28)
			copy(arp, []byte{0, 1, 8, 0, 6, 4, 0, 1})
			echo := func(typ byte) []byte {
				b := []byte{typ, 0, 0, 0, 0, 1, 0, 1, 'p', 'i', 'n', 'g'}
				var sum uint32
				for i := 0; i < len(b); i += 2 {
					sum += uint32(b[i])<<8 | uint32(b[i+1])
				}
				for sum > 0xffff {
					sum = sum&0xffff + sum>>16
				}
				binary.BigEndian.PutUint16(b[2:], ^uint16(sum))
				return b
			}
			lldp := []byte{0x02, 0x07, 0x04, 0x02, 0, 0, 0, 0, 0x0a, 0x04, 0x03, 0x05, 'p', '1', 0x06, 0x02, 0, 120, 0, 0}
			fs = append(fs,
				accFrame{accT0.Add(50 * time.Millisecond), accEth(0x0806, arp)},
				accFrame{accT0.Add(51 * time.Millisecond), accEth(0x0806, arp)},
				accFrame{accT0.Add(500 * time.Millisecond), accIPEth(accIPv4Proto(t, weakCallerPub, weakServer, layers.IPProtocolICMPv4, echo(8)))},
				accFrame{accT0.Add(501 * time.Millisecond), accIPEth(accIPv4Proto(t, weakServer, weakCallerPub, layers.IPProtocolICMPv4, echo(0)))},
				accFrame{accT0.Add(900 * time.Millisecond), accEth(0x88CC, lldp)},
			)
			weakWrite(t, path, fs)
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "junk-before-request.pcap",
		Class: "junk bytes before a SIP request line",
		Doc: "An OPTIONS (junk@weak) whose datagram starts with 9 bytes of junk (NUL, 0x01, \"garbage\") and a CRLF before the request line, answered 200; " +
			"then a second OPTIONS (crlf@weak) preceded only by CRLF CRLF (allowed by RFC 3261 §7.5), answered 200. Right answer: one malformed SIP message " +
			"(frame 1, junk before the start line) reported as a finding, the report never clean; lint rule SIP-3261-7.5-JUNK-BEFORE-START-LINE fires on junk@weak only.",
		Build: func(t *testing.T, path string) {
			a, b := weakCallerPub+":5060", weakServer+":5060"
			junk := append([]byte("\x00\x01garbage\r\n"), accReq("OPTIONS", "junk@weak", 1, "", "")...)
			crlf := append([]byte("\r\n\r\n"), accReq("OPTIONS", "crlf@weak", 1, "", "")...)
			weakWrite(t, path, []accFrame{
				{accT0, accIPEth(accUDP(t, a, b, junk))},
				{accT0.Add(10 * time.Millisecond), accIPEth(accUDP(t, b, a, accResp(200, "OK", "OPTIONS", "junk@weak", 1, "")))},
				{accT0.Add(time.Second), accIPEth(accUDP(t, a, b, crlf))},
				{accT0.Add(time.Second + 10*time.Millisecond), accIPEth(accUDP(t, b, a, accResp(200, "OK", "OPTIONS", "crlf@weak", 1, "")))},
			})
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "bad-content-length.pcap",
		Class: "a non-numeric and a negative Content-Length",
		Doc: "A MESSAGE (cl-abc@weak) with Content-Length: abc and a 5-byte text body, answered 200, and a MESSAGE (cl-neg@weak) with Content-Length: -5, " +
			"answered 200. Right answer: two malformed SIP messages (frames 1 and 3, unparseable Content-Length) reported as a finding; lint rule " +
			"SIP-3261-20.14-CONTENT-LENGTH-MALFORMED fires on each.",
		Build: func(t *testing.T, path string) {
			a, b := weakCallerPub+":5060", weakServer+":5060"
			msg := func(id, cl string) []byte {
				m := string(accReq("MESSAGE", id, 1, "", "hello", "Content-Type: text/plain"))
				return []byte(strings.Replace(m, "Content-Length: 5", "Content-Length: "+cl, 1))
			}
			weakWrite(t, path, []accFrame{
				{accT0, accIPEth(accUDP(t, a, b, msg("cl-abc@weak", "abc")))},
				{accT0.Add(10 * time.Millisecond), accIPEth(accUDP(t, b, a, accResp(200, "OK", "MESSAGE", "cl-abc@weak", 1, "")))},
				{accT0.Add(time.Second), accIPEth(accUDP(t, a, b, msg("cl-neg@weak", "-5")))},
				{accT0.Add(time.Second + 10*time.Millisecond), accIPEth(accUDP(t, b, a, accResp(200, "OK", "MESSAGE", "cl-neg@weak", 1, "")))},
			})
		},
	})
}

// weakJSON runs the binary with --json-run on a corpus capture and decodes the
// document.
func weakJSON(t *testing.T, name string) map[string]any {
	t.Helper()
	out, err := exec.Command(bin, "-N", "--json-run", "-I", verdictPath(name)).Output()
	if err != nil {
		t.Fatalf("--json-run %s: %v", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("--json-run %s: %v", name, err)
	}
	return m
}

// weakReport runs the binary with --report on a corpus capture.
func weakReport(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command(bin, "-N", "--report", "-I", verdictPath(name)).Output()
	if err != nil {
		t.Fatalf("--report %s: %v", name, err)
	}
	return string(out)
}

// dig walks a decoded JSON value by keys and array indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// weakFindings indexes a report's findings by kind.
func weakFindings(rep any) map[string]map[string]any {
	out := map[string]map[string]any{}
	fs, _ := dig(rep, "findings").([]any)
	for _, f := range fs {
		m, _ := f.(map[string]any)
		out[fmt.Sprint(m["kind"])] = m
	}
	return out
}

func weakSession(t *testing.T, name string) *rawSession {
	t.Helper()
	s := startRaw(t, "-N", "--mcp", "-I", verdictPath(name))
	s.waitLoaded()
	return s
}

func TestVerdictsWeakPrivateAddress(t *testing.T) {
	cases := []struct {
		capture, callID string
		verdict         string
		private, nat    bool
		observation     string // a substring of media.observations; "" for none expected
	}{
		{"private-sdp-two-way-rtp.pcap", "nat-two-way@weak", "none", false, false, "did not fail"},
		{"webrtc-srflx-offer.pcap", "webrtc-srflx@weak", "none", false, false, "ICE srflx/relay"},
		{"private-sdp-media-failed.pcap", "priv-no-rtp@weak", "media", true, false, ""},
		{"private-sdp-media-failed.pcap", "priv-one-way@weak", "media", true, true, ""},
		{"private-sdp-media-failed.pcap", "pub-ok@weak", "none", false, false, ""},
	}
	sessions := map[string]*rawSession{}
	for _, tc := range cases {
		if sessions[tc.capture] == nil {
			sessions[tc.capture] = weakSession(t, tc.capture)
		}
	}
	for _, tc := range cases {
		t.Run(tc.capture+"/"+tc.callID, func(t *testing.T) {
			s := sessions[tc.capture]
			tr, _ := s.ok("triage_call", map[string]any{"call_id": tc.callID})
			if got := dig(tr, "verdict"); got != tc.verdict {
				t.Errorf("triage_call verdict: got %v, want %s\n%v", got, tc.verdict, tr)
			}
			if got := dig(tr, "media", "nat_mismatch"); got != tc.nat {
				t.Errorf("triage_call nat_mismatch: got %v, want %v", got, tc.nat)
			}
			obs := fmt.Sprint(dig(tr, "media", "observations"))
			if tc.observation != "" && !strings.Contains(obs, tc.observation) {
				t.Errorf("triage_call observations: got %s, want one saying %q", obs, tc.observation)
			}
			rep, _ := s.ok("get_dialog_report", map[string]any{"call_id": tc.callID, "format": "json"})
			pm := dig(rep, "diagnosis", "media", "private_media_address")
			if pm == nil {
				pm = dig(rep, "media", "private_media_address")
			}
			if pm != tc.private {
				t.Errorf("get_dialog_report private_media_address: got %v, want %v", pm, tc.private)
			}
		})
	}

	// The capture report: private_media_address only for the two calls
	// whose media towards the phone failed, with their Call-IDs.
	for _, name := range []string{"private-sdp-two-way-rtp.pcap", "webrtc-srflx-offer.pcap", "private-sdp-media-failed.pcap"} {
		rep, _ := sessions[name].ok("get_capture_report", nil)
		f := weakFindings(rep)
		pf, nf := f["private_media_address"], f["nat_mismatch"]
		text := weakReport(t, name)
		switch name {
		case "private-sdp-media-failed.pcap":
			if pf == nil || pf["occurrences"] != 2.0 || !strings.Contains(fmt.Sprint(pf["evidence"]), "priv-no-rtp@weak") ||
				!strings.Contains(fmt.Sprint(pf["evidence"]), "priv-one-way@weak") {
				t.Errorf("%s get_capture_report: private_media_address got %v, want 2 dialogs priv-no-rtp and priv-one-way", name, pf)
			}
			// pub-ok@weak carries RTP, so the capture holds media: the
			// call without any is a real no_media.
			if f["no_media"] == nil || f["no_media"]["occurrences"] != 1.0 || f["one_way_audio"] == nil || f["media_not_captured"] != nil {
				t.Errorf("%s get_capture_report: got no_media %v one_way_audio %v media_not_captured %v, want 1, 1, none",
					name, f["no_media"], f["one_way_audio"], f["media_not_captured"])
			}
			if !strings.Contains(text, "[medium] private_media_address: 2 dialogs") || !strings.Contains(text, "[high] no_media: 1 dialog") {
				t.Errorf("%s --report:\n%s", name, text)
			}
		default:
			if pf != nil || nf != nil || rep["clean"] != true {
				t.Errorf("%s get_capture_report: got private_media_address %v nat_mismatch %v clean %v, want neither and clean", name, pf, nf, rep["clean"])
			}
			if strings.Contains(text, "private_media_address") || strings.Contains(text, "nat_mismatch") {
				t.Errorf("%s --report names a private/NAT problem:\n%s", name, text)
			}
		}
	}
}

func TestVerdictsWeakSignalingOnly(t *testing.T) {
	s := weakSession(t, "signaling-only.pcap")
	rep, _ := s.ok("get_capture_report", nil)
	f := weakFindings(rep)
	if f["no_media"] != nil {
		t.Errorf("get_capture_report: got no_media %v, want none", f["no_media"])
	}
	mc := f["media_not_captured"]
	if mc == nil || mc["occurrences"] != 1.0 || mc["severity"] != "info" || mc["unit"] != "captures" ||
		dig(mc, "evidence", 0, "counts", "answered_calls_with_sdp") != 3.0 {
		t.Errorf("get_capture_report: media_not_captured got %v, want once, info, answered_calls_with_sdp 3", mc)
	}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("so-%d@weak", i)
		tr, _ := s.ok("triage_call", map[string]any{"call_id": id})
		if dig(tr, "verdict") != "none" || dig(tr, "media", "no_media") != false || dig(tr, "media", "applicable") != false ||
			!strings.Contains(fmt.Sprint(dig(tr, "media", "reason")), "media was not captured at this point") {
			t.Errorf("triage_call %s: got %v, want verdict none, media not applicable (not captured)", id, tr)
		}
	}
	fp, _ := s.ok("find_problems", map[string]any{"filter": "no_media == true"})
	if rows, _ := dig(fp, "rows").([]any); len(rows) != 0 {
		t.Errorf("find_problems no_media: got %d rows, want 0: %v", len(rows), fp)
	}
	fp, _ = s.ok("find_problems", nil)
	if rows, _ := dig(fp, "rows").([]any); len(rows) != 0 {
		t.Errorf("find_problems: got %d rows, want 0: %v", len(rows), fp)
	}
	if r := weakReport(t, "signaling-only.pcap"); strings.Contains(r, "no_media") || strings.Count(r, "media_not_captured") != 1 {
		t.Errorf("--report: want media_not_captured once and no no_media:\n%s", r)
	}
}

func TestVerdictsWeakOtherTraffic(t *testing.T) {
	js := weakJSON(t, "arp-icmp-noise.pcap")
	run, _ := js["run"].(map[string]any)
	if run["undecodable_frames"] != 0.0 || run["other_traffic_frames"] != 5.0 || run["complete"] != true ||
		fmt.Sprint(run["other_traffic"]) != "map[arp:2 icmp:2 lldp:1]" {
		t.Errorf("--json-run run: undecodable %v other %v %v complete %v; want 0, 5 map[arp:2 icmp:2 lldp:1], true",
			run["undecodable_frames"], run["other_traffic_frames"], run["other_traffic"], run["complete"])
	}
	r := weakReport(t, "arp-icmp-noise.pcap")
	for _, bad := range []string{"INCOMPLETE RUN", "NOT DECODED", "undecodable"} {
		if strings.Contains(r, bad) {
			t.Errorf("--report says %q:\n%s", bad, r)
		}
	}
	if !strings.Contains(r, "5 frames of other traffic (not SIP or RTP, set aside): arp 2, icmp 2, lldp 1.") {
		t.Errorf("--report: other traffic line missing:\n%s", r)
	}
	s := weakSession(t, "arp-icmp-noise.pcap")
	st, _ := s.ok("capture_status", nil)
	if dig(st, "capture_quality", "degraded") != false || dig(st, "capture_quality", "undecodable_frames") != 0.0 ||
		dig(st, "capture_quality", "other_traffic_frames") != 5.0 {
		t.Errorf("capture_status capture_quality: got %v, want degraded false, undecodable 0, other 5", dig(st, "capture_quality"))
	}
	rep, _ := s.ok("get_capture_report", nil)
	if rep["complete"] != true || rep["clean"] != true {
		t.Errorf("get_capture_report: complete %v clean %v, want true, true: %v", rep["complete"], rep["clean"], rep)
	}
}

func TestVerdictsWeakMalformedSIP(t *testing.T) {
	cases := []struct {
		capture  string
		count    float64
		frames   []string
		reason   string
		rule     string
		fires    []string // Call-IDs the rule fires on
		quiet    []string // Call-IDs it must not fire on
		validate string   // a Call-ID whose first message validate_message must flag
	}{
		{"junk-before-request.pcap", 1, []string{"#1@"}, "junk before the start line", "SIP-3261-7.5-JUNK-BEFORE-START-LINE",
			[]string{"junk@weak"}, []string{"crlf@weak"}, "junk@weak"},
		{"bad-content-length.pcap", 2, []string{"#1@", "#3@"}, "unparseable Content-Length", "SIP-3261-20.14-CONTENT-LENGTH-MALFORMED",
			[]string{"cl-abc@weak", "cl-neg@weak"}, nil, "cl-neg@weak"},
	}
	for _, tc := range cases {
		t.Run(tc.capture, func(t *testing.T) {
			s := weakSession(t, tc.capture)
			rep, _ := s.ok("get_capture_report", nil)
			f := weakFindings(rep)["malformed_sip"]
			if rep["clean"] != false || f == nil || f["occurrences"] != tc.count {
				t.Fatalf("get_capture_report: clean %v malformed_sip %v; want not clean, %v messages", rep["clean"], f, tc.count)
			}
			ev := fmt.Sprint(f["evidence"])
			for _, fr := range tc.frames {
				if !strings.Contains(ev, tc.capture+fr) || !strings.Contains(ev, tc.reason) {
					t.Errorf("malformed_sip evidence: got %s, want frame %s%s and %q", ev, tc.capture, fr, tc.reason)
				}
			}
			run, _ := weakJSON(t, tc.capture)["run"].(map[string]any)
			if run["sip_malformed"] != tc.count || len(fmt.Sprint(run["sip_malformed_examples"])) < 10 ||
				dig(run, "sip_malformed_reasons", tc.reason) != tc.count {
				t.Errorf("--json-run run: sip_malformed %v reasons %v examples %v; want %v %q", run["sip_malformed"], run["sip_malformed_reasons"], run["sip_malformed_examples"], tc.count, tc.reason)
			}
			r := weakReport(t, tc.capture)
			if !strings.Contains(r, "malformed_sip") || !strings.Contains(r, fmt.Sprintf("(%d malformed", int(tc.count))) {
				t.Errorf("--report: want malformed_sip and %d malformed:\n%s", int(tc.count), r)
			}
			for _, id := range tc.fires {
				l, _ := s.ok("lint_dialog", map[string]any{"call_id": id})
				if !strings.Contains(fmt.Sprint(l), tc.rule) {
					t.Errorf("lint_dialog %s: %s did not fire: %v", id, tc.rule, l)
				}
			}
			for _, id := range tc.quiet {
				l, _ := s.ok("lint_dialog", map[string]any{"call_id": id})
				if strings.Contains(fmt.Sprint(l), tc.rule) {
					t.Errorf("lint_dialog %s: %s fired: %v", id, tc.rule, l)
				}
			}
			v, _ := s.ok("validate_message", map[string]any{"call_id": tc.validate, "index": 0})
			if !strings.Contains(fmt.Sprint(v), tc.rule) {
				t.Errorf("validate_message %s #0: %s did not fire: %v", tc.validate, tc.rule, v)
			}
		})
	}
}
