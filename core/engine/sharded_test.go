package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// TestCopiesSetEveryField: the sharded path copies packets and frames field
// by field, so every field must be listed (a new field must be added to
// copyPacket or copyFrame).
func TestCopiesSetEveryField(t *testing.T) {
	f := packet.Frame{TS: time.Unix(1, 2), LinkType: 1, Data: []byte{1}, OrigLen: 3, Source: "s", SourceID: 4, Ordinal: 5, InvalidTS: true}
	p := packet.Packet{TS: time.Unix(6, 7), Src: netip.MustParseAddrPort("192.0.2.1:1"), Dst: netip.MustParseAddrPort("192.0.2.2:2"),
		Transport: packet.TransportUDP, Payload: []byte{2}, Origin: packet.OriginHEP, DSCP: 46, HasDSCP: true, IPID: 0x0a27, HasIPID: true, Frame: &f,
		Reassembled: true, HEPAgentID: 9}
	for _, v := range []reflect.Value{reflect.ValueOf(f), reflect.ValueOf(p)} {
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).IsZero() {
				t.Fatalf("%s.%s is zero in the test values: give it a value", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	var gf packet.Frame
	var gp packet.Packet
	copyFrame(&gf, &f)
	copyPacket(&gp, &p)
	if !reflect.DeepEqual(gf, f) {
		t.Fatalf("copyFrame: got %+v, want %+v", gf, f)
	}
	if !reflect.DeepEqual(gp, p) {
		t.Fatalf("copyPacket: got %+v, want %+v", gp, p)
	}
}

// TestHostPairHashIsSymmetric: both directions between two hosts, whatever
// the ports, go to one shard.
func TestHostPairHashIsSymmetric(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("198.51.100.20")
	if hostPairHash(a, b) != hostPairHash(b, a) {
		t.Fatal("the hash depends on the direction")
	}
	seen := map[uint64]bool{}
	for i := 0; i < 256; i++ {
		x := netip.AddrFrom4([4]byte{10, 0, byte(i), 1})
		seen[hostPairHash(x, b)%2] = true
	}
	if len(seen) != 2 {
		t.Fatal("256 host pairs all hash to one of two shards")
	}
}

// TestHostPairHashOfIPv4BytesEqualsTheGeneralHash: the router's hash of a
// plain frame's address bytes, and the shortcut for IPv4 addresses, give
// the value of the general formula over the IPv4-mapped form, so a host
// pair lands on one shard whichever path (plain frame, decoded packet,
// IPv4-mapped IPv6) carried it.
func TestHostPairHashOfIPv4BytesEqualsTheGeneralHash(t *testing.T) {
	general := func(a netip.Addr) uint64 {
		x := a.As16() // As16 maps IPv4
		return mix(binary.LittleEndian.Uint64(x[:8]) ^ binary.LittleEndian.Uint64(x[8:])*0x9E3779B97F4A7C15)
	}
	for _, tc := range []struct{ a, b string }{
		{"192.0.2.10", "198.51.100.20"},
		{"0.0.0.0", "255.255.255.255"},
		{"10.0.0.1", "10.0.0.1"},
		{"::ffff:192.0.2.10", "198.51.100.20"},
		{"2001:db8::1", "192.0.2.10"},
		{"2001:db8::1", "fe80::2"},
	} {
		a, b := netip.MustParseAddr(tc.a), netip.MustParseAddr(tc.b)
		want := general(a) ^ general(b)
		if got := hostPairHash(a, b); got != want {
			t.Errorf("hostPairHash(%s, %s) = %#x, want %#x", a, b, got, want)
		}
		if a.Unmap().Is4() && b.Is4() {
			if got := hostPairHash4(a.Unmap().As4(), b.As4()); got != want {
				t.Errorf("hostPairHash4(%s, %s) = %#x, want %#x", a, b, got, want)
			}
		}
	}
}

// TestWithin finds a payload inside its frame and nowhere else.
func TestWithin(t *testing.T) {
	frame := make([]byte, 100)
	other := make([]byte, 10)
	if off, ok := within(frame, frame[42:50]); !ok || off != 42 {
		t.Fatalf("got %d, %v, want 42, true", off, ok)
	}
	if _, ok := within(frame, other); ok {
		t.Fatal("a separate buffer was found inside the frame")
	}
	if _, ok := within(frame[:40], frame[38:45]); ok {
		t.Fatal("a payload running past the frame was found inside it")
	}
	if _, ok := within(nil, other); ok {
		t.Fatal("found inside no frame")
	}
}

// TestRouteRTPDoesNotAllocate pins the hot path: once its stream exists, an
// RTP frame is read, decoded, classified and folded into the stream store
// without allocating, on one core and on the sharded path.
func TestRouteRTPDoesNotAllocate(t *testing.T) {
	frames := rtpFrames(t)
	for _, cores := range []int{1, 2} {
		c := New(Config{Cores: cores}, nil)
		if cores > 1 {
			c.startSharding()
			if c.shard == nil {
				t.Fatal("no sharding started")
			}
		}
		s := &fileSink{c: c}
		for range 3 { // streams exist; batches are in circulation
			for _, f := range frames {
				s.HandleFrame(f)
			}
			s.EndBatch()
		}
		i := 0
		allocs := testing.AllocsPerRun(5000, func() {
			s.HandleFrame(frames[i%len(frames)])
			i++
			if i%capture.BatchFrames == 0 {
				s.EndBatch()
			}
		})
		s.EndBatch()
		c.stopSharding()
		// A sharded run may meet an empty free list while the worker still
		// holds every batch: far below one allocation per packet.
		if max := 0.01 * float64(cores-1); allocs > max {
			t.Fatalf("cores %d: got %v allocations per frame, want at most %v", cores, allocs, max)
		}
		if st := c.Status(); st.MediaPackets == 0 {
			t.Fatalf("cores %d: no media routed", cores)
		}
	}
}

// rtpFrames reads voicecmd_combined.pcap (RTP only) into memory.
func rtpFrames(t *testing.T) []*packet.Frame {
	t.Helper()
	r, err := capture.Open(testcap.Public("voicecmd_combined.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*packet.Frame
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		cp := *f
		cp.Data = append([]byte(nil), f.Data...)
		out = append(out, &cp)
	}
	return out
}

// ethIPv4UDP builds an Ethernet/IPv4/UDP frame with correct lengths.
func ethIPv4UDP(payload []byte) []byte {
	b := make([]byte, 42+len(payload))
	b[12], b[13] = 0x08, 0x00
	b[14] = 0x45
	binary.BigEndian.PutUint16(b[16:], uint16(20+8+len(payload)))
	b[22], b[23] = 64, 17
	copy(b[26:], []byte{192, 0, 2, 1, 198, 51, 100, 2})
	binary.BigEndian.PutUint16(b[34:], 16384)
	binary.BigEndian.PutUint16(b[36:], 20000)
	binary.BigEndian.PutUint16(b[38:], uint16(8+len(payload)))
	copy(b[42:], payload)
	return b
}

// TestMediaFrame: only plain frames whose payload the router would route
// as media go to a worker undecoded.
func TestMediaFrame(t *testing.T) {
	rtpPayload := append([]byte{0x80, 0, 0, 1, 0, 0, 0, 160, 1, 2, 3, 4}, make([]byte, 160)...)
	plain := ethIPv4UDP(rtpPayload)
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), plain...)) }
	cases := []struct {
		name string
		data []byte
		lt   uint16
		orig int
		want bool
	}{
		{"plain RTP", plain, 1, 0, true},
		{"don't fragment set", mod(func(b []byte) []byte { b[20] = 0x40; return b }), 1, 0, true},
		{"raw IP link", plain[14:], 12, 0, false},
		{"more fragments", mod(func(b []byte) []byte { b[20] = 0x20; return b }), 1, 0, false},
		{"fragment offset", mod(func(b []byte) []byte { b[21] = 1; return b }), 1, 0, false},
		{"IP options", mod(func(b []byte) []byte { b[14] = 0x46; return b }), 1, 0, false},
		{"TCP", mod(func(b []byte) []byte { b[23] = 6; return b }), 1, 0, false},
		{"VLAN", mod(func(b []byte) []byte { b[12], b[13] = 0x81, 0; return b }), 1, 0, false},
		{"trailer after the datagram", append(append([]byte(nil), plain...), 0, 0, 0, 0), 1, 0, false},
		{"IP length short", mod(func(b []byte) []byte { b[17]--; return b }), 1, 0, false},
		{"UDP length short", mod(func(b []byte) []byte { b[39]--; return b }), 1, 0, false},
		{"snapped", plain, 1, len(plain) + 100, false},
		{"VXLAN port", mod(func(b []byte) []byte { b[36], b[37] = 0x12, 0xb5; return b }), 1, 0, false},
		{"GTP-U port", mod(func(b []byte) []byte { b[36], b[37] = 0x08, 0x68; return b }), 1, 0, false},
		{"GENEVE port", mod(func(b []byte) []byte { b[36], b[37] = 0x17, 0xc1; return b }), 1, 0, false},
		{"SIP", ethIPv4UDP([]byte("OPTIONS sip:a@b SIP/2.0\r\nCall-ID: x\r\n\r\n")), 1, 0, false},
		{"HEP", ethIPv4UDP([]byte("HEP3\x00\x06")), 1, 0, false},
		{"empty payload", ethIPv4UDP(nil), 1, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &packet.Frame{LinkType: tc.lt, Data: tc.data, OrigLen: len(tc.data)}
			if tc.orig > 0 {
				f.OrigLen = tc.orig
			}
			src, dst, ok := mediaFrame(f)
			if ok != tc.want {
				t.Fatalf("got %v, want %v", ok, tc.want)
			}
			if ok && (src != [4]byte{192, 0, 2, 1} || dst != [4]byte{198, 51, 100, 2}) {
				t.Fatalf("got %v -> %v", src, dst)
			}
		})
	}
}

// TestCoresGiveOneCoresAnswersWhateverTheRouterShare: RTP and RTCP-less
// media between 40 host pairs, half of them announced in SDP, loaded on
// one core and on two (the router keeping no host pair, or 6 of 64 hash
// buckets of them) and three cores, give the same counters, dialogs and
// streams.
func TestCoresGiveOneCoresAnswersWhateverTheRouterShare(t *testing.T) {
	const pairs = 40
	addr := func(i int) [4]byte { return [4]byte{10, byte(i / 200), byte(i % 200), 1} }
	var frames [][]byte
	for i := 0; i < pairs; i += 2 {
		body := fmt.Sprintf("v=0\r\no=- 1 1 IN IP4 %d.%d.%d.%d\r\ns=-\r\nc=IN IP4 %d.%d.%d.%d\r\nt=0 0\r\nm=audio %d RTP/AVP 0\r\n",
			10, i/200, i%200, 1, 10, i/200, i%200, 1, 20000+i)
		frames = append(frames, ethIPv4UDP([]byte(sipText("INVITE sip:bob@b SIP/2.0", fmt.Sprintf("share-%d", i), 1, "INVITE", body))))
	}
	for seq := 1; seq <= 12; seq++ {
		for i := 0; i < pairs; i++ {
			rtp := append([]byte{0x80, 0, byte(seq >> 8), byte(seq), 0, 0, byte(seq), 160, 0, 0, 1, byte(i)}, make([]byte, 160)...)
			d := ethIPv4UDP(rtp)
			a, b := addr(i), addr(1000+i)
			if seq%2 == 0 {
				a, b = b, a // the reverse direction: the same host pair
			}
			copy(d[26:30], a[:])
			copy(d[30:34], b[:])
			binary.BigEndian.PutUint16(d[34:36], uint16(30000+i))
			binary.BigEndian.PutUint16(d[36:38], uint16(20000+i))
			frames = append(frames, d)
		}
	}
	load := func(cores int) ([]byte, int) {
		c := loadFrames(cores, frames, "share", 50)
		out := storeAnswers(t, c)
		all, _ := json.Marshal(c.Media().All())
		return append(out, all...), c.Media().Stats().Streams
	}
	want, streams := load(1)
	if streams != 2*pairs {
		t.Fatalf("one core holds %d streams, want %d (both directions of every pair)", streams, 2*pairs)
	}
	for _, tc := range []struct {
		name  string
		cores int
		share uint64
	}{
		{"two cores, the worker keeps every host pair", 2, 0},
		{"two cores, the router keeps 6 of 64 buckets", 2, 6},
		{"three cores", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer SetInlineShare(tc.share)()
			if got, _ := load(tc.cores); !bytes.Equal(got, want) {
				t.Fatalf("differs from one core:\n one: %s\n got: %s", want, got)
			}
		})
	}
}
