// Package heptest sends SIP messages to a HEP listener the way a capture
// agent does, for tests: HEP2 and HEP3 datagrams over UDP and a HEP3 stream
// over TCP.
package heptest

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/hep"
)

// T0 is the capture time of the first message (Offset 0).
var T0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// Message is one SIP message with the HEP version and transport it travels
// in.
type Message struct {
	Version int           // 2 or 3
	TCP     bool          // sent on the listener's TCP side
	Offset  time.Duration // capture time after T0
	Text    string        // the SIP message
}

// FreeAddr returns a loopback address whose UDP and TCP ports are both free
// now (a HEP listener binds both).
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := pc.LocalAddr().String()
		l, err := net.Listen("tcp", addr)
		pc.Close()
		if err == nil {
			l.Close()
			return addr
		}
	}
	t.Fatal("no free UDP and TCP port pair on loopback")
	return ""
}

// Send sends msgs to the HEP listener at addr: the datagrams in order from
// one UDP socket, then the TCP messages on one connection, which it closes.
// Requests go 192.0.2.10:5060 → 198.51.100.20:5060, responses back.
func Send(t testing.TB, addr string, msgs []Message) {
	t.Helper()
	udp, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var stream []byte
	for _, m := range msgs {
		src, dst := "192.0.2.10:5060", "198.51.100.20:5060"
		if strings.HasPrefix(m.Text, "SIP/2.0") {
			src, dst = dst, src
		}
		b, err := hep.Encode(&hep.Message{Version: m.Version, Family: hep.FamilyIPv4, Protocol: 17,
			Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
			TS: T0.Add(m.Offset), HasTS: true, ProtoType: hep.ProtoSIP, HasProtoType: m.Version == 3, Payload: []byte(m.Text)})
		if err != nil {
			t.Fatalf("encoding HEP: %v", err)
		}
		if m.TCP {
			stream = append(stream, b...)
		} else if _, err := udp.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	tcp, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	if _, err := tcp.Write(stream); err != nil {
		t.Fatal(err)
	}
}
