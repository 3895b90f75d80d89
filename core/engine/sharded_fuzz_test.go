package engine

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/packet"
)

// FuzzPlainPacketEqualsDecoder: for every frame the router hands a media
// worker undecoded (mediaFrame), the packet the worker builds at fixed
// offsets (plainPacket) is the one the decoder makes of the frame, field
// by field. hdr fills the 42 bytes of Ethernet, IPv4 and UDP headers;
// with fix, the EtherType, version and header length, protocol and both
// lengths are set to a plain frame's so that most inputs are one.
func FuzzPlainPacketEqualsDecoder(f *testing.F) {
	rtp := []byte{0x80, 0x00, 0x00, 0x01, 0, 0, 0, 160, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff}
	f.Add(ethIPv4UDP(rtp)[:42], rtp, true)
	f.Add(make([]byte, 42), rtp, true)
	f.Add(make([]byte, 42), []byte("SIP/2.0 200 OK\r\n\r\n"), true)
	f.Add(make([]byte, 42), []byte{0x01, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42}, true)
	f.Add(ethIPv4UDP(rtp)[:42], rtp, false)
	f.Fuzz(func(t *testing.T, hdr, payload []byte, fix bool) {
		d := make([]byte, 42+len(payload))
		copy(d, hdr)
		copy(d[42:], payload)
		if fix {
			d[12], d[13], d[14], d[23] = 0x08, 0x00, 0x45, 17
			binary.BigEndian.PutUint16(d[16:18], uint16(len(d)-14))
			binary.BigEndian.PutUint16(d[38:40], uint16(len(d)-34))
		}
		fr := &packet.Frame{TS: ts0, LinkType: decode.LinkEthernet, Data: d, OrigLen: len(d), Source: "fuzz", Ordinal: 1}
		if _, _, ok := mediaFrame(fr); !ok {
			return
		}
		var got []packet.Packet
		decode.New(decode.Config{}).Decode(fr, packet.SinkFunc(func(p *packet.Packet) { got = append(got, *p) }))
		if len(got) != 1 {
			t.Fatalf("the decoder made %d packets of a plain frame, want 1", len(got))
		}
		var p packet.Packet
		plainPacket(&p, fr)
		if !reflect.DeepEqual(p, got[0]) {
			t.Fatalf("plainPacket:\n got %+v\nwant %+v", p, got[0])
		}
	})
}

// TestPlainPacketEqualsDecoder runs the fuzz target's seeds and a frame
// with every header field the packet reads set (DSCP, Identification, DF).
func TestPlainPacketEqualsDecoder(t *testing.T) {
	d := ethIPv4UDP([]byte{0x80, 0x08, 0x12, 0x34, 0, 0, 0, 160, 0, 0, 0, 7, 1, 2, 3, 4})
	d[15] = 0xb8                           // DSCP EF (46), ECN 0
	d[18], d[19], d[20] = 0xab, 0xcd, 0x40 // Identification, DF
	fr := &packet.Frame{TS: ts0.Add(time.Second), LinkType: decode.LinkEthernet, Data: d, OrigLen: len(d), Source: "t", Ordinal: 9}
	if _, _, ok := mediaFrame(fr); !ok {
		t.Fatal("the frame is not a plain media frame")
	}
	var want packet.Packet
	decode.New(decode.Config{}).Decode(fr, packet.SinkFunc(func(p *packet.Packet) { want = *p }))
	var got packet.Packet
	plainPacket(&got, fr)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got.DSCP != 46 || got.IPID != 0xabcd || got.Src.Port() == 0 || len(got.Payload) != 16 {
		t.Fatalf("the case is not the one meant: %+v", got)
	}
}
