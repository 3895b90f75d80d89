package media

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/benchload"
)

// sdpCall is one OnSDP call of a workload.
type sdpCall struct {
	callID string
	at     time.Time
	s      *sdp.Session
	offer  bool
	src    netip.AddrPort
}

// BenchmarkOnSDPSignaling registers the SDP offers and answers of bench/gen's
// signaling-only workload (37,000 of its 136,334 messages) in capture
// order, one per op, into a store that starts empty each pass: the stream
// store's share of a SIP message carrying SDP.
func BenchmarkOnSDPSignaling(b *testing.B) {
	var calls []sdpCall
	for _, m := range benchload.SignalingMessages(b) {
		msg, err := sip.Parse(m.Payload)
		if err != nil {
			continue
		}
		body, ok := msg.SDPBody()
		if !ok || len(body) == 0 {
			continue
		}
		s, err := sdp.Parse(body)
		if err != nil {
			b.Fatal(err)
		}
		calls = append(calls, sdpCall{msg.CallID, m.At, s, msg.IsRequest && msg.Method != "ACK", m.Src})
	}
	st := NewStore(Config{})
	b.ReportAllocs()
	cpu0 := benchload.CPUNow()
	i := 0
	for b.Loop() {
		c := &calls[i]
		st.OnSDP(c.callID, c.at, c.s, c.offer, c.src)
		if i++; i == len(calls) {
			i = 0
			b.StopTimer()
			st = NewStore(Config{})
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N), "cpu-ns/op")
}
