package dialog

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// TestRetainedMessagesReadBackEqual applies a call and reads its messages
// back: each rebuilt from the kept bytes equals what was applied, with its
// time, addresses, frame, marking and flags; a message the parser did not
// make is kept whole.
func TestRetainedMessagesReadBackEqual(t *testing.T) {
	s := New(Config{})
	src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
	var applied []Observation
	for j, st := range basicCall("kept") {
		m, err := sip.Parse([]byte("\r\n" + st.text + "trailing"))
		if err != nil {
			t.Fatal(err)
		}
		o := Observation{
			Msg: m, TS: t0.Add(time.Duration(st.ms)*time.Millisecond + 123456789*time.Nanosecond),
			Src: src, Dst: dst, Transport: packet.TransportUDP, Origin: packet.OriginHEP,
			Frame: packet.FrameRef{Source: "x.pcap", Ordinal: uint64(j + 1)}, DSCP: 26, HasDSCP: j%2 == 0,
		}
		s.Apply(o)
		applied = append(applied, o)
		src, dst = dst, src
	}
	hand := &sip.Message{CallID: "kept", IsRequest: true, Method: "OPTIONS"}
	s.Apply(Observation{Msg: hand, TS: t0.Add(time.Hour), Src: src, Dst: dst})
	d, ok := s.Get("kept")
	if !ok {
		t.Fatal("dialog not found")
	}
	if got, want := len(d.Messages), len(applied)+1; got != want {
		t.Fatalf("got %d messages, want %d", got, want)
	}
	for i, o := range applied {
		g := d.Messages[i]
		if !reflect.DeepEqual(g.Msg, o.Msg) {
			t.Fatalf("message %d: rebuilt %+v, applied %+v", i, g.Msg, o.Msg)
		}
		if !g.TS.Equal(o.TS) || g.TS != o.TS.UTC() || g.Src != o.Src || g.Dst != o.Dst || g.Transport != o.Transport ||
			g.Origin != o.Origin || g.Frame != o.Frame || g.DSCP != o.DSCP || g.HasDSCP != o.HasDSCP || g.Index != i {
			t.Fatalf("message %d: got %+v, want the observation %+v", i, g, o)
		}
	}
	if last := d.Messages[len(applied)]; last.Msg != hand {
		t.Fatalf("the hand-built message: got %p, want it kept whole (%p)", last.Msg, hand)
	}
	// Each read gets messages of its own.
	d2, _ := s.Get("kept")
	if d2.Messages[0].Msg == d.Messages[0].Msg {
		t.Fatal("two reads share a rebuilt message")
	}
}

// TestAddressTableCap floods one dialog with messages from distinct
// addresses: the address table stops at its cap at every step, and every
// message still reads back with its own addresses.
func TestAddressTableCap(t *testing.T) {
	defer func(m int) { maxAddrs = m }(maxAddrs)
	maxAddrs = 100
	s := New(Config{MaxMessages: 50000})
	base, err := sip.Parse([]byte(basicCall("flood")[0].text))
	if err != nil {
		t.Fatal(err)
	}
	const n = 50000
	dst := netip.MustParseAddrPort(bob)
	for i := 0; i < n; i++ {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(1024+i%50000))
		s.Apply(Observation{Msg: base, TS: t0.Add(time.Duration(i) * time.Millisecond), Src: src, Dst: dst})
		if i%997 == 0 {
			s.mu.RLock()
			got := len(s.lookup("flood").addrs)
			s.mu.RUnlock()
			if got > maxAddrs {
				t.Fatalf("after %d messages: %d addresses in the table, cap %d", i+1, got, maxAddrs)
			}
		}
	}
	d, ok := s.GetWith("flood", Options{})
	if !ok || len(d.Messages) != n {
		t.Fatalf("got %d messages, want %d", len(d.Messages), n)
	}
	for i, m := range d.Messages {
		want := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(1024+i%50000))
		if m.Src != want || m.Dst != dst {
			t.Fatalf("message %d: got %v -> %v, want %v -> %v", i, m.Src, m.Dst, want, dst)
		}
	}
}
