package tests

// The post-dial delay class of the verdict corpus: an
// INVITE challenged with 407 and retried with credentials. The 407 ends
// the first INVITE's delay (RFC 6076 §4.3); PDD and setup are measured on
// the credentialed INVITE that was routed, and the caller's wait between
// the challenge and the retry is reported apart (auth_wait_ms) and never
// raises slow setup (docs/call-timing.md).

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// pddCall is one challenged call: INVITE, 407 after 50 ms, ACK, the
// caller's wait, the credentialed INVITE, 100 after 20 ms, 180 after ring,
// 200 after answer, ACK, talk (G.729 RTP both ways, ptime 40), BYE and 200.
type pddCall struct {
	callID       string
	start        time.Duration // first INVITE, after accT0
	wait         time.Duration // 407 to the credentialed INVITE
	ring, answer time.Duration // credentialed INVITE to 180, to 200
	talk         time.Duration // 200 to BYE
	callerPort   int           // caller's RTP port; the callee's is +1000
	ssrc         uint32
}

const (
	pddCaller = "10.20.0.10"
	pddProxy  = "10.20.0.1"
)

func (c pddCall) frames(t *testing.T) []accFrame {
	t.Helper()
	caller, proxy := pddCaller+":5060", pddProxy+":5060"
	var out []accFrame
	at := func(d time.Duration, src, dst string, payload []byte) {
		out = append(out, accFrame{ts: accT0.Add(c.start + d), data: accIPEth(accUDP(t, src, dst, payload))})
	}
	from := "From: \"Alice\" <sip:alice@pbx.example>;tag=" + c.callID + "-a"
	to := "To: <sip:bob@pbx.example>"
	cid := "Call-ID: " + c.callID
	via := func(branch string) string {
		return "Via: SIP/2.0/UDP " + caller + ";branch=z9hG4bK-" + c.callID + "-" + branch
	}
	offer := accSDP(pddCaller, c.callerPort, "18", "rtpmap:18 G729/8000", "ptime:40", "sendrecv")
	answer := accSDP(pddProxy, c.callerPort+1000, "18", "rtpmap:18 G729/8000", "ptime:40", "sendrecv")
	invite := func(cseq int, branch string, extra ...string) []byte {
		l := []string{"INVITE sip:bob@pbx.example SIP/2.0", via(branch), "Max-Forwards: 70", from, to, cid,
			fmt.Sprintf("CSeq: %d INVITE", cseq), "Contact: <sip:alice@" + caller + ">", "User-Agent: corpus-phone/1"}
		return accSIP(append(append(l, extra...), offer)...)
	}
	resp := func(status, branch string, cseq int, method, toTag string, extra ...string) []byte {
		tt := to
		if toTag != "" {
			tt += ";tag=" + toTag
		}
		l := []string{"SIP/2.0 " + status, via(branch), from, tt, cid, fmt.Sprintf("CSeq: %d %s", cseq, method)}
		return accSIP(append(l, extra...)...)
	}
	// The challenge and the retry (RFC 3261 §22.2: new branch, CSeq + 1).
	at(0, caller, proxy, invite(1, "inv1"))
	at(50*time.Millisecond, proxy, caller, resp("407 Proxy Authentication Required", "inv1", 1, "INVITE", "px-"+c.callID,
		`Proxy-Authenticate: Digest realm="pbx.example", nonce="4f1c2a", algorithm=MD5, qop="auth"`))
	at(60*time.Millisecond, caller, proxy, accSIP("ACK sip:bob@pbx.example SIP/2.0", via("inv1"), "Max-Forwards: 70", from,
		to+";tag=px-"+c.callID, cid, "CSeq: 1 ACK"))
	r := 50*time.Millisecond + c.wait
	at(r, caller, proxy, invite(2, "inv2",
		`Proxy-Authorization: Digest username="alice", realm="pbx.example", nonce="4f1c2a", uri="sip:bob@pbx.example", response="6629fae49393a05397450978507c4ef1", algorithm=MD5, qop=auth, nc=00000001, cnonce="0a4f113b"`))
	bt := "b-" + c.callID
	at(r+20*time.Millisecond, proxy, caller, resp("100 Trying", "inv2", 2, "INVITE", ""))
	at(r+c.ring, proxy, caller, resp("180 Ringing", "inv2", 2, "INVITE", bt, "Contact: <sip:bob@"+proxy+">"))
	at(r+c.answer, proxy, caller, accSIP("SIP/2.0 200 OK", via("inv2"), from, to+";tag="+bt, cid, "CSeq: 2 INVITE",
		"Contact: <sip:bob@"+proxy+">", answer))
	ans := r + c.answer
	at(ans+10*time.Millisecond, caller, proxy, accSIP("ACK sip:bob@"+proxy+" SIP/2.0", via("ack2"), "Max-Forwards: 70", from,
		to+";tag="+bt, cid, "CSeq: 2 ACK"))
	// Talk: G.729 at ptime 40 (40 bytes every 40 ms) each way.
	payload := make([]byte, 40)
	for i := 0; time.Duration(i)*40*time.Millisecond < c.talk-100*time.Millisecond; i++ {
		d := ans + 40*time.Millisecond + time.Duration(i)*40*time.Millisecond
		binary.BigEndian.PutUint32(payload, uint32(i))
		at(d, fmt.Sprintf("%s:%d", pddCaller, c.callerPort), fmt.Sprintf("%s:%d", pddProxy, c.callerPort+1000),
			accRTP(18, i == 0, uint16(1000+i), uint32(320*i), c.ssrc, payload))
		at(d+5*time.Millisecond, fmt.Sprintf("%s:%d", pddProxy, c.callerPort+1000), fmt.Sprintf("%s:%d", pddCaller, c.callerPort),
			accRTP(18, i == 0, uint16(5000+i), uint32(8000+320*i), c.ssrc+1, payload))
	}
	bye := ans + c.talk
	at(bye, caller, proxy, accSIP("BYE sip:bob@"+proxy+" SIP/2.0", via("bye"), "Max-Forwards: 70", from, to+";tag="+bt, cid, "CSeq: 3 BYE"))
	at(bye+30*time.Millisecond, proxy, caller, resp("200 OK", "bye", 3, "BYE", bt))
	return out
}

// pddWrite writes the calls' frames in time order to a pcap.
func pddWrite(t *testing.T, path string, calls ...pddCall) {
	t.Helper()
	var frames []accFrame
	for _, c := range calls {
		frames = append(frames, c.frames(t)...)
	}
	// stable insertion sort by time: few hundred frames
	for i := 1; i < len(frames); i++ {
		for j := i; j > 0 && frames[j].ts.Before(frames[j-1].ts); j-- {
			frames[j], frames[j-1] = frames[j-1], frames[j]
		}
	}
	accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, false, frames)
}

var (
	// pddLongWait: the caller takes 14 s to answer the 407 (a PIN typed,
	// a slow client); the routed INVITE rings in 1.2 s.
	pddLongWait = pddCall{callID: "pdd-long-wait", wait: 14 * time.Second, ring: 1200 * time.Millisecond,
		answer: 4 * time.Second, talk: 4 * time.Second, callerPort: 40000, ssrc: 0x1a2b0001}
	// pddSlowRing: the caller retries within 0.5 s; the routed INVITE
	// takes 13 s to ring.
	pddSlowRing = pddCall{callID: "pdd-slow-ring", start: 40 * time.Second, wait: 500 * time.Millisecond,
		ring: 13 * time.Second, answer: 15 * time.Second, talk: 4 * time.Second, callerPort: 42000, ssrc: 0x1a2b0101}
)

func init() {
	registerVerdictCapture(verdictCapture{
		Name:  "invite-407-long-wait.pcap",
		Class: "INVITE challenged 407, credentialed INVITE after a long client wait (PDD per RFC 6076)",
		Doc: "One call, caller 10.20.0.10 to proxy 10.20.0.1: INVITE at t=0, 407 at 0.05 s, ACK; the caller waits 14 s; " +
			"INVITE with Proxy-Authorization (CSeq 2) at 14.05 s, 100 at +0.02 s, 180 at +1.2 s, 200 at +4 s, ACK, " +
			"4 s of G.729 RTP both ways, BYE and 200. Right answer: PDD 1200 ms and setup 4000 ms, both from the " +
			"credentialed INVITE (the 407 ended the first INVITE's delay); auth_wait_ms 14000 reported apart; " +
			"no slow setup (default --pdd-threshold 11 s), verdict none.",
		Build: func(t *testing.T, path string) { pddWrite(t, path, pddLongWait) },
	})
	registerVerdictCapture(verdictCapture{
		Name:  "invite-407-slow-ring.pcap",
		Class: "INVITE challenged 407 twice: long client wait then quick ring, quick retry then slow ring",
		Doc: "Two calls. pdd-long-wait as in invite-407-long-wait.pcap (wait 14 s, 180 1.2 s after the credentialed " +
			"INVITE). pdd-slow-ring at t=40 s: 407, the caller retries 0.5 s later, the credentialed INVITE rings after " +
			"13 s and is answered after 15 s. Right answer: pdd-long-wait PDD 1200 ms, no slow setup; pdd-slow-ring " +
			"PDD 13000 ms, setup 15000 ms, auth_wait_ms 500, slow setup (post_dial_delay 13000 ms over 11000 ms, " +
			"evidence the credentialed INVITE and its 180); compare_dialogs shows pdd_ms 1200 vs 13000 and " +
			"auth_wait_ms 14000 vs 500.",
		Build: func(t *testing.T, path string) { pddWrite(t, path, pddLongWait, pddSlowRing) },
	})
}

// pddNum reads a JSON number at a dotted path of m (absent: false).
func pddNum(m map[string]any, path string) (float64, bool) {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		v = o[k]
	}
	f, ok := v.(float64)
	return f, ok
}

// TestVerdictPDDAfterAuthChallengeE2E: through the binary, every surface
// that shows the post-dial delay measures it on the credentialed INVITE,
// shows the caller's wait apart, and raises slow setup only on the call
// whose routed INVITE was slow to ring.
func TestVerdictPDDAfterAuthChallengeE2E(t *testing.T) {
	path := verdictPath("invite-407-slow-ring.pcap")
	s := startRaw(t, "-N", "--mcp", "-I", path)
	s.waitLoaded()
	cases := []struct {
		callID                    string
		pdd, setup, wait, trying  float64
		slow                      bool
		verdict                   string
		firstInvite, routedInvite int // message indexes in get_dialog
		ringIndex                 int
	}{
		{"pdd-long-wait", 1200, 4000, 14000, 20, false, "none", 0, 3, 5},
		{"pdd-slow-ring", 13000, 15000, 500, 20, true, "signaling", 0, 3, 5},
	}
	for _, c := range cases {
		t.Run(c.callID, func(t *testing.T) {
			s := s.on(t)
			g, _ := s.ok("get_dialog", map[string]any{"call_id": c.callID})
			d, _ := g["dialog"].(map[string]any)
			for _, v := range []struct {
				path string
				want float64
			}{
				{"timing.pdd_ms", c.pdd}, {"timing.setup_ms", c.setup}, {"timing.auth_wait_ms", c.wait},
				{"timing_detail.pdd_ms", c.pdd}, {"timing_detail.setup_ms", c.setup},
				{"timing_detail.trying_ms", c.trying}, {"timing_detail.auth_wait_ms", c.wait},
				{"timing_detail.ring_ms", c.setup - c.pdd},
			} {
				if got, ok := pddNum(d, v.path); !ok || got != v.want {
					t.Errorf("get_dialog %s = %v (present %v), want %v", v.path, got, ok, v.want)
				}
			}
			td, _ := d["timing_detail"].(map[string]any)
			if td["first_invite_at"] == nil || td["invite_at"] == td["first_invite_at"] {
				t.Errorf("get_dialog timing_detail: invite_at %v first_invite_at %v, want the retry and the challenged INVITE", td["invite_at"], td["first_invite_at"])
			}

			tr, _ := s.ok("triage_call", map[string]any{"call_id": c.callID})
			sig, _ := tr["signaling"].(map[string]any)
			if tr["verdict"] != c.verdict {
				t.Errorf("triage_call verdict %v, want %s (signaling %v)", tr["verdict"], c.verdict, sig)
			}
			hints, _ := json.Marshal(sig["hints"])
			if !c.slow {
				if sig["slow_setup"] != nil || sig["post_dial_delay"] != nil || strings.Contains(string(hints), "post-dial") {
					t.Errorf("triage_call raised slow setup on the caller's wait: %v", sig)
				}
				return
			}
			pd, _ := sig["post_dial_delay"].(map[string]any)
			if got, _ := pddNum(sig, "post_dial_delay.pdd_ms"); got != c.pdd {
				t.Errorf("post_dial_delay.pdd_ms %v, want %v", got, c.pdd)
			}
			if got, _ := pddNum(sig, "post_dial_delay.threshold_ms"); got != 11000 {
				t.Errorf("post_dial_delay.threshold_ms %v, want 11000", got)
			}
			if ev, _ := json.Marshal(pd["evidence"]); string(ev) != fmt.Sprintf("[%d,%d]", c.routedInvite, c.ringIndex) {
				t.Errorf("post_dial_delay evidence %s, want the credentialed INVITE %d and its 180 %d", ev, c.routedInvite, c.ringIndex)
			}
			if !strings.Contains(string(hints), "post-dial delay 13.0 s exceeds 11 s") {
				t.Errorf("triage_call hints %s, want the post-dial delay hint", hints)
			}
		})
	}

	t.Run("compare_dialogs", func(t *testing.T) {
		s := s.on(t)
		cmp, _ := s.ok("compare_dialogs", map[string]any{"call_id_a": "pdd-long-wait", "call_id_b": "pdd-slow-ring"})
		diffs := map[string][2]any{}
		list, _ := cmp["differences"].([]any)
		for _, x := range list {
			o, _ := x.(map[string]any)
			diffs[fmt.Sprint(o["field"])] = [2]any{o["a"], o["b"]}
		}
		for field, want := range map[string][2]any{
			"pdd_ms": {"1200", "13000"}, "setup_ms": {"4000", "15000"}, "auth_wait_ms": {"14000", "500"},
			"verdict": {"none", "signaling"},
		} {
			if diffs[field] != want {
				t.Errorf("compare_dialogs %s = %v, want %v", field, diffs[field], want)
			}
		}
		if _, ok := diffs["trying_ms"]; ok {
			t.Errorf("compare_dialogs trying_ms differs (%v): both credentialed INVITEs were answered 100 after 20 ms", diffs["trying_ms"])
		}
	})

	t.Run("get_dialog_report", func(t *testing.T) {
		s := s.on(t)
		for _, c := range []struct {
			callID, timing string
			slow           bool
		}{
			{"pdd-long-wait", "trying 20 ms, PDD 1200 ms, setup 4000 ms, ring 2800 ms", false},
			{"pdd-slow-ring", "trying 20 ms, PDD 13000 ms, setup 15000 ms, ring 2000 ms", true},
		} {
			r := s.call("get_dialog_report", map[string]any{"call_id": c.callID, "format": "text"})
			if r.Err != nil || r.IsError || len(r.Content) == 0 {
				t.Fatalf("get_dialog_report %s: %+v %s", c.callID, r.Err, r.Response)
			}
			text := r.Content[0].Text
			if !strings.Contains(text, "Timing:    "+c.timing) || !strings.Contains(text, "auth wait ") {
				t.Errorf("get_dialog_report %s: want timing %q and the auth wait apart:\n%s", c.callID, c.timing, text)
			}
			if got := strings.Contains(text, "slow setup: post-dial delay"); got != c.slow {
				t.Errorf("get_dialog_report %s: slow setup %v, want %v:\n%s", c.callID, got, c.slow, text)
			}
		}
	})

	t.Run("group_dialogs pdd percentiles", func(t *testing.T) {
		s := s.on(t)
		g, _ := s.ok("group_dialogs", map[string]any{"by": "to_domain", "metrics": []string{"pdd_p50", "pdd_p95"}})
		groups, _ := g["groups"].([]any)
		if len(groups) != 1 {
			t.Fatalf("group_dialogs: %d groups, want 1: %v", len(groups), g)
		}
		m, _ := groups[0].(map[string]any)
		p50, _ := pddNum(m, "metrics.pdd_p50")
		p95, _ := pddNum(m, "metrics.pdd_p95")
		if p50 != 1200 || p95 != 13000 {
			t.Errorf("group_dialogs pdd_p50 %v pdd_p95 %v, want 1200 13000 (nearest rank over the routed INVITEs)", p50, p95)
		}
	})

	t.Run("find_problems slow-setup", func(t *testing.T) {
		s := s.on(t)
		m, _ := s.ok("find_problems", map[string]any{"filter": "slow-setup"})
		rows, _ := json.Marshal(m["dialogs"])
		if !strings.Contains(string(rows), "pdd-slow-ring") || strings.Contains(string(rows), "pdd-long-wait") {
			t.Errorf("slow-setup selects %s, want pdd-slow-ring only", rows)
		}
	})
}

// TestVerdictPDDLongWaitBatchE2E: --json-run rows and the --report PDD column
// and findings agree with the tools on invite-407-long-wait.pcap.
func TestVerdictPDDLongWaitBatchE2E(t *testing.T) {
	path := verdictPath("invite-407-long-wait.pcap")
	out, stderr, code := runCLI(t, "-N", "-I", path, "--json-run")
	if code != 0 {
		t.Fatalf("--json-run: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Dialogs []map[string]any `json:"dialogs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json-run: %v\n%s", err, out)
	}
	if len(doc.Dialogs) != 1 {
		t.Fatalf("--json-run: %d dialogs, want 1", len(doc.Dialogs))
	}
	row := doc.Dialogs[0]
	for p, want := range map[string]float64{"timing.pdd_ms": 1200, "timing.setup_ms": 4000, "timing.auth_wait_ms": 14000} {
		if got, ok := pddNum(row, p); !ok || got != want {
			t.Errorf("--json-run %s = %v (present %v), want %v", p, got, ok, want)
		}
	}
	if row["state"] != "Completed" || row["final_status_code"] != float64(200) {
		t.Errorf("--json-run state %v final %v, want Completed 200", row["state"], row["final_status_code"])
	}

	rep, stderr, code := runCLI(t, "-N", "-I", path, "--report")
	if code != 0 {
		t.Fatalf("--report: exit %d\n%s", code, stderr)
	}
	var line string
	inDialogs := false
	for _, l := range strings.Split(rep, "\n") {
		switch {
		case strings.HasPrefix(l, "DIALOGS"):
			inDialogs = true
		case l == "":
			inDialogs = false
		case inDialogs && strings.Contains(l, "pdd-long-wait"):
			line = l
		}
	}
	if f := strings.Fields(line); len(f) == 0 || f[len(f)-1] != "1.200s" {
		t.Errorf("--report dialog row %q: want PDD column 1.200s\n%s", line, rep)
	}
	if strings.Contains(rep, "post_dial_delay") || strings.Contains(rep, "post-dial delay") {
		t.Errorf("--report raised a post-dial delay on the caller's wait:\n%s", rep)
	}
}
