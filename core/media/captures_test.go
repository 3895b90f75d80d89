package media

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/netip"
	"os"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/testcap"
)

// feedCapture reads a capture and feeds it the way the router does: SIP
// (UDP or a whole message in one TCP segment) hands its SDP to OnSDP, every
// other UDP payload goes to Observe. Decoding is a test helper over gopacket
// until core/decode lands.
func feedCapture(t testing.TB, path string, st *Store) {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		for _, p := range decodeFrame(f) {
			route(st, &p)
		}
	}
}

func decodeFrame(f *packet.Frame) []packet.Packet {
	data := f.Data
	var first gopacket.Decoder = layers.LinkType(f.LinkType)
	switch f.LinkType {
	case 0, 108: // NULL/loopback
		first = layers.LinkTypeNull
	case 113: // Linux SLL v1: gopacket rejects some address lengths, so skip the header by hand
		if len(data) < 16 {
			return nil
		}
		switch uint16(data[14])<<8 | uint16(data[15]) {
		case 0x0800:
			first = layers.LayerTypeIPv4
		case 0x86dd:
			first = layers.LayerTypeIPv6
		default:
			return nil
		}
		data = data[16:]
	}
	pk := gopacket.NewPacket(data, first, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	p := packet.Packet{TS: f.TS, Origin: packet.OriginWire, Frame: f}
	var src, dst netip.Addr
	if ip4, ok := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		src, _ = netip.AddrFromSlice(ip4.SrcIP.To4())
		dst, _ = netip.AddrFromSlice(ip4.DstIP.To4())
		p.DSCP, p.HasDSCP = ip4.TOS>>2, true
	} else if ip6, ok := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		src, _ = netip.AddrFromSlice(ip6.SrcIP)
		dst, _ = netip.AddrFromSlice(ip6.DstIP)
		p.DSCP, p.HasDSCP = ip6.TrafficClass>>2, true
	} else {
		return nil
	}
	if u, ok := pk.Layer(layers.LayerTypeUDP).(*layers.UDP); ok {
		p.Transport = packet.TransportUDP
		p.Src = netip.AddrPortFrom(src, uint16(u.SrcPort))
		p.Dst = netip.AddrPortFrom(dst, uint16(u.DstPort))
		p.Payload = u.Payload
		return []packet.Packet{p}
	}
	if tc, ok := pk.Layer(layers.LayerTypeTCP).(*layers.TCP); ok && len(tc.Payload) > 0 {
		p.Transport = packet.TransportTCP
		p.Src = netip.AddrPortFrom(src, uint16(tc.SrcPort))
		p.Dst = netip.AddrPortFrom(dst, uint16(tc.DstPort))
		p.Payload = tc.Payload
		return []packet.Packet{p}
	}
	return nil
}

func route(st *Store, p *packet.Packet) {
	if sip.Looks(p.Payload) {
		m, err := sip.Parse(p.Payload)
		if err != nil || m.CallID == "" {
			return
		}
		if body, ok := m.SDPBody(); ok {
			if s, err := sdp.Parse(body); err == nil {
				st.OnSDP(m.CallID, p.TS, s, m.IsRequest, p.Src)
			}
		}
		return
	}
	if p.Transport == packet.TransportUDP {
		st.Observe(p)
	}
}

type truthStream struct {
	SSRC        string  `json:"ssrc"`
	Src         string  `json:"src"`
	Dst         string  `json:"dst"`
	Packets     int64   `json:"packets"`
	Lost        int64   `json:"lost"`
	MaxJitterMs float64 `json:"max_jitter_ms"`
	MaxDeltaMs  float64 `json:"max_delta_ms"`
}

type truthFile struct {
	RTP struct {
		Default   struct{ Streams []truthStream } `json:"default"`
		Heuristic struct{ Streams []truthStream } `json:"heuristic"`
	} `json:"rtp"`
}

func loadTruth(t testing.TB, name string) truthFile {
	t.Helper()
	b, err := os.ReadFile(testcap.Truth(name))
	if err != nil {
		t.Fatalf("reading truth: %v", err)
	}
	var tf truthFile
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatalf("parsing truth: %v", err)
	}
	return tf
}

func streamKey(ssrc, src, dst string) string { return ssrc + " " + src + " " + dst }

// TestPublicCapturesAgainstTshark checks every RTP stream tshark reports on
// every public capture: packets and lost equal, max jitter within
// max(0.05 ms, 2 %); streams tshark finds only with its RTP heuristic are
// found as orphans.
func TestPublicCapturesAgainstTshark(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Skipf("public captures not available: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			tf := loadTruth(t, name)
			st := NewStore(Config{})
			r, err := capture.Open(testcap.Public(name))
			if errors.Is(err, capture.ErrUnsupportedFormat) && len(tf.RTP.Default.Streams)+len(tf.RTP.Heuristic.Streams) == 0 {
				t.Skipf("capture format not read yet and tshark reports no RTP: %v", err)
			}
			if err == nil {
				r.Close()
			}
			feedCapture(t, testcap.Public(name), st)
			got := map[string]StreamInfo{}
			for _, s := range st.All() {
				got[streamKey(s.SSRC, s.Src, s.Dst)] = s
			}
			inDefault := map[string]bool{}
			for _, w := range tf.RTP.Default.Streams {
				k := streamKey(w.SSRC, w.Src, w.Dst)
				inDefault[k] = true
				g, ok := got[k]
				if !ok {
					t.Errorf("stream %s: not found", k)
					continue
				}
				if g.Orphaned {
					t.Logf("stream %s: orphaned", k)
				}
				if int64(g.Packets) != w.Packets {
					t.Errorf("stream %s: got packets %d, want %d", k, g.Packets, w.Packets)
				}
				if g.Lost != w.Lost {
					t.Errorf("stream %s: got lost %d, want %d", k, g.Lost, w.Lost)
				}
				var jm float64
				if g.JitterMaxMs != nil {
					jm = *g.JitterMaxMs
				}
				if tol := math.Max(0.05, 0.02*w.MaxJitterMs); math.Abs(jm-w.MaxJitterMs) > tol {
					t.Errorf("stream %s: got jitter_max_ms %.3f, want %.3f ± %.3f", k, jm, w.MaxJitterMs, tol)
				}
				var dm float64
				if g.DeltaMaxMs != nil {
					dm = *g.DeltaMaxMs
				}
				if tol := math.Max(0.05, 0.02*w.MaxDeltaMs); math.Abs(dm-w.MaxDeltaMs) > tol {
					t.Errorf("stream %s: got delta_max_ms %.3f, want %.3f ± %.3f", k, dm, w.MaxDeltaMs, tol)
				}
			}
			for _, w := range tf.RTP.Heuristic.Streams {
				k := streamKey(w.SSRC, w.Src, w.Dst)
				if inDefault[k] {
					continue
				}
				g, ok := got[k]
				if !ok {
					t.Errorf("heuristic stream %s: not found", k)
					continue
				}
				if !g.Orphaned {
					t.Errorf("heuristic stream %s: got orphaned false (dialog %q), want true", k, g.AssociatedDialog)
				}
				if int64(g.Packets) != w.Packets {
					t.Errorf("heuristic stream %s: got packets %d, want %d", k, g.Packets, w.Packets)
				}
			}
		})
	}
}
