package media_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/internal/testcap"
)

// TestIntervalVerdictsFollowTheRunsThresholds: a quality interval's verdict
// judges loss and jitter with the run's --loss-threshold and
// --jitter-threshold (Config.LossThresholdPct, JitterThresholdMs), as the
// stream's high_loss and high_jitter findings do; before, it used 5 % and
// 50 ms whatever the run said. SIP_CALL_RTP_G711, 200.57.7.204:8000 ->
// 200.57.7.196:40376: its five intervals end at jitter_ms 2.145, 2.058,
// 1.698, 2.303 and 3.339 (the last is the stream's jitter_ms).
// Asterisk_ZFONE_XLITE.pcap, 192.168.10.40:49848 -> 192.168.10.41:64508:
// its first interval lost 1 of 179 expected packets (0.559 %), the other
// three none.
func TestIntervalVerdictsFollowTheRunsThresholds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name    string
		capture string
		src     string
		cfg     media.Config
		want    string
	}{
		{"jitter default", "SIP_CALL_RTP_G711", "200.57.7.204:8000", media.Config{}, "acceptable acceptable acceptable acceptable acceptable acceptable"},
		{"jitter 50", "SIP_CALL_RTP_G711", "200.57.7.204:8000", media.Config{JitterThresholdMs: f(50)}, "acceptable acceptable acceptable acceptable acceptable acceptable"},
		{"jitter 3", "SIP_CALL_RTP_G711", "200.57.7.204:8000", media.Config{JitterThresholdMs: f(3)}, "acceptable acceptable acceptable acceptable acceptable degraded"},
		{"jitter 2.1", "SIP_CALL_RTP_G711", "200.57.7.204:8000", media.Config{JitterThresholdMs: f(2.1)}, "acceptable degraded acceptable acceptable degraded degraded"},
		{"loss default", "Asterisk_ZFONE_XLITE.pcap", "192.168.10.40:49848", media.Config{}, "acceptable acceptable acceptable acceptable"},
		{"loss 0.6", "Asterisk_ZFONE_XLITE.pcap", "192.168.10.40:49848", media.Config{LossThresholdPct: f(0.6)}, "acceptable acceptable acceptable acceptable"},
		{"loss 0.5", "Asterisk_ZFONE_XLITE.pcap", "192.168.10.40:49848", media.Config{LossThresholdPct: f(0.5)}, "degraded acceptable acceptable acceptable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := media.NewStore(tc.cfg)
			if _, err := mediatest.Feed(t, testcap.Public(tc.capture), st, nil); err != nil {
				t.Fatalf("reading %s: %v", tc.capture, err)
			}
			var got []string
			for _, s := range st.All() {
				if s.Src != tc.src {
					continue
				}
				for _, iv := range s.QualityIntervals {
					got = append(got, iv.Verdict)
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got %s, want %s", g, tc.want)
			}
			if t.Failed() {
				for _, s := range st.All() {
					t.Log(fmt.Sprint(s.Src, s.QualityIntervals))
				}
			}
		})
	}
}
