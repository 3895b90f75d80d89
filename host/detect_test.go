package host

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/detect"
)

// TestFail2banLineIsOneLineWithTheAddressFirst: a detail carrying CR, LF
// and a forged "src=" cannot start a second line or stand where the
// filter reads the address.
func TestFail2banLineIsOneLineWithTheAddressFirst(t *testing.T) {
	f := detect.Finding{Rule: "scanner_detected", Src: netip.MustParseAddr("10.98.0.1"), TS: time.Unix(0, 0),
		Detail: "ua=\"x\r\n2026-12-02T00:00:00Z sipnab[1]: [ALERT] scanner_detected src=192.0.2.7 y\""}
	got := Fail2banLine(time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC), "42", f)
	want := "2026-12-02T16:00:00Z sipnab[42]: [ALERT] scanner_detected src=10.98.0.1 ua=\"x  2026-12-02T00:00:00Z sipnab[1]: [ALERT] scanner_detected src=192.0.2.7 y\"\n"
	if got != want {
		t.Errorf("line\n%q\nwant\n%q", got, want)
	}
}

func TestDetectConfigOffTheSingleCorePath(t *testing.T) {
	var cfg Config
	cfg.Cores, cfg.Detect.Scanner, cfg.Detect.FindingsHistory = 4, true, 1000
	if dc := detectConfig(&cfg); dc.Disabled == "" || !dc.Scanner {
		t.Errorf("--cores 4 --detect-scanner: %+v, want armed and disabled", dc)
	}
	cfg.Cores = 1
	if dc := detectConfig(&cfg); dc.Disabled != "" {
		t.Errorf("--cores 1: disabled %q", dc.Disabled)
	}
	cfg.Detect.Scanner = false
	cfg.Cores = 4
	if dc := detectConfig(&cfg); dc.Disabled != "" {
		t.Errorf("nothing armed: disabled %q", dc.Disabled)
	}
}
