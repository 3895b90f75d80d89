package engine

import (
	"context"
	"math"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/stun"
	"github.com/sipnab/sipnab/internal/testcap"
)

// relayCapture: a SIP call whose RTP crossed coturn through a channel,
// captured behind a NAT (testdata/stun/README.md).
var relayCapture = filepath.Join(testcap.Root(), "testdata", "stun", "turn-relayed-call.pcapng")

// TestRelayedRTPReachesTheStreamStoreUnderTheRelayedAddresses loads the
// coturn capture on one and on two cores. The RTP inside the ChannelData
// messages is unwrapped and becomes two streams between the relayed
// address (198.51.100.1:49157, from the Allocate success, frame 60) and
// the peer (198.51.100.2:4000, the channel's XOR-PEER-ADDRESS, frame 64),
// bound to the call whose SDP announced those two addresses; packets, loss
// and maximum jitter agree with tshark's RTP heuristic over the same
// ChannelData (testdata/stun/turn-relayed-call.pcapng.rtp-streams.txt:
// 50 packets, 0 lost, max jitter 1.854 and 1.856 ms).
func TestRelayedRTPReachesTheStreamStoreUnderTheRelayedAddresses(t *testing.T) {
	want := map[string]struct {
		src, dst  string
		maxJitter float64
	}{
		"0x000a11ce": {"198.51.100.1:49157", "198.51.100.2:4000", 1.854},
		"0x00000b0b": {"198.51.100.2:4000", "198.51.100.1:49157", 1.856},
	}
	for _, cores := range []int{1, 2} {
		c := New(Config{Cores: cores}, nil)
		if err := c.LoadFiles(context.Background(), []string{relayCapture}); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		streams := c.Media().StreamsFor("turn-relayed-call@10.0.0.2")
		if len(streams) != 2 {
			t.Fatalf("cores %d: got %d streams for the call, want 2: %+v", cores, len(streams), c.Media().All())
		}
		for _, s := range streams {
			w, ok := want[s.SSRC]
			if !ok || s.Src != w.src || s.Dst != w.dst || s.Packets != 50 || s.Lost != 0 || s.InputOrigin != "turn" {
				t.Errorf("cores %d: got stream %s %s→%s packets %d lost %d origin %q", cores, s.SSRC, s.Src, s.Dst, s.Packets, s.Lost, s.InputOrigin)
				continue
			}
			if s.JitterMaxMs == nil || math.Abs(*s.JitterMaxMs-w.maxJitter) > math.Max(0.05, w.maxJitter*0.02) {
				t.Errorf("cores %d: stream %s max jitter %v ms, tshark %.3f", cores, s.SSRC, s.JitterMaxMs, w.maxJitter)
			}
		}
		st := c.Status()
		// from the tshark output: 42 STUN messages on the wire and 112
		// ChannelData messages, all on bound channels and unwrapped: the
		// 100 RTP packets, the ICE check and its answer inside the channel
		// (frames 66, 68: two more STUN messages), and turnutils_uclient's
		// 10 non-RTP messages, which the stream store rejects
		if st.STUN == nil || st.STUN.Messages != 42+2 || st.STUN.ChannelData != 112 || st.STUN.Relayed != 112 ||
			st.MediaPackets != 100 || st.Media.Rejected != 10 {
			t.Errorf("cores %d: got STUN counts %+v", cores, st.STUN)
		}
	}
}

func TestTheCoturnCaptureYieldsItsMappingAllocationNominationAndUnansweredBinding(t *testing.T) {
	c := New(Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{relayCapture}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	r := c.STUN().Report(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mapped := map[string]string{}
	for _, m := range r.Mappings {
		mapped[m.Local] = m.Mapped
	}
	// frame 56: the Binding from 10.0.0.2:40000 came back from
	// 198.51.100.254:40000 (the NAT kept the port)
	if mapped["10.0.0.2:40000"] != "198.51.100.254:40000" {
		t.Errorf("got mappings %+v", r.Mappings)
	}
	var relay *stun.Allocation
	for i := range r.Allocations {
		if r.Allocations[i].Relayed == "198.51.100.1:49157" {
			relay = &r.Allocations[i]
		}
	}
	if relay == nil || relay.State != "deleted" || relay.LifetimeSec != 600 || len(relay.Channels) != 1 ||
		relay.Channels[0].Peer != "198.51.100.2:4000" || relay.PacketsToPeer != 51 || relay.PacketsFromPeer != 51 {
		t.Fatalf("got allocation %+v", relay)
	}
	// the ICE check inside the channel: from the relayed address to the
	// peer, with USE-CANDIDATE, answered: nominated
	if len(r.ICE.Nominated) != 1 || r.ICE.Nominated[0].From != "198.51.100.1:49157" || r.ICE.Nominated[0].To != "198.51.100.2:4000" || r.ICE.Nominated[0].Role != "controlling" {
		t.Errorf("got nominated %+v", r.ICE.Nominated)
	}
	if r.UnansweredCount != 1 || r.Unanswered[0].Server != "198.51.100.9:3478" || r.Unanswered[0].Sent != 2 || !r.Unanswered[0].ServerPublic {
		t.Errorf("got unanswered %+v", r.Unanswered)
	}
	// 40 on the wire (tshark's stun.att.crc32, all status good) and the
	// ICE check and answer inside the channel
	if r.Counts.FingerprintsChecked != 42 || r.Counts.FingerprintsBad != 0 {
		t.Errorf("got fingerprints %d checked %d bad", r.Counts.FingerprintsChecked, r.Counts.FingerprintsBad)
	}
}

// A UDP datagram merely shaped like ChannelData between hosts no TURN
// evidence names still reaches the stream store.
func TestChannelDataShapeWithoutTURNIsOfferedToTheStreamStore(t *testing.T) {
	c := New(Config{}, nil)
	src := netip.MustParseAddrPort("192.0.2.1:7000")
	dst := netip.MustParseAddrPort("192.0.2.2:7002")
	c.HandlePacket(&packet.Packet{TS: time.Unix(1, 0), Src: src, Dst: dst, Transport: packet.TransportUDP,
		Payload: stun.AppendChannelData(nil, 0x4001, []byte{1, 2, 3, 4}, false), Origin: packet.OriginWire})
	st := c.Status()
	if st.STUN != nil || st.Media.Rejected != 1 {
		t.Fatalf("got STUN %+v, media rejected %d", st.STUN, st.Media.Rejected)
	}
}

// The call's media diagnosis carries the relay it crossed: the
// allocation, its nominated ICE pair and the relay context observation.
func TestTheRelayedCallsDiagnosisNamesItsRelay(t *testing.T) {
	c := New(Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{relayCapture}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	for _, f := range analysis.FactsFromStore(c.Dialogs()) {
		if f.CallID != "turn-relayed-call@10.0.0.2" {
			continue
		}
		m := analysis.Diagnose(f, c.Media(), analysis.Options{}).Media
		if m.STUN == nil || len(m.STUN.Allocations) != 1 || m.STUN.Allocations[0].Relayed != "198.51.100.1:49157" ||
			len(m.STUN.ICEPairs) != 1 || !m.STUN.ICEPairs[0].Nominated {
			t.Fatalf("got evidence %+v", m.STUN)
		}
		want := "media crossed a TURN relay: 10.0.0.2:40000 relays at 198.51.100.1:49157 through 198.51.100.1:3478"
		if len(m.Observations) != 1 || !strings.HasPrefix(m.Observations[0], want) || m.Problem() {
			t.Fatalf("got observations %q problem %v, want %q", m.Observations, m.Problem(), want)
		}
		return
	}
	t.Fatal("no dialog turn-relayed-call@10.0.0.2")
}

// FuzzRouteTURN routes arbitrary bytes as the data of a bound TURN channel
// (both directions), as a Send indication's DATA, and bare on the TURN
// port: nothing may panic, and every unwrapped message is a ChannelData
// message or an indication the tracker counted.
func FuzzRouteTURN(f *testing.F) {
	var w stun.Builder
	f.Add([]byte{0x80, 0, 0, 1, 0, 0, 0, 160, 0, 0, 0, 7, 0xff, 0xff})
	f.Add(append([]byte(nil), w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{1}).U32(stun.AttrPriority, 1).U64(stun.AttrICEControlling, 1).Attr(stun.AttrUseCandidate, nil).End(true)...))
	f.Add(stun.AppendChannelData(nil, 0x4000, []byte{0x80, 0}, false))
	f.Add([]byte(invite("fz-turn")))
	client := netip.MustParseAddrPort("10.0.0.2:40000")
	server := netip.MustParseAddrPort("198.51.100.1:3478")
	relayed := netip.MustParseAddrPort("198.51.100.1:49152")
	peer := netip.MustParseAddrPort("203.0.113.7:5004")
	f.Fuzz(func(t *testing.T, data []byte) {
		c := New(Config{}, nil)
		at := time.Unix(100, 0)
		send := func(src, dst netip.AddrPort, b []byte) {
			c.HandlePacket(&packet.Packet{TS: at, Src: src, Dst: dst, Transport: packet.TransportUDP, Payload: b, Origin: packet.OriginWire})
		}
		send(client, server, append([]byte(nil), w.Begin(stun.ClassRequest, stun.MethodAllocate, [12]byte{1}).End(true)...))
		send(server, client, append([]byte(nil), w.Begin(stun.ClassSuccess, stun.MethodAllocate, [12]byte{1}).Address(stun.AttrXORRelayedAddress, relayed, true).End(true)...))
		send(client, server, append([]byte(nil), w.Begin(stun.ClassRequest, stun.MethodChannelBind, [12]byte{2}).U32(stun.AttrChannelNumber, 0x4000<<16).Address(stun.AttrXORPeerAddress, peer, true).End(true)...))
		send(client, server, stun.AppendChannelData(nil, 0x4000, data, false))
		send(server, client, stun.AppendChannelData(nil, 0x4000, data, true))
		send(client, server, append([]byte(nil), w.Begin(stun.ClassIndication, stun.MethodSend, [12]byte{3}).Address(stun.AttrXORPeerAddress, peer, true).Attr(stun.AttrData, data).End(false)...))
		send(client, server, data)
		st := c.Status()
		if st.STUN == nil || st.STUN.Relayed > st.STUN.ChannelData+st.STUN.Indications {
			t.Fatalf("got STUN counts %+v", st.STUN)
		}
		_ = c.STUN().Report(at)
		_ = c.Media().All()
	})
}
