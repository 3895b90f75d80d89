package tests

// The duplicates-versus-retransmissions class of the verdict corpus. A capture
// duplicate is one message seen twice at the capture point: a mirrored copy of
// the same datagram, the same datagram on two interfaces of one host, HEP
// copies of it from two agents. A retransmission is the sender sending it again
// on the RFC 3261 §17 timers (Timer A: T1 = 500 ms, doubling). Both are
// counted, apart; duplicates count in sip_messages (tshark counts every frame)
// but in no dialog's msg_count, move no state and no timing, and never feed the
// retransmits > 3 rule or the "sent N times with no response" hint
// (core/dialog/dup.go, docs/retransmissions.md).

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

const (
	rtCaller = "10.30.0.10"
	rtCallee = "10.30.0.20"
)

// rtUDP is an IPv4/UDP packet (no link header) with the given
// Identification (RFC 791): a mirrored copy repeats it, the sender's next
// datagram carries the next one.
func rtUDP(t *testing.T, src, dst string, id uint16, payload []byte) []byte {
	t.Helper()
	s, d := accAP(src), accAP(dst)
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Id: id, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolUDP,
		SrcIP: s.Addr().AsSlice(), DstIP: d.Addr().AsSlice()}
	u := &layers.UDP{SrcPort: layers.UDPPort(s.Port()), DstPort: layers.UDPPort(d.Port())}
	_ = u.SetNetworkLayerForChecksum(ip)
	return accSer(t, ip, u, gopacket.Payload(payload))
}

// rtVLAN is an Ethernet frame with an 802.1Q tag (VLAN 100) around ip.
func rtVLAN(ip []byte) []byte { return accEth(0x8100, append(accTag(100, 0x0800), ip...)) }

// rtSLL is a Linux cooked (SLL) frame around ip, as a capture on "any" or
// on a bond's master writes it.
func rtSLL(ip []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0) // to us
	b = binary.BigEndian.AppendUint16(b, 1)    // ARPHRD_ETHER
	b = binary.BigEndian.AppendUint16(b, 6)
	b = append(b, accMACA...)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, 0x0800)
	return append(b, ip...)
}

// rtMsg is one datagram a party sent: when (after accT0), from, to, what.
type rtMsg struct {
	at       time.Duration
	src, dst string
	payload  []byte
}

// rtCall is one normal call between the caller and the callee: INVITE,
// 100, 180, 200 with the SDP answer, ACK, talk (G.729, 20 bytes every 20
// ms each way, for talk), BYE and its 200.
func rtCall(callID string, talk time.Duration) []rtMsg {
	caller, callee := rtCaller+":5060", rtCallee+":5060"
	from := "From: \"Alice\" <sip:alice@corp.example>;tag=" + callID + "-a"
	to := "To: <sip:bob@corp.example>"
	cid := "Call-ID: " + callID
	via := func(branch string) string {
		return "Via: SIP/2.0/UDP " + caller + ";branch=z9hG4bK-" + callID + "-" + branch
	}
	bt := ";tag=" + callID + "-b"
	var out []rtMsg
	at := func(d time.Duration, src, dst string, p []byte) { out = append(out, rtMsg{d, src, dst, p}) }
	at(0, caller, callee, accSIP("INVITE sip:bob@"+callee+" SIP/2.0", via("inv"), "Max-Forwards: 70", from, to, cid, "CSeq: 1 INVITE",
		"Contact: <sip:alice@"+caller+">", "User-Agent: corpus-phone/1",
		accSDP(rtCaller, 16000, "18", "rtpmap:18 G729/8000", "fmtp:18 annexb=no", "ptime:20", "sendrecv")))
	at(20*time.Millisecond, callee, caller, accSIP("SIP/2.0 100 Trying", via("inv"), from, to, cid, "CSeq: 1 INVITE"))
	at(150*time.Millisecond, callee, caller, accSIP("SIP/2.0 180 Ringing", via("inv"), from, to+bt, cid, "CSeq: 1 INVITE",
		"Contact: <sip:bob@"+callee+">"))
	ans := 1200 * time.Millisecond
	at(ans, callee, caller, accSIP("SIP/2.0 200 OK", via("inv"), from, to+bt, cid, "CSeq: 1 INVITE", "Contact: <sip:bob@"+callee+">",
		accSDP(rtCallee, 20000, "18", "rtpmap:18 G729/8000", "fmtp:18 annexb=no", "ptime:20", "sendrecv")))
	at(ans+10*time.Millisecond, caller, callee, accSIP("ACK sip:bob@"+callee+" SIP/2.0", via("ack"), "Max-Forwards: 70", from, to+bt, cid, "CSeq: 1 ACK"))
	payload := make([]byte, 20)
	n := 0
	for ; time.Duration(n)*20*time.Millisecond < talk; n++ {
		d := ans + 30*time.Millisecond + time.Duration(n)*20*time.Millisecond
		binary.BigEndian.PutUint32(payload, uint32(n))
		at(d, rtCaller+":16000", rtCallee+":20000", accRTP(18, n == 0, uint16(100+n), uint32(160*n), 0x5a5a0001, payload))
		at(d+3*time.Millisecond, rtCallee+":20000", rtCaller+":16000", accRTP(18, n == 0, uint16(700+n), uint32(4000+160*n), 0x5a5a0002, payload))
	}
	bye := ans + 30*time.Millisecond + time.Duration(n)*20*time.Millisecond
	at(bye, caller, callee, accSIP("BYE sip:bob@"+callee+" SIP/2.0", via("bye"), "Max-Forwards: 70", from, to+bt, cid, "CSeq: 2 BYE"))
	at(bye+25*time.Millisecond, callee, caller, accSIP("SIP/2.0 200 OK", via("bye"), from, to+bt, cid, "CSeq: 2 BYE"))
	return out
}

// rtUnanswered is an INVITE its sender re-sends on Timer A (T1 = 500 ms,
// doubling: 0, 0.5, 1.5, 3.5 and 7.5 s) and nobody answers.
func rtUnanswered(callID string) []rtMsg {
	caller, callee := rtCaller+":5060", rtCallee+":5060"
	inv := accSIP("INVITE sip:bob@"+callee+" SIP/2.0", "Via: SIP/2.0/UDP "+caller+";branch=z9hG4bK-"+callID+"-inv", "Max-Forwards: 70",
		"From: \"Alice\" <sip:alice@corp.example>;tag="+callID+"-a", "To: <sip:bob@corp.example>", "Call-ID: "+callID, "CSeq: 1 INVITE",
		"Contact: <sip:alice@"+caller+">", "User-Agent: corpus-phone/1",
		accSDP(rtCaller, 16000, "18", "rtpmap:18 G729/8000", "fmtp:18 annexb=no", "ptime:20", "sendrecv"))
	var out []rtMsg
	for _, ms := range []int{0, 500, 1500, 3500, 7500} {
		out = append(out, rtMsg{time.Duration(ms) * time.Millisecond, caller, callee, inv})
	}
	return out
}

// rtFrames puts each datagram in an Ethernet frame, its own IP
// Identification from base on; mirrored repeats each frame, byte for byte,
// 0.1 ms later (a SPAN port copying both directions of the link).
func rtFrames(t *testing.T, msgs []rtMsg, base uint16, mirrored bool) []accFrame {
	var out []accFrame
	for i, m := range msgs {
		f := accFrame{ts: accT0.Add(m.at), data: accIPEth(rtUDP(t, m.src, m.dst, base+uint16(i), m.payload))}
		out = append(out, f)
		if mirrored {
			out = append(out, accFrame{ts: f.ts.Add(100 * time.Microsecond), data: f.data})
		}
	}
	return out
}

func init() {
	registerVerdictCapture(verdictCapture{
		Name:  "mirrored-duplicates.pcap",
		Class: "Mirrored duplicate frames: every frame of a normal call seen twice (duplicates, not retransmissions)",
		Doc: `One normal call (INVITE, 100, 180, 200, ACK, 1 s of G.729 both ways, BYE,
200) captured through a mirror port that copies every frame: each frame appears
twice, byte for byte (same IP Identification), 0.1 ms apart. tshark counts 14
SIP messages. A right answer: 14 SIP messages of which 7 are capture
duplicates and 0 retransmissions; one dialog, Completed, final 200, msg_count
7, timing.duplicates 7, PDD 150 ms and setup 1200 ms as without the copies;
no problem (the retransmits > 3 rule does not fire).`,
		Build: func(t *testing.T, path string) {
			accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, true,
				rtFrames(t, rtCall("mirror-1@corp.example", time.Second), 0x2000, true))
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "sbc-two-interfaces.pcapng",
		Class: "One call captured on two interfaces of an SBC (same SIP bytes, different link headers)",
		Doc: `One normal call (signaling only) captured on an SBC on two interfaces at
once: if0 (Ethernet, 802.1Q VLAN 100) and if1 (Linux cooked, the bond master):
every datagram appears once on each, the same IP packet 40 us apart; the
copies of the 180 and of the ACK are written if1 first. tshark counts 14 SIP
messages. A right answer: 14 SIP messages, 7 capture duplicates, 0
retransmissions; one dialog, Completed, final 200, msg_count 7.`,
		Build: func(t *testing.T, path string) {
			var frames []accFrame
			var ifaces []int
			for i, m := range rtCall("sbc-1@corp.example", 0) {
				ip := rtUDP(t, m.src, m.dst, 0x4000+uint16(i), m.payload)
				ts := accT0.Add(m.at)
				a, b := accFrame{ts, rtVLAN(ip)}, accFrame{ts.Add(40 * time.Microsecond), rtSLL(ip)}
				if i == 2 || i == 4 { // written out of time order by the capturing host
					frames, ifaces = append(frames, b, a), append(ifaces, 1, 0)
					continue
				}
				frames, ifaces = append(frames, a, b), append(ifaces, 0, 1)
			}
			accPcapNG(t, path, []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL}, ifaces, frames)
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "hep-two-agents.pcap",
		Class: "HEP copies of one call from two capture agents",
		Doc: `One normal call (signaling only) reported over HEP3/UDP to a collector
(10.30.0.100:9060) by two capture agents, 10.30.0.11 (capture id 101) and
10.30.0.12 (capture id 102), that both see the call: every SIP message arrives
twice, the same payload and inner addresses, agent 102's timestamp 1.5 ms
later than agent 101's (its clock). A right answer: 14 SIP messages (14 HEP
envelopes), 7 capture duplicates, 0 retransmissions; one dialog, Completed,
final 200, msg_count 7.`,
		Build: func(t *testing.T, path string) {
			var frames []accFrame
			for i, m := range rtCall("hep-1@corp.example", 0) {
				ts := accT0.Add(m.at)
				e1 := accHEP3Agent(m.src, m.dst, ts, 101, m.payload, false)
				e2 := accHEP3Agent(m.src, m.dst, ts.Add(1500*time.Microsecond), 102, m.payload, false)
				frames = append(frames,
					accFrame{ts.Add(300 * time.Microsecond), accIPEth(rtUDP(t, "10.30.0.11:40001", "10.30.0.100:9060", 0x5000+uint16(i), e1))},
					accFrame{ts.Add(800 * time.Microsecond), accIPEth(rtUDP(t, "10.30.0.12:40002", "10.30.0.100:9060", 0x6000+uint16(i), e2))})
			}
			accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, true, frames)
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "invite-retransmitted-unanswered.pcap",
		Class: "An INVITE retransmitted on Timer A with no answer (retransmissions, not duplicates)",
		Doc: `An INVITE from 10.30.0.10 to 10.30.0.20 sent at 0, 0.5, 1.5, 3.5 and 7.5 s
(RFC 3261 Timer A: T1 = 500 ms, doubling), each copy its own datagram (IP
Identification 0x3000 to 0x3004), and no response at all. A right answer: 5
SIP messages, 4 retransmissions, 0 capture duplicates; the dialog Trying with
msg_count 5 and retransmits 4; the retransmits > 3 rule fires and the hint says
the INVITE was sent 5 times over 7.5 s with no response (the far end
unreachable).`,
		Build: func(t *testing.T, path string) {
			accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, true,
				rtFrames(t, rtUnanswered("unanswered-1@corp.example"), 0x3000, false))
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "invite-retransmitted-mirrored.pcap",
		Class: "An INVITE retransmitted on Timer A, every frame mirrored (both counted, apart)",
		Doc: `invite-retransmitted-unanswered.pcap's five INVITEs (0, 0.5, 1.5, 3.5, 7.5 s,
no answer) captured through a mirror port: each frame twice, byte for byte, 0.1
ms apart. tshark counts 10 SIP messages. A right answer: 10 SIP messages, 4
retransmissions and 5 capture duplicates, counted apart; the dialog Trying with
msg_count 5, retransmits 4, timing.duplicates 5; the hint says the INVITE was
sent 5 times (not 10).`,
		Build: func(t *testing.T, path string) {
			accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, true,
				rtFrames(t, rtUnanswered("unanswered-2@corp.example"), 0x3100, true))
		},
	})
}

// rtExpect is what a right answer says of one capture of the class.
type rtExpect struct {
	name, callID, state string
	final               int // 0: none
	// The run: SIP messages (tshark's count: every copy), retransmissions,
	// capture duplicates.
	sipMessages, retrans, dups int
	// The dialog's messages (capture duplicates not counted).
	msgCount int
	// problem: find_problems' problems alias matches the call (retransmits > 3).
	problem bool
	// hint: the triage hint on the unanswered request; "" when none.
	hint string
}

const rtUnansweredHint = "INVITE (CSeq 1) was sent 5 times over 7.5 s with no response at all: the far end is unreachable"

var rtExpected = []rtExpect{
	{"mirrored-duplicates.pcap", "mirror-1@corp.example", "Completed", 200, 14, 0, 7, 7, false, ""},
	{"sbc-two-interfaces.pcapng", "sbc-1@corp.example", "Completed", 200, 14, 0, 7, 7, false, ""},
	{"hep-two-agents.pcap", "hep-1@corp.example", "Completed", 200, 14, 0, 7, 7, false, ""},
	{"invite-retransmitted-unanswered.pcap", "unanswered-1@corp.example", "Trying", 0, 5, 4, 0, 5, true, rtUnansweredHint},
	{"invite-retransmitted-mirrored.pcap", "unanswered-2@corp.example", "Trying", 0, 10, 4, 5, 5, true, rtUnansweredHint},
}

// TestVerdictDuplicatesCLI runs the binary's --json-run and --report on each
// capture of the class: duplicates and retransmissions are counted apart,
// sip_messages stays tshark's count (checked against tshark where it reads
// the capture: it has no HEP dissector in 4.0), the dialog's msg_count and
// state are the call's own.
func TestVerdictDuplicatesCLI(t *testing.T) {
	tshark, _ := exec.LookPath("tshark")
	for _, tc := range rtExpected {
		t.Run(tc.name, func(t *testing.T) {
			path := verdictPath(tc.name)
			out, stderr, code := runCLI(t, "-N", "-I", path, "--json-run")
			if code != 0 {
				t.Fatalf("--json-run exited %d: %s", code, stderr)
			}
			var doc struct {
				Run struct {
					SIPMessages int `json:"sip_messages"`
					Retrans     int `json:"sip_retransmissions"`
					Dups        int `json:"sip_duplicates"`
					Store       struct {
						Messages        int `json:"messages"`
						Retransmissions int `json:"retransmissions"`
						Duplicates      int `json:"duplicates"`
					} `json:"dialog_store"`
				} `json:"run"`
				Dialogs []struct {
					CallID   string `json:"call_id"`
					State    string `json:"state"`
					Final    int    `json:"final_status_code"`
					MsgCount int    `json:"msg_count"`
					Timing   struct {
						Retransmits int `json:"retransmits"`
						Duplicates  int `json:"duplicates"`
					} `json:"timing"`
				} `json:"dialogs"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("--json-run: %v\n%s", err, out)
			}
			r := doc.Run
			if r.SIPMessages != tc.sipMessages || r.Retrans != tc.retrans || r.Dups != tc.dups ||
				r.Store.Messages != tc.sipMessages || r.Store.Retransmissions != tc.retrans || r.Store.Duplicates != tc.dups {
				t.Errorf("run: sip_messages %d sip_retransmissions %d sip_duplicates %d (store %+v), want %d %d %d",
					r.SIPMessages, r.Retrans, r.Dups, r.Store, tc.sipMessages, tc.retrans, tc.dups)
			}
			if len(doc.Dialogs) != 1 {
				t.Fatalf("got %d dialogs, want 1", len(doc.Dialogs))
			}
			d := doc.Dialogs[0]
			if d.CallID != tc.callID || d.State != tc.state || d.Final != tc.final || d.MsgCount != tc.msgCount ||
				d.Timing.Retransmits != tc.retrans || d.Timing.Duplicates != tc.dups {
				t.Errorf("dialog: %s %s final %d msg_count %d retransmits %d duplicates %d, want %s %s %d %d %d %d",
					d.CallID, d.State, d.Final, d.MsgCount, d.Timing.Retransmits, d.Timing.Duplicates,
					tc.callID, tc.state, tc.final, tc.msgCount, tc.retrans, tc.dups)
			}
			if tshark != "" && !strings.HasPrefix(tc.name, "hep-") {
				b, err := exec.Command(tshark, "-r", path, "-Y", "sip").Output()
				if err != nil {
					t.Fatalf("tshark: %v", err)
				}
				if n := strings.Count(string(b), "\n"); n != tc.sipMessages {
					t.Errorf("tshark selects %d SIP frames, sipnab counts %d sip_messages", n, tc.sipMessages)
				}
			}

			rep, stderr, code := runCLI(t, "-N", "-I", path, "--report")
			if code != 0 {
				t.Fatalf("--report exited %d: %s", code, stderr)
			}
			want := fmt.Sprintf("%d SIP messages (0 malformed, %d retransmissions)", tc.sipMessages, tc.retrans)
			if tc.dups > 0 {
				want = fmt.Sprintf("%d SIP messages (0 malformed, %d retransmissions, %d capture duplicates)", tc.sipMessages, tc.retrans, tc.dups)
			}
			if !strings.Contains(rep, want) {
				t.Errorf("--report: no %q in\n%s", want, rep)
			}
			finding := strings.Contains(rep, "retransmissions: 1 request (requests retransmitted without any response)")
			if finding != tc.problem || tc.problem && !strings.Contains(rep, "copies=5 cseq=1") {
				t.Errorf("--report: retransmissions finding %v (want %v, with copies=5)\n%s", finding, tc.problem, rep)
			}
		})
	}
}

// TestVerdictDuplicatesMCP asks the MCP tools about each capture of the
// class: find_problems' problems alias (retransmits > 3) and group_dialogs'
// retransmit_rate see retransmissions only; get_dialog flags each message
// with its capture duplicates and its retransmission; triage_call's
// "sent N times with no response" hint counts the sender's copies, not the
// capture's.
func TestVerdictDuplicatesMCP(t *testing.T) {
	for _, tc := range rtExpected {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, "-N", "--mcp", "-I", verdictPath(tc.name))
			s.waitLoaded()

			fp, _ := s.ok("find_problems", map[string]any{"kinds": []string{"problems"}})
			if n := fp["total_matched"]; n != float64(rtInt(tc.problem)) {
				t.Errorf("find_problems problems: total_matched %v, want %d", n, rtInt(tc.problem))
			}

			gd, _ := s.ok("group_dialogs", map[string]any{"by": "method", "metrics": []string{"retransmit_rate"}})
			groups, _ := gd["groups"].([]any)
			if len(groups) != 1 {
				t.Fatalf("group_dialogs: %d groups, want 1", len(groups))
			}
			g := groups[0].(map[string]any)
			if rate := g["metrics"].(map[string]any)["retransmit_rate"]; rate != float64(tc.retrans) {
				t.Errorf("group_dialogs retransmit_rate %v, want %d", rate, tc.retrans)
			}

			dg, _ := s.ok("get_dialog", map[string]any{"call_id": tc.callID})
			msgs, _ := dg["messages"].([]any)
			if len(msgs) != tc.msgCount {
				t.Fatalf("get_dialog: %d messages, want %d", len(msgs), tc.msgCount)
			}
			var dups, retrans int
			for _, m := range msgs {
				mm := m.(map[string]any)
				if v, ok := mm["duplicates"].(float64); ok {
					dups += int(v)
				}
				if mm["retransmission"] == true {
					retrans++
				}
			}
			if dups != tc.dups || retrans != tc.retrans {
				t.Errorf("get_dialog messages: duplicates %d retransmissions %d, want %d %d", dups, retrans, tc.dups, tc.retrans)
			}

			tr, _ := s.ok("triage_call", map[string]any{"call_id": tc.callID})
			sig, _ := tr["signaling"].(map[string]any)
			hints := fmt.Sprint(sig["hints"])
			if tc.hint == "" {
				// (The signaling-only captures' media verdict is another
				// class's: a capture without RTP.)
				if strings.Contains(hints, "with no response") || sig["problem"] != false {
					t.Errorf("triage_call: signaling problem %v hints %s, want no problem and no unanswered hint", sig["problem"], hints)
				}
				return
			}
			if !strings.Contains(hints, tc.hint) || tr["verdict"] != "signaling" {
				t.Errorf("triage_call: verdict %v hints %s, want signaling with %q", tr["verdict"], hints, tc.hint)
			}
			rs, _ := sig["retransmissions"].([]any)
			if len(rs) != 1 || rs[0].(map[string]any)["count"] != float64(5) || rs[0].(map[string]any)["span_ms"] != float64(7500) {
				t.Errorf("triage_call retransmissions %v, want one INVITE sent 5 times over 7500 ms", rs)
			}
		})
	}
}

func rtInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
