package tests

// Helpers of the engine acceptance tests: frames built byte by byte (or with
// gopacket's serializers), written to pcap/pcapng files, read back by the
// engine the binary runs.

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/internal/testengine"
)

// accT0 is on a 5 s boundary, so quality intervals start with the capture.
var accT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

var (
	accMACA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	accMACB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
)

// accFrame is one captured frame.
type accFrame struct {
	ts   time.Time
	data []byte
}

func accSer(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatalf("serializing: %v", err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func accAP(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// accUDP returns an IPv4 or IPv6 packet (no link header) carrying one UDP
// datagram from src to dst ("ip:port").
func accUDP(t *testing.T, src, dst string, payload []byte) []byte {
	t.Helper()
	s, d := accAP(src), accAP(dst)
	u := &layers.UDP{SrcPort: layers.UDPPort(s.Port()), DstPort: layers.UDPPort(d.Port())}
	if s.Addr().Is4() {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: s.Addr().AsSlice(), DstIP: d.Addr().AsSlice()}
		_ = u.SetNetworkLayerForChecksum(ip)
		return accSer(t, ip, u, gopacket.Payload(payload))
	}
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: s.Addr().AsSlice(), DstIP: d.Addr().AsSlice()}
	_ = u.SetNetworkLayerForChecksum(ip)
	return accSer(t, ip, u, gopacket.Payload(payload))
}

// accTCP returns an IPv4 packet carrying one TCP segment.
func accTCP(t *testing.T, src, dst string, seq uint32, syn bool, payload []byte) []byte {
	t.Helper()
	s, d := accAP(src), accAP(dst)
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: s.Addr().AsSlice(), DstIP: d.Addr().AsSlice()}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(s.Port()), DstPort: layers.TCPPort(d.Port()), Seq: seq, Window: 65535, SYN: syn, ACK: !syn, PSH: len(payload) > 0}
	if !syn {
		tcp.Ack = 1
	}
	_ = tcp.SetNetworkLayerForChecksum(ip)
	return accSer(t, ip, tcp, gopacket.Payload(payload))
}

// accIPv4Proto wraps payload in an IPv4 header of protocol proto.
func accIPv4Proto(t *testing.T, src, dst string, proto layers.IPProtocol, payload []byte) []byte {
	t.Helper()
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	return accSer(t, ip, gopacket.Payload(payload))
}

// accEth prepends an Ethernet header of the given EtherType.
func accEth(etherType uint16, payload []byte) []byte {
	b := make([]byte, 0, 14+len(payload))
	b = append(b, accMACB...)
	b = append(b, accMACA...)
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

// accIPEth is an IPv4 or IPv6 packet in an Ethernet frame.
func accIPEth(ip []byte) []byte {
	if ip[0]>>4 == 6 {
		return accEth(0x86DD, ip)
	}
	return accEth(0x0800, ip)
}

// accTag is an 802.1Q tag (TCI then the inner EtherType).
func accTag(vid uint16, inner uint16) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, vid), inner)
}

// accFragments splits an IPv4 packet into fragments of at most size
// payload bytes (a multiple of 8).
func accFragments(t *testing.T, pkt []byte, size int) [][]byte {
	t.Helper()
	hdr := pkt[:20]
	body := pkt[20:]
	var out [][]byte
	for off := 0; off < len(body); off += size {
		end := min(off+size, len(body))
		f := append([]byte(nil), hdr...)
		f = append(f, body[off:end]...)
		binary.BigEndian.PutUint16(f[2:], uint16(len(f)))
		fl := uint16(off / 8)
		if end < len(body) {
			fl |= 0x2000 // more fragments
		}
		binary.BigEndian.PutUint16(f[4:], 0x1234)
		binary.BigEndian.PutUint16(f[6:], fl)
		f[10], f[11] = 0, 0
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(f[i:]))
		}
		for sum > 0xffff {
			sum = sum>>16 + sum&0xffff
		}
		binary.BigEndian.PutUint16(f[10:], ^uint16(sum))
		out = append(out, f)
	}
	return out
}

// accPcap writes frames to a classic pcap file with the given byte order
// and timestamp resolution (nanoseconds when ns).
func accPcap(t *testing.T, path string, lt uint32, order binary.ByteOrder, ns bool, frames []accFrame) string {
	t.Helper()
	var b bytes.Buffer
	magic := uint32(0xa1b2c3d4)
	if ns {
		magic = 0xa1b23c4d
	}
	hdr := make([]byte, 24)
	order.PutUint32(hdr[0:], magic)
	order.PutUint16(hdr[4:], 2)
	order.PutUint16(hdr[6:], 4)
	order.PutUint32(hdr[16:], 262144)
	order.PutUint32(hdr[20:], lt)
	b.Write(hdr)
	for _, f := range frames {
		rec := make([]byte, 16)
		sub := f.ts.Nanosecond() / 1000
		if ns {
			sub = f.ts.Nanosecond()
		}
		order.PutUint32(rec[0:], uint32(f.ts.Unix()))
		order.PutUint32(rec[4:], uint32(sub))
		order.PutUint32(rec[8:], uint32(len(f.data)))
		order.PutUint32(rec[12:], uint32(len(f.data)))
		b.Write(rec)
		b.Write(f.data)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// accWrite writes Ethernet (or lt) frames to dir/name as a little-endian
// nanosecond pcap.
func accWrite(t *testing.T, dir, name string, lt layers.LinkType, frames []accFrame) string {
	t.Helper()
	return accPcap(t, filepath.Join(dir, name), uint32(lt), binary.LittleEndian, true, frames)
}

// accPcapNG writes frames to a pcapng file with one interface per link type
// listed; ifaces[i] is the interface of frames[i].
func accPcapNG(t *testing.T, path string, lts []layers.LinkType, ifaces []int, frames []accFrame) string {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	w, err := pcapgo.NewNgWriterInterface(fh, pcapgo.NgInterface{Name: "if0", LinkType: lts[0], SnapLength: 65535}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i, lt := range lts[1:] {
		if _, err := w.AddInterface(pcapgo.NgInterface{Name: fmt.Sprintf("if%d", i+1), LinkType: lt, SnapLength: 65535}); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: f.ts, CaptureLength: len(f.data), Length: len(f.data), InterfaceIndex: ifaces[i]}
		if err := w.WritePacket(ci, f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

// accGzip writes a gzip-compressed copy of path beside it.
func accGzip(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	out := path + ".gz"
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// accLoad runs the engine over files, as `sipnab -N -I ... --json-run` does,
// and returns the capture and its document.
func accLoad(t *testing.T, paths ...string) (*engine.Capture, report.Document) {
	t.Helper()
	c := testengine.Load(t, engine.Config{Node: "acceptance"}, paths...)
	return c, report.Build(c)
}

// SIP messages. Every dialog of the helpers runs between the caller A and
// the callee B with fixed tags.

func accSDP(addr string, port int, formats string, attrs ...string) string {
	var b strings.Builder
	fam := "IP4"
	if strings.Contains(addr, ":") {
		fam = "IP6"
	}
	fmt.Fprintf(&b, "v=0\r\no=- 1 1 IN %s %s\r\ns=-\r\nc=IN %s %s\r\nt=0 0\r\n", fam, addr, fam, addr)
	media := "audio"
	proto := "RTP/AVP"
	if formats == "t38" {
		media, proto = "image", "udptl"
	}
	fmt.Fprintf(&b, "m=%s %d %s %s\r\n", media, port, proto, formats)
	for _, a := range attrs {
		b.WriteString("a=" + a + "\r\n")
	}
	return b.String()
}

// accReq is a request of the dialog callID (from A, To tag only once
// answered: toTag != "").
func accReq(method, callID string, cseq int, toTag, body string, extra ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s sip:bob@b.example SIP/2.0\r\n", method)
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP a.example;branch=z9hG4bK-%s-%d-%s\r\n", callID, cseq, method)
	b.WriteString("Max-Forwards: 70\r\n")
	b.WriteString("From: \"Alice\" <sip:alice@a.example>;tag=at1\r\n")
	if toTag != "" {
		fmt.Fprintf(&b, "To: <sip:bob@b.example>;tag=%s\r\n", toTag)
	} else {
		b.WriteString("To: <sip:bob@b.example>\r\n")
	}
	fmt.Fprintf(&b, "Call-ID: %s\r\n", callID)
	fmt.Fprintf(&b, "CSeq: %d %s\r\n", cseq, method)
	b.WriteString("Contact: <sip:alice@a.example>\r\n")
	for _, e := range extra {
		b.WriteString(e + "\r\n")
	}
	if body != "" && !strings.HasPrefix(strings.Join(extra, "\n"), "Content-Type") {
		ct := "application/sdp"
		if strings.HasPrefix(body, "Signal=") {
			ct = "application/dtmf-relay"
		}
		fmt.Fprintf(&b, "Content-Type: %s\r\n", ct)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// accResp answers the request method/cseq of callID from B (To tag bt1
// except on 100).
func accResp(code int, reason, method, callID string, cseq int, body string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "SIP/2.0 %d %s\r\n", code, reason)
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP a.example;branch=z9hG4bK-%s-%d-%s\r\n", callID, cseq, method)
	b.WriteString("From: \"Alice\" <sip:alice@a.example>;tag=at1\r\n")
	if code == 100 {
		b.WriteString("To: <sip:bob@b.example>\r\n")
	} else {
		b.WriteString("To: <sip:bob@b.example>;tag=bt1\r\n")
	}
	fmt.Fprintf(&b, "Call-ID: %s\r\n", callID)
	fmt.Fprintf(&b, "CSeq: %d %s\r\n", cseq, method)
	if body != "" {
		b.WriteString("Content-Type: application/sdp\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// accSIP joins header lines and, when the last line starts with v=0, an SDP
// body.
func accSIP(lines ...string) []byte {
	var body string
	if n := len(lines); n > 0 && strings.HasPrefix(lines[n-1], "v=0") {
		body, lines = lines[n-1], lines[:n-1]
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	if body != "" {
		b.WriteString("Content-Type: application/sdp\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// HEP envelopes, built by hand from the HEP3 and HEP2 layouts.

func accHEPChunk(typ uint16, data []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(6+len(data)))
	return append(b, data...)
}

// accHEP3 wraps a SIP payload sent from src to dst at ts by capture agent
// 2001; compressed puts it zlib-deflated in chunk 0x0010.
func accHEP3(t *testing.T, src, dst string, ts time.Time, payload []byte, compressed bool) []byte {
	t.Helper()
	return accHEP3Agent(src, dst, ts, 2001, payload, compressed)
}

// accHEP3Agent is accHEP3 sent by capture agent agent (chunk 0x000c).
func accHEP3Agent(src, dst string, ts time.Time, agent uint32, payload []byte, compressed bool) []byte {
	return hepV3Packet(accAP(src), accAP(dst), ts, agent, payload, compressed)
}

// accHEP2 is the HEP2 (version 2) form over IPv4: a 16-byte header, the
// time and capture id, then the payload.
func accHEP2(src, dst string, ts time.Time, payload []byte) []byte {
	return hepV2Packet(accAP(src), accAP(dst), ts, payload)
}

// accWSFrame is one final WebSocket text frame, masked with key when key
// is not nil.
func accWSFrame(payload []byte, key []byte) []byte {
	b := []byte{0x81}
	mask := byte(0)
	if key != nil {
		mask = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, mask|byte(n))
	case n < 65536:
		b = append(b, mask|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, mask|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if key == nil {
		return append(b, payload...)
	}
	b = append(b, key...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// accSCTP is an SCTP packet (common header, CRC32c) with one DATA chunk
// (unfragmented, TSN 1) carrying payload.
func accSCTP(sport, dport uint16, payload []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, sport)
	b = binary.BigEndian.AppendUint16(b, dport)
	b = binary.BigEndian.AppendUint32(b, 1) // verification tag
	b = append(b, 0, 0, 0, 0)               // checksum, below
	b = append(b, 0, 0x03)                  // DATA, B and E bits
	b = binary.BigEndian.AppendUint16(b, uint16(16+len(payload)))
	b = binary.BigEndian.AppendUint32(b, 1) // TSN
	b = append(b, 0, 0, 0, 0)               // stream 0, sequence 0
	b = binary.BigEndian.AppendUint32(b, 0) // PPID
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// accRTP is an RTP packet (version 2, no CSRC, no extension).
func accRTP(pt uint8, marker bool, seq uint16, ts, ssrc uint32, payload []byte) []byte {
	b := []byte{0x80, pt}
	if marker {
		b[1] |= 0x80
	}
	b = binary.BigEndian.AppendUint16(b, seq)
	b = binary.BigEndian.AppendUint32(b, ts)
	b = binary.BigEndian.AppendUint32(b, ssrc)
	return append(b, payload...)
}
