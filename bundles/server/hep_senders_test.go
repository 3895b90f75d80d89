package server

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/sdk"
)

// fakeClock is the listeners' clock (heplisten.Config.Now), moved by the
// test.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// hepListener starts a capture with one HEP listener on a free loopback
// address.
func hepListener(t *testing.T, cfg heplisten.Config) (*engine.Capture, *heplisten.Listener, string) {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	addr := heptest.FreeAddr(t)
	cfg.UDP, cfg.TCP = addr, addr
	l, err := c.StartHEP(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, l, addr
}

// sendHEP sends n HEP3 datagrams carrying a SIP OPTIONS from the loopback
// address from, claiming agent id when id > 0, or raw bytes when raw is
// set; it waits until the listener has received them.
func sendHEP(t *testing.T, l *heplisten.Listener, from, to string, id uint32, n int, raw []byte) {
	t.Helper()
	before := l.Stats().Received
	conn, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(from+":0")), net.UDPAddrFromAddrPort(netip.MustParseAddrPort(to)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range n {
		b := raw
		if b == nil {
			m := &hep.Message{Version: 3, Family: hep.FamilyIPv4, Protocol: 17,
				Src: netip.MustParseAddrPort("192.0.2.10:5060"), Dst: netip.MustParseAddrPort("198.51.100.20:5060"),
				TS: time.Unix(1700000000, int64(i)), HasTS: true, ProtoType: hep.ProtoSIP, HasProtoType: true,
				AgentID: id, HasAgentID: id > 0,
				Payload: []byte("OPTIONS sip:probe@example.net SIP/2.0\r\nCall-ID: probe-" + from + "\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n")}
			if b, err = hep.Encode(m); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool {
		s := l.Stats()
		var k uint64
		if s.KernelDropped != nil {
			k = *s.KernelDropped
		}
		return s.Received+k >= before+uint64(n)
	})
}

func hepSendersOf(t *testing.T, c *engine.Capture, args string) HEPSenders {
	t.Helper()
	var got HEPSenders
	call(t, tools(t, c, nil, sdk.FileRoot{})["hep_senders"], args, &got)
	return got
}

// TestHEPSendersRosterAndSilence: a sender claiming capture agent id 2002
// (3 datagrams from 127.0.0.1) falls silent once the clock passes
// --hep-silence-warn (5 s here); one without an id (2 datagrams from
// 127.0.0.2, after the clock moved) is not silent. Silent first; limit 1
// keeps it and says truncated.
func TestHEPSendersRosterAndSilence(t *testing.T) {
	clk := &fakeClock{}
	clk.ns.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixNano())
	c, l, addr := hepListener(t, heplisten.Config{Now: clk.now, SilenceWarn: 5 * time.Second})
	sendHEP(t, l, "127.0.0.1", addr, 2002, 3, nil)
	clk.advance(7 * time.Second)
	sendHEP(t, l, "127.0.0.2", addr, 0, 2, nil)

	got := hepSendersOf(t, c, `{}`)
	if !got.Listening || got.SilenceThresholdSeconds != 5 || got.PacketsReceived != 5 || got.PacketsAdmitted != 5 ||
		got.PacketsRefused != 0 || got.SendersTracked != 2 || got.Silent != 1 || got.SendersCap != 4096 || got.RefusedSourcesCap != 256 {
		t.Fatalf("got %+v", got)
	}
	if len(got.Trust) != 1 || got.Trust[0] != "loopback" {
		t.Errorf("trust %v, want loopback (no --hep-allow)", got.Trust)
	}
	a, b := got.Senders[0], got.Senders[1]
	if a.Source != "hep:2002@127.0.0.1" || a.CaptureID == nil || *a.CaptureID != 2002 || a.Peer != "127.0.0.1" || a.Packets != 3 ||
		!a.Silent || a.IdleSeconds != 7 || a.Identity != "claimed_by_sender" || a.Listener != "hep:"+addr {
		t.Errorf("first sender %+v, want hep:2002@127.0.0.1 silent 7 s", a)
	}
	if b.Source != "hep:127.0.0.2" || b.CaptureID != nil || b.Packets != 2 || b.Silent || b.IdleSeconds != 0 {
		t.Errorf("second sender %+v, want hep:127.0.0.2 heard just now", b)
	}
	page := hepSendersOf(t, c, `{"limit": 1}`)
	if page.Returned != 1 || !page.Truncated || page.Senders[0].Source != "hep:2002@127.0.0.1" || page.SendersTracked != 2 {
		t.Errorf("limit 1: %+v", page)
	}
}

// TestHEPSendersRefusals: datagrams that are not HEP (malformed), a peer
// over its own budget (rate_limited) and a source outside --hep-allow
// (not_allowed) are counted by reason, their sources listed with the
// reasons, and received = admitted + refused.
func TestHEPSendersRefusals(t *testing.T) {
	t.Run("malformed", func(t *testing.T) {
		c, l, addr := hepListener(t, heplisten.Config{})
		sendHEP(t, l, "127.0.0.3", addr, 0, 2, []byte("this is not HEP at all, just bytes"))
		got := hepSendersOf(t, c, `{}`)
		if got.RefusedByReason["malformed"] != 2 || got.PacketsRefused != 2 || got.PacketsAdmitted != 0 || got.SendersTracked != 0 ||
			len(got.RefusedSources) != 1 || got.RefusedSources[0].Peer != "127.0.0.3" || got.RefusedSources[0].Count != 2 ||
			got.RefusedSources[0].Reasons["malformed"] != 2 {
			t.Errorf("got %+v", got)
		}
	})
	// The per-peer budget is checked before the shape: one datagram in
	// 1000 s with a burst of 1 admits the first of 5 sent at once.
	t.Run("rate_limited", func(t *testing.T) {
		c, l, addr := hepListener(t, heplisten.Config{PerPeerRate: 0.001, PerPeerBurst: 1})
		sendHEP(t, l, "127.0.0.4", addr, 7, 5, nil)
		got := hepSendersOf(t, c, `{}`)
		if got.PacketsAdmitted != 1 || got.RefusedByReason["rate_limited"] != got.PacketsReceived-1 ||
			len(got.Senders) != 1 || got.Senders[0].Source != "hep:7@127.0.0.4" || got.Senders[0].Packets != 1 ||
			len(got.RefusedSources) != 1 || got.RefusedSources[0].Reasons["rate_limited"] != got.PacketsReceived-1 {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("not_allowed", func(t *testing.T) {
		c, l, addr := hepListener(t, heplisten.Config{Allow: []string{"10.0.0.0/8"}})
		sendHEP(t, l, "127.0.0.1", addr, 1, 3, nil)
		got := hepSendersOf(t, c, `{}`)
		if got.PacketsAdmitted != 0 || got.RefusedByReason["not_allowed"] != got.PacketsReceived || got.SendersTracked != 0 ||
			len(got.RefusedSources) != 1 || got.Trust[0] != "allowlist" {
			t.Errorf("got %+v", got)
		}
	})
}

// TestHEPSendersEvictionIsCounted: a roster capped at 2 forgets the least
// recently seen of 3 senders; its admitted packets stay counted as
// untracked.
func TestHEPSendersEvictionIsCounted(t *testing.T) {
	c, l, addr := hepListener(t, heplisten.Config{MaxSenders: 2})
	sendHEP(t, l, "127.0.0.5", addr, 0, 4, nil)
	sendHEP(t, l, "127.0.0.6", addr, 0, 1, nil)
	sendHEP(t, l, "127.0.0.7", addr, 0, 1, nil)
	got := hepSendersOf(t, c, `{}`)
	if got.SendersTracked != 2 || got.SendersEvicted != 1 || got.UntrackedPackets != 4 || got.SendersCap != 2 {
		t.Errorf("got %+v, want 2 tracked, 1 evicted with its 4 packets untracked", got)
	}
}

// TestHEPSendersWithoutAListener: listening false and a note, not an error.
func TestHEPSendersWithoutAListener(t *testing.T) {
	got := hepSendersOf(t, engine.New(engine.Config{}, nil), `{}`)
	if got.Listening || got.Note == "" || len(got.Senders) != 0 || got.SilenceThresholdSeconds != 30 {
		t.Errorf("got %+v", got)
	}
}
