package report

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/heplisten"
)

// TestReportNamesWhatHEPListenersLost: a listener that refused, dropped
// or held back anything gets one line saying what; a clean one gets none.
func TestReportNamesWhatHEPListenersLost(t *testing.T) {
	k := uint64(7)
	for _, tc := range []struct {
		name string
		l    engine.HEPListener
		want string
	}{
		{"clean listener: no line", engine.HEPListener{Name: "hep:127.0.0.1:9060", Stats: heplisten.Stats{Received: 10, Admitted: 10}}, ""},
		{"refusals and kernel drops", engine.HEPListener{Name: "hep:127.0.0.1:9060", Lost: 12,
			Stats: heplisten.Stats{Received: 15, Admitted: 10, Refused: map[string]uint64{"rate_limited": 2, "global_rate": 3}, KernelDropped: &k}},
			"HEP listener hep:127.0.0.1:9060: 15 received, 10 admitted; 5 refused (global_rate 3, rate_limited 2); 7 dropped by the kernel at a full receive buffer; 12 lost.\n"},
		{"TCP held back, nothing lost", engine.HEPListener{Name: "hep:[::1]:9060",
			Stats: heplisten.Stats{Received: 1500, Admitted: 1500, TCPThrottled: 1400, TCPThrottledMS: 650, TCPIdleReaped: 1}},
			"HEP listener hep:[::1]:9060: 1500 received, 1500 admitted; 1400 TCP messages held back 650 ms by the rate budget (delivered); 1 idle TCP connections closed at the connection cap; 0 lost.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeHEPListeners(&b, []engine.HEPListener{tc.l})
			if b.String() != tc.want {
				t.Errorf("got  %q\nwant %q", b.String(), tc.want)
			}
		})
	}
}
