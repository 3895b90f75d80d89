package hepsend

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/heptest"
)

// received collects what a sipnab HEP listener admits, decoded.
type received struct {
	mu   sync.Mutex
	msgs []*hep.Message
}

func (r *received) HandlePacket(p *packet.Packet) {
	m, err := hep.Decode(p.Payload)
	if err != nil {
		return
	}
	m.Payload = bytes.Clone(m.Payload)
	m.AuthKey = bytes.Clone(m.AuthKey)
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
}

func (r *received) wait(t *testing.T, n int) []*hep.Message {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		got := len(r.msgs)
		r.mu.Unlock()
		if got >= n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*hep.Message(nil), r.msgs...)
}

func sipPacket(i int, v6 bool, tr packet.Transport) (*packet.Packet, []byte) {
	src, dst := netip.MustParseAddrPort("192.0.2.10:5060"), netip.MustParseAddrPort("198.51.100.20:5080")
	if v6 {
		src, dst = netip.MustParseAddrPort("[2001:db8::10]:5060"), netip.MustParseAddrPort("[2001:db8::20]:5062")
	}
	ts := time.Date(2026, 12, 1, 9, 0, i, 123456789, time.UTC)
	body := fmt.Sprintf("OPTIONS sip:b@example.com SIP/2.0\r\nCall-ID: call-%d@example.com\r\nCSeq: %d OPTIONS\r\nContent-Length: 0\r\n\r\n", i, i+1)
	return &packet.Packet{TS: ts, Src: src, Dst: dst, Transport: tr, Payload: []byte(body)}, []byte(body)
}

// Every message forwarded reaches a sipnab HEP listener (UDP and TCP) with
// its addresses, ports, IP protocol, time (to the microsecond: HEP3 has no
// finer field), capture id, auth key, payload type and bytes intact.
func TestForwardedMessagesReachAListenerIntact(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr := heptest.FreeAddr(t)
			var rx received
			key := "s3cret"
			l, err := heplisten.Listen(context.Background(), heplisten.Config{UDP: addr, TCP: addr, GlobalRate: -1,
				Authenticate: func(b []byte) bool {
					m, err := hep.Decode(b)
					return err == nil && string(m.AuthKey) == key
				}}, &rx)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			s, err := Start(Config{Addr: addr, Network: network, CaptureID: 2001, AuthKey: key, Block: true})
			if err != nil {
				t.Fatal(err)
			}
			const n = 200
			type sent struct {
				p   *packet.Packet
				raw []byte
				pt  uint8
			}
			var want []sent
			for i := range n {
				tr := packet.TransportUDP
				if i%3 == 1 {
					tr = packet.TransportTCP
				}
				p, raw := sipPacket(i, i%2 == 1, tr)
				pt := uint8(hep.ProtoSIP)
				if i%10 == 9 { // an RTCP receiver report (RFC 3550 §6.4.2)
					raw = []byte{0x80, 201, 0, 1, 0xde, 0xad, 0xbe, 0xef}
					p.Payload, p.Transport, pt = raw, packet.TransportUDP, hep.ProtoRTCP
				}
				if !s.Forward(p, raw, pt) {
					t.Fatalf("message %d dropped", i)
				}
				want = append(want, sent{p, raw, pt})
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got := rx.wait(t, n)
			if len(got) != n {
				t.Fatalf("listener received %d of %d messages; sender stats %+v", len(got), n, s.Stats())
			}
			for i, m := range got {
				w := want[i]
				proto := uint8(17)
				if w.p.Transport == packet.TransportTCP {
					proto = 6
				}
				switch {
				case m.Src != w.p.Src || m.Dst != w.p.Dst:
					t.Errorf("message %d: %v → %v, want %v → %v", i, m.Src, m.Dst, w.p.Src, w.p.Dst)
				case !m.TS.Equal(w.p.TS.Truncate(time.Microsecond)):
					t.Errorf("message %d: time %v, want %v", i, m.TS, w.p.TS.Truncate(time.Microsecond))
				case m.Protocol != proto || m.ProtoType != w.pt || m.AgentID != 2001 || string(m.AuthKey) != key:
					t.Errorf("message %d: protocol %d type %d agent %d key %q", i, m.Protocol, m.ProtoType, m.AgentID, m.AuthKey)
				case !bytes.Equal(m.Payload, w.raw):
					t.Errorf("message %d: payload differs", i)
				}
			}
			st := s.Stats()
			if st.Sent != n || st.SentRTCP != n/10 || st.SentSIP != n-n/10 || st.Dropped() != 0 {
				t.Errorf("stats %+v, want %d sent (%d RTCP), none dropped", st, n, n/10)
			}
		})
	}
}

// With no room in the queue a message is dropped and counted, never
// waited for (a live source cannot wait), and never silently.
func TestFullQueueDropsAndCounts(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	s, err := Start(Config{Addr: pc.LocalAddr().String(), QueueLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	// 10000 forwards in a tight loop outrun one goroutine sending
	// datagrams through a queue of 4.
	dropped := 0
	for i := range 10000 {
		p, raw := sipPacket(i, false, packet.TransportUDP)
		if !s.Forward(p, raw, hep.ProtoSIP) {
			dropped++
		}
	}
	_ = s.Close()
	st := s.Stats()
	if dropped == 0 || st.DroppedQueueFull != uint64(dropped) || st.Sent+st.Dropped() != 10000 {
		t.Fatalf("dropped %d, stats %+v: every message must be sent or counted", dropped, st)
	}
}

// A TCP receiver that is not there: messages are counted as send errors,
// with the error named.
func TestUnreachableTCPReceiverCountsSendErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s, err := Start(Config{Addr: addr, Network: "tcp", Block: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		p, raw := sipPacket(i, false, packet.TransportUDP)
		s.Forward(p, raw, hep.ProtoSIP)
	}
	_ = s.Close()
	st := s.Stats()
	if st.Sent != 0 || st.DroppedSendError != 5 || !strings.Contains(st.LastError, "refused") {
		t.Fatalf("stats %+v, want 5 send errors naming the refusal", st)
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Addr: "127.0.0.1"},
		{Addr: "127.0.0.1:9060", Network: "sctp"},
		{Addr: "127.0.0.1:9060", AuthKey: strings.Repeat("k", MaxAuthKey+1)},
	} {
		if s, err := Start(c); err == nil {
			s.Close()
			t.Errorf("Start(%+v) succeeded", c)
		}
	}
}

// A payload that cannot fit one HEP envelope is counted, not truncated.
func TestOversizePayloadIsCountedNotTruncated(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	s, err := Start(Config{Addr: pc.LocalAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := sipPacket(0, false, packet.TransportTCP)
	if s.Forward(p, make([]byte, 70000), hep.ProtoSIP) {
		t.Fatal("a 70000-byte payload was accepted")
	}
	_ = s.Close()
	if st := s.Stats(); st.DroppedTooLarge != 1 || st.Sent != 0 {
		t.Fatalf("stats %+v", st)
	}
}
