package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// readBack is what an independent reader finds in a generated capture.
type readBack struct {
	frames    int
	perCallID map[string]int
	methods   map[string]int
	codes     map[string]int
	streams   map[StreamKey]*rbStream
	sdp       map[string][]netip.AddrPort // Call-ID -> m= endpoints (offer, answer)
}

type rbStream struct {
	packets       int
	first, last   uint16
	extHigh, base int64
	cycles        int64
	prevArrival   time.Time
	prevTS        uint32
	jitter, max   float64
}

// decodeCapture re-reads a pcap written by Generate with gopacket and checks
// frame-level invariants on the way.
func decodeCapture(t *testing.T, data []byte) *readBack {
	t.Helper()
	r, err := pcapgo.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("reading pcap header: %v", err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Fatalf("link type %v, want Ethernet", r.LinkType())
	}
	var eth layers.Ethernet
	var ip4 layers.IPv4
	var udp layers.UDP
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &udp)
	parser.IgnoreUnsupported = true // UDP names SIP/RTP next layers gopacket has no decoder for
	decoded := []gopacket.LayerType{}
	rb := &readBack{perCallID: map[string]int{}, methods: map[string]int{}, codes: map[string]int{},
		streams: map[StreamKey]*rbStream{}, sdp: map[string][]netip.AddrPort{}}
	var prev time.Time
	for {
		frame, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", rb.frames+1, err)
		}
		rb.frames++
		if ci.Timestamp.Before(prev) {
			t.Fatalf("frame %d: timestamp %v before the previous %v", rb.frames, ci.Timestamp, prev)
		}
		prev = ci.Timestamp
		if err := parser.DecodeLayers(frame, &decoded); err != nil {
			t.Fatalf("frame %d: decoding: %v", rb.frames, err)
		}
		if len(decoded) != 3 {
			t.Fatalf("frame %d: decoded %v, want Ethernet/IPv4/UDP", rb.frames, decoded)
		}
		payload := udp.Payload
		if int(udp.Length) != 8+len(payload) || int(ip4.Length) != 20+8+len(payload) {
			t.Fatalf("frame %d: lengths ip %d udp %d payload %d", rb.frames, ip4.Length, udp.Length, len(payload))
		}
		src, _ := netip.AddrFromSlice(ip4.SrcIP)
		dst, _ := netip.AddrFromSlice(ip4.DstIP)
		srcAP := netip.AddrPortFrom(src, uint16(udp.SrcPort))
		dstAP := netip.AddrPortFrom(dst, uint16(udp.DstPort))
		if udp.SrcPort == 5060 || udp.DstPort == 5060 {
			rb.sip(t, []byte(payload))
			continue
		}
		rb.rtp(t, srcAP, dstAP, ci.Timestamp, payload)
	}
	return rb
}

func (rb *readBack) sip(t *testing.T, msg []byte) {
	head, body, ok := bytes.Cut(msg, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("frame %d: SIP message without an empty line", rb.frames)
	}
	lines := strings.Split(string(head), "\r\n")
	var callID string
	clen := -1
	for _, l := range lines[1:] {
		name, val, _ := strings.Cut(l, ": ")
		switch name {
		case "Call-ID":
			callID = val
		case "Content-Length":
			clen, _ = strconv.Atoi(val)
		}
	}
	if callID == "" || clen != len(body) {
		t.Fatalf("frame %d: Call-ID %q, Content-Length %d for a %d-byte body", rb.frames, callID, clen, len(body))
	}
	rb.perCallID[callID]++
	if rest, ok := strings.CutPrefix(lines[0], "SIP/2.0 "); ok {
		rb.codes[rest[:3]]++
	} else {
		rb.methods[strings.Fields(lines[0])[0]]++
	}
	var c netip.Addr
	for _, l := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(l, "c=IN IP4 "); ok {
			c = netip.MustParseAddr(v)
		}
		if v, ok := strings.CutPrefix(l, "m=audio "); ok {
			port, _ := strconv.Atoi(strings.Fields(v)[0])
			rb.sdp[callID] = append(rb.sdp[callID], netip.AddrPortFrom(c, uint16(port)))
		}
	}
}

func (rb *readBack) rtp(t *testing.T, src, dst netip.AddrPort, ts time.Time, p []byte) {
	if len(p) != 12+160 || p[0] != 0x80 {
		t.Fatalf("frame %d: not a 172-byte RTP v2 packet", rb.frames)
	}
	seq := binary.BigEndian.Uint16(p[2:])
	rtpTS := binary.BigEndian.Uint32(p[4:])
	ssrc := binary.BigEndian.Uint32(p[8:])
	k := StreamKey{SSRC: "0x" + strconv.FormatUint(uint64(ssrc)|1<<32, 16)[1:], Src: src.String(), Dst: dst.String()}
	s := rb.streams[k]
	if s == nil {
		s = &rbStream{first: seq, base: int64(seq), extHigh: int64(seq), prevArrival: ts, prevTS: rtpTS}
		rb.streams[k] = s
		s.packets = 1
		return
	}
	if seq < uint16(s.extHigh) && uint16(s.extHigh)-seq > 0x8000 {
		s.cycles += 65536
	}
	s.extHigh = max(s.extHigh, s.cycles+int64(seq))
	// Jitter in float64 seconds from time.Time, independently of rxStats.
	d := ts.Sub(s.prevArrival).Seconds() - float64(int64(rtpTS)-int64(s.prevTS))/8000
	s.jitter += (math.Abs(d)*1000 - s.jitter) / 16
	s.max = max(s.max, s.jitter)
	s.prevArrival, s.prevTS = ts, rtpTS
	s.packets++
	s.last = seq
}

// TestReadBack re-reads the generated file with gopacket and recomputes the
// answers from the bytes alone.
func TestReadBack(t *testing.T) {
	for _, cfg := range []Config{Small(1), Small(5)} {
		t.Run(cfgName(cfg), func(t *testing.T) {
			data, a := generate(t, cfg)
			rb := decodeCapture(t, data)
			if rb.frames != a.Capture.Frames {
				t.Errorf("frames %d, want %d", rb.frames, a.Capture.Frames)
			}
			for _, d := range a.Dialogs {
				if got := rb.perCallID[d.CallID]; got != d.Messages {
					t.Errorf("%s: %d messages in the file, want %d", d.CallID, got, d.Messages)
				}
				if d.Method == "INVITE" && len(d.Streams) > 0 {
					// Every stream goes to an address its SDP named.
					for _, k := range d.Streams {
						if !containsAP(rb.sdp[d.CallID], netip.MustParseAddrPort(k.Dst)) || !containsAP(rb.sdp[d.CallID], netip.MustParseAddrPort(k.Src)) {
							t.Errorf("%s: stream %s not between the SDP endpoints %v", d.CallID, k, rb.sdp[d.CallID])
						}
					}
				}
			}
			if len(rb.perCallID) != len(a.Dialogs) {
				t.Errorf("%d Call-IDs in the file, want %d", len(rb.perCallID), len(a.Dialogs))
			}
			for m, n := range a.Counts.MessagesByMethod {
				if rb.methods[m] != n {
					t.Errorf("%s requests %d, want %d", m, rb.methods[m], n)
				}
			}
			for c, n := range a.Counts.ResponsesByCode {
				if rb.codes[c] != n {
					t.Errorf("%s responses %d, want %d", c, rb.codes[c], n)
				}
			}
			if len(rb.streams) != len(a.Streams) {
				t.Errorf("%d streams in the file, want %d", len(rb.streams), len(a.Streams))
			}
			for _, s := range a.Streams {
				got, ok := rb.streams[s.StreamKey]
				if !ok {
					t.Errorf("stream %s not in the file", s.StreamKey)
					continue
				}
				expected := int(got.extHigh - got.base + 1)
				if got.packets != s.Packets || expected-got.packets != s.Lost || got.first != s.FirstSeq || got.last != s.LastSeq {
					t.Errorf("%s: packets %d lost %d seq %d..%d, want %d, %d, %d..%d", s.StreamKey,
						got.packets, expected-got.packets, got.first, got.last, s.Packets, s.Lost, s.FirstSeq, s.LastSeq)
				}
				if math.Abs(got.jitter-s.JitterMs) > 1e-6 || math.Abs(got.max-s.JitterMaxMs) > 1e-6 {
					t.Errorf("%s: jitter %.9f max %.9f, want %.9f, %.9f", s.StreamKey, got.jitter, got.max, s.JitterMs, s.JitterMaxMs)
				}
			}
		})
	}
}

func containsAP(list []netip.AddrPort, ap netip.AddrPort) bool {
	for _, x := range list {
		if x == ap {
			return true
		}
	}
	return false
}
