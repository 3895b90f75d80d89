package analysis_test

import (
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
)

// Unmatched ICMP errors in the capture report: one quoting an RTP stream
// of the capture (sip-rtp-g711.pcap's first stream, as if its destination
// had closed its port) is icmp_quoting_media on that stream's call; one
// quoting SIP that no dialog could be tied to is icmp_unmatched, with the
// errors the store did not keep counted as omitted; one quoting anything
// else (DNS) makes no finding.
func TestICMPUnmatchedFindings(t *testing.T) {
	st, facts := load(t, "sip-rtp-g711.pcap")
	s := st.All()[0]
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	cf := analysis.CaptureFacts{SourceExhausted: true, ICMPUnmatched: 25, ICMPUnmatchedExamples: []dialog.ICMPUnmatched{
		{At: at, Kind: "port_unreachable", Reporter: "192.0.2.1", Source: s.Src, Endpoint: s.Dst, Transport: "UDP", Reason: "no_message", Frame: "f#7@00"},
		{At: at, Kind: "host_unreachable", Reporter: "192.0.2.254", Source: "192.0.2.9:5060", Endpoint: "198.51.100.7:5060", Transport: "UDP", Reason: "ambiguous", Frame: "f#8@00"},
		{At: at, Kind: "port_unreachable", Reporter: "192.0.2.53", Source: "192.0.2.9:40000", Endpoint: "192.0.2.53:53", Transport: "UDP", Reason: "no_message"},
	}}
	r := analysis.CaptureReport(facts, st, cf, analysis.Options{})
	got := map[string]analysis.Finding{}
	for _, f := range r.Findings {
		got[f.Kind] = f
	}
	m, ok := got["icmp_quoting_media"]
	if !ok || m.Occurrences != 1 || m.Severity != analysis.SeverityMedium || len(m.Evidence) != 1 ||
		m.Evidence[0].CallID != s.AssociatedDialog || m.Evidence[0].Note != "port_unreachable from 192.0.2.1 quoting RTP stream "+s.SSRC ||
		len(m.Evidence[0].Frames) != 1 || m.Evidence[0].Frames[0] != "f#7@00" {
		t.Errorf("icmp_quoting_media %+v", m)
	}
	u, ok := got["icmp_unmatched"]
	if !ok || u.Occurrences != 1+22 || u.EvidenceOmitted != 22 || len(u.Evidence) != 1 || u.Evidence[0].Note != "host_unreachable from 192.0.2.254 (ambiguous)" {
		t.Errorf("icmp_unmatched %+v", u)
	}
	if r.Clean {
		t.Errorf("a report with ICMP findings is clean")
	}
}
