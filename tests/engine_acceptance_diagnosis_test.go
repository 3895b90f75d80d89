package tests

// Engine II acceptance of the diagnosis (issue item 5): every per-dialog
// finding on a capture that has it and on one that does not.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testgen"
)

func accDiagnoseAll(t *testing.T, c *engine.Capture) map[string]analysis.DialogDiagnosis {
	t.Helper()
	facts := analysis.FactsFromStore(c.Dialogs())
	opts := analysis.Options{CaptureEnd: analysis.CaptureEnd(c.Dialogs(), c.Media())}
	out := map[string]analysis.DialogDiagnosis{}
	for _, f := range facts {
		out[f.CallID] = analysis.Diagnose(f, c.Media(), opts)
	}
	return out
}

// TestEngineAcceptanceDiagnosisGenerated runs the diagnosis over the bench
// generator's small carrier capture, whose answers say what was made to go
// wrong in each call.
func TestEngineAcceptanceDiagnosisGenerated(t *testing.T) {
	p, ans := testgen.Capture(t, gen.Small(1))
	c, _ := accLoad(t, p)
	diag := accDiagnoseAll(t, c)
	seen := map[gen.Kind]bool{}
	for _, d := range ans.Dialogs {
		if d.Method != "INVITE" {
			continue
		}
		g, ok := diag[d.CallID]
		if !ok {
			t.Fatalf("%s: no diagnosis", d.CallID)
		}
		m, s := g.Media, g.Signaling
		label := fmt.Sprintf("%s (%s)", d.CallID, d.Kind)
		seen[d.Kind] = true
		switch d.Kind {
		case "normal", "light_loss", "jitter", "in_call_at_end":
			if g.Verdict != "none" || !m.Applicable || m.StreamCount != 2 {
				t.Errorf("%s: got verdict %s media %+v, want none", label, g.Verdict, m)
			}
		case "one_way":
			if !m.OneWayAudio || m.OneWayDirection == "" || g.Verdict != "media" {
				t.Errorf("%s: got one_way %v (%q) verdict %s", label, m.OneWayAudio, m.OneWayDirection, g.Verdict)
			}
		case "heavy_loss":
			if len(m.HighLoss) != 1 || m.HighLoss[0].Value <= 5 {
				t.Errorf("%s: got high_loss %+v, want one stream over 5 %%", label, m.HighLoss)
			}
		case "late_media":
			if m.LateMediaMs == nil || *m.LateMediaMs < 1200 || *d.MediaDelayMs-*m.LateMediaMs > 1 || *d.MediaDelayMs-*m.LateMediaMs < -1 {
				t.Errorf("%s: got late_media_ms %v, generator %v", label, m.LateMediaMs, *d.MediaDelayMs)
			}
		case "slow_pdd":
			if s == nil || s.PostDialDelay == nil || s.PostDialDelay.PDDMs < 11000 || !accNear(s.PostDialDelay.PDDMs, *d.PDDMs, 1) {
				t.Errorf("%s: got post_dial_delay %+v, generator pdd %v", label, s, *d.PDDMs)
			}
		case "busy_486", "unavailable_503", "cancelled_487":
			want := map[gen.Kind]string{"busy_486": "declined", "unavailable_503": "failure", "cancelled_487": "canceled"}[d.Kind]
			if s == nil || s.FinalFailure == nil || s.FinalFailure.Code != d.FinalStatus || s.FinalFailure.Class != want {
				t.Errorf("%s: got final_failure %+v, want %d class %s", label, s, d.FinalStatus, want)
			}
			if m.Applicable || m.Reason == "" {
				t.Errorf("%s: got media applicable %v reason %q, want not applicable with a reason", label, m.Applicable, m.Reason)
			}
			if d.Kind == "cancelled_487" && (s.Abandoned == nil || s.Abandoned.Kind != "cancelled") {
				t.Errorf("%s: got abandoned %+v, want cancelled", label, s.Abandoned)
			}
		case "jitter_spike":
			// The generator (and find_problems' rtp.jitter) judge the final
			// RFC 3550 jitter; the diagnosis judges the mean: reported as a
			// divergence between the two, not asserted here.
		default:
			t.Errorf("%s: kind not covered by this test", label)
		}
	}
	if len(seen) < 12 {
		t.Errorf("saw %d kinds, want all 12 of the generator", len(seen))
	}
}

// accTwoWay is a call between a (offerer) and b (answerer) announcing
// aMedia and bMedia ("ip:port"), with the RTP the caller adds.
type accTwoWay struct {
	id             string
	aSig, bSig     string
	aMedia, bMedia string
	aFmt, bFmt     string   // m= formats
	aAttr, bAttr   []string // a= lines
	rtp            func(add func(ms float64, src, dst string, p []byte))
}

func (c accTwoWay) frames(t *testing.T, base int) []accFrame {
	var out []accFrame
	add := func(ms float64, src, dst string, p []byte) {
		out = append(out, accFrame{accT0.Add(time.Duration((float64(base) + ms) * float64(time.Millisecond))), accIPEth(accUDP(t, src, dst, p))})
	}
	am, bm := accAP(c.aMedia), accAP(c.bMedia)
	add(0, c.aSig, c.bSig, accReq("INVITE", c.id, 1, "", accSDP(am.Addr().String(), int(am.Port()), c.aFmt, c.aAttr...)))
	add(50, c.bSig, c.aSig, accResp(180, "Ringing", "INVITE", c.id, 1, ""))
	add(100, c.bSig, c.aSig, accResp(200, "OK", "INVITE", c.id, 1, accSDP(bm.Addr().String(), int(bm.Port()), c.bFmt, c.bAttr...)))
	add(110, c.aSig, c.bSig, accReq("ACK", c.id, 1, "bt1", ""))
	if c.rtp != nil {
		c.rtp(func(ms float64, src, dst string, p []byte) { add(200+ms, src, dst, p) })
	}
	add(12000, c.aSig, c.bSig, accReq("BYE", c.id, 2, "bt1", ""))
	add(12010, c.bSig, c.aSig, accResp(200, "OK", "BYE", c.id, 2, ""))
	return out
}

// accFlow sends n packets of payload type pt every stepMs from src to dst,
// RTP timestamps advancing by tsStep; jitterMs(i) shifts packet i.
func accFlow(add func(float64, string, string, []byte), src, dst string, ssrc uint32, pt uint8, n int, stepMs float64, tsStep uint32, jitterMs func(i int) float64) {
	for i := 0; i < n; i++ {
		at := float64(i) * stepMs
		if jitterMs != nil {
			at += jitterMs(i)
		}
		add(at, src, dst, accRTP(pt, i == 0, uint16(1000+i), uint32(i)*tsStep, ssrc, make([]byte, 160)))
	}
}

// TestEngineAcceptanceDiagnosisCrafted: one call per media finding.
func TestEngineAcceptanceDiagnosisCrafted(t *testing.T) {
	mk := func(k int, id string, rtp func(a, b string, add func(float64, string, string, []byte))) accTwoWay {
		a, b := fmt.Sprintf("192.0.2.%d", 40+k), fmt.Sprintf("198.51.100.%d", 40+k)
		c := accTwoWay{id: id, aSig: a + ":5060", bSig: b + ":5060", aMedia: a + ":16000", bMedia: b + ":20000", aFmt: "0 8", bFmt: "0 8"}
		if rtp != nil {
			c.rtp = func(add func(float64, string, string, []byte)) { rtp(c.aMedia, c.bMedia, add) }
		}
		return c
	}
	clean := func(a, b string, add func(float64, string, string, []byte)) {
		accFlow(add, a, b, 0xa1, 0, 500, 20, 160, nil)
		accFlow(add, b, a, 0xb1, 0, 500, 20, 160, nil)
	}
	calls := []struct {
		call  accTwoWay
		check func(t *testing.T, d analysis.DialogDiagnosis)
	}{
		{mk(0, "clean@a.example", clean), func(t *testing.T, d analysis.DialogDiagnosis) {
			if d.Verdict != "none" || d.Media.Problem() || d.Signaling != nil {
				t.Errorf("got verdict %s media %+v signaling %+v", d.Verdict, d.Media, d.Signaling)
			}
		}},
		{mk(1, "codec@a.example", func(a, b string, add func(float64, string, string, []byte)) {
			accFlow(add, a, b, 0xa1, 0, 500, 20, 160, nil)
			accFlow(add, b, a, 0xb1, 8, 500, 20, 160, nil)
		}), func(t *testing.T, d analysis.DialogDiagnosis) {
			if c := d.Media.CodecAsymmetry; c == nil || c.Forward != "PCMU" || c.Reverse != "PCMA" {
				t.Errorf("got codec_asymmetry %+v, want PCMU/PCMA", c)
			}
		}},
		{mk(2, "ptime@a.example", func(a, b string, add func(float64, string, string, []byte)) {
			accFlow(add, a, b, 0xa1, 0, 500, 20, 160, nil)
			accFlow(add, b, a, 0xb1, 0, 250, 40, 320, nil)
		}), func(t *testing.T, d analysis.DialogDiagnosis) {
			if p := d.Media.PtimeAsymmetry; p == nil || p.Forward != "20 ms" || p.Reverse != "40 ms" {
				t.Errorf("got ptime_asymmetry %+v, want 20 ms / 40 ms", p)
			}
		}},
		{func() accTwoWay {
			c := mk(3, "payload@a.example", func(a, b string, add func(float64, string, string, []byte)) {
				accFlow(add, a, b, 0xa1, 0, 500, 20, 160, nil)
				accFlow(add, b, a, 0xb1, 96, 500, 20, 160, nil)
			})
			c.aFmt, c.bFmt = "0 96", "0 96"
			c.aAttr = []string{"rtpmap:96 PCMU/8000"}
			c.bAttr = c.aAttr
			return c
		}(), func(t *testing.T, d analysis.DialogDiagnosis) {
			if p := d.Media.PayloadAsymmetry; p == nil || d.Media.CodecAsymmetry != nil {
				t.Errorf("got payload_asymmetry %+v codec_asymmetry %+v, want payload only", p, d.Media.CodecAsymmetry)
			}
		}},
		{mk(4, "duration@a.example", func(a, b string, add func(float64, string, string, []byte)) {
			accFlow(add, a, b, 0xa1, 0, 500, 20, 160, nil) // 10 s
			accFlow(add, b, a, 0xb1, 0, 300, 20, 160, nil) // 6 s
		}), func(t *testing.T, d analysis.DialogDiagnosis) {
			if p := d.Media.DurationAsymmetry; p == nil || p.ForwardMs < 9900 || p.ReverseMs > 6000 {
				t.Errorf("got duration_asymmetry %+v, want ~9980 / ~5980 ms", p)
			}
		}},
		{mk(5, "nat@a.example", func(a, b string, add func(float64, string, string, []byte)) {
			accFlow(add, a, b, 0xa1, 0, 500, 20, 160, nil)
			accFlow(add, "203.0.113.50:40000", a, 0xb1, 0, 500, 20, 160, nil) // not the answer's 198.51.100.45:20000
		}), func(t *testing.T, d analysis.DialogDiagnosis) {
			// (one_way_audio fires too: directions pair by IP, and the
			// reply comes from another IP than the one A sends to.)
			if !d.Media.NATMismatch || len(d.Media.NATEvidence) != 1 || d.Media.NATEvidence[0].Actual != "203.0.113.50:40000" ||
				len(d.Media.NATEvidence[0].Announced) != 1 || d.Media.NATEvidence[0].Announced[0] != "198.51.100.45:20000" {
				t.Errorf("got nat_mismatch %v evidence %+v", d.Media.NATMismatch, d.Media.NATEvidence)
			}
		}},
		{mk(6, "nomedia@a.example", nil), func(t *testing.T, d analysis.DialogDiagnosis) {
			if !d.Media.Applicable || !d.Media.NoMedia || d.Verdict != "media" {
				t.Errorf("got applicable %v no_media %v verdict %s", d.Media.Applicable, d.Media.NoMedia, d.Verdict)
			}
		}},
		{mk(7, "jitter@a.example", func(a, b string, add func(float64, string, string, []byte)) {
			// every other packet 120 ms late: RFC 3550 jitter settles near 120 ms
			accFlow(add, a, b, 0xa1, 0, 500, 20, 160, func(i int) float64 { return float64(i%2) * 120 })
			accFlow(add, b, a, 0xb1, 0, 500, 20, 160, nil)
		}), func(t *testing.T, d analysis.DialogDiagnosis) {
			if len(d.Media.HighJitter) != 1 || d.Media.HighJitter[0].Value <= 50 || d.Media.HighJitter[0].Stream.SSRC != "0x000000a1" || len(d.Media.HighLoss) != 0 {
				t.Errorf("got high_jitter %+v high_loss %+v", d.Media.HighJitter, d.Media.HighLoss)
			}
		}},
		{func() accTwoWay {
			c := mk(8, "private@a.example", nil)
			c.aMedia = "10.1.1.1:16000"
			c.rtp = func(add func(float64, string, string, []byte)) {
				accFlow(add, c.aMedia, c.bMedia, 0xa1, 0, 500, 20, 160, nil)
				accFlow(add, c.bMedia, c.aMedia, 0xb1, 0, 500, 20, 160, nil)
			}
			return c
		}(), func(t *testing.T, d analysis.DialogDiagnosis) {
			// RTP flowed both ways with the private address: listed, an
			// observation, not a problem.
			if d.Media.PrivateMediaAddress || len(d.Media.PrivateAddresses) != 1 || d.Media.PrivateAddresses[0] != "10.1.1.1:16000" ||
				len(d.Media.Observations) != 1 || d.Verdict != "none" {
				t.Errorf("got private %v %v observations %q verdict %s", d.Media.PrivateMediaAddress, d.Media.PrivateAddresses, d.Media.Observations, d.Verdict)
			}
		}},
	}
	var frames []accFrame
	for i, c := range calls {
		frames = append(frames, c.call.frames(t, 20000*i)...)
	}
	sortFrames(frames)
	p := accWrite(t, t.TempDir(), "diagnosis.pcap", layers.LinkTypeEthernet, frames)
	c, doc := accLoad(t, p)
	if len(doc.Dialogs) != len(calls) {
		t.Fatalf("got %d dialogs, want %d", len(doc.Dialogs), len(calls))
	}
	diag := accDiagnoseAll(t, c)
	for _, tc := range calls {
		t.Run(tc.call.id, func(t *testing.T) {
			d, ok := diag[tc.call.id]
			if !ok {
				t.Fatal("no diagnosis")
			}
			tc.check(t, d)
		})
	}
}

// TestEngineAcceptanceInfoDTMF: SIP INFO DTMF is noticed, digits masked.
func TestEngineAcceptanceInfoDTMF(t *testing.T) {
	c, _ := accLoad(t, testcap.Public("DTMFsipinfo.pcap"))
	n := 0
	for _, s := range c.Dialogs().Summaries(dialog.ByCreated) {
		det, _ := c.Dialogs().Get(s.CallID)
		for _, x := range det.InfoDTMF {
			n++
			if x.Digit != "x" {
				t.Errorf("%s: digit %q shown, want masked", s.CallID, x.Digit)
			}
		}
		if len(det.InfoDTMF) > 0 {
			d := analysis.Diagnose(analysis.FactsFrom(det), c.Media(), analysis.Options{})
			if d.Signaling == nil || len(d.Signaling.Hints) == 0 {
				t.Errorf("%s: no hint of the INFO digits", s.CallID)
			}
		}
	}
	// tshark -r DTMFsipinfo.pcap -Y 'sip.Method == "INFO"': 4 requests.
	if n != 4 {
		t.Errorf("got %d INFO digits, want 4", n)
	}
}

// TestEngineAcceptanceCaptureFindingsComplete: the capture-wide findings
// say complete only when the source was read whole.
func TestEngineAcceptanceCaptureFindingsComplete(t *testing.T) {
	// voicecmd_combined.pcap: one RTP stream and no SIP; every frame
	// decodes (SIP_CALL_RTP_G711's STP and CDP frames are undecodable,
	// which already makes its report incomplete).
	path := testcap.Public("voicecmd_combined.pcap")
	c, _ := accLoad(t, path)
	rep, _ := report.Analyze(c, analysis.Options{})
	orphans := 0
	for _, f := range rep.Findings {
		if f.Kind == "orphaned_media" {
			orphans = int(f.Occurrences)
		}
	}
	if !rep.Complete || orphans != 1 {
		t.Errorf("whole read: got complete %v, %d orphaned streams; want true, 1", rep.Complete, orphans)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(cut, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	c, doc := accLoad(t, cut)
	rep, _ = report.Analyze(c, analysis.Options{})
	if rep.Complete || !rep.SourceStoppedEarly || doc.Run.Complete || !doc.Run.SourceStoppedEarly || doc.Run.FramesRead == 0 {
		t.Errorf("cut read: got report complete %v stopped %v, run complete %v stopped %v frames %d",
			rep.Complete, rep.SourceStoppedEarly, doc.Run.Complete, doc.Run.SourceStoppedEarly, doc.Run.FramesRead)
	}
}
