package engine

import (
	"net/netip"
	"testing"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/packet"
)

// recordTap counts what the router hands a tap.
type recordTap struct{ frames, sip, rtcp, names int }

func (r *recordTap) Frame(*packet.Frame)          { r.frames++ }
func (r *recordTap) SIP(*packet.Packet, []byte)   { r.sip++ }
func (r *recordTap) RTCP(*packet.Packet)          { r.rtcp++ }
func (r *recordTap) Names(string, []capture.Name) { r.names++ }

// A live capture sees the envelopes -H sends: packets to the -H receiver
// are skipped and counted, never unwrapped and forwarded again; HEP to
// another collector, plain SIP and RTCP reach the tap; every frame does.
func TestLivePacketsToTheHEPReceiverAreSkippedNotForwardedAgain(t *testing.T) {
	c := New(Config{}, nil)
	rx := netip.MustParseAddrPort("192.0.2.99:9060")
	c.SkipLiveTo(packet.TransportUDP, rx)
	var tap recordTap
	c.SetTap(&tap)
	src := netip.MustParseAddrPort("192.0.2.1:40000")
	env := hepEnvelope(t, hep.Message{Version: 3, Protocol: 17, Src: netip.MustParseAddrPort("10.0.0.1:5060"),
		Dst: netip.MustParseAddrPort("10.0.0.2:5060"), ProtoType: hep.ProtoSIP, HasProtoType: true, Payload: []byte(invite("looped@x"))})
	c.HandleFrame(liveFrame(src, rx, env))
	if st := c.Status(); st.HEP.OwnSenderSkipped != 1 || tap.sip != 0 || c.Dialogs().Len() != 0 {
		t.Fatalf("own envelope: skipped %d, tapped %d SIP, %d dialogs; want 1, 0, 0", st.HEP.OwnSenderSkipped, tap.sip, c.Dialogs().Len())
	}
	c.HandleFrame(liveFrame(src, netip.MustParseAddrPort("192.0.2.50:9060"), env))
	c.HandleFrame(liveFrame(netip.MustParseAddrPort("10.0.0.1:5060"), netip.MustParseAddrPort("10.0.0.2:5060"), []byte(invite("plain@x"))))
	rr := []byte{0x80, 201, 0, 1, 1, 2, 3, 4}
	c.HandleFrame(liveFrame(netip.MustParseAddrPort("10.0.0.1:4001"), netip.MustParseAddrPort("10.0.0.2:4001"), rr))
	if st := c.Status(); st.HEP.OwnSenderSkipped != 1 || tap.sip != 2 || tap.rtcp != 1 || tap.frames != 4 {
		t.Fatalf("skipped %d, tapped %d SIP, %d RTCP, %d frames; want 1, 2, 1, 4", st.HEP.OwnSenderSkipped, tap.sip, tap.rtcp, tap.frames)
	}
}

func TestWholeRTCPAcceptsPlainCompoundsOnly(t *testing.T) {
	rr := []byte{0x81, 201, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // RR, one report block (32 bytes)
	sdes := []byte{0x81, 202, 0, 2, 1, 2, 3, 4, 1, 1, 'x', 0}                                                         // SDES, one CNAME (12 bytes)
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"receiver report and SDES", append(append([]byte{}, rr...), sdes...), true},
		{"receiver report alone", rr, true},
		{"SRTCP: encrypted bytes, E flag and index, tag after the first packet", append(append([]byte{}, rr...), 0x9c, 0x41, 0x07, 0xee, 0x80, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10), false},
		{"length past the datagram", rr[:20], false},
		{"trailing byte", append(append([]byte{}, rr...), 0), false},
		{"RTP packet type 0", []byte{0x80, 0, 0, 0}, false},
	} {
		if got := wholeRTCP(tc.b); got != tc.want {
			t.Errorf("%s: wholeRTCP = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzWholeRTCP: any bytes get an answer, never a panic, and a yes means
// the packet lengths tile the input exactly.
func FuzzWholeRTCP(f *testing.F) {
	f.Add([]byte{0x81, 201, 0, 1, 1, 2, 3, 4})
	f.Add([]byte{0x80, 200, 0, 0, 0x80, 202, 0, 0})
	f.Add([]byte{0x80, 200, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if !wholeRTCP(b) {
			return
		}
		for off := 0; off < len(b); {
			if b[off]>>6 != 2 {
				t.Fatalf("accepted a packet of version %d at %d", b[off]>>6, off)
			}
			off += (int(b[off+2])<<8 | int(b[off+3]) + 1) * 4
			if off > len(b) {
				t.Fatalf("accepted a length past the input")
			}
		}
	})
}
