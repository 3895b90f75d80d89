package decode

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// TestUDPPortsNameNoParsedLayer pins what the fast path relies on: no UDP
// port makes gopacket name a layer the parser holds, so the parser always
// stops after UDP, as the fast path does.
func TestUDPPortsNameNoParsedLayer(t *testing.T) {
	d := New(Config{})
	for port := 0; port <= 0xFFFF; port++ {
		d.udp.DstPort, d.udp.SrcPort = layers.UDPPort(port), layers.UDPPort(port)
		for _, payload := range [][]byte{nil, {0x40}, {0x80}} {
			d.udp.Payload = payload
			if typ := d.udp.NextLayerType(); d.container != nil {
				if _, ok := d.container.inner.Decoder(typ); ok {
					t.Fatalf("UDP port %d names %v, a layer the parser holds", port, typ)
				}
			}
		}
	}
}

// trace records everything a decoder emits, in order.
type trace struct{ lines []string }

func (tr *trace) HandlePacket(p *packet.Packet) {
	fr := ""
	if p.Frame != nil {
		fr = fmt.Sprintf("%s#%d", p.Frame.Source, p.Frame.Ordinal)
	}
	tr.lines = append(tr.lines, fmt.Sprintf("%v %v>%v %v %v dscp=%d/%v ipid=%d/%v re=%v %s %x",
		p.TS.UnixNano(), p.Src, p.Dst, p.Transport, p.Origin, p.DSCP, p.HasDSCP, p.IPID, p.HasIPID, p.Reassembled, fr, p.Payload))
}

// decodeBoth decodes frames with and without the fast path and compares
// every emitted packet and every counter.
func decodeBoth(t *testing.T, frames []*packet.Frame, cfg Config) (fastFrames int) {
	t.Helper()
	fast, slow := New(cfg), New(cfg)
	slow.noFast = true
	var ft, st trace
	for _, f := range frames {
		fast.Decode(f, &ft)
		slow.Decode(f, &st)
		if ok := fastShape(f); ok {
			fastFrames++
		}
	}
	fast.Flush(&ft)
	slow.Flush(&st)
	if len(ft.lines) != len(st.lines) {
		t.Fatalf("fast path emitted %d packets, parser %d", len(ft.lines), len(st.lines))
	}
	for i := range ft.lines {
		if ft.lines[i] != st.lines[i] {
			t.Fatalf("packet %d:\nfast   %s\nparser %s", i, ft.lines[i], st.lines[i])
		}
	}
	if got, want := fast.Stats(), slow.Stats(); !reflect.DeepEqual(got, want) {
		t.Fatalf("counters differ:\nfast   %+v\nparser %+v", got, want)
	}
	return fastFrames
}

// fastShape reports whether a frame is Ethernet/IPv4/UDP by its bytes.
func fastShape(f *packet.Frame) bool {
	b := f.Data
	return f.LinkType == LinkEthernet && len(b) > 14+20+8 && b[12] == 8 && b[13] == 0 && b[14+9] == 17
}

// TestFastPathMatchesParser decodes every public capture both ways.
func TestFastPathMatchesParser(t *testing.T) {
	entries, err := os.ReadDir(testcap.Dir() + "/public")
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	total := 0
	for _, e := range entries {
		if e.IsDir() || e.Name() == "README.md" {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			frames, err := readFrames(testcap.Public(e.Name()))
			if len(frames) == 0 {
				t.Skipf("no frames: %v", err)
			}
			total += decodeBoth(t, frames, Config{})
		})
	}
	if total < 1000 {
		t.Fatalf("got %d Ethernet/IPv4/UDP frames over the public captures, want the fast path exercised on at least 1000", total)
	}
}

// TestFastPathMatchesParserOnOddShapes covers the shapes the fast path must
// hand back to the parser, or must decode the way the parser does.
func TestFastPathMatchesParserOnOddShapes(t *testing.T) {
	sip := []byte(sipOptions)
	u4 := ipUDP(t, 5060, 5080, sip)
	withOpts := append([]byte(nil), u4...)
	withOpts[0] = 0x46 // IHL 6: one option word
	withOpts = append(withOpts[:20], append([]byte{1, 1, 1, 0}, withOpts[20:]...)...)
	withOpts[3] += 4
	truncIP := append([]byte(nil), u4...)
	truncIP[3] += 50
	badUDP := append([]byte(nil), u4...)
	badUDP[20+4], badUDP[20+5] = 0, 3
	shortUDP := append([]byte(nil), u4...)
	shortUDP[20+4], shortUDP[20+5] = 0xff, 0xff
	cases := []struct {
		name string
		lt   uint16
		data []byte
	}{
		{"plain", LinkEthernet, withEth(t, 0x0800, u4)},
		{"raw", LinkRaw, u4},
		{"bare IPv4", LinkIPv4, u4},
		{"ip options", LinkEthernet, withEth(t, 0x0800, withOpts)},
		{"ip length past the frame", LinkEthernet, withEth(t, 0x0800, truncIP)},
		{"udp length under 8", LinkEthernet, withEth(t, 0x0800, badUDP)},
		{"udp length past the frame", LinkEthernet, withEth(t, 0x0800, shortUDP)},
		{"padding after the datagram", LinkEthernet, append(withEth(t, 0x0800, u4), 0, 0, 0, 0)},
		{"vxlan", LinkEthernet, ethUDP(t, 1, 4789, append(append([]byte(nil), vxlanHeader...), withEth(t, 0x0800, u4)...))},
		{"empty udp", LinkEthernet, withEth(t, 0x0800, ipUDP(t, 1, 2, nil))},
		{"header only", LinkEthernet, withEth(t, 0x0800, u4[:28])},
		{"cut in the ip header", LinkEthernet, withEth(t, 0x0800, u4[:19])},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := frame(tc.lt, tc.data)
			f.Ordinal, f.Source = 1, "x"
			decodeBoth(t, []*packet.Frame{f, f}, Config{})
		})
	}
	for _, fr := range fragments4(t, 17, 3, udpBody(t, 1, 2, sip, false), 64) {
		f := frame(LinkEthernet, fr)
		decodeBoth(t, []*packet.Frame{f}, Config{})
	}
}

// FuzzFastPath decodes arbitrary Ethernet and raw IP frames both ways.
func FuzzFastPath(f *testing.F) {
	sip := []byte(sipOptions)
	u4 := ipUDP(f, 5060, 5080, sip)
	f.Add(uint16(LinkEthernet), withEth(f, 0x0800, u4))
	f.Add(uint16(LinkRaw), u4)
	f.Add(uint16(LinkEthernet), ethUDP(f, 1, 4789, append(append([]byte(nil), vxlanHeader...), withEth(f, 0x0800, u4)...)))
	f.Fuzz(func(t *testing.T, lt uint16, data []byte) {
		if lt != LinkEthernet && lt != LinkRaw {
			lt = LinkEthernet
		}
		fr := frame(lt, bytes.Clone(data))
		decodeBoth(t, []*packet.Frame{fr}, fuzzConfig())
	})
}

// TestEmitSetsEveryPacketField: emitWith fills the decoder's reused packet
// field by field, so a field added to packet.Packet must be set there too.
func TestEmitSetsEveryPacketField(t *testing.T) {
	if got, want := reflect.TypeOf(packet.Packet{}).NumField(), 13; got != want {
		t.Fatalf("packet.Packet has %d fields, emitWith sets %d: set the new ones there and update this count", got, want)
	}
}

// TestIPIDOfUDPDatagrams: a UDP datagram over IPv4 carries its
// Identification (reassembled fragments theirs), the key that tells a
// mirrored copy of a datagram from the sender's second datagram
// (core/dialog/dup.go); IPv6 and TCP payloads carry none.
func TestIPIDOfUDPDatagrams(t *testing.T) {
	withID := func(id uint16) []byte {
		ip := v4(ipA, ipB, layers.IPProtocolUDP)
		ip.Id = id
		u := &layers.UDP{SrcPort: 5060, DstPort: 5080}
		u.SetNetworkLayerForChecksum(ip)
		return withEth(t, 0x0800, ser(t, ip, u, gopacket.Payload(sipOptions)))
	}
	body := strings.Repeat("a=x-filler\r\n", 300)
	big := "INVITE sip:bob@example.com SIP/2.0\r\nCall-ID: frag\r\nCSeq: 1 INVITE\r\nContent-Type: application/sdp\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	cases := []struct {
		name   string
		frames [][]byte
		id     uint16
		has    bool
	}{
		{"IPv4 UDP", [][]byte{withID(0x0a27)}, 0x0a27, true},
		{"IPv4 UDP, ID 0", [][]byte{withID(0)}, 0, true},
		{"IPv4 UDP in fragments", fragments4(t, layers.IPProtocolUDP, 0x0a28, udpBody(t, 5060, 5080, []byte(big), false), 1200), 0x0a28, true},
		{"IPv6 UDP", [][]byte{withEth(t, 0x86DD, ip6UDP(t, 5060, 5080, []byte(sipOptions)))}, 0, false},
		{"TCP", [][]byte{tcpSeg(t, 40000, 5060, 1, "PA", []byte(sipOptions))}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, fast := range []bool{true, false} {
				d := New(Config{})
				d.noFast = !fast
				var got []packet.Packet
				sink := packet.SinkFunc(func(p *packet.Packet) { got = append(got, *p) })
				for _, b := range tc.frames {
					d.Decode(frame(LinkEthernet, b), sink)
				}
				d.Flush(sink)
				if len(got) != 1 {
					t.Fatalf("fast %v: %d packets, want 1", fast, len(got))
				}
				if got[0].IPID != tc.id || got[0].HasIPID != tc.has {
					t.Errorf("fast %v: IPID %#04x/%v, want %#04x/%v", fast, got[0].IPID, got[0].HasIPID, tc.id, tc.has)
				}
			}
		})
	}
}
