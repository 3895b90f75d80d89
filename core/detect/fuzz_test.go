package detect

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// FuzzObserve feeds sender-written bytes, parsed as SIP, to every armed
// detector: never a panic, and every table within its cap.
func FuzzObserve(f *testing.F) {
	f.Add([]byte("SIP/2.0 401 Unauthorized\r\nVia: SIP/2.0/UDP a;branch=z9hG4bK1\r\nCall-ID: c\r\nCSeq: 1 REGISTER\r\nWWW-Authenticate: Digest realm=\"r\", nonce=\"n\\\"x, qop\r\n\r\n"))
	f.Add([]byte("REGISTER sip:x SIP/2.0\r\nVia: SIP/2.0/UDP a;branch=z9hG4bK1\r\nCall-ID: c\r\nCSeq: 1 REGISTER\r\nUser-Agent: friendly-scanner\"\x00\r\nAuthorization: Digest qop=auth,,,=\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p sip.Parser
		m, err := p.Parse(b)
		if err != nil {
			return
		}
		d := New(Config{Scanner: true, RegFlood: true, Digest: true, Fraud: true, History: 4, MaxSources: 2})
		src, dst := netip.MustParseAddrPort("10.0.0.1:5060"), netip.MustParseAddrPort("10.0.0.2:5060")
		for i := range 3 {
			ts := time.Unix(int64(i), 0)
			d.Observe(ts, src, dst, m)
			d.Observe(ts, dst, src, m)
		}
		if len(d.Findings()) > 4 || len(d.sources.m) > 2 {
			t.Fatalf("caps exceeded: %d findings, %d sources", len(d.Findings()), len(d.sources.m))
		}
		for _, f := range d.Findings() {
			if len(f.Detail) > MaxDetailBytes+len("…[truncated]") {
				t.Fatalf("detail of %d bytes", len(f.Detail))
			}
		}
	})
}
