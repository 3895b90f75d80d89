package sdp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/benchload"
)

// signalingBodies returns the SDP bodies of bench/gen's signaling-only
// workload in capture order (its INVITEs' offers and 200s' answers).
func signalingBodies(b *testing.B) []string {
	var out []string
	for _, m := range benchload.SignalingMessages(b) {
		if i := bytes.Index(m.Payload, []byte("\r\n\r\nv=")); i >= 0 {
			out = append(out, string(m.Payload[i+4:]))
		}
	}
	if len(out) == 0 {
		b.Fatal("no SDP body in the signaling workload")
	}
	return out
}

// BenchmarkParseText parses the SDP bodies of the signaling workload, one
// per op, as a SIP message's own text: with ParseText (a new Session each)
// and with a reused Parser; and a three-section offer the same two ways.
func BenchmarkParseText(b *testing.B) {
	sig := signalingBodies(b)
	for _, c := range []struct {
		name   string
		bodies []string
	}{
		{"signaling", sig},
		{"three-sections", []string{strings.ReplaceAll(offer, "\n", "\r\n")}},
	} {
		for _, reuse := range []bool{false, true} {
			name := c.name + "/new"
			if reuse {
				name = c.name + "/reused"
			}
			b.Run(name, func(b *testing.B) {
				var p Parser
				parse := ParseText
				if reuse {
					parse = p.ParseText
				}
				b.ReportAllocs()
				cpu0 := benchload.CPUNow()
				i := 0
				for b.Loop() {
					if _, err := parse(c.bodies[i]); err != nil {
						b.Fatal(err)
					}
					if i++; i == len(c.bodies) {
						i = 0
					}
				}
				b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
