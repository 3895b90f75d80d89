package decode

import (
	"bytes"
	"syscall"
	"testing"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

type nopSink struct{ bytes int }

func (s *nopSink) HandlePacket(p *packet.Packet) { s.bytes += len(p.Payload) }

func rtpFrame(t testing.TB) *packet.Frame {
	rtp := append([]byte{0x80, 0x00, 0x12, 0x34, 0, 0, 0x10, 0, 0xde, 0xad, 0xbe, 0xef}, bytes.Repeat([]byte{0xff}, 160)...)
	return frame(LinkEthernet, ethUDP(t, 16384, 16386, rtp))
}

// TestDecodeUDPDoesNotAllocate pins the hot path: an Ethernet/IPv4/UDP RTP
// frame decodes and emits without allocating.
func TestDecodeUDPDoesNotAllocate(t *testing.T) {
	d := New(Config{})
	f := rtpFrame(t)
	s := &nopSink{}
	d.Decode(f, s)
	allocs := testing.AllocsPerRun(1000, func() { d.Decode(f, s) })
	if allocs != 0 {
		t.Fatalf("got %v allocations per frame, want 0", allocs)
	}
	if s.bytes != 1002*172 { // one call, a warm-up run and 1000 measured runs
		t.Fatalf("got %d payload bytes, want %d", s.bytes, 1002*172)
	}
}

// cpuTime returns the process's user plus system CPU time: on a shared
// machine wall time per op mostly measures the wait for a core.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkDecodeUDP(b *testing.B) {
	d := New(Config{})
	f := rtpFrame(b)
	s := &nopSink{}
	b.ReportAllocs()
	b.SetBytes(int64(len(f.Data)))
	start := cpuTime()
	for b.Loop() {
		d.Decode(f, s)
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkDecodeVLANUDP(b *testing.B) {
	d := New(Config{})
	rtp := bytes.Repeat([]byte{0x80}, 172)
	f := frame(LinkEthernet, withEth(b, 0x8100, append(vlanTag(7, 0x0800), ipUDP(b, 16384, 16386, rtp)...)))
	s := &nopSink{}
	b.ReportAllocs()
	for b.Loop() {
		d.Decode(f, s)
	}
}

// BenchmarkDecodeTCPSIP feeds a stream of segments each holding one SIP
// message.
func BenchmarkDecodeTCPSIP(b *testing.B) {
	d := New(Config{})
	s := &nopSink{}
	seq := uint32(1)
	msg := []byte(mInv)
	tmpl := tcpSeg(b, 40000, 5060, 0, "PA", msg)
	f := frame(LinkEthernet, tmpl)
	b.ReportAllocs()
	for b.Loop() {
		tmpl[38], tmpl[39], tmpl[40], tmpl[41] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
		d.Decode(f, s)
		seq += uint32(len(msg))
	}
}

// BenchmarkPublicCapture decodes SIP_CALL_RTP_G711 (UDP SIP and RTP, TCP,
// ARP and LLC frames).
func BenchmarkPublicCapture(b *testing.B) {
	frames, err := readFrames(testcap.Public("SIP_CALL_RTP_G711"))
	if err != nil {
		b.Fatal(err)
	}
	s := &nopSink{}
	b.ReportAllocs()
	for b.Loop() {
		d := New(Config{})
		for _, f := range frames {
			d.Decode(f, s)
		}
		d.Flush(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(frames)), "ns/frame")
}
