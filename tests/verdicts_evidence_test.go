package tests

// Verdict corpus, class "every verdict names its evidence": triage_call,
// get_dialog_report, get_capture_report, --report and find_problems rows carry
// the clause that fired: rule, measured values, threshold and the frames that
// prove it.

import (
	"encoding/binary"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

const evidenceCapture = "evidence-clauses.pcap"

func init() {
	registerVerdictCapture(verdictCapture{
		Name:  evidenceCapture,
		Class: "Every verdict names its evidence: a lossy call and a busy call",
		Doc: `Two calls between 10.0.0.1:5060 (A) and 10.0.0.2:5060 (B), 101 frames.
ev-loss: INVITE (frame 1), 100, 180, 200 with SDP (frame 4), ACK; PCMU both ways
every 20 ms from 1.02 s, A→B (10.0.0.1:4000→10.0.0.2:5000, SSRC 0x0000a001)
50 packets seq 1-50, B→A (SSRC 0x0000b001, first packet frame 7) seq 1-50
without 21-30: 40 packets, expected 50, lost 10 (20 %; tshark -z rtp,streams
says 10 lost, 20.0 %); BYE, 200 (frames 96-97). ev-busy: INVITE (frame 98),
100, 486 Busy Here (frame 100), ACK.
A right answer: ev-loss verdict media on one clause high_loss {loss_pct 20,
expected 50, lost 10, packets 40; threshold loss_pct 5; ssrc 0x0000b001;
frame #7}; ev-busy verdict signaling on final_failure {code 486; message 2 =
frame #100}; find_problems matches 'rtp.loss > 5' measured rtp.loss=20 and
'state == Failed' measured state=Failed.`,
		Build: buildEvidenceCapture,
	})
}

func buildEvidenceCapture(t *testing.T, path string) {
	const a, b = "10.0.0.1:5060", "10.0.0.2:5060"
	var frames []accFrame
	at := func(sec float64) time.Time { return accT0.Add(time.Duration(sec * float64(time.Second))) }
	add := func(sec float64, src, dst string, payload []byte) {
		frames = append(frames, accFrame{ts: at(sec), data: accIPEth(accUDP(t, src, dst, payload))})
	}
	offer := accSDP("10.0.0.1", 4000, "0", "rtpmap:0 PCMU/8000")
	answer := accSDP("10.0.0.2", 5000, "0", "rtpmap:0 PCMU/8000")
	add(0, a, b, accReq("INVITE", "ev-loss", 1, "", offer))
	add(0.01, b, a, accResp(100, "Trying", "INVITE", "ev-loss", 1, ""))
	add(0.1, b, a, accResp(180, "Ringing", "INVITE", "ev-loss", 1, ""))
	add(1.0, b, a, accResp(200, "OK", "INVITE", "ev-loss", 1, answer))
	add(1.01, a, b, accReq("ACK", "ev-loss", 1, "bt1", ""))
	voice := make([]byte, 160)
	for i := range voice {
		voice[i] = 0xff
	}
	for i := 0; i < 50; i++ {
		seq, ts := uint16(1+i), uint32(160*i)
		add(1.02+0.02*float64(i), "10.0.0.1:4000", "10.0.0.2:5000", accRTP(0, i == 0, seq, ts, 0xa001, voice))
		if i < 20 || i >= 30 {
			add(1.025+0.02*float64(i), "10.0.0.2:5000", "10.0.0.1:4000", accRTP(0, i == 0, seq, ts, 0xb001, voice))
		}
	}
	add(3.0, a, b, accReq("BYE", "ev-loss", 2, "bt1", ""))
	add(3.01, b, a, accResp(200, "OK", "BYE", "ev-loss", 2, ""))
	add(4.0, a, b, accReq("INVITE", "ev-busy", 1, "", offer))
	add(4.01, b, a, accResp(100, "Trying", "INVITE", "ev-busy", 1, ""))
	add(4.2, b, a, accResp(486, "Busy Here", "INVITE", "ev-busy", 1, ""))
	add(4.21, a, b, accReq("ACK", "ev-busy", 1, "bt1", ""))
	accPcap(t, path, uint32(layers.LinkTypeEthernet), binary.LittleEndian, true, frames)
}

// TestEvidenceNamedEverywhereE2E: through the binary, each answer that
// concludes carries its clause.
func TestEvidenceNamedEverywhereE2E(t *testing.T) {
	path := verdictPath(evidenceCapture)
	s := startRaw(t, "-N", "--mcp", "-I", path)
	s.waitLoaded()

	t.Run("triage_call", func(t *testing.T) {
		s := s.on(t)
		m, _ := s.ok("triage_call", map[string]any{"call_id": "ev-loss"})
		want := map[string]any{
			"verdict": "media", "media.problem": true, "signaling.problem": false,
			"evidence.0.rule": "high_loss", "evidence.0.values.loss_pct": 20.0, "evidence.0.values.expected": 50.0,
			"evidence.0.values.lost": 10.0, "evidence.0.values.packets": 40.0, "evidence.0.threshold.loss_pct": 5.0,
			"evidence.0.observed.ssrc": "0x0000b001", "evidence.1": nil,
		}
		evCheckPaths(t, m, want)
		if f, _ := evJSONPath(m, "evidence.0.frames.0").(string); !strings.HasPrefix(f, evidenceCapture+"#7@") {
			t.Errorf("high_loss frame: got %q, want the first B→A packet, frame 7", f)
		}
		m, _ = s.ok("triage_call", map[string]any{"call_id": "ev-busy"})
		evCheckPaths(t, m, map[string]any{
			"verdict": "signaling", "final_status_code": 486.0, "evidence.0.rule": "final_failure",
			"evidence.0.values.code": 486.0, "evidence.0.messages.0": 2.0, "evidence.1": nil,
		})
		if f, _ := evJSONPath(m, "evidence.0.frames.0").(string); !strings.HasPrefix(f, evidenceCapture+"#100@") {
			t.Errorf("final_failure frame: got %q, want the 486, frame 100", f)
		}
	})

	t.Run("get_dialog_report", func(t *testing.T) {
		s := s.on(t)
		m, _ := s.ok("get_dialog_report", map[string]any{"call_id": "ev-loss"})
		evCheckPaths(t, m, map[string]any{
			"diagnosis.verdict": "media", "diagnosis.evidence.0.rule": "high_loss", "diagnosis.evidence.0.values.loss_pct": 20.0,
		})
	})

	t.Run("find_problems", func(t *testing.T) {
		s := s.on(t)
		m, _ := s.ok("find_problems", map[string]any{})
		got := map[string]string{}
		rows, _ := m["dialogs"].([]any)
		for _, r := range rows {
			row := r.(map[string]any)
			b, _ := json.Marshal(row["matched"])
			got[row["call_id"].(string)] = string(b)
		}
		want := map[string]string{
			"ev-loss": `[{"alias":"problems","clause":"rtp.loss \u003e 5","measured":"rtp.loss=20"}]`,
			"ev-busy": `[{"alias":"problems","clause":"state == Failed","measured":"state=Failed"}]`,
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s matched: got %s, want %s", id, got[id], w)
			}
		}
		if len(got) != 2 {
			t.Errorf("got rows %v, want ev-loss and ev-busy", got)
		}
	})

	t.Run("get_capture_report", func(t *testing.T) {
		s := s.on(t)
		m, _ := s.ok("get_capture_report", map[string]any{})
		fs, _ := m["findings"].([]any)
		seen := map[string]bool{}
		for _, f := range fs {
			fd := f.(map[string]any)
			kind, _ := fd["kind"].(string)
			seen[kind] = true
			switch {
			case kind == "high_loss":
				evCheckPaths(t, fd, map[string]any{"rule": "high_loss", "threshold.loss_pct": 5.0, "evidence.0.call_id": "ev-loss"})
				if f, _ := evJSONPath(fd, "evidence.0.frames.0").(string); !strings.HasPrefix(f, evidenceCapture+"#7@") {
					t.Errorf("high_loss row frame: got %q", f)
				}
			case kind == "final_failure" || strings.HasPrefix(kind, "final_failure_"):
				evCheckPaths(t, fd, map[string]any{"rule": "final_failure", "evidence.0.call_id": "ev-busy", "evidence.0.messages.0": 2.0})
			}
			if r, _ := fd["rule"].(string); r == "" {
				t.Errorf("%s: no rule", kind)
			}
		}
		if !seen["high_loss"] || len(seen) != 2 {
			t.Errorf("got findings %v, want high_loss and one final_failure", seen)
		}
	})

	t.Run("--report", func(t *testing.T) {
		out, err := exec.Command(bin, "-N", "-I", path, "--report").Output()
		if err != nil {
			t.Fatalf("--report: %v", err)
		}
		for _, w := range []string{"[high] high_loss: 1 stream (streams losing more than 5% of packets; threshold loss_pct=5)",
			"frames " + evidenceCapture + "#7@", "frames " + evidenceCapture + "#100@"} {
			if !strings.Contains(string(out), w) {
				t.Errorf("--report lacks %q:\n%s", w, out)
			}
		}
	})
}

// evJSONPath follows a dotted path through objects and arrays (an index).
func evJSONPath(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i := 0
			for _, c := range k {
				if c < '0' || c > '9' {
					return nil
				}
				i = i*10 + int(c-'0')
			}
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func evCheckPaths(t *testing.T, m map[string]any, want map[string]any) {
	t.Helper()
	for p, w := range want {
		if got := evJSONPath(m, p); got != w {
			t.Errorf("%s: got %v, want %v", p, got, w)
		}
	}
}
