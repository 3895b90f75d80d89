package engine

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/core/packet"
)

// ethUDP builds an Ethernet/IPv4/UDP frame from src to dst.
func ethUDP(src, dst netip.AddrPort, payload []byte) []byte {
	b := make([]byte, 42+len(payload))
	b[12], b[13] = 0x08, 0x00
	b[14] = 0x45
	binary.BigEndian.PutUint16(b[16:], uint16(20+8+len(payload)))
	b[22], b[23] = 64, 17
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(b[26:], s4[:])
	copy(b[30:], d4[:])
	binary.BigEndian.PutUint16(b[34:], src.Port())
	binary.BigEndian.PutUint16(b[36:], dst.Port())
	binary.BigEndian.PutUint16(b[38:], uint16(8+len(payload)))
	copy(b[42:], payload)
	return b
}

func liveFrame(src, dst netip.AddrPort, payload []byte) *packet.Frame {
	data := ethUDP(src, dst, payload)
	return &packet.Frame{TS: ts0, LinkType: uint16(layers.LinkTypeEthernet), Data: data, OrigLen: len(data), Source: "lo"}
}

// sendHEP sends env to the listener until the capture has counted want
// datagrams from it.
func sendHEP(t *testing.T, c *Capture, to netip.AddrPort, env []byte, want uint64) {
	t.Helper()
	conn, err := net.Dial("udp", to.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(env); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Status().HEP.Datagrams < want {
		if time.Now().After(deadline) {
			t.Fatal("the datagram never reached the listener")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLiveAndHEPOnOneHost: a live capture sees the HEP datagrams sent to
// this capture's own listener on the wire; each is routed once (through
// the listener) and the live copy is counted as skipped. Live packets to
// any other address, or to a listener that stopped, are routed as before.
func TestLiveAndHEPOnOneHost(t *testing.T) {
	sender := netip.MustParseAddrPort("127.0.0.1:40000")
	tests := []struct {
		name string
		cfg  heplisten.Config
		// liveDst is where the live copy is addressed: "" is the
		// listener's own address; a port of 0 takes the listener's port.
		liveDst     string
		closeFirst  bool
		wantDups    int // capture duplicates of the dialog's one message
		wantSkipped uint64
	}{
		{"to our listener", heplisten.Config{UDP: "127.0.0.1:0"}, "", false, 0, 1},
		// The live copy of an envelope bound for another collector is
		// routed: the same message seen twice, a capture duplicate, never a
		// retransmission (core/dialog/dup.go).
		{"to another HEP collector", heplisten.Config{UDP: "127.0.0.1:0"}, "192.0.2.50:9060", false, 1, 0},
		{"to our wildcard listener on a local address", heplisten.Config{UDP: "0.0.0.0:0", Allow: []string{"127.0.0.0/8"}}, "127.0.0.1:0", false, 0, 1},
		{"to the wildcard listener's port on another host", heplisten.Config{UDP: "0.0.0.0:0", Allow: []string{"127.0.0.0/8"}}, "192.0.2.50:0", false, 1, 0},
		{"to a listener that stopped", heplisten.Config{UDP: "127.0.0.1:0"}, "", true, 0, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{}, nil)
			defer c.Close()
			l, err := c.StartHEP(context.Background(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			callID := "self-" + string(rune('a'+i))
			env := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: netip.MustParseAddrPort("192.0.2.1:5060"),
				Dst: netip.MustParseAddrPort("192.0.2.2:5060"), TS: ts0, HasTS: true, ProtoType: hep.ProtoSIP, HasProtoType: true,
				Payload: []byte(invite(callID))})
			dst := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), l.UDPAddr().Port())
			if tc.liveDst != "" {
				dst = netip.MustParseAddrPort(tc.liveDst)
				if dst.Port() == 0 {
					dst = netip.AddrPortFrom(dst.Addr(), l.UDPAddr().Port())
				}
			}
			if tc.closeFirst {
				l.Close()
			} else {
				sendHEP(t, c, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), l.UDPAddr().Port()), env, 1)
			}
			c.HandleFrame(liveFrame(sender, dst, env))
			d, ok := c.Dialogs().Lookup(callID)
			if !ok {
				t.Fatalf("dialog %s not found", callID)
			}
			st := c.Status()
			if d.MsgCount != 1 || d.Timing.Retransmits != 0 || d.Timing.Duplicates != tc.wantDups ||
				st.SIPDuplicates != uint64(tc.wantDups) || st.HEP.OwnListenerSkipped != tc.wantSkipped {
				t.Errorf("got msg_count %d retransmits %d duplicates %d (run %d) own_listener_skipped %d, want 1 0 %d (%d) %d",
					d.MsgCount, d.Timing.Retransmits, d.Timing.Duplicates, st.SIPDuplicates, st.HEP.OwnListenerSkipped, tc.wantDups, tc.wantDups, tc.wantSkipped)
			}
		})
	}
}

// TestLiveAndHEPOnLoopback is the same over a real live capture of lo with
// a datagram sent by the kernel (root only).
func TestLiveAndHEPOnLoopback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a live capture of lo)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := New(Config{}, nil)
	defer c.Close()
	if _, err := c.StartLive(ctx, live.Options{Device: "lo", Name: "lo"}); err != nil {
		t.Skipf("no live capture of lo here: %v", err)
	}
	l, err := c.StartHEP(ctx, heplisten.Config{UDP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	env := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: netip.MustParseAddrPort("192.0.2.1:5060"),
		Dst: netip.MustParseAddrPort("192.0.2.2:5060"), TS: ts0, HasTS: true, ProtoType: hep.ProtoSIP, HasProtoType: true,
		Payload: []byte(invite("loopback-self"))})
	sendHEP(t, c, l.UDPAddr(), env, 1)
	deadline := time.Now().Add(10 * time.Second)
	for c.Status().HEP.OwnListenerSkipped == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the live capture never saw the datagram to the listener")
		}
		time.Sleep(5 * time.Millisecond)
	}
	d, ok := c.Dialogs().Lookup("loopback-self")
	if !ok || d.MsgCount != 1 || d.Timing.Retransmits != 0 {
		t.Errorf("got dialog %v msg_count %d retransmits %d, want 1 message, no retransmission", ok, d.MsgCount, d.Timing.Retransmits)
	}
}
