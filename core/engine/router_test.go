package engine

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testpcap"
)

var ts0 = time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)

func sipText(start, callID string, cseq int, method string, body string) string {
	ct := ""
	if body != "" {
		ct = "Content-Type: application/sdp\r\n"
	}
	return fmt.Sprintf("%s\r\nVia: SIP/2.0/UDP 10.1.1.1:5060;branch=z9hG4bK-%d\r\nFrom: <sip:alice@a>;tag=a1\r\nTo: <sip:bob@b>\r\n"+
		"Call-ID: %s\r\nCSeq: %d %s\r\n%sContent-Length: %d\r\n\r\n%s", start, cseq, callID, cseq, method, ct, len(body), body)
}

func invite(callID string) string {
	return sipText("INVITE sip:bob@b SIP/2.0", callID, 1, "INVITE", "")
}

func hepEnvelope(t *testing.T, m hep.Message) []byte {
	t.Helper()
	b, err := hep.Encode(&m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func udp(src, dst string, payload []byte, frame *packet.Frame) *packet.Packet {
	return &packet.Packet{
		TS: ts0, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Transport: packet.TransportUDP, Payload: payload, Origin: packet.OriginWire, Frame: frame,
	}
}

// TestHEPInCapture: a HEP envelope found in a capture's UDP payload is
// unwrapped and its SIP routed with the envelope's addresses, timestamp and
// Origin hep; compressed payloads too; RTCP goes to the stream store;
// malformed and nested envelopes are counted.
func TestHEPInCapture(t *testing.T) {
	agentTS := ts0.Add(-time.Hour)
	src, dst := netip.MustParseAddrPort("192.0.2.10:5060"), netip.MustParseAddrPort("192.0.2.20:5062")
	plain := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: src, Dst: dst, TS: agentTS, HasTS: true,
		ProtoType: hep.ProtoSIP, HasProtoType: true, AgentID: 2002, HasAgentID: true, Payload: []byte(invite("hep-1"))})
	zipped := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: src, Dst: dst, TS: agentTS, HasTS: true,
		ProtoType: hep.ProtoSIP, HasProtoType: true, Compressed: true, Payload: []byte(invite("hep-2"))})
	v2 := hepEnvelope(t, hep.Message{Version: 2, Protocol: 17, Src: src, Dst: dst, TS: agentTS, Payload: []byte(invite("hep-3"))})
	// RTCP receiver report (RC=0) with an SDES-less compound: header only.
	rtcp := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: src, Dst: dst, TS: agentTS, HasTS: true,
		ProtoType: hep.ProtoRTCP, HasProtoType: true, Payload: []byte{0x80, 201, 0, 1, 0, 0, 0, 1}})
	nested := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: src, Dst: dst, ProtoType: hep.ProtoSIP, HasProtoType: true, Payload: plain})
	// the second chunk claims more bytes than the envelope holds
	broken := append([]byte(nil), plain...)
	broken[17], broken[18] = 0xff, 0xff

	c := New(Config{}, nil)
	frame := &packet.Frame{TS: ts0, Source: "hep.pcap", Ordinal: 1, Data: []byte("frame")}
	for _, b := range [][]byte{plain, zipped, v2, rtcp, nested, broken} {
		c.HandlePacket(udp("10.0.0.1:40000", "10.0.0.2:9060", b, frame))
	}
	st := c.Status()
	if st.SIPMessages != 3 {
		t.Errorf("sip_messages: got %d, want 3 (the inner messages)", st.SIPMessages)
	}
	if st.HEP.Envelopes != 6 || st.HEP.SIP != 4 || st.HEP.RTCP != 1 || st.HEP.Nested != 1 || st.HEP.Malformed != 1 {
		t.Errorf("hep counts: got %+v", st.HEP)
	}
	for _, id := range []string{"hep-1", "hep-2", "hep-3"} {
		d, ok := c.Dialogs().Get(id)
		if !ok {
			t.Errorf("%s: no dialog", id)
			continue
		}
		m := d.Messages[0]
		if d.InputOrigin != "hep" || m.Src != src || m.Dst != dst || !m.TS.Equal(agentTS) {
			t.Errorf("%s: origin %s src %s dst %s ts %s, want hep %s %s %s", id, d.InputOrigin, m.Src, m.Dst, m.TS, src, dst, agentTS)
		}
		if d.Frame != "hep.pcap#1@"+packet.RefOf(frame).String()[len("hep.pcap#1@"):] {
			t.Errorf("%s: frame %q, want the outer frame", id, d.Frame)
		}
	}
	if st.OtherPackets != 2 {
		t.Errorf("other_packets: got %d, want 2 (the nested and the broken envelope)", st.OtherPackets)
	}
}

// TestSeveralMessagesInOneDatagram: every SIP message of a datagram counts.
func TestSeveralMessagesInOneDatagram(t *testing.T) {
	c := New(Config{}, nil)
	two := invite("multi-1") + sipText("SIP/2.0 100 Trying", "multi-1", 1, "INVITE", "")
	c.HandlePacket(udp("10.0.0.1:5060", "10.0.0.2:5060", []byte(two), nil))
	if st := c.Status(); st.SIPMessages != 2 {
		t.Errorf("sip_messages: got %d, want 2", st.SIPMessages)
	}
	if d, _ := c.Dialogs().Lookup("multi-1"); d.MsgCount != 2 || d.State != "Trying" {
		t.Errorf("dialog: got %d messages, %s", d.MsgCount, d.State)
	}
}

// TestSDPReachesMedia: an SDP offer registers its endpoint with the stream
// store, so RTP to it is bound to the dialog.
func TestSDPReachesMedia(t *testing.T) {
	sdpBody := "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
	c := New(Config{}, nil)
	c.HandlePacket(udp("10.0.0.1:5060", "10.0.0.2:5060", []byte(sipText("INVITE sip:bob@b SIP/2.0", "sdp-1", 1, "INVITE", sdpBody)), nil))
	for i := 0; i < 10; i++ {
		rtp := make([]byte, 12+160)
		rtp[0], rtp[1] = 0x80, 0
		rtp[2], rtp[3] = 0, byte(i)
		rtp[7] = byte(i * 160)
		rtp[11] = 7
		p := udp("10.0.0.2:30000", "10.0.0.1:40000", rtp, nil)
		p.TS = ts0.Add(time.Duration(i) * 20 * time.Millisecond)
		c.HandlePacket(p)
	}
	st := c.Status()
	if st.SDPBodies != 1 || st.MediaPackets != 10 {
		t.Errorf("sdp %d media %d, want 1 10", st.SDPBodies, st.MediaPackets)
	}
	streams := c.Media().StreamsFor("sdp-1")
	if len(streams) != 1 || streams[0].Packets != 10 || streams[0].Orphaned {
		t.Errorf("streams: got %+v", streams)
	}
}

// TestHEPListener: datagrams sent to a listener started with StartHEP
// enter the same router.
func TestHEPListener(t *testing.T) {
	c := New(Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := c.StartHEP(ctx, heplisten.Config{UDP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", l.UDPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	env := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: netip.MustParseAddrPort("192.0.2.1:5060"),
		Dst: netip.MustParseAddrPort("192.0.2.2:5060"), TS: ts0, HasTS: true, ProtoType: hep.ProtoSIP, HasProtoType: true,
		Payload: []byte(invite("listener-1"))})
	deadline := time.Now().Add(10 * time.Second)
	for c.Status().SIPMessages == 0 {
		if _, err := conn.Write(env); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener's datagram never reached the router")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := c.Status(); st.StoppedOnRequest || len(st.IncompleteReasons) == 0 || st.IncompleteReasons[0] != "source_not_exhausted" {
		t.Errorf("running listener: stopped_on_request %v, incomplete_reasons %v; want false, [source_not_exhausted]", st.StoppedOnRequest, st.IncompleteReasons)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	st := c.Status()
	if st.Source != "hep" || st.SourceExhausted || st.Complete || st.HEP.Datagrams == 0 {
		t.Errorf("status: source %s exhausted %v complete %v datagrams %d", st.Source, st.SourceExhausted, st.Complete, st.HEP.Datagrams)
	}
	// A listener ended by Close stopped on request, not early.
	if !st.StoppedOnRequest || st.SourceStoppedEarly || len(st.IncompleteReasons) == 0 || st.IncompleteReasons[0] != "stopped_on_request" {
		t.Errorf("closed listener: stopped_on_request %v, stopped_early %v, incomplete_reasons %v; want true, false, [stopped_on_request]",
			st.StoppedOnRequest, st.SourceStoppedEarly, st.IncompleteReasons)
	}
	d, ok := c.Dialogs().Lookup("listener-1")
	if !ok || d.InputOrigin != "hep" {
		t.Errorf("dialog: %+v %v", d, ok)
	}
}

// TestHEPListenerErrors: a listener that cannot start says so once
// ("starting HEP listener: " was repeated).
func TestHEPListenerErrors(t *testing.T) {
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		cfg  heplisten.Config
		want string
	}{
		{"no address", heplisten.Config{}, "no UDP or TCP address"},
		{"open to anyone", heplisten.Config{UDP: "0.0.0.0:0"}, "without a source allowlist"},
		{"address in use", heplisten.Config{UDP: busy.LocalAddr().String()}, "address already in use"},
		{"bad allowlist", heplisten.Config{UDP: "127.0.0.1:0", Allow: []string{"10.0.0.0/99"}}, "bad allowlist entry"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{}, nil)
			defer c.Close()
			_, err := c.StartHEP(context.Background(), tc.cfg)
			if err == nil {
				t.Fatal("got no error")
			}
			msg := err.Error()
			if n := strings.Count(msg, "starting HEP listener"); n != 1 || !strings.HasPrefix(msg, "starting HEP listener: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("got %q (%d times \"starting HEP listener\"), want it once, first, and %q", msg, n, tc.want)
			}
		})
	}
}

// TestConcurrentProducers: several sources feeding one capture at once
// (a HEP listener and a live interface, say) serialize on the router.
func TestConcurrentProducers(t *testing.T) {
	c := New(Config{}, nil)
	var wg sync.WaitGroup
	const per = 500
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				c.HandlePacket(udp("10.0.0.1:5060", "10.0.0.2:5060", []byte(invite(fmt.Sprintf("p%d-%d", g, i))), nil))
				if i%50 == 0 {
					_ = c.Status()
					_ = c.Dialogs().List(dialog.Query{Limit: 3})
				}
			}
		}()
	}
	wg.Wait()
	if st := c.Status(); st.SIPMessages != 4*per || c.Dialogs().Len() != 4*per {
		t.Errorf("got %d messages, %d dialogs, want %d", st.SIPMessages, c.Dialogs().Len(), 4*per)
	}
}

// TestFileSetOrder: a capture split in two files, named so that name order
// is the wrong order, is read in first-packet order and gives the same
// dialogs as the whole file.
func TestFileSetOrder(t *testing.T) {
	name := "sip-rtp-g711.pcap"
	r, err := capture.Open(testcap.Public(name))
	if err != nil {
		t.Fatal(err)
	}
	var frames []*packet.Frame
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		cp := *f
		cp.Data = append([]byte(nil), f.Data...)
		frames = append(frames, &cp)
	}
	r.Close()
	dir := t.TempDir()
	half := len(frames) / 2
	write := func(file string, fs []*packet.Frame) {
		recs := make([]testpcap.Frame, len(fs))
		for i, f := range fs {
			recs[i] = testpcap.Frame{TS: f.TS, Data: f.Data, OrigLen: f.OrigLen}
		}
		testpcap.WriteFile(t, filepath.Join(dir, file), layers.LinkTypeEthernet, true, recs)
	}
	write("a-second-half.pcap", frames[half:])
	write("b-first-half.pcap", frames[:half])

	c := New(Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{dir}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	st := c.Status()
	tr := testcap.LoadTruth[truth](t, name)
	if !st.Complete || int(st.SIPMessages) != tr.SIP.Messages || len(st.Files) != 2 || st.Files[0].Name != "b-first-half.pcap" {
		t.Errorf("complete %v sip %d (want %d) files %+v", st.Complete, st.SIPMessages, tr.SIP.Messages, st.Files)
	}
	for _, td := range tr.SIP.Dialogs {
		d, ok := c.Dialogs().Lookup(td.CallID)
		if !ok || d.MsgCount != td.Messages {
			t.Errorf("%s: got %d messages (%v), want %d in one dialog", td.CallID, d.MsgCount, ok, td.Messages)
		}
	}
}

// TestLoadErrors: a named file that is not a capture is refused at once,
// naming the format.
func TestLoadErrors(t *testing.T) {
	c := New(Config{}, nil)
	if err := c.LoadFiles(context.Background(), nil); err == nil {
		t.Errorf("no input: want an error")
	}
	if err := c.LoadFiles(context.Background(), []string{filepath.Join(t.TempDir(), "missing.pcap")}); err == nil {
		t.Errorf("missing file: want an error")
	}
	err := c.LoadFiles(context.Background(), []string{testcap.Public("rtsp-packets.cap")})
	if err == nil || !strings.Contains(err.Error(), "NetMon") {
		t.Errorf("NetMon file: got %v, want a refusal naming the format", err)
	}
	if err := c.LoadFiles(context.Background(), []string{testcap.Public("sip_call.pcap")}); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadFiles(context.Background(), []string{testcap.Public("sip_call.pcap")}); err == nil {
		t.Errorf("second load into one capture: want an error")
	}
	c.Wait()
}

// TestHEPListenerLossesReachTheStatus: datagrams a listener refuses are
// in the capture's status, by reason, with what was lost and the
// incomplete reason hep_data_lost; received = admitted + refused.
func TestHEPListenerLossesReachTheStatus(t *testing.T) {
	c := New(Config{}, nil)
	defer c.Close()
	l, err := c.StartHEP(context.Background(), heplisten.Config{UDP: "127.0.0.1:0", GlobalRate: 5})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", l.UDPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const sent = 40
	for i := 0; i < sent; i++ {
		env := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: netip.MustParseAddrPort("192.0.2.1:5060"),
			Dst: netip.MustParseAddrPort("192.0.2.2:5060"), TS: ts0, HasTS: true, ProtoType: hep.ProtoSIP, HasProtoType: true,
			Payload: []byte(invite(fmt.Sprintf("flood-%d", i)))})
		if _, err := conn.Write(env); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var st Status
	for {
		st = c.Status()
		// Admission is counted before delivery: wait for both.
		if len(st.HEP.Listeners) == 1 && st.HEP.Listeners[0].Received == sent && st.HEP.Datagrams == st.HEP.Listeners[0].Admitted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listeners %+v", st.HEP.Listeners)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ls := st.HEP.Listeners[0]
	if ls.Name != l.Name() || ls.Admitted+ls.RefusedTotal() != sent || ls.Refused[heplisten.ReasonGlobalRate] == 0 || ls.Lost != ls.Refused[heplisten.ReasonGlobalRate] {
		t.Errorf("listener account %+v", ls)
	}
	if st.HEP.Datagrams != ls.Admitted {
		t.Errorf("hep.datagrams %d, admitted %d", st.HEP.Datagrams, ls.Admitted)
	}
	if !slices.Contains(st.IncompleteReasons, "hep_data_lost") {
		t.Errorf("incomplete_reasons %v lack hep_data_lost", st.IncompleteReasons)
	}
}
