package tests

// Verdict corpus, media class:
// ptime read from the most common RTP timestamp step, and codecs scored
// with ITU-T G.113 Appendix I (an unscorable codec is never a media
// problem).

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/core/media"
)

// mediaCall is one call of the media corpus: accTwoWay between two hosts of
// 192.0.2.0/24 and 198.51.100.0/24 (k picks them), starting base ms after
// accT0.
func mediaCall(k int, id, fmts string, attrs []string, rtp func(a, b string, add func(float64, string, string, []byte))) accTwoWay {
	a, b := "192.0.2."+strconv.Itoa(60+k), "198.51.100."+strconv.Itoa(60+k)
	c := accTwoWay{id: id, aSig: a + ":5060", bSig: b + ":5060", aMedia: a + ":16000", bMedia: b + ":20000",
		aFmt: fmts, bFmt: fmts, aAttr: attrs, bAttr: attrs}
	c.rtp = func(add func(float64, string, string, []byte)) { rtp(c.aMedia, c.bMedia, add) }
	return c
}

// mediaFlow sends n packets of pt every 20 ms, timestamps 160 apart, with a
// payload of size octets (first octet first0).
func mediaFlow(add func(float64, string, string, []byte), src, dst string, ssrc uint32, pt uint8, n, size int, first0 byte) {
	for i := 0; i < n; i++ {
		p := make([]byte, size)
		p[0] = first0
		add(float64(i)*20, src, dst, accRTP(pt, i == 0, uint16(1000+i), uint32(i)*160, ssrc, p))
	}
}

// glitchFlow is 20 ms PCMU from src to dst on one SSRC with the three
// things that made the smallest step lie: one packet 4 samples after its
// predecessor (the next back on the 160 grid), two comfort-noise frames
// (PT 13) then a marked talkspurt, and an RFC 4733 event (PT 101, three
// packets at the event's start timestamp, the End packet sent three times)
// after which the audio resumes 800 samples on.
func glitchFlow(add func(float64, string, string, []byte), src, dst string, ssrc uint32) {
	seq, ts, at := uint16(2000), uint32(8000), 0.0
	emit := func(pt uint8, marker bool, stamp uint32, payload []byte) {
		add(at, src, dst, accRTP(pt, marker, seq, stamp, ssrc, payload))
		seq++
		at += 20
	}
	audio := func(n int) {
		for i := 0; i < n; i++ {
			emit(0, false, ts, make([]byte, 160))
			ts += 160
		}
	}
	audio(20)
	// The glitch: +4, then +316 back onto the grid.
	ts -= 156
	emit(0, false, ts, make([]byte, 160))
	ts += 316
	audio(15)
	// Comfort noise: two SID frames, then a talkspurt with the marker.
	emit(13, true, ts, []byte{40})
	ts += 160
	emit(13, false, ts, []byte{40})
	ts += 160
	ts += 1600 // silence
	emit(0, true, ts, make([]byte, 160))
	ts += 160
	audio(15)
	// DTMF on the audio SSRC: event packets carry the event start.
	ev := ts
	emit(101, true, ev, []byte{5, 0x0a, 0, 160})
	emit(101, false, ev, []byte{5, 0x0a, 1, 64})
	for i := 0; i < 3; i++ {
		emit(101, false, ev, []byte{5, 0x8a, 3, 32})
	}
	ts += 800
	audio(20)
}

func init() {
	registerVerdictCapture(verdictCapture{
		Name:  "rtp-ptime-glitch.pcap",
		Class: "a 20 ms G.711 stream with one timestamp glitch, comfort noise and a DTMF event: ptime 20 ms",
		Doc: `One call (ptime@media.example): INVITE/200/ACK with PCMU, CN (13) and telephone-event (101),
a=ptime:20, BYE. Caller to callee: 72 PCMU packets at 20 ms (160 samples) with one packet 4 samples
after its predecessor (the next back on the 160-sample grid), two CN frames then a marked talkspurt,
and a DTMF event on the same SSRC (5 telephone-event packets at the event's start timestamp). Callee
to caller: 75 clean PCMU packets. Right answer: ptime_ms 20 both ways (ptime_steps modal 67 of 69
caller to callee), no ptime_asymmetry, verdict none. The smallest-step ptime read 0.5 ms and raised
ptime_asymmetry (a media verdict).`,
		Build: func(t *testing.T, path string) {
			c := mediaCall(0, "ptime@media.example", "0 13 101", []string{"rtpmap:101 telephone-event/8000", "fmtp:101 0-15", "ptime:20"},
				func(a, b string, add func(float64, string, string, []byte)) {
					glitchFlow(add, a, b, 0x7a000001)
					mediaFlow(add, b, a, 0x7b000001, 0, 75, 160, 0)
				})
			accWrite(t, filepath.Dir(path), filepath.Base(path), layers.LinkTypeEthernet, c.frames(t, 0))
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "rtp-g726.pcap",
		Class: "two G.726 calls at 32 and 16 kbit/s: scored by bit rate with ITU-T G.113 Appendix I",
		Doc: `Two calls, each INVITE/200/ACK, 50 RTP packets each way at 20 ms, BYE: g726-32@media.example with
a=rtpmap:97 G726-32/8000 (80-octet payloads) and g726-16@media.example with a=rtpmap:98 G726-16/8000
(40-octet payloads), no loss, no jitter. Right answer at the assumed 100 ms one-way delay (Id 2.4):
G726-32 Ie 7, R 83.8, MOS 4.159; G726-16 Ie 50, R 40.8, MOS 2.103; both grounded (mos_grounding
published, mos_source the G.113 row); verdict none for both calls (a codec's score is not a media
problem). Before: both scored with the placeholder Ie 5 (MOS 4.223, not grounded), alike.`,
		Build: func(t *testing.T, path string) {
			c32 := mediaCall(1, "g726-32@media.example", "97", []string{"rtpmap:97 G726-32/8000", "ptime:20"},
				func(a, b string, add func(float64, string, string, []byte)) {
					mediaFlow(add, a, b, 0x32000001, 97, 50, 80, 0)
					mediaFlow(add, b, a, 0x32000002, 97, 50, 80, 0)
				})
			c16 := mediaCall(2, "g726-16@media.example", "98", []string{"rtpmap:98 G726-16/8000", "ptime:20"},
				func(a, b string, add func(float64, string, string, []byte)) {
					mediaFlow(add, a, b, 0x16000001, 98, 50, 40, 0)
					mediaFlow(add, b, a, 0x16000002, 98, 50, 40, 0)
				})
			frames := append(c32.frames(t, 0), c16.frames(t, 20000)...)
			accWrite(t, filepath.Dir(path), filepath.Base(path), layers.LinkTypeEthernet, frames)
		},
	})
	registerVerdictCapture(verdictCapture{
		Name:  "rtp-gsm.pcap",
		Class: "a GSM full-rate call scored with G.113 Appendix I, and a call on a payload no score exists for",
		Doc: `Two calls, each INVITE/200/ACK, 50 RTP packets each way at 20 ms, BYE. gsm@media.example: static
payload type 3 (GSM 06.10, 33-octet frames). opaque@media.example: SDP offers PCMU but both sides send
payload type 106, which no SDP maps. Right answer: GSM Ie 20, R 70.8, MOS 3.634, grounded (published,
ITU-T G.113 Appendix I: GSM 06.10 full rate); the PT 106 streams carry no MOS, mos_applicable false
and mos_note "payload is not a known voice codec: no MOS"; verdict none for both calls and no media
finding in the capture report. Before: GSM scored with the placeholder Ie 5 (MOS 4.223, not grounded).`,
		Build: func(t *testing.T, path string) {
			gsm := mediaCall(3, "gsm@media.example", "3", []string{"ptime:20"},
				func(a, b string, add func(float64, string, string, []byte)) {
					mediaFlow(add, a, b, 0x95000001, 3, 50, 33, 0xd0)
					mediaFlow(add, b, a, 0x95000002, 3, 50, 33, 0xd0)
				})
			opaque := mediaCall(4, "opaque@media.example", "0", []string{"ptime:20"},
				func(a, b string, add func(float64, string, string, []byte)) {
					mediaFlow(add, a, b, 0x10600001, 106, 50, 60, 0)
					mediaFlow(add, b, a, 0x10600002, 106, 50, 60, 0)
				})
			frames := append(gsm.frames(t, 0), opaque.frames(t, 20000)...)
			accWrite(t, filepath.Dir(path), filepath.Base(path), layers.LinkTypeEthernet, frames)
		},
	})
}

// mediaJSON runs `sipnab -N -I capture --json-run` and returns its streams.
func mediaJSON(t *testing.T, capture string) []media.StreamInfo {
	t.Helper()
	out, stderr, code := runCLI(t, "-N", "-I", capture, "--json-run")
	if code != 0 {
		t.Fatalf("--json-run exit %d: %s", code, stderr)
	}
	var doc struct {
		Streams []media.StreamInfo `json:"streams"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json-run: %v", err)
	}
	return doc.Streams
}

func streamBySSRC(t *testing.T, ss []media.StreamInfo, ssrc string) media.StreamInfo {
	t.Helper()
	for _, s := range ss {
		if s.SSRC == ssrc {
			return s
		}
	}
	t.Fatalf("no stream %s", ssrc)
	return media.StreamInfo{}
}

// mediaVerdicts asks triage_call and rtp_stats over MCP about each call
// and checks the verdict is none, the media diagnosis no problem, and no
// ptime_asymmetry; it returns rtp_stats' streams by SSRC.
func mediaVerdicts(t *testing.T, capture string, calls ...string) map[string]map[string]any {
	t.Helper()
	s := startRaw(t, "-N", "--mcp", "-I", capture)
	s.waitLoaded()
	streams := map[string]map[string]any{}
	for _, id := range calls {
		tr, _ := s.ok("triage_call", map[string]any{"call_id": id})
		m, _ := tr["media"].(map[string]any)
		if tr["verdict"] != "none" || m["problem"] != false || m["applicable"] != true {
			t.Errorf("%s: triage_call verdict %v media problem %v applicable %v, want none, false, true (hints %v)", id, tr["verdict"], m["problem"], m["applicable"], m["hints"])
		}
		rs, _ := s.ok("rtp_stats", map[string]any{"call_id": id})
		if d, _ := rs["diagnosis"].(map[string]any); d == nil || d["ptime_asymmetry"] != nil || d["codec_asymmetry"] != nil {
			t.Errorf("%s: rtp_stats diagnosis %v, want no asymmetry", id, d)
		}
		list, _ := rs["streams"].([]any)
		for _, x := range list {
			st := x.(map[string]any)
			streams[st["ssrc"].(string)] = st
		}
	}
	return streams
}

// mediaReport runs --report and returns its text.
func mediaReport(t *testing.T, capture string) string {
	t.Helper()
	out, stderr, code := runCLI(t, "-N", "-I", capture, "--report")
	if code != 0 {
		t.Fatalf("--report exit %d: %s", code, stderr)
	}
	return out
}

// TestVerdictPtimeGlitchE2E: rtp-ptime-glitch.pcap reads 20 ms both ways
// through --json-run, rtp_stats and --report, and no ptime asymmetry is
// raised. The smallest-step ptime read the caller's stream 0.5 ms and made
// the call a media verdict.
func TestVerdictPtimeGlitchE2E(t *testing.T) {
	capture := verdictPath("rtp-ptime-glitch.pcap")
	ss := mediaJSON(t, capture)
	for _, tc := range []struct {
		ssrc           string
		modal, counted uint64
	}{
		// 72 PCMU packets in four runs (20 + the glitch + 15, 16 from the
		// marked talkspurt, 20 after the event): 71 steps less the one
		// into the talkspurt (after CN) and the one after the event: 69
		// counted, of which the glitch's two (4 and 316) are not 160.
		{"0x7a000001", 67, 69},
		{"0x7b000001", 74, 74},
	} {
		s := streamBySSRC(t, ss, tc.ssrc)
		if s.PtimeMs == nil || *s.PtimeMs != 20 || s.PtimeSteps == nil || s.PtimeSteps.Modal != tc.modal || s.PtimeSteps.Counted != tc.counted {
			t.Errorf("--json-run %s: ptime_ms %v steps %+v, want 20 from %d of %d steps", tc.ssrc, s.PtimeMs, s.PtimeSteps, tc.modal, tc.counted)
		}
	}
	if s := streamBySSRC(t, ss, "0x7a000001"); s.Events == nil || s.Events.Count != 1 || s.Silence == nil || s.Silence.CNFrames != 2 {
		t.Errorf("caller's stream: events %+v silence %+v, want 1 event and 2 CN frames (the capture carries both)", s.Events, s.Silence)
	}
	streams := mediaVerdicts(t, capture, "ptime@media.example")
	for _, ssrc := range []string{"0x7a000001", "0x7b000001"} {
		if st := streams[ssrc]; st == nil || st["ptime_ms"] != 20.0 {
			t.Errorf("rtp_stats %s: ptime_ms %v, want 20", ssrc, st["ptime_ms"])
		}
	}
	if rep := mediaReport(t, capture); strings.Contains(rep, "ptime_asymmetry") || !strings.Contains(rep, "FINDINGS (0)") {
		t.Errorf("--report names a ptime asymmetry or a finding:\n%s", rep)
	}
}

// TestVerdictG726E2E: rtp-g726.pcap's two calls score by bit rate (hand
// computed at the assumed 100 ms: G726-32 R 83.8 MOS 4.159, G726-16 R 40.8
// MOS 2.103), grounded on G.113 Appendix I, and neither call is a media
// verdict.
func TestVerdictG726E2E(t *testing.T) {
	capture := verdictPath("rtp-g726.pcap")
	ss := mediaJSON(t, capture)
	want := []struct {
		ssrc, codec, source string
		r, mos              float64
	}{
		{"0x32000001", "G726-32", "ITU-T G.113 Appendix I: G.726 ADPCM 32 kbit/s", 83.8, 4.159},
		{"0x32000002", "G726-32", "ITU-T G.113 Appendix I: G.726 ADPCM 32 kbit/s", 83.8, 4.159},
		{"0x16000001", "G726-16", "ITU-T G.113 Appendix I: G.726 ADPCM 16 kbit/s", 40.8, 2.103},
		{"0x16000002", "G726-16", "ITU-T G.113 Appendix I: G.726 ADPCM 16 kbit/s", 40.8, 2.103},
	}
	for _, w := range want {
		s := streamBySSRC(t, ss, w.ssrc)
		if s.Codec != w.codec || s.MOS == nil || *s.MOS != w.mos || s.RFactor == nil || *s.RFactor != w.r ||
			!s.MOSGrounded || s.MOSGrounding != "published" || s.MOSSource != w.source || !s.MOSApplicable || s.PtimeMs == nil || *s.PtimeMs != 20 {
			t.Errorf("--json-run %s: codec %s mos %v r %v grounded %v (%s) source %q ptime %v, want %s MOS %v R %v published %q ptime 20",
				w.ssrc, s.Codec, s.MOS, s.RFactor, s.MOSGrounded, s.MOSGrounding, s.MOSSource, s.PtimeMs, w.codec, w.mos, w.r, w.source)
		}
	}
	streams := mediaVerdicts(t, capture, "g726-32@media.example", "g726-16@media.example")
	if a, b := streams["0x32000001"], streams["0x16000001"]; a == nil || b == nil || a["mos"] != 4.159 || b["mos"] != 2.103 {
		t.Errorf("rtp_stats: G726-32 mos %v, G726-16 mos %v, want 4.159 and 2.103", a["mos"], b["mos"])
	}
	rep := mediaReport(t, capture)
	if !strings.Contains(rep, "FINDINGS (0)") || !strings.Contains(rep, "2.10") || !strings.Contains(rep, "4.16") {
		t.Errorf("--report: want no finding and MOS 2.10 and 4.16:\n%s", rep)
	}
}

// TestVerdictGSMAndUnscorableE2E: rtp-gsm.pcap's GSM call is scored with
// G.113's Ie 20 (MOS 3.634, grounded); the call on an unmapped payload
// carries no MOS and says mos_applicable false with a reason; neither is a
// media verdict or a capture-report finding.
func TestVerdictGSMAndUnscorableE2E(t *testing.T) {
	capture := verdictPath("rtp-gsm.pcap")
	ss := mediaJSON(t, capture)
	for _, ssrc := range []string{"0x95000001", "0x95000002"} {
		s := streamBySSRC(t, ss, ssrc)
		if s.Codec != "GSM" || s.MOS == nil || *s.MOS != 3.634 || !s.MOSGrounded || s.MOSSource != "ITU-T G.113 Appendix I: GSM 06.10 full rate" || s.MOSNote != "" {
			t.Errorf("--json-run %s: codec %s mos %v grounded %v source %q note %q, want GSM 3.634 grounded on G.113", ssrc, s.Codec, s.MOS, s.MOSGrounded, s.MOSSource, s.MOSNote)
		}
	}
	for _, ssrc := range []string{"0x10600001", "0x10600002"} {
		s := streamBySSRC(t, ss, ssrc)
		if s.MOS != nil || s.MOSApplicable || s.MOSNote != "payload is not a known voice codec: no MOS" {
			t.Errorf("--json-run %s: mos %v applicable %v note %q, want absent, false, the reason", ssrc, s.MOS, s.MOSApplicable, s.MOSNote)
		}
		raw, _ := json.Marshal(s)
		if !strings.Contains(string(raw), `"mos_applicable":false`) {
			t.Errorf("--json-run %s: mos_applicable false not written: %s", ssrc, raw)
		}
	}
	streams := mediaVerdicts(t, capture, "gsm@media.example", "opaque@media.example")
	if st := streams["0x10600001"]; st == nil || st["mos_applicable"] != false || st["mos"] != nil {
		t.Errorf("rtp_stats PT 106 stream: %v, want mos_applicable false and no mos", st)
	}
	if rep := mediaReport(t, capture); !strings.Contains(rep, "FINDINGS (0)") || !strings.Contains(rep, "3.63") {
		t.Errorf("--report: want no finding and GSM MOS 3.63:\n%s", rep)
	}
}
