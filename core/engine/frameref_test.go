package engine

import (
	"testing"

	"github.com/sipnab/sipnab/core/packet"
)

// TestFrameRefNamesTheFrameOfEachPacket: every SIP message names the frame
// it came in, the messages of one datagram the same frame, and a frame
// struct the source reuses for the next frame (same pointer, even the same
// ordinal) is hashed again: the pointer computed once per packet never
// outlives its packet.
func TestFrameRefNamesTheFrameOfEachPacket(t *testing.T) {
	frame := &packet.Frame{TS: ts0, Source: "reuse.pcap", Ordinal: 1, Data: []byte("first frame's bytes")}
	c := New(Config{}, nil)
	two := invite("ref-1") + sipText("SIP/2.0 100 Trying", "ref-1", 1, "INVITE", "")
	c.HandlePacket(udp("10.0.0.1:5060", "10.0.0.2:5060", []byte(two), frame))
	first := packet.RefOf(frame).String()

	for _, next := range []struct {
		name    string
		ordinal uint64
	}{
		{"next ordinal", 2},
		{"same ordinal", 2},
	} {
		frame.Data = []byte("frame bytes of " + next.name)
		frame.Ordinal = next.ordinal
		c.HandlePacket(udp("10.0.0.1:5060", "10.0.0.2:5060", []byte(invite("ref-"+next.name)), frame))
		d, ok := c.Dialogs().Get("ref-" + next.name)
		if want := packet.RefOf(frame).String(); !ok || d.Messages[0].Frame.String() != want || want == first {
			t.Errorf("%s: message names %q, want %q (not the first frame's %q)", next.name, d.Messages[0].Frame.String(), want, first)
		}
	}
	d, ok := c.Dialogs().Get("ref-1")
	if !ok || len(d.Messages) != 2 {
		t.Fatalf("ref-1: %d messages, want 2", len(d.Messages))
	}
	for i, m := range d.Messages {
		if m.Frame.String() != first {
			t.Errorf("ref-1 message %d names %q, want the datagram's frame %q", i, m.Frame.String(), first)
		}
	}
}
