package tests

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestCodecIeAndDelayReachTheScoreE2E: [media.codec_ie] and
// --one-way-delay through the binary. sip-rtp-g711.pcap's PCMU stream
// (jitter 0.005 ms, no loss) with PCMU declared Ie 3, Bpl 20 and a 40 ms
// delay scores R = 93.2 − 0.024·40.005 − 3 = 89.2399, MOS
// 1 + 0.035R + R(R−60)(100−R)·7e-6 = 4.3249 (by hand), grounding
// operator_declared with the entry named as its source; Ie 99 in the file
// stops startup with the file and line, exit 2.
func TestCodecIeAndDelayReachTheScoreE2E(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.toml", "[media.codec_ie]\nPCMU = { ie = 3, bpl = 20 }\n")
	out, stderr, code := runBounded(t, 60*time.Second, strings.NewReader(""), "-N", "-I", sampleCapture(), "--json-run", "--config", good, "--one-way-delay", "40")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Streams []struct {
			Codec        string  `json:"codec"`
			MOS          float64 `json:"mos"`
			RFactor      float64 `json:"r_factor"`
			JitterMs     float64 `json:"jitter_ms"`
			MOSGrounding string  `json:"mos_grounding"`
			MOSSource    string  `json:"mos_source"`
			BurstGap     *struct {
				GapPackets int `json:"gap_packets"`
			} `json:"burst_gap"`
			Delay struct {
				Source   string  `json:"source"`
				OneWayMs float64 `json:"one_way_ms"`
			} `json:"delay"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range doc.Streams {
		if s.Codec != "PCMU" {
			continue
		}
		n++
		r := 93.2 - 0.024*(40+s.JitterMs) - 3
		want := 1 + 0.035*r + r*(r-60)*(100-r)*7e-6
		if s.Delay.Source != "declared" || s.Delay.OneWayMs != 40 || math.Abs(s.RFactor-r) > 1e-3 || math.Abs(s.MOS-want) > 1e-3 {
			t.Errorf("got delay %+v R %v MOS %v, want declared 40 ms, R %.3f MOS %.3f", s.Delay, s.RFactor, s.MOS, r, want)
		}
		if s.MOSGrounding != "operator_declared" || s.MOSSource != "operator [media.codec_ie] pcmu: Ie 3, Bpl 20 (declared)" {
			t.Errorf("got grounding %q source %q", s.MOSGrounding, s.MOSSource)
		}
		if s.BurstGap == nil || s.BurstGap.GapPackets != 425 {
			t.Errorf("got burst_gap %+v, want one gap of 425 packets", s.BurstGap)
		}
	}
	if n != 1 {
		t.Fatalf("%d PCMU streams, want 1", n)
	}
	bad := writeFile(t, dir, "bad.toml", "# operator values\n[media.codec_ie]\nPCMU = 99\n")
	_, stderr, code = runBounded(t, 10*time.Second, strings.NewReader(""), "-N", "-I", sampleCapture(), "--json-run", "--config", bad)
	if code != 2 || !strings.Contains(stderr, "bad.toml:3: key \"media.codec_ie.PCMU\": Ie 99 out of range") {
		t.Errorf("exit %d, stderr %q; want 2 naming bad.toml:3", code, stderr)
	}
}
