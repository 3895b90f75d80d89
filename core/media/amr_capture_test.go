package media_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/internal/testpcap"
)

var updateAMR = flag.Bool("update-amr", false, "rewrite testdata/amr/amr-wb-octet.pcap from amrCapture")

const amrCapturePath = "testdata/amr/amr-wb-octet.pcap"

// udpFrame is an Ethernet/IPv4/UDP frame.
func udpFrame(t *testing.T, src, dst string, sport, dport int, payload []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// amrWBOctet is an octet-aligned AMR-WB payload (RFC 4867 §4.4.2): CMR
// octet, one F FT Q P P octet per frame, each frame's bits (3GPP TS 26.201)
// padded to octets.
func amrWBOctet(types ...int) []byte {
	bits := map[int]int{0: 132, 1: 177, 2: 253, 3: 285, 4: 317, 5: 365, 6: 397, 7: 461, 8: 477, 9: 40, 15: 0}
	out := []byte{0xf0}
	for i, ft := range types {
		e := byte(ft<<3 | 1<<2)
		if i+1 < len(types) {
			e |= 0x80
		}
		out = append(out, e)
	}
	for _, ft := range types {
		out = append(out, bytes.Repeat([]byte{0x5a}, (bits[ft]+7)/8)...)
	}
	return out
}

// amrCapture is a crafted call: an INVITE and its 200 OK offering AMR-WB
// (PT 96, octet-align=1) and 40 RTP packets from the answerer, 20 ms apart:
// 12.65 kbit/s frames, a 23.85 kbit/s stretch, SID and no-data frames and
// two-frame packets.
func amrCapture(t *testing.T) []testpcap.Frame {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	sdpOf := func(ip string, port int) string {
		return fmt.Sprintf("v=0\r\no=- 1 1 IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\nm=audio %d RTP/AVP 96\r\na=rtpmap:96 AMR-WB/16000\r\na=fmtp:96 octet-align=1\r\n", ip, ip, port)
	}
	sip := func(first, cseq, ip string, port int) []byte {
		body := sdpOf(ip, port)
		return []byte(first + "\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-amr1\r\nFrom: <sip:a@10.0.0.1>;tag=1\r\nTo: <sip:b@10.0.0.2>" +
			map[bool]string{true: ";tag=2", false: ""}[strings.HasPrefix(first, "SIP/")] +
			"\r\nCall-ID: amr-wb-1@10.0.0.1\r\nCSeq: " + cseq + "\r\nContact: <sip:x@" + ip + ">\r\nContent-Type: application/sdp\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	}
	frames := []testpcap.Frame{
		{TS: t0, Data: udpFrame(t, "10.0.0.1", "10.0.0.2", 5060, 5060, sip("INVITE sip:b@10.0.0.2 SIP/2.0", "1 INVITE", "10.0.0.1", 4000))},
		{TS: t0.Add(100 * time.Millisecond), Data: udpFrame(t, "10.0.0.2", "10.0.0.1", 5060, 5060, sip("SIP/2.0 200 OK", "1 INVITE", "10.0.0.2", 5000))},
	}
	for i := 0; i < 40; i++ {
		var types []int
		switch {
		case i >= 10 && i < 20:
			types = []int{8}
		case i == 25:
			types = []int{9}
		case i == 26:
			types = []int{15}
		case i >= 30 && i < 34:
			types = []int{2, 2}
		default:
			types = []int{2}
		}
		rtpHdr := []byte{0x80, 96, byte(i >> 8), byte(i), 0, 0, byte(i * 320 >> 8), byte(i * 320), 0, 0, 0xab, 0xcd}
		frames = append(frames, testpcap.Frame{TS: t0.Add(200*time.Millisecond + time.Duration(i)*20*time.Millisecond),
			Data: udpFrame(t, "10.0.0.2", "10.0.0.1", 5000, 4000, append(rtpHdr, amrWBOctet(types...)...))})
	}
	return frames
}

// TestAMRWBCaptureAgainstTshark reads testdata/amr/amr-wb-octet.pcap (made
// by amrCapture; -update-amr rewrites it) and compares the frames per mode
// with tshark's decoding of every table-of-contents entry
// (testdata/amr/amr-wb-octet.pcap.tsv, its command in testdata/amr/README.md).
func TestAMRWBCaptureAgainstTshark(t *testing.T) {
	want := testpcap.Bytes(t, layers.LinkTypeEthernet, false, amrCapture(t))
	if *updateAMR {
		if err := os.WriteFile(amrCapturePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(amrCapturePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not amrCapture's output: rerun with -update-amr and tshark (README.md)", amrCapturePath)
	}
	tf, err := os.Open(amrCapturePath + ".tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	truth := map[int]uint64{}
	packets := 0
	sc := bufio.NewScanner(tf)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 || cols[1] == "" {
			continue
		}
		packets++
		for _, ft := range strings.Split(cols[1], ",") {
			n, err := strconv.Atoi(ft)
			if err != nil {
				t.Fatalf("truth line %q: %v", sc.Text(), err)
			}
			truth[n]++
		}
	}
	st := media.NewStore(media.Config{})
	if _, err := mediatest.Feed(t, amrCapturePath, st, nil); err != nil {
		t.Fatal(err)
	}
	all := st.All()
	if len(all) != 1 || all[0].AMR == nil {
		t.Fatalf("got %d streams, want one AMR-WB stream with amr", len(all))
	}
	a := all[0].AMR
	if a.Packing != "octet_aligned" || a.PacketsRead != uint64(packets) || a.PacketsMalformed != 0 {
		t.Errorf("got packing %s read %d malformed %d, want octet_aligned, %d (tshark), 0", a.Packing, a.PacketsRead, a.PacketsMalformed, packets)
	}
	gotTypes := map[int]uint64{9: a.SIDFrames, 15: a.NoDataFrames}
	for _, m := range a.Modes {
		gotTypes[m.Mode] = m.Frames
	}
	for ft, n := range truth {
		if gotTypes[ft] != n {
			t.Errorf("frame type %d: got %d frames, tshark %d", ft, gotTypes[ft], n)
		}
	}
	if w := all[0].WidebandMOS; w == nil || w.Applicable || w.ModeBasis != "" {
		t.Errorf("two modes in the frames: got %+v, want not applicable, no mode", w)
	}
}
