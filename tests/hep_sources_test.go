package tests

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/sipnab/sipnab/internal/testcap"
)

// sipStartLine matches a SIP request or status line at the start of a
// datagram (RFC 3261 §7.1/§7.2). It is the test's own SIP recognizer,
// independent of the engine's.
var sipStartLine = regexp.MustCompile(`^(SIP/2\.0 [1-6][0-9][0-9] |[A-Z][A-Za-z]* [^ \r\n]+ SIP/2\.0\r?\n)`)

// sipDatagram is one SIP datagram taken from a public capture.
type sipDatagram struct {
	ts       time.Time
	src, dst netip.AddrPort
	payload  []byte
}

// sipDatagrams reads a pcap or pcapng file with gopacket and returns the
// unfragmented UDP datagrams that start with a SIP start line.
func sipDatagrams(t *testing.T, path string) []sipDatagram {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type source interface {
		ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	}
	var src source
	var linkOf func(ci gopacket.CaptureInfo) layers.LinkType
	if len(raw) >= 4 && binary.LittleEndian.Uint32(raw) == 0x0a0d0d0a {
		r, err := pcapgo.NewNgReader(bytes.NewReader(raw), pcapgo.DefaultNgReaderOptions)
		if err != nil {
			t.Fatal(err)
		}
		src = r
		linkOf = func(ci gopacket.CaptureInfo) layers.LinkType {
			ifc, err := r.Interface(ci.InterfaceIndex)
			if err != nil {
				t.Fatal(err)
			}
			return ifc.LinkType
		}
	} else {
		r, err := pcapgo.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		src = r
		linkOf = func(gopacket.CaptureInfo) layers.LinkType { return r.LinkType() }
	}
	var out []sipDatagram
	for {
		data, ci, err := src.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		p := gopacket.NewPacket(data, linkOf(ci), gopacket.Default)
		udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if udp == nil || !sipStartLine.Match(udp.Payload) {
			continue
		}
		var s, d netip.Addr
		switch ip := p.NetworkLayer().(type) {
		case *layers.IPv4:
			if ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 {
				continue
			}
			s, _ = netip.AddrFromSlice(ip.SrcIP.To4())
			d, _ = netip.AddrFromSlice(ip.DstIP.To4())
		case *layers.IPv6:
			s, _ = netip.AddrFromSlice(ip.SrcIP)
			d, _ = netip.AddrFromSlice(ip.DstIP)
		default:
			continue
		}
		out = append(out, sipDatagram{
			ts:      ci.Timestamp,
			src:     netip.AddrPortFrom(s, uint16(udp.SrcPort)),
			dst:     netip.AddrPortFrom(d, uint16(udp.DstPort)),
			payload: append([]byte(nil), udp.Payload...),
		})
	}
	return out
}

// hepZlib reuses zlib writers: a new one allocates its whole compressor
// state, and under -race the 10,000 datagrams of sipp-branch-scenario.pcapng
// each deflated by a new writer took 136 s (the same bytes: Reset).
var hepZlib = sync.Pool{New: func() any { return zlib.NewWriter(nil) }}

// hepV3Packet is a HEP3 envelope (IPv4 or IPv6) carrying a SIP payload, raw or
// zlib-deflated in chunk 0x0010, from capture agent agent (chunk 0x000c).
// accHEP3 and accHEP3Agent build theirs with it.
func hepV3Packet(src, dst netip.AddrPort, ts time.Time, agent uint32, payload []byte, compressed bool) []byte {
	var body []byte
	fam, sc, dc := byte(2), uint16(3), uint16(4)
	if src.Addr().Is6() {
		fam, sc, dc = 10, 5, 6
	}
	body = append(body, accHEPChunk(0x0001, []byte{fam})...)
	body = append(body, accHEPChunk(0x0002, []byte{17})...)
	body = append(body, accHEPChunk(sc, src.Addr().AsSlice())...)
	body = append(body, accHEPChunk(dc, dst.Addr().AsSlice())...)
	body = append(body, accHEPChunk(0x0007, binary.BigEndian.AppendUint16(nil, src.Port()))...)
	body = append(body, accHEPChunk(0x0008, binary.BigEndian.AppendUint16(nil, dst.Port()))...)
	body = append(body, accHEPChunk(0x0009, binary.BigEndian.AppendUint32(nil, uint32(ts.Unix())))...)
	body = append(body, accHEPChunk(0x000a, binary.BigEndian.AppendUint32(nil, uint32(ts.Nanosecond()/1000)))...)
	body = append(body, accHEPChunk(0x000b, []byte{1})...)
	body = append(body, accHEPChunk(0x000c, binary.BigEndian.AppendUint32(nil, agent))...)
	if compressed {
		var z bytes.Buffer
		zw := hepZlib.Get().(*zlib.Writer)
		zw.Reset(&z)
		_, _ = zw.Write(payload)
		_ = zw.Close()
		hepZlib.Put(zw)
		body = append(body, accHEPChunk(0x0010, z.Bytes())...)
	} else {
		body = append(body, accHEPChunk(0x000f, payload)...)
	}
	env := binary.BigEndian.AppendUint16([]byte("HEP3"), uint16(6+len(body)))
	return append(env, body...)
}

// hepV2Packet is the HEP2 form (IPv4 or IPv6).
func hepV2Packet(src, dst netip.AddrPort, ts time.Time, payload []byte) []byte {
	fam := byte(2)
	if src.Addr().Is6() {
		fam = 10
	}
	b := []byte{2, 0, fam, 17}
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = append(b, src.Addr().AsSlice()...)
	b = append(b, dst.Addr().AsSlice()...)
	b[1] = byte(len(b))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts.Unix()))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts.Nanosecond()/1000))
	b = binary.LittleEndian.AppendUint16(b, 2001)
	b = append(b, 0, 0)
	return append(b, payload...)
}

// udpApplicable are the public captures whose SIP travels in whole UDP
// datagrams, one message each: the count of such datagrams equals tshark's
// SIP message count, so wrapping each in HEP keeps the truth exact.
var udpApplicable = []string{
	"Asterisk_ZFONE_XLITE.pcap", "DTMFsipinfo.pcap", "SIP_CALL_RTP_G711", "SIP_DTMF2.cap",
	"b2bua-asterisk.pcapng", "sip-proxy.pcap", "sip-rtp-g711.pcap", "sipp-branch-scenario.pcapng",
}

// TestHEPReplayOfPublicCapturesMatchesTruth: a capture whose SIP arrives inside
// HEP counts the inner messages. Every SIP datagram of a public capture (taken
// out with gopacket and the test's own start-line match) is re-sent as HEP3,
// HEP3 with a zlib-compressed payload, and HEP2 from an agent to a collector;
// the binary's --json-run must give run.sip_messages (and run.hep.sip) equal to
// tshark's count for the original capture and the identical Call-ID set.
func TestHEPReplayOfPublicCapturesMatchesTruth(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil || len(names) == 0 {
		t.Fatalf("no public captures (%v)", err)
	}
	agent, collector := accAP("203.0.113.5:40000"), accAP("203.0.113.9:9060")
	dir := t.TempDir()
	applicable := 0
	for _, name := range names {
		tr := testcap.LoadTruth[accTruth](t, name)
		if tr.File.FileType == "netmon2" || tr.SIP == nil || tr.SIP.Messages == 0 {
			continue
		}
		dgrams := sipDatagrams(t, testcap.Public(name))
		if len(dgrams) != tr.SIP.Messages {
			if slices.Contains(udpApplicable, name) {
				t.Errorf("%s: %d SIP datagrams, tshark counts %d messages; the capture should qualify", name, len(dgrams), tr.SIP.Messages)
			}
			continue // SIP over TCP, fragments or several messages per datagram
		}
		applicable++
		for _, v := range []struct {
			name string
			wrap func(d sipDatagram) []byte
		}{
			{"HEP3", func(d sipDatagram) []byte { return hepV3Packet(d.src, d.dst, d.ts, 2001, d.payload, false) }},
			{"HEP3 zlib", func(d sipDatagram) []byte { return hepV3Packet(d.src, d.dst, d.ts, 2001, d.payload, true) }},
			{"HEP2", func(d sipDatagram) []byte { return hepV2Packet(d.src, d.dst, d.ts, d.payload) }},
		} {
			t.Run(name+"/"+v.name, func(t *testing.T) {
				var frames []accFrame
				for _, d := range dgrams {
					frames = append(frames, accFrame{d.ts, accIPEth(accUDP(t, agent.String(), collector.String(), v.wrap(d)))})
				}
				path := accWrite(t, dir, strings.NewReplacer(" ", "_", ".", "_").Replace(name+" "+v.name)+".pcap", layers.LinkTypeEthernet, frames)
				doc := accJSON(t, 0, path)
				r := doc.Run
				if r.FramesRead != int64(len(frames)) {
					t.Errorf("frames_read %d, want %d", r.FramesRead, len(frames))
				}
				if r.SIPMessages != int64(tr.SIP.Messages) || r.HEP.SIP != uint64(tr.SIP.Messages) || r.HEP.Envelopes != uint64(len(frames)) {
					t.Errorf("sip_messages %d, hep.sip %d, hep.envelopes %d; tshark counts %d messages in %d envelopes",
						r.SIPMessages, r.HEP.SIP, r.HEP.Envelopes, tr.SIP.Messages, len(frames))
				}
				var got []string
				for _, d := range doc.Dialogs {
					got = append(got, d.CallID)
				}
				want := append([]string(nil), tr.SIP.CallIDs.Values...)
				sort.Strings(got)
				sort.Strings(want)
				if !slices.Equal(got, want) {
					t.Errorf("Call-IDs: got %d, tshark %d; differ", len(got), len(want))
				}
			})
		}
	}
	if applicable < len(udpApplicable) {
		t.Errorf("%d public captures wrapped in HEP, want at least %d", applicable, len(udpApplicable))
	}
}

// freeUDPPort returns a port free on 127.0.0.1 for both UDP and TCP.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// TestHEPListenerFedFromAnotherProcess: the binary serves MCP over
// stdio with a HEP listener (-L); this test process sends one call as HEP3
// over UDP, one as HEP2 over UDP and one as HEP3 over a TCP stream, and
// list_dialogs must show each call whole: 7 messages, Completed, final 200,
// origin hep.
func TestHEPListenerFedFromAnotherProcess(t *testing.T) {
	port := freeUDPPort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := transport.NewStdioWithOptions(bin, os.Environ(), []string{"-N", "--mcp", "-L", addr})
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connectMCPGo(t, ctx, tr, eraLegacy)

	// The listener is up once capture_status answers; then send.
	if _, _, err := s.call(ctx, "capture_status", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	type sent struct {
		callID string
		via    string
	}
	cases := []sent{{"hep3-udp@audit", "HEP3/UDP"}, {"hep2-udp@audit", "HEP2/UDP"}, {"hep3-tcp@audit", "HEP3/TCP"}}
	var udp net.Conn
	var tcp net.Conn
	var err error
	for i := 0; i < 100; i++ {
		if tcp, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("HEP listener not reachable on %s: %v", addr, err)
	}
	defer tcp.Close()
	if udp, err = net.Dial("udp", addr); err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for ci, c := range cases {
		for j, m := range accCall(c.callID) {
			src, dst, payload := accAP(m[0].(string)), accAP(m[1].(string)), m[2].([]byte)
			ts := now.Add(time.Duration(ci*10+j) * time.Millisecond)
			var b []byte
			var conn net.Conn
			switch c.via {
			case "HEP3/UDP":
				b, conn = hepV3Packet(src, dst, ts, 2001, payload, j%2 == 1), udp
			case "HEP2/UDP":
				b, conn = hepV2Packet(src, dst, ts, payload), udp
			default:
				b, conn = hepV3Packet(src, dst, ts, 2001, payload, false), tcp
			}
			if _, err := conn.Write(b); err != nil {
				t.Fatalf("%s: %v", c.via, err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	type row struct {
		CallID      string `json:"call_id"`
		State       string `json:"state"`
		MsgCount    int    `json:"msg_count"`
		Final       int    `json:"final_status_code"`
		InputOrigin string `json:"input_origin"`
	}
	var rows []row
	for {
		texts, _, err := s.call(ctx, "list_dialogs", map[string]any{"limit": 10})
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Dialogs []row `json:"dialogs"`
		}
		if err := json.Unmarshal([]byte(texts[0]), &page); err != nil {
			t.Fatalf("list_dialogs text is not JSON: %v", err)
		}
		rows = page.Dialogs
		done := len(rows) == len(cases)
		for _, r := range rows {
			done = done && r.MsgCount == 7
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after 60 s list_dialogs shows %+v, want 3 calls of 7 messages", rows)
		case <-time.After(50 * time.Millisecond):
		}
	}
	byID := map[string]row{}
	for _, r := range rows {
		byID[r.CallID] = r
	}
	for _, c := range cases {
		r, ok := byID[c.callID]
		if !ok {
			t.Errorf("%s: call %s not found in %+v", c.via, c.callID, rows)
			continue
		}
		if r.State != "Completed" || r.MsgCount != 7 || r.Final != 200 || r.InputOrigin != "hep" {
			t.Errorf("%s: got %s, %d messages, final %d, origin %q; want Completed, 7, 200, hep", c.via, r.State, r.MsgCount, r.Final, r.InputOrigin)
		}
	}
}

// TestHEPListenerOverIPv6: HEP3 (plain and zlib) and HEP2 envelopes whose
// inner addresses are IPv6, sent over an IPv6 outer path, carry a whole
// call: 7 messages, one Completed dialog, and the inner (not the agent's)
// addresses on the dialog's first message.
func TestHEPListenerOverIPv6(t *testing.T) {
	v6 := map[string]netip.AddrPort{accA: accAP("[2001:db8::10]:5060"), accB: accAP("[2001:db8::20]:5062")}
	agent, collector := "[2001:db8:ffff::5]:40000", "[2001:db8:ffff::9]:9060"
	dir := t.TempDir()
	for _, v := range []struct {
		name string
		wrap func(s, d netip.AddrPort, ts time.Time, p []byte) []byte
	}{
		{"HEP3", func(s, d netip.AddrPort, ts time.Time, p []byte) []byte { return hepV3Packet(s, d, ts, 2001, p, false) }},
		{"HEP3 zlib", func(s, d netip.AddrPort, ts time.Time, p []byte) []byte { return hepV3Packet(s, d, ts, 2001, p, true) }},
		{"HEP2", hepV2Packet},
	} {
		t.Run(v.name, func(t *testing.T) {
			var frames []accFrame
			for j, m := range accCall("hep6@a.example") {
				ts := accAt(100 * j)
				env := v.wrap(v6[m[0].(string)], v6[m[1].(string)], ts, m[2].([]byte))
				frames = append(frames, accFrame{ts, accIPEth(accUDP(t, agent, collector, env))})
			}
			p := accWrite(t, dir, strings.ReplaceAll(v.name, " ", "_")+"6.pcap", layers.LinkTypeEthernet, frames)
			c, doc := accLoad(t, p)
			if doc.Run.SIPMessages != 7 || doc.Run.HEP.SIP != 7 || len(doc.Dialogs) != 1 {
				t.Fatalf("got %d SIP messages (%d from HEP), %d dialogs; want 7, 7, 1", doc.Run.SIPMessages, doc.Run.HEP.SIP, len(doc.Dialogs))
			}
			d := doc.Dialogs[0]
			if d.State != "Completed" || d.MsgCount != 7 || d.FinalStatusCode != 200 {
				t.Errorf("got %s with %d messages, final %d; want Completed, 7, 200", d.State, d.MsgCount, d.FinalStatusCode)
			}
			det, ok := c.Dialogs().Get(d.CallID)
			if !ok || len(det.Messages) == 0 {
				t.Fatalf("no retained messages for %s", d.CallID)
			}
			if m := det.Messages[0]; m.Src != v6[accA] || m.Dst != v6[accB] {
				t.Errorf("first message %v -> %v, want %v -> %v", m.Src, m.Dst, v6[accA], v6[accB])
			}
		})
	}
}
