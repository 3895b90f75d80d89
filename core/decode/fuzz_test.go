package decode

import (
	"encoding/binary"
	"math/rand"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/websocket"
)

// checkSink verifies invariants of every emitted packet.
type checkSink struct {
	t        *testing.T
	maxWS    int
	maxBuf   int
	n        int
	payloads []string
}

func (c *checkSink) HandlePacket(p *packet.Packet) {
	c.n++
	if p.Transport == packet.TransportWS && len(p.Payload) > c.maxWS {
		c.t.Fatalf("got a WebSocket message of %d bytes, limit %d", len(p.Payload), c.maxWS)
	}
	if p.Transport == packet.TransportTCP && len(p.Payload) > c.maxBuf+65535 {
		c.t.Fatalf("got a TCP unit of %d bytes", len(p.Payload))
	}
	if len(p.Payload) == 0 {
		c.t.Fatalf("got an empty payload")
	}
	if c.payloads != nil {
		c.payloads = append(c.payloads, string(p.Payload))
	}
}

func fuzzConfig() Config {
	return Config{MaxEntries: 64, MaxReassemblyBytes: 1 << 20, MaxWSPayload: 4096, MaxStreamBuffer: MinStreamBuffer}
}

func checkBounds(t *testing.T, d *Decoder) {
	if d.Entries() > d.cfg.MaxEntries {
		t.Fatalf("got %d entries, cap %d", d.Entries(), d.cfg.MaxEntries)
	}
	if d.held < 0 {
		t.Fatalf("got %d bytes held", d.held)
	}
}

// FuzzDecodeFrame decodes arbitrary bytes under every link type the decoder
// knows, twice (so reassembly state is exercised).
func FuzzDecodeFrame(f *testing.F) {
	sip := []byte(sipOptions)
	u4 := ipUDP(f, 5060, 5080, sip)
	u6 := ip6UDP(f, 5060, 5080, sip)
	f.Add(uint16(LinkEthernet), ethUDP(f, 5060, 5060, sip))
	f.Add(uint16(LinkEthernet), withEth(f, 0x88A8, append(append(vlanTag(1, 0x8100), vlanTag(2, 0x0800)...), u4...)))
	f.Add(uint16(LinkEthernet), withEth(f, 0x8847, append(mplsLabel(5, true), u4...)))
	f.Add(uint16(LinkEthernet), grePacket(f, 0x22EB, true, append(erspan3(0, true), withEth(f, 0x0800, u4)...)))
	f.Add(uint16(LinkEthernet), grePacket(f, 0x88BE, true, append([]byte{0x10, 0x64, 0, 1, 0, 0, 0, 0}, withEth(f, 0x0800, u4)...)))
	f.Add(uint16(LinkEthernet), ethUDP(f, 1, 4789, append(append([]byte(nil), vxlanHeader...), withEth(f, 0x0800, u4)...)))
	f.Add(uint16(LinkEthernet), sctpPacket(f, sctpData(1, sip), sctpData(2, sip)))
	for _, fr := range fragments4(f, 17, 3, udpBody(f, 1, 2, sip, false), 64) {
		f.Add(uint16(LinkEthernet), fr)
	}
	for _, fr := range fragments6(f, 17, 3, udpBody(f, 1, 2, sip, true), 64) {
		f.Add(uint16(LinkEthernet), fr)
	}
	f.Add(uint16(LinkEthernet), tcpSeg(f, 40000, 5060, 1, "PA", []byte(mInv+m100)))
	f.Add(uint16(LinkLinuxSLL), append(sllHeader(0x0800, []byte{6, 0}), u4...))
	f.Add(uint16(LinkLinuxSLL2), append(sll2Header(0x86DD), u6...))
	f.Add(uint16(LinkNull), append([]byte{30, 0, 0, 0}, u6...))
	f.Add(uint16(LinkLoop), append([]byte{0, 0, 0, 2}, u4...))
	f.Add(uint16(LinkRaw), u4)
	f.Add(uint16(LinkPPP), append([]byte{0xff, 0x03, 0x00, 0x21}, u4...))
	f.Add(uint16(LinkPPPoE), append([]byte{0x11, 0, 0, 1, 0, 10, 0, 0x21}, u4...))
	f.Add(uint16(LinkEthernet), []byte{})
	// IEEE 802.3/LLC: STP, CDP, SNAP carrying IPv4, a tagged one.
	f.Add(uint16(LinkEthernet), dot3(stpBPDU(), 8))
	f.Add(uint16(LinkEthernet), dot3(snap(0x00000c, 0x2000, cdpBody), 0))
	f.Add(uint16(LinkEthernet), dot3(snap(0, 0x0800, u4), 0))
	f.Add(uint16(LinkEthernet), withEth(f, 0x8100, append(vlanTag(3, uint16(len(u4)+8)), snap(0, 0x0800, u4)...)))
	f.Add(uint16(LinkLinuxSLL), append(sllHeader(sllProtoLLC, []byte{0, 6}), stpBPDU()...))
	f.Add(uint16(LinkEthernet), ser(f, eth(layers.EthernetTypeIPv4), v4(ipB, ipA, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 3)}, gopacket.Payload(u4)))
	f.Add(uint16(LinkEthernet), ethUDP(f, 2152, 2152, []byte{0x32, 0xFF, 0, byte(len(u4) + 4), 0, 0, 0, 1, 0, 1, 0, 0}))
	f.Add(uint16(LinkEthernet), ethUDP(f, 1, 6081, append([]byte{0, 0, 0x08, 0, 0, 0, 1, 0}, u4...)))
	f.Fuzz(func(t *testing.T, lt uint16, data []byte) {
		cfg := fuzzConfig()
		cfg.OnICMPError = func(e *ICMPError) {
			if len(e.Payload) > len(data) || (e.HasPorts && !e.Quoted) {
				t.Fatalf("icmp error quoting %d payload bytes of a %d-byte frame (%+v)", len(e.Payload), len(data), e)
			}
		}
		d := New(cfg)
		s := &checkSink{t: t, maxWS: 4096, maxBuf: MinStreamBuffer}
		for i := 0; i < 2; i++ {
			fr := frame(lt, data)
			fr.OrigLen = len(data) + i*100 // the second pass is "snapped"
			d.Decode(fr, s)
			checkBounds(t, d)
		}
		d.Flush(s)
		if d.Entries() != 0 || d.held != 0 {
			t.Fatalf("after Flush: %d entries, %d bytes held", d.Entries(), d.held)
		}
	})
}

// rawTCP builds Ethernet/IPv4/TCP by hand (fast enough to fuzz).
func rawTCP(fromServer bool, seq uint32, flags byte, payload []byte) []byte {
	b := withEth(nil, 0x0800, nil)
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:4], uint16(40+len(payload)))
	ip[8], ip[9] = 64, 6
	a, z := []byte{192, 0, 2, 10}, []byte{192, 0, 2, 20}
	sp, dp := uint16(40000), uint16(5060)
	if fromServer {
		a, z, sp, dp = z, a, dp, sp
	}
	copy(ip[12:16], a)
	copy(ip[16:20], z)
	tc := make([]byte, 20)
	binary.BigEndian.PutUint16(tc[0:2], sp)
	binary.BigEndian.PutUint16(tc[2:4], dp)
	binary.BigEndian.PutUint32(tc[4:8], seq)
	tc[12] = 5 << 4
	tc[13] = flags
	binary.BigEndian.PutUint16(tc[14:16], 65535)
	b = append(append(append(b, ip...), tc...), payload...)
	return b
}

// FuzzTCPReassembly reads data as a script of segments: each record is a
// control byte (bit 0 direction, bits 1-3 SYN/FIN/RST), a signed 16-bit
// sequence offset from the direction's running position, a length byte, and
// that many payload bytes.
func FuzzTCPReassembly(f *testing.F) {
	rec := func(ctl byte, off int16, p string) []byte {
		b := []byte{ctl}
		b = binary.BigEndian.AppendUint16(b, uint16(off))
		b = append(b, byte(len(p)))
		return append(b, p...)
	}
	f.Add(append(rec(0, 0, mAck), rec(0, int16(len(mAck)), m100)...))
	f.Add(append(append(rec(0, 40, mAck[40:]), rec(0, 0, mAck[:40])...), rec(0, 0, mAck[:40])...))
	f.Add(append(rec(2, 0, ""), rec(0, 1, "HEP3\x00\x10abcdefghij")...))
	f.Add(append(rec(0, 0, wsRequest[:120]), rec(0, 120, wsFrame(true, websocket.OpText, true, m100))...))
	f.Add(append(rec(1, 0, m100), rec(5, int16(len(m100)), "")...))
	f.Add(rec(0, 0, "\x81\x7e\x01\x00"+strings.Repeat("x", 200)))
	f.Fuzz(func(t *testing.T, script []byte) {
		d := New(fuzzConfig())
		s := &checkSink{t: t, maxWS: 4096, maxBuf: MinStreamBuffer}
		var pos [2]uint32
		pos[0], pos[1] = 1000, 5000
		for len(script) >= 4 {
			ctl := script[0]
			off := int16(binary.BigEndian.Uint16(script[1:3]))
			n := min(int(script[3]), len(script)-4)
			p := script[4 : 4+n]
			script = script[4+n:]
			dir := ctl & 1
			var flags byte = 0x10
			if ctl&2 != 0 {
				flags |= 0x02
			}
			if ctl&4 != 0 {
				flags |= 0x01
			}
			if ctl&8 != 0 {
				flags |= 0x04
			}
			seq := pos[dir] + uint32(int32(off))
			d.Decode(frame(LinkEthernet, rawTCP(dir == 1, seq, flags, p)), s)
			checkBounds(t, d)
			if ctl&16 != 0 {
				pos[dir] = seq + uint32(n)
			}
		}
		d.Flush(s)
		if d.Entries() != 0 || d.held != 0 {
			t.Fatalf("after Flush: %d entries, %d bytes held", d.Entries(), d.held)
		}
	})
}

// FuzzWebSocketStream feeds arbitrary bytes as the client side of a
// connection that upgraded to WebSocket, split in two segments.
func FuzzWebSocketStream(f *testing.F) {
	f.Add(wsFrame(true, websocket.OpText, true, mInv), uint16(10))
	f.Add(wsFrame(false, websocket.OpText, true, "ab")+wsFrame(true, websocket.OpPing, true, "")+wsFrame(true, websocket.OpContinuation, true, "cd"), uint16(3))
	f.Add("\x81\x7f\x00\x00\x00\x00\x10\x00\x00\x00abc", uint16(2))
	f.Add("\x01\x05hello\x80\x05world", uint16(7))
	f.Fuzz(func(t *testing.T, stream string, cut uint16) {
		d := New(fuzzConfig())
		s := &checkSink{t: t, maxWS: 4096, maxBuf: MinStreamBuffer}
		d.Decode(frame(LinkEthernet, rawTCP(false, 1, 0x18, []byte(wsRequest))), s)
		d.Decode(frame(LinkEthernet, rawTCP(true, 1, 0x18, []byte(wsResponse))), s)
		c := min(int(cut), len(stream))
		seq := uint32(1 + len(wsRequest))
		d.Decode(frame(LinkEthernet, rawTCP(false, seq, 0x18, []byte(stream[:c]))), s)
		d.Decode(frame(LinkEthernet, rawTCP(false, seq+uint32(c), 0x18, []byte(stream[c:]))), s)
		checkBounds(t, d)
		d.Flush(s)
	})
}

// TestTCPRandomSegmentation cuts a stream of SIP messages into random
// segments, retransmits and reorders some (within the queue bounds), and
// checks the messages come out whole, once each and in order.
func TestTCPRandomSegmentation(t *testing.T) {
	var msgs []string
	for i := range 40 {
		body := strings.Repeat("b", i*37%300)
		msgs = append(msgs, sipWithBody("MESSAGE sip:bob@example.com SIP/2.0", "rand-"+string(rune('a'+i%26)), body))
		if i%7 == 0 {
			msgs = append(msgs, m100)
		}
	}
	stream := strings.Join(msgs, "")
	rng := rand.New(rand.NewSource(1))
	for iter := range 200 {
		type piece struct {
			seq uint32
			b   string
		}
		var pieces []piece
		for off := 0; off < len(stream); {
			n := 1 + rng.Intn(600)
			n = min(n, len(stream)-off)
			pieces = append(pieces, piece{uint32(1000 + off), stream[off : off+n]})
			off += n
		}
		// Reorder neighbours and duplicate some.
		var order []piece
		for i := 0; i < len(pieces); i++ {
			if i+1 < len(pieces) && rng.Intn(5) == 0 {
				order = append(order, pieces[i+1], pieces[i])
				i++
				continue
			}
			order = append(order, pieces[i])
			if rng.Intn(8) == 0 {
				order = append(order, pieces[i])
			}
		}
		d := New(Config{})
		s := &checkSink{t: t, maxWS: DefaultMaxWSPayload, maxBuf: DefaultMaxStreamBuffer, payloads: []string{}}
		d.Decode(frame(LinkEthernet, rawTCP(false, 999, 0x02, nil)), s)
		for _, p := range order {
			d.Decode(frame(LinkEthernet, rawTCP(false, p.seq, 0x18, []byte(p.b))), s)
		}
		d.Flush(s)
		if len(s.payloads) != len(msgs) {
			t.Fatalf("iteration %d: got %d messages, want %d", iter, len(s.payloads), len(msgs))
		}
		for i := range msgs {
			if s.payloads[i] != msgs[i] {
				t.Fatalf("iteration %d: message %d: got %.60q, want %.60q", iter, i, s.payloads[i], msgs[i])
			}
		}
	}
}
