package captures

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// cpTLSCapture writes a classic pcap of one TCP segment from
// 192.0.2.1:40000 to 192.0.2.2:5061 carrying a TLS 1.2 ClientHello record
// header (22, 3.3): SIP over TLS as a capture shows it.
func cpTLSCapture(t *testing.T, path string) {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IP{192, 0, 2, 1}, DstIP: net.IP{192, 0, 2, 2}}
	tcp := &layers.TCP{SrcPort: 40000, DstPort: 5061, Seq: 1, ACK: true, PSH: true, Window: 1024}
	_ = tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp,
		gopacket.Payload([]byte{22, 3, 3, 0, 4, 1, 0, 0, 0})); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, v := range []uint32{0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1, 1700000000, 0, uint32(len(buf.Bytes())), uint32(len(buf.Bytes()))} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.Write(buf.Bytes())
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestListCaptures: a root holding three public captures (one pcapng), a
// gzip copy of one, a capture written here with TLS to port 5061, a file
// named .cap that is no capture, a capture file without a capture
// extension, a text file, a symlink to a capture and a directory. The
// captures are listed by name with their sizes and first_packet (tshark
// -c1 -T fields -e frame.time_epoch: 1480171979.666393, 1479419555.303348707,
// 1311857686.556175); the link, the directory and the two other files are
// counted, not listed.
func TestListCaptures(t *testing.T) {
	root := cpRoot(t, sampleCapture, "sipp-branch-scenario.pcapng", "sip-over-tcp.pcap")
	raw, _ := os.ReadFile(testcap.Public(sampleCapture))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	for name, data := range map[string][]byte{"sample.pcap.gz": gz.Bytes(), "notes.txt": []byte("hello"), "bogus.cap": []byte("not a capture at all")} {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cpCopy(t, testcap.Public("SIP_CALL_RTP_G711"), filepath.Join(root, "SIP_CALL_RTP_G711"))
	cpTLSCapture(t, filepath.Join(root, "tls.pcap"))
	if err := os.Symlink(sampleCapture, filepath.Join(root, "link.pcap")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "old.pcap"), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := cpTools(t, cpLoad(t, sampleCapture), root, sdk.EnvOptions{})
	var got CaptureList
	r := cpCall(t, tools["list_captures"], `{}`, &got)
	at := func(sec, nsec int64) *time.Time { v := time.Unix(sec, nsec).UTC(); return &v }
	no, yes := false, true
	want := []CaptureFile{
		{Filename: "bogus.cap", Bytes: 20},
		{Filename: "sample.pcap.gz", Bytes: int64(gz.Len()), FirstPacket: at(1480171979, 666393000), Encrypted: &no, Format: "pcap", Compressed: true},
		{Filename: "sip-over-tcp.pcap", Bytes: 19879, FirstPacket: at(1311857686, 556175000), Encrypted: &no, Format: "pcap"},
		{Filename: sampleCapture, Bytes: 198831, FirstPacket: at(1480171979, 666393000), Encrypted: &no, Format: "pcap"},
		{Filename: "sipp-branch-scenario.pcapng", Bytes: 3716196, FirstPacket: at(1479419555, 303348707), Encrypted: &no, Format: "pcapng"},
		{Filename: "tls.pcap", Bytes: 24 + 16 + 14 + 20 + 20 + 9, FirstPacket: at(1700000000, 0), Encrypted: &yes, Format: "pcap"},
	}
	if len(got.Captures) != len(want) || got.Returned != len(want) || got.Truncated {
		t.Fatalf("listed %d, want %d: %s", len(got.Captures), len(want), r.Blocks[0])
	}
	for i, w := range want {
		g := got.Captures[i]
		if g.Filename != w.Filename || g.Bytes != w.Bytes || !timeEq(g.FirstPacket, w.FirstPacket) || !boolEq(g.Encrypted, w.Encrypted) ||
			g.Format != w.Format || g.Compressed != w.Compressed {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	if u := got.Captures[0].Unreadable; !strings.Contains(u, "bogus.cap") || got.Captures[0].FirstPacket != nil {
		t.Errorf("bogus.cap: %+v, want unreadable with a reason", got.Captures[0])
	}
	if got.NotListed != (NotListed{OtherFiles: 2, Symlinks: 1, Other: 1}) {
		t.Errorf("not_listed: %+v", got.NotListed)
	}
	if !strings.Contains(r.Blocks[0], `"first_packet":null`) || !strings.Contains(got.Note, "archives") {
		t.Errorf("first_packet of the unreadable file is not null, or the note does not say archives are not read: %s", r.Blocks[0])
	}
	none := cpTools(t, cpLoad(t, sampleCapture), "", sdk.EnvOptions{})
	if e := cpRefused(t, none["list_captures"], `{}`); e.Kind != sdk.KindNotEnabled || !strings.Contains(e.Message, "--mcp-file-root") {
		t.Errorf("no root: %+v", e)
	}
}

func timeEq(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }
func boolEq(a, b *bool) bool      { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
