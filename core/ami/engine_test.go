package ami_test

import (
	"bytes"
	"context"
	"flag"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/core/ami"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testpcap"
)

var update = flag.Bool("update", false, "rewrite testdata/ami-cleartext.pcap")

// fixture is testdata/ami-cleartext.pcap: one SIP OPTIONS over UDP, then
// two AMI sessions over TCP from 192.0.2.10 (ports 40001 and 40002) to
// 198.51.100.5:5038 (banner, login with a secret, a reply), and one
// secretless (MD5 challenge) login to 198.51.100.5:15038, then HTTP.
const fixture = "testdata/ami-cleartext.pcap"

var (
	client = netip.MustParseAddr("192.0.2.10")
	server = netip.MustParseAddr("198.51.100.5")
	t0     = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
)

type seg struct {
	src, dst       netip.Addr
	sport, dport   uint16
	seq, ack       uint32
	syn, ackf, psh bool
	payload        string
}

func frame(t *testing.T, s seg) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: s.src.AsSlice(), DstIP: s.dst.AsSlice()}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(s.sport), DstPort: layers.TCPPort(s.dport), Seq: s.seq, Ack: s.ack,
		SYN: s.syn, ACK: s.ackf, PSH: s.psh, Window: 65535}
	if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, tcp, gopacket.Payload(s.payload)); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func udpFrame(t *testing.T, src, dst netip.Addr, sport, dport uint16, payload string) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	if err := u.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, u, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// session is one TCP connection: handshake, then payloads alternating as
// given (true: client to server).
func session(t *testing.T, sport, dport uint16, msgs []struct {
	fromClient bool
	text       string
}) [][]byte {
	cseq, sseq := uint32(1000), uint32(5000)
	out := [][]byte{
		frame(t, seg{src: client, dst: server, sport: sport, dport: dport, seq: cseq, syn: true}),
		frame(t, seg{src: server, dst: client, sport: dport, dport: sport, seq: sseq, ack: cseq + 1, syn: true, ackf: true}),
		frame(t, seg{src: client, dst: server, sport: sport, dport: dport, seq: cseq + 1, ack: sseq + 1, ackf: true}),
	}
	cseq++
	sseq++
	for _, m := range msgs {
		if m.fromClient {
			out = append(out, frame(t, seg{src: client, dst: server, sport: sport, dport: dport, seq: cseq, ack: sseq, ackf: true, psh: true, payload: m.text}))
			cseq += uint32(len(m.text))
		} else {
			out = append(out, frame(t, seg{src: server, dst: client, sport: dport, dport: sport, seq: sseq, ack: cseq, ackf: true, psh: true, payload: m.text}))
			sseq += uint32(len(m.text))
		}
	}
	return out
}

type msg = struct {
	fromClient bool
	text       string
}

const (
	banner = "Asterisk Call Manager/5.0.1\r\n"
	login  = "Action: Login\r\nUsername: admin\r\nSecret: hunter2\r\n\r\n"
	ok     = "Response: Success\r\nMessage: Authentication accepted\r\n\r\n"
)

func buildFixture(t *testing.T) []byte {
	var frames [][]byte
	frames = append(frames, udpFrame(t, client, server, 5060, 5060,
		"OPTIONS sip:server@198.51.100.5 SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK1\r\n"+
			"From: <sip:a@192.0.2.10>;tag=1\r\nTo: <sip:server@198.51.100.5>\r\nCall-ID: ami-fixture-1\r\nCSeq: 1 OPTIONS\r\n"+
			"Max-Forwards: 70\r\nContent-Length: 0\r\n\r\n"))
	frames = append(frames, session(t, 40001, 5038, []msg{{false, banner}, {true, login}, {false, ok}})...)
	frames = append(frames, session(t, 40002, 5038, []msg{{false, banner}, {true, login}, {false, ok}})...)
	frames = append(frames, session(t, 40003, 15038, []msg{{false, banner},
		{true, "Action: Login\r\nAuthType: MD5\r\nUsername: admin\r\nKey: 0123456789abcdef\r\n\r\n"}})...)
	frames = append(frames, session(t, 40004, 80, []msg{{true, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"}})...)
	recs := make([]testpcap.Frame, len(frames))
	for i, f := range frames {
		recs[i] = testpcap.Frame{TS: t0.Add(time.Duration(i) * 10 * time.Millisecond), Data: f}
	}
	return testpcap.Bytes(t, layers.LinkTypeEthernet, false, recs)
}

func TestFixtureIsCurrent(t *testing.T) {
	got := buildFixture(t)
	if *update {
		if err := os.WriteFile(fixture, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatalf("reading the fixture (go test ./core/ami -run TestFixtureIsCurrent -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: rerun with -update", fixture)
	}
}

// TestEngineReportsSightings loads the fixture through the engine's one
// router: the AMI payloads reach the tracker through the TCP reassembly's
// "not SIP" path; the SIP message and the HTTP request do not.
func TestEngineReportsSightings(t *testing.T) {
	path, err := filepath.Abs(fixture)
	if err != nil {
		t.Fatal(err)
	}
	c := engine.New(engine.Config{}, nil)
	defer c.Close()
	if err := c.LoadFiles(context.Background(), []string{path}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if st := c.Status(); !st.Complete || st.SIPMessages != 1 {
		t.Fatalf("load: complete %v, %d SIP messages; want complete, 1", st.Complete, st.SIPMessages)
	}
	got, refused := c.AMISightings()
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 10 * time.Millisecond) }
	want := []ami.Sighting{
		{Kind: ami.Banner, Src: client, Dst: server, DstPort: 5038, Count: 2, First: at(4), Last: at(10)},
		{Kind: ami.Banner, Src: client, Dst: server, DstPort: 15038, Count: 1, First: at(16), Last: at(16)},
		{Kind: ami.CleartextLogin, SecretPresent: true, Src: client, Dst: server, DstPort: 5038, Count: 2, First: at(5), Last: at(11)},
		{Kind: ami.CleartextLogin, Src: client, Dst: server, DstPort: 15038, Count: 1, First: at(17), Last: at(17)},
	}
	if refused != 0 {
		t.Errorf("got %d refused, want 0", refused)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d sightings %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sighting %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestEngineWithoutAMIReportsEmpty(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	defer c.Close()
	got, _ := c.AMISightings()
	if got == nil || len(got) != 0 {
		t.Errorf("got %#v, want an empty non-nil list", got)
	}
}
