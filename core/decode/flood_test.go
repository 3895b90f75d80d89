package decode

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
)

const floodKeys = 50000

type countSink struct{ n int }

func (c *countSink) HandlePacket(*packet.Packet) { c.n++ }

// fragTemplate returns a first IPv4 fragment whose id (bytes 18-19) and
// source address (bytes 26-29) the flood rewrites.
func fragTemplate(t *testing.T, size int) []byte {
	body := udpBody(t, 5060, 5060, make([]byte, 2*size), false)
	return fragments4(t, layers.IPProtocolUDP, 1, body, size)[0]
}

// tcpTemplate returns a segment carrying the start of a SIP message; the
// flood rewrites the source address (26-29) and port (34-35).
func tcpTemplate(t *testing.T) []byte {
	return tcpSeg(t, 40000, 5060, 1, "A", []byte("INVITE sip:bob@example.com SIP/2.0\r\nCall-ID: flood\r\n"))
}

func TestFloodFragmentKeys(t *testing.T) {
	d := New(Config{})
	sink := &countSink{}
	tmpl := fragTemplate(t, 64)
	for i := 0; i < floodKeys; i++ {
		b := append([]byte(nil), tmpl...)
		binary.BigEndian.PutUint16(b[18:20], uint16(i))
		binary.BigEndian.PutUint32(b[26:30], 0x0a000000+uint32(i>>16))
		d.Decode(frameAt(LinkEthernet, b, t0.Add(time.Duration(i)*time.Microsecond)), sink)
		if n := d.Entries(); n > DefaultMaxEntries {
			t.Fatalf("after %d keys: got %d entries, cap %d", i+1, n, DefaultMaxEntries)
		}
	}
	st := d.Stats()
	eq(t, "entries", st.FragmentEntries, DefaultMaxEntries)
	eq(t, "evictions", st.FragmentEvictions, uint64(floodKeys-DefaultMaxEntries))
	eq(t, "packets", sink.n, 0)
}

func TestFloodTCPStreams(t *testing.T) {
	d := New(Config{})
	sink := &countSink{}
	tmpl := tcpTemplate(t)
	for i := 0; i < floodKeys; i++ {
		b := append([]byte(nil), tmpl...)
		binary.BigEndian.PutUint32(b[26:30], 0x0a000000+uint32(i>>16))
		binary.BigEndian.PutUint16(b[34:36], uint16(i))
		d.Decode(frameAt(LinkEthernet, b, t0.Add(time.Duration(i)*time.Microsecond)), sink)
		if n := d.Entries(); n > DefaultMaxEntries {
			t.Fatalf("after %d keys: got %d entries, cap %d", i+1, n, DefaultMaxEntries)
		}
	}
	st := d.Stats()
	eq(t, "streams", st.TCPStreams, DefaultMaxEntries)
	eq(t, "evictions", st.TCPEvictions, uint64(floodKeys-DefaultMaxEntries))
	// Every evicted stream's unfinished message was handed over, not dropped.
	eq(t, "packets", sink.n, floodKeys-DefaultMaxEntries)
	d.Flush(sink)
	eq(t, "packets after flush", sink.n, floodKeys)
	eq(t, "entries after flush", d.Entries(), 0)
	eq(t, "bytes after flush", d.Stats().ReassemblyBytes, 0)
}

// TestFloodSharedCap floods fragments and TCP streams together: the cap is
// shared.
func TestFloodSharedCap(t *testing.T) {
	const cap = 1000
	d := New(Config{MaxEntries: cap})
	sink := &countSink{}
	ft, tt := fragTemplate(t, 64), tcpTemplate(t)
	for i := 0; i < floodKeys; i++ {
		var b []byte
		if i%2 == 0 {
			b = append([]byte(nil), ft...)
			binary.BigEndian.PutUint16(b[18:20], uint16(i))
			binary.BigEndian.PutUint32(b[26:30], 0x0a000000+uint32(i>>16))
		} else {
			b = append([]byte(nil), tt...)
			binary.BigEndian.PutUint32(b[26:30], 0x0a000000+uint32(i>>16))
			binary.BigEndian.PutUint16(b[34:36], uint16(i))
		}
		d.Decode(frameAt(LinkEthernet, b, t0.Add(time.Duration(i)*time.Microsecond)), sink)
		if n := d.Entries(); n > cap {
			t.Fatalf("after %d keys: got %d entries, cap %d", i+1, n, cap)
		}
	}
	st := d.Stats()
	eq(t, "evictions", st.FragmentEvictions+st.TCPEvictions, uint64(floodKeys-cap))
}

// TestFloodReassemblyBytes floods large first fragments: the byte budget
// holds at every step.
func TestFloodReassemblyBytes(t *testing.T) {
	const budget = 1 << 20
	d := New(Config{MaxReassemblyBytes: budget})
	sink := &countSink{}
	tmpl := fragTemplate(t, 1400)
	for i := 0; i < floodKeys; i++ {
		b := append([]byte(nil), tmpl...)
		binary.BigEndian.PutUint16(b[18:20], uint16(i))
		binary.BigEndian.PutUint32(b[26:30], 0x0a000000+uint32(i>>16))
		d.Decode(frameAt(LinkEthernet, b, t0), sink)
		if d.held > budget {
			t.Fatalf("after %d keys: got %d bytes held, budget %d", i+1, d.held, budget)
		}
	}
	if n := d.Entries(); n > budget/1400 {
		t.Fatalf("got %d entries, at most %d fit", n, budget/1400)
	}
}

// TestFloodTTL expires entries by capture time.
func TestFloodTTL(t *testing.T) {
	d := New(Config{})
	sink := &countSink{}
	tmpl := tcpTemplate(t)
	for i := 0; i < 100; i++ {
		b := append([]byte(nil), tmpl...)
		binary.BigEndian.PutUint16(b[34:36], uint16(i))
		d.Decode(frameAt(LinkEthernet, b, t0), sink)
	}
	eq(t, "entries", d.Entries(), 100)
	d.Decode(frameAt(LinkEthernet, arpFrame(t), t0.Add(31*time.Second)), sink)
	st := d.Stats()
	eq(t, "entries", d.Entries(), 0)
	eq(t, "timeouts", st.TCPTimeouts, 100)
	eq(t, "flushed", sink.n, 100)
}

func arpFrame(t *testing.T) []byte { return withEth(t, 0x0806, make([]byte, 28)) }

// TestFloodSlotTables floods the reason and WebSocket port tables.
func TestFloodSlotTables(t *testing.T) {
	d := New(Config{})
	sink := &countSink{}
	et := withEth(t, 0, []byte{0})
	for i := 0; i < floodKeys; i++ {
		b := append([]byte(nil), et...)
		binary.BigEndian.PutUint16(b[12:14], uint16(0x0600+i))
		d.Decode(frame(LinkEthernet, b), sink)
		if d.other.used > reasonSlots {
			t.Fatalf("after %d keys: %d other-traffic slots", i+1, d.other.used)
		}
	}
	st := d.Stats()
	// EtherTypes 0x0600.. are other traffic except the encapsulations
	// otherTraffic keeps undecodable (0x6558, 0x880b, 0x88e5, 0x88e7,
	// 0x894f fall inside the flood's range).
	eq(t, "other traffic", st.OtherTrafficFrames+st.UndecodableFrames, uint64(floodKeys))
	eq(t, "dropped", st.OtherTrafficKindsDropped, st.OtherTrafficFrames-reasonSlots)

	// Undecodable reasons on 50k different link types.
	u := New(Config{})
	for i := 0; i < floodKeys; i++ {
		u.Decode(frame(uint16(300+i), []byte{0}), sink)
		if u.reasons.used > reasonSlots {
			t.Fatalf("after %d keys: %d reason slots", i+1, u.reasons.used)
		}
	}
	ust := u.Stats()
	eq(t, "undecodable", ust.UndecodableFrames, uint64(floodKeys))
	eq(t, "undecodable dropped", ust.UndecodableReasonsDropped, uint64(floodKeys-reasonSlots))

	// Declined WebSocket frames on 50k different ports.
	w := New(Config{MaxWSPayload: 10})
	wt := tcpSeg(t, 65535, 0, 1, "PA", []byte(wsFrame(true, 1, false, "INVITE sip:x SIP/2.0\r\n\r\n")))
	for i := 0; i < floodKeys; i++ {
		b := append([]byte(nil), wt...)
		binary.BigEndian.PutUint16(b[36:38], uint16(1024+i))
		w.Decode(frame(LinkEthernet, b), sink)
		if w.wsPorts.used > reasonSlots {
			t.Fatalf("after %d ports: %d port slots", i+1, w.wsPorts.used)
		}
		if w.Entries() > DefaultMaxEntries {
			t.Fatalf("after %d ports: %d entries", i+1, w.Entries())
		}
	}
	ws := w.Stats()
	eq(t, "declined", ws.WSDeclined, uint64(floodKeys))
	eq(t, "ports dropped", ws.WSDeclinedPortsDropped, uint64(floodKeys-reasonSlots))
}
