package host

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/mos"
)

// thresholdsOf reads the run's analysis thresholds ([analysis] and the
// --*-threshold flags). Bundles receive them as a filter.Thresholds service.
func thresholdsOf(cfg *Config) filter.Thresholds {
	return filter.Thresholds{
		PDDSeconds:       cfg.Analysis.PDDThreshold,
		ShortCallSeconds: cfg.Analysis.ShortCallThreshold,
		LossPct:          cfg.Analysis.LossThreshold,
		JitterMs:         cfg.Analysis.JitterThreshold,
		Retransmits:      cfg.Analysis.RetransmitThreshold,
	}
}

// correlationOf reads the leg-correlation settings ([correlation],
// --leg-correlation-window, --x-call-id-header). Bundles receive them as a
// correlate.Config service, and --call-report builds its correlator from
// the same value, so render_ladder and --call-report print the same bytes.
func correlationOf(cfg *Config) correlate.Config {
	return correlate.Config{
		Window:         time.Duration(cfg.Correlation.Window * float64(time.Second)),
		XCallIDHeaders: nonEmpty(cfg.Correlation.XCallIDHeaders),
	}
}

// checkAnalysis validates the thresholds and the correlation settings at
// startup (a usage error, exit 2).
func checkAnalysis(cfg *Config) error {
	if err := thresholdsOf(cfg).Validate(); err != nil {
		return usagef("%v (--pdd-threshold, --short-call-threshold, --loss-threshold, --jitter-threshold, --retransmit-threshold or [analysis])", err)
	}
	if w := cfg.Correlation.Window; math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 || w > 3600 {
		return usagef("--leg-correlation-window %v: want seconds above 0 and at most 3600", w)
	}
	if n := cfg.Media.MaxStreams; n < 1 {
		return usagef("--max-streams %d: want at least 1", n)
	}
	// Unset is -1; a declared delay is 0 to 10 s (mos caps d anyway).
	if d := cfg.Media.OneWayDelay; math.IsNaN(d) || math.IsInf(d, 0) || d > 10000 || d < 0 && d != -1 {
		return usagef("--one-way-delay %v: want milliseconds from 0 to 10000", d)
	}
	if l := cfg.Media.AMRWBListening; l != string(mos.Monotic) && l != string(mos.Diotic) {
		return usagef("--amr-wb-listening %q: want monotic or diotic", l)
	}
	if _, err := codecIe(cfg.Media.CodecIe); err != nil {
		return usagef("%v", err) // a file's keys were checked with their lines (checkCodecIeKeys)
	}
	hdrs := cfg.Correlation.XCallIDHeaders
	if len(nonEmpty(hdrs)) == 0 {
		return usagef("--x-call-id-header: name at least one header (default X-Call-ID)")
	}
	for _, h := range hdrs {
		if !isToken(h) {
			return usagef("--x-call-id-header %q: not a header name (RFC 3261 token characters, at most 64)", h)
		}
	}
	return nil
}

// isToken reports an RFC 3261 token of at most 64 characters.
func isToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-.!%*_+`'~", c) >= 0) {
			return false
		}
	}
	return true
}

// String describes the thresholds for the startup log.
func thresholdsLine(th filter.Thresholds) string {
	return fmt.Sprintf("pdd>%gs short<%gs loss>%g%% jitter>%gms retransmits>%d",
		th.PDDSeconds, th.ShortCallSeconds, th.LossPct, th.JitterMs, th.Retransmits)
}
