package hep

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/sipnab/sipnab/internal/testcap"
)

// chunk builds one HEP3 chunk by hand.
func chunk(vendor, typ uint16, v []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, vendor)
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(6+len(v)))
	return append(b, v...)
}

// envelope wraps chunks in a HEP3 header with the right total length.
func envelope(chunks ...[]byte) []byte {
	body := bytes.Join(chunks, nil)
	b := []byte("HEP3")
	b = binary.BigEndian.AppendUint16(b, uint16(6+len(body)))
	return append(b, body...)
}

const sipText = "OPTIONS sip:bob@example.com SIP/2.0\r\nCall-ID: hep-1\r\nContent-Length: 0\r\n\r\n"

func zlibBytes(t testing.TB, p []byte) []byte {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(p)
	w.Close()
	return z.Bytes()
}

func gzipBytes(t testing.TB, p []byte) []byte {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(p)
	w.Close()
	return z.Bytes()
}

func TestDecodeHandBuiltV3(t *testing.T) {
	ts := time.Unix(1700000123, 456789000)
	v4 := envelope(
		chunk(0, ChunkIPFamily, []byte{2}),
		chunk(0, ChunkIPProto, []byte{17}),
		chunk(0, ChunkIPv4Src, []byte{192, 0, 2, 1}),
		chunk(0, ChunkIPv4Dst, []byte{192, 0, 2, 2}),
		chunk(0, ChunkSrcPort, []byte{0x13, 0xc4}),
		chunk(0, ChunkDstPort, []byte{0x13, 0xc5}),
		chunk(0, ChunkTimeSec, binary.BigEndian.AppendUint32(nil, 1700000123)),
		chunk(0, ChunkTimeUsec, binary.BigEndian.AppendUint32(nil, 456789)),
		chunk(0, ChunkProtoType, []byte{ProtoSIP}),
		chunk(0, ChunkAgentID, binary.BigEndian.AppendUint32(nil, 0x01020304)),
		chunk(0, ChunkKeepAlive, []byte{0, 30}),
		chunk(0, ChunkAuthKey, []byte("secret")),
		chunk(0, ChunkCorrelationID, []byte("corr-7")),
		chunk(0, ChunkVLAN, []byte{0x00, 0x64}),
		chunk(0, ChunkGroupID, []byte("node-a")),
		chunk(0, ChunkIPTOS, []byte{0xb8}),
		chunk(0x0002, 0x0042, []byte("vendor")),
		chunk(0, 0x0099, []byte{1}),
		chunk(0, ChunkPayload, []byte(sipText)),
	)
	v6 := envelope(
		chunk(0, ChunkIPFamily, []byte{10}),
		chunk(0, ChunkIPProto, []byte{6}),
		chunk(0, ChunkIPv6Src, netip.MustParseAddr("2001:db8::1").AsSlice()),
		chunk(0, ChunkIPv6Dst, netip.MustParseAddr("2001:db8::2").AsSlice()),
		chunk(0, ChunkSrcPort, []byte{0x13, 0xc4}),
		chunk(0, ChunkDstPort, []byte{0x13, 0xc4}),
		chunk(0, ChunkProtoType, []byte{ProtoRTCP}),
		chunk(0, ChunkCompressed, zlibBytes(t, []byte(sipText))),
	)
	gz := envelope(
		chunk(0, ChunkIPFamily, []byte{2}),
		chunk(0, ChunkIPProto, []byte{17}),
		chunk(0, ChunkCompressed, gzipBytes(t, []byte(sipText))),
	)
	keepalive := envelope(chunk(0, ChunkAgentID, []byte{0, 0, 0, 9}), chunk(0, ChunkKeepAlive, []byte{0, 5}))
	tests := []struct {
		name string
		in   []byte
		want Message
	}{
		{"ipv4 every chunk", v4, Message{
			Version: 3, Family: 2, Protocol: 17,
			Src: netip.MustParseAddrPort("192.0.2.1:5060"), Dst: netip.MustParseAddrPort("192.0.2.2:5061"),
			TS: ts, HasTS: true, ProtoType: ProtoSIP, HasProtoType: true,
			AgentID: 0x01020304, HasAgentID: true, KeepAlive: 30, AuthKey: []byte("secret"),
			Payload: []byte(sipText), CorrelationID: []byte("corr-7"), VLAN: 100, HasVLAN: true,
			GroupID: []byte("node-a"), TOS: 0xb8, HasTOS: true, UnknownChunks: 2,
		}},
		{"ipv6 zlib payload", v6, Message{
			Version: 3, Family: 10, Protocol: 6,
			Src: netip.MustParseAddrPort("[2001:db8::1]:5060"), Dst: netip.MustParseAddrPort("[2001:db8::2]:5060"),
			ProtoType: ProtoRTCP, HasProtoType: true, Payload: []byte(sipText), Compressed: true,
		}},
		{"gzip payload without addresses", gz, Message{
			Version: 3, Family: 2, Protocol: 17, Src: netip.AddrPortFrom(netip.Addr{}, 0), Dst: netip.AddrPortFrom(netip.Addr{}, 0),
			Payload: []byte(sipText), Compressed: true,
		}},
		{"keep-alive without payload", keepalive, Message{
			Version: 3, AgentID: 9, HasAgentID: true, KeepAlive: 5,
		}},
		{"trailing stream bytes ignored", append(append([]byte(nil), keepalive...), "HEP3"...), Message{
			Version: 3, AgentID: 9, HasAgentID: true, KeepAlive: 5,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !Looks(tc.in) {
				t.Fatalf("Looks: got false, want true")
			}
			got, err := Decode(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			assertMessage(t, got, &tc.want)
		})
	}
}

func assertMessage(t *testing.T, got, want *Message) {
	t.Helper()
	g, w := fmt.Sprintf("%+v", *got), fmt.Sprintf("%+v", *want)
	if !got.TS.Equal(want.TS) {
		t.Errorf("got TS %v, want %v", got.TS, want.TS)
	}
	gc, wc := *got, *want
	gc.TS, wc.TS = time.Time{}, time.Time{}
	if fmt.Sprintf("%+v", gc) != fmt.Sprintf("%+v", wc) {
		t.Fatalf("got  %s\nwant %s", g, w)
	}
}

func TestDecodeHandBuiltV2(t *testing.T) {
	payload := []byte(sipText)
	v2 := []byte{2, 16, 2, 17, 0x13, 0xc4, 0x13, 0xc5, 10, 0, 0, 1, 10, 0, 0, 2}
	v2 = binary.LittleEndian.AppendUint32(v2, 1700000000)
	v2 = binary.LittleEndian.AppendUint32(v2, 250000)
	v2 = binary.LittleEndian.AppendUint16(v2, 42)
	v2 = append(append(v2, 0, 0), payload...)

	v2be := []byte{2, 8, 2, 6, 0x13, 0xc4, 0x13, 0xc5, 10, 0, 0, 1, 10, 0, 0, 2}
	v2be = binary.BigEndian.AppendUint32(v2be, 1700000000)
	v2be = binary.BigEndian.AppendUint32(v2be, 250000)
	v2be = binary.BigEndian.AppendUint16(v2be, 42)
	v2be = append(append(v2be, 0, 0), payload...)

	v1 := []byte{1, 40, 10, 17, 0x13, 0xc4, 0x13, 0xc4}
	v1 = append(v1, netip.MustParseAddr("2001:db8::a").AsSlice()...)
	v1 = append(v1, netip.MustParseAddr("2001:db8::b").AsSlice()...)
	v1 = append(v1, payload...)
	tests := []struct {
		name string
		in   []byte
		want Message
	}{
		{"version 2 little-endian time", v2, Message{Version: 2, Family: 2, Protocol: 17,
			Src: netip.MustParseAddrPort("10.0.0.1:5060"), Dst: netip.MustParseAddrPort("10.0.0.2:5061"),
			TS: time.Unix(1700000000, 250000000), HasTS: true, ProtoType: ProtoSIP, AgentID: 42, HasAgentID: true, Payload: payload}},
		{"version 2 big-endian time, odd length byte", v2be, Message{Version: 2, Family: 2, Protocol: 6,
			Src: netip.MustParseAddrPort("10.0.0.1:5060"), Dst: netip.MustParseAddrPort("10.0.0.2:5061"),
			TS: time.Unix(1700000000, 250000000), HasTS: true, ProtoType: ProtoSIP, AgentID: 42, HasAgentID: true, Payload: payload}},
		{"version 1 ipv6", v1, Message{Version: 1, Family: 10, Protocol: 17,
			Src: netip.MustParseAddrPort("[2001:db8::a]:5060"), Dst: netip.MustParseAddrPort("[2001:db8::b]:5060"),
			ProtoType: ProtoSIP, Payload: payload}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !Looks(tc.in) {
				t.Fatalf("Looks: got false, want true")
			}
			got, err := Decode(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			assertMessage(t, got, &tc.want)
		})
	}
}

// udpFrames reads a public Ethernet/IPv4/UDP capture into (src, dst, ts, payload) rows.
type udpRow struct {
	src, dst netip.AddrPort
	ts       time.Time
	payload  []byte
}

func readUDP(t *testing.T, name string) []udpRow {
	t.Helper()
	fh, err := os.Open(testcap.Public(name))
	if err != nil {
		t.Fatalf("public capture %s: %v", name, err)
	}
	defer fh.Close()
	r, err := pcapgo.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	var rows []udpRow
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		p := gopacket.NewPacket(data, r.LinkType(), gopacket.Default)
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if ip == nil || udp == nil {
			continue
		}
		s, _ := netip.AddrFromSlice(ip.SrcIP)
		d, _ := netip.AddrFromSlice(ip.DstIP)
		rows = append(rows, udpRow{netip.AddrPortFrom(s, uint16(udp.SrcPort)), netip.AddrPortFrom(d, uint16(udp.DstPort)), ci.Timestamp, udp.Payload})
	}
	return rows
}

// TestDecodeSngrep decodes datagrams a real agent (sngrep 1.6.0) sent while
// reading sip_call.pcap, and checks every field against the capture itself.
func TestDecodeSngrep(t *testing.T) {
	rows := readUDP(t, "sip_call.pcap")
	if len(rows) != 7 {
		t.Fatalf("got %d UDP frames in sip_call.pcap, want 7", len(rows))
	}
	files, _ := filepath.Glob("testdata/sngrep/*.bin")
	if len(files) != 11 {
		t.Fatalf("got %d sngrep datagrams, want 11", len(files))
	}
	for _, fn := range files {
		t.Run(filepath.Base(fn), func(t *testing.T) {
			b, err := os.ReadFile(fn)
			if err != nil {
				t.Fatal(err)
			}
			var idx int
			base := filepath.Base(fn)
			fmt.Sscanf(base[len(base)-6:], "%02d", &idx)
			row := rows[idx]
			want := Message{Family: 2, Protocol: 17, Src: row.src, Dst: row.dst, TS: row.ts, HasTS: true,
				ProtoType: ProtoSIP, HasAgentID: true, Payload: row.payload}
			switch base[:2] {
			case "v2":
				want.Version, want.AgentID = 2, 77
			default:
				// sngrep (like every agent built on hep-c) writes
				// htons(id) into the 32-bit field: 2002 reads as 0x07d20000.
				want.Version, want.AgentID, want.HasProtoType = 3, 0x07d20000, true
				if base[:3] == "v3p" {
					want.AuthKey = []byte("s3cret")
				}
			}
			if !Looks(b) {
				t.Fatal("Looks: got false, want true")
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			assertMessage(t, got, &want)
			wantLegacy := uint32(2002)
			if want.Version == 2 {
				wantLegacy = 77
			}
			if l := got.LegacyAgentID(); l != wantLegacy {
				t.Fatalf("got legacy agent id %d, want %d", l, wantLegacy)
			}
		})
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	ts := time.Unix(1700000001, 999999000)
	big := bytes.Repeat([]byte("a=x\r\n"), 3000)
	tests := []struct {
		name string
		m    Message
	}{
		{"v3 ipv4", Message{Version: 3, Family: 2, Protocol: 17, Src: netip.MustParseAddrPort("10.1.1.1:5060"), Dst: netip.MustParseAddrPort("10.1.1.2:5080"),
			TS: ts, HasTS: true, ProtoType: ProtoSIP, HasProtoType: true, AgentID: 7, HasAgentID: true, AuthKey: []byte("k"),
			CorrelationID: []byte("c"), Payload: []byte(sipText)}},
		{"v3 ipv6 compressed", Message{Version: 3, Family: 10, Protocol: 6, Src: netip.MustParseAddrPort("[2001:db8::1]:5060"), Dst: netip.MustParseAddrPort("[2001:db8::2]:5060"),
			ProtoType: ProtoSIP, HasProtoType: true, Payload: big, Compressed: true}},
		{"v2 ipv4", Message{Version: 2, Family: 2, Protocol: 17, Src: netip.MustParseAddrPort("10.1.1.1:5060"), Dst: netip.MustParseAddrPort("10.1.1.2:5060"),
			TS: ts, HasTS: true, ProtoType: ProtoSIP, AgentID: 3, HasAgentID: true, Payload: []byte(sipText)}},
		{"v1 ipv6", Message{Version: 1, Family: 10, Protocol: 17, Src: netip.MustParseAddrPort("[2001:db8::1]:5060"), Dst: netip.MustParseAddrPort("[2001:db8::2]:5060"),
			ProtoType: ProtoSIP, Payload: []byte(sipText)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Encode(&tc.m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			assertMessage(t, got, &tc.m)
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	ok := envelope(chunk(0, ChunkPayload, []byte("x")))
	bomb := envelope(chunk(0, ChunkCompressed, zlibBytes(t, make([]byte, DefaultMaxInflated+1))))
	tests := []struct {
		name      string
		in        []byte
		truncated bool
		looks     bool // the cheap check cannot tell this one from a good envelope
	}{
		{"empty", nil, false, false},
		{"rtp", []byte{0x80, 0x00, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0}, false, false},
		{"magic only", []byte("HEP3"), true, false},
		{"total shorter than header", []byte("HEP3\x00\x05"), false, false},
		{"total beyond buffer", ok[:len(ok)-1], true, false},
		{"chunk header cut", envelope([]byte{0, 0, 0, 1}), true, false},
		{"chunk length below 6", envelope([]byte{0, 0, 0, 0x0f, 0, 5, 1}), false, false},
		{"chunk length past total", envelope([]byte{0, 0, 0, 0x0f, 0, 50, 1}), true, false},
		{"port chunk of 3 bytes", envelope(chunk(0, ChunkSrcPort, []byte{1, 2, 3})), false, true},
		{"ipv6 chunk of 4 bytes", envelope(chunk(0, ChunkIPv6Src, []byte{1, 2, 3, 4})), false, true},
		{"compressed garbage", envelope(chunk(0, ChunkCompressed, []byte("not compressed"))), false, true},
		{"zlib bomb past the bound", bomb, false, true},
		{"v2 unknown family", append([]byte{2, 16, 7, 17}, make([]byte, 40)...), false, false},
		{"v2 short", []byte{2, 16, 2, 17, 0, 1}, true, false},
		{"v2 stun cookie", append([]byte{1, 1, 2, 17, 0x21, 0x12, 0xa4, 0x42}, make([]byte, 30)...), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(tc.in)
			if err == nil {
				t.Fatalf("got message %+v, want an error", m)
			}
			if got := errors.Is(err, ErrTruncated); got != tc.truncated {
				t.Fatalf("got truncated=%v (%v), want %v", got, err, tc.truncated)
			}
			if got := Looks(tc.in); got != tc.looks {
				t.Fatalf("Looks: got %v, want %v", got, tc.looks)
			}
		})
	}
}

func TestInflateBound(t *testing.T) {
	payload := bytes.Repeat([]byte("0"), 100000)
	b := envelope(chunk(0, ChunkCompressed, zlibBytes(t, payload)))
	tests := []struct {
		name  string
		limit int
		ok    bool
	}{
		{"default bound", 0, true},
		{"exact bound", 100000, true},
		{"one byte short", 99999, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decoder{MaxInflated: tc.limit}
			var m Message
			err := d.DecodeInto(b, &m)
			if (err == nil) != tc.ok {
				t.Fatalf("got error %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && len(m.Payload) != len(payload) {
				t.Fatalf("got %d payload bytes, want %d", len(m.Payload), len(payload))
			}
		})
	}
}

func TestLooks(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"sip request", "INVITE sip:a@b SIP/2.0\r\n", false},
		{"rtp", "\x80\x08\x00\x01\x00\x00\x00\xa0\x12\x34\x56\x78", false},
		{"stun binding request", "\x00\x01\x00\x00\x21\x12\xa4\x42abcdefghijkl", false},
		{"hep3 header only", "HEP3\x00\x06", true},
		{"hep3 total past buffer", "HEP3\x00\x20\x00\x00", false},
		{"hep3 first chunk past total", "HEP3\x00\x0c\x00\x00\x00\x01\x00\x07", false},
		{"hep3 short total", "HEP3\x00\x08\x00\x00", false},
		{"v2 ipv4 sip", "\x02\x10\x02\x11\x13\xc4\x13\xc4\x0a\x00\x00\x01\x0a\x00\x00\x02" + "0123456789abINVITE", true},
		{"v2 ipv4 without time header", "\x02\x10\x02\x11\x13\xc4\x13\xc4\x0a\x00\x00\x01\x0a\x00\x00\x02", false},
		{"v1 icmp protocol", "\x01\x10\x02\x01\x13\xc4\x13\xc4\x0a\x00\x00\x01\x0a\x00\x00\x02", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Looks([]byte(tc.in)); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFrameLen(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want bool
	}{
		{"HEP3\x01\x00", 256, true},
		{"HEP3\x00\x05", 0, false},
		{"HEP3\x00", 0, false},
		{"HEP2\x00\x10", 0, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			n, ok := FrameLen([]byte(tc.in))
			if n != tc.n || ok != tc.want {
				t.Fatalf("got (%d, %v), want (%d, %v)", n, ok, tc.n, tc.want)
			}
		})
	}
}

func TestDecodeIntoDoesNotAllocate(t *testing.T) {
	b, err := os.ReadFile("testdata/sngrep/v3-00.bin")
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	var m Message
	allocs := testing.AllocsPerRun(100, func() {
		if err := d.DecodeInto(b, &m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("got %v allocations per decode, want 0", allocs)
	}
}

func BenchmarkDecodeInto(b *testing.B) {
	buf, err := os.ReadFile("testdata/sngrep/v3-00.bin")
	if err != nil {
		b.Fatal(err)
	}
	var d Decoder
	var m Message
	b.ReportAllocs()
	for b.Loop() {
		if err := d.DecodeInto(buf, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/sngrep/*.bin")
	for _, fn := range files {
		b, _ := os.ReadFile(fn)
		f.Add(b)
	}
	f.Add(envelope(chunk(0, ChunkCompressed, zlibBytes(f, []byte(sipText)))))
	f.Add(envelope(chunk(0, ChunkCompressed, gzipBytes(f, []byte(sipText)))))
	f.Add([]byte("HEP3\x00\x06"))
	f.Add([]byte{2, 16, 10, 17, 0, 1, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Decoder{MaxInflated: 4096}
		var m Message
		err := d.DecodeInto(b, &m)
		if err != nil {
			return
		}
		if m.Compressed {
			if len(m.Payload) > 4096 {
				t.Fatalf("got %d inflated bytes, limit 4096", len(m.Payload))
			}
		} else if len(m.Payload) > len(b) {
			t.Fatalf("got payload of %d bytes from %d input bytes", len(m.Payload), len(b))
		}
		if m.Version == 3 {
			if n, ok := FrameLen(b); !ok || n > len(b) {
				t.Fatalf("decoded a HEP3 envelope whose frame length is (%d, %v)", n, ok)
			}
		}
	})
}

// TestAgentIDOfReadsTheClaimWithoutDecoding: AgentIDOf gives the id Decode
// gives (HEP3 chunk 0x000c, HEP2 capture id), reports none when the
// envelope carries none, and refuses what is not a whole envelope.
func TestAgentIDOfReadsTheClaimWithoutDecoding(t *testing.T) {
	base := Message{Family: FamilyIPv4, Protocol: 17, Src: netip.MustParseAddrPort("192.0.2.1:5060"),
		Dst: netip.MustParseAddrPort("192.0.2.2:5060"), TS: time.Unix(1700000000, 0), HasTS: true, Payload: []byte("OPTIONS")}
	for _, tc := range []struct {
		name   string
		ver    int
		id     uint32
		has    bool
		mangle func([]byte) []byte
		wantOK bool
	}{
		{"v3 with id", 3, 2002, true, nil, true},
		{"v3 without id", 3, 0, false, nil, false},
		{"v2 capture id", 2, 513, true, nil, true},
		{"v3 cut short", 3, 2002, true, func(b []byte) []byte { return b[:len(b)-3] }, false},
		{"not HEP", 3, 0, false, func([]byte) []byte { return []byte("HEP4 nope") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base
			m.Version, m.AgentID, m.HasAgentID = tc.ver, tc.id, tc.has
			m.HasProtoType, m.ProtoType = tc.ver == 3, ProtoSIP
			b, err := Encode(&m)
			if err != nil {
				t.Fatal(err)
			}
			if tc.mangle != nil {
				b = tc.mangle(b)
			}
			id, ok := AgentIDOf(b)
			if ok != tc.wantOK || (ok && id != tc.id) {
				t.Errorf("AgentIDOf = %d, %v; want %d, %v", id, ok, tc.id, tc.wantOK)
			}
			if d, err := Decode(b); err == nil && (d.HasAgentID != ok || d.AgentID != id) {
				t.Errorf("Decode says %d, %v; AgentIDOf %d, %v", d.AgentID, d.HasAgentID, id, ok)
			}
		})
	}
}
