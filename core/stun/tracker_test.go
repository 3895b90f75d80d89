package stun

import (
	"net/netip"
	"testing"
	"time"
)

var (
	t0      = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	client  = netip.MustParseAddrPort("10.0.0.2:40000")
	server  = netip.MustParseAddrPort("198.51.100.1:3478")
	relayed = netip.MustParseAddrPort("198.51.100.1:49200")
	peer    = netip.MustParseAddrPort("203.0.113.7:5004")
	nat     = netip.MustParseAddrPort("192.0.2.50:61000")
)

type feeder struct {
	t  *testing.T
	tr *Tracker
	w  Builder
}

func (f *feeder) send(at time.Duration, src, dst netip.AddrPort, b []byte) (netip.AddrPort, netip.AddrPort, bool) {
	f.t.Helper()
	var m Message
	if err := Parse(b, &m); err != nil {
		f.t.Fatal(err)
	}
	return f.tr.Observe(Obs{TS: t0.Add(at), Src: src, Dst: dst}, &m)
}

func txn(n byte) [12]byte { return [12]byte{n, 1, 2, 3} }

func TestTrackerCountsRetransmissionsAndUnansweredRequests(t *testing.T) {
	f := &feeder{t: t, tr: NewTracker(Config{})}
	w := &f.w
	f.send(0, client, server, w.Begin(ClassRequest, MethodBinding, txn(1)).End(true))
	f.send(500*time.Millisecond, client, server, w.Begin(ClassRequest, MethodBinding, txn(1)).End(true))
	f.send(600*time.Millisecond, server, client, w.Begin(ClassSuccess, MethodBinding, txn(1)).Address(AttrXORMappedAddress, nat, true).End(true))
	// a second response to the retransmission changes nothing
	f.send(700*time.Millisecond, server, client, w.Begin(ClassSuccess, MethodBinding, txn(1)).Address(AttrXORMappedAddress, nat, true).End(true))
	for i := 0; i < 3; i++ {
		f.send(time.Duration(i)*time.Second, client, netip.MustParseAddrPort("192.0.2.9:3478"), w.Begin(ClassRequest, MethodBinding, txn(2)).End(false))
	}
	f.send(59*time.Second, client, server, w.Begin(ClassRequest, MethodBinding, txn(3)).End(false))
	r := f.tr.Report(t0.Add(60 * time.Second))
	if r.Counts.Retransmissions != 3 || r.UnansweredCount != 1 || r.Pending != 1 {
		t.Fatalf("got retransmissions %d unanswered %d pending %d, want 3 1 1", r.Counts.Retransmissions, r.UnansweredCount, r.Pending)
	}
	u := r.Unanswered[0]
	if u.Server != "192.0.2.9:3478" || u.Sent != 3 || !u.ServerPublic {
		t.Fatalf("got unanswered %+v", u)
	}
	if len(r.Mappings) != 1 || r.Mappings[0].Mapped != nat.String() || r.Mappings[0].Local != client.String() || !r.Mappings[0].Translated {
		t.Fatalf("got mappings %+v", r.Mappings)
	}
	if len(r.Methods) != 1 || r.Methods[0].Transactions != 3 || r.Methods[0].Success != 1 || r.Methods[0].Unanswered != 1 {
		t.Fatalf("got methods %+v", r.Methods)
	}
}

func TestTrackerFollowsATURNAllocationItsChannelAndItsLapse(t *testing.T) {
	f := &feeder{t: t, tr: NewTracker(Config{})}
	w := &f.w
	f.send(0, client, server, w.Begin(ClassRequest, MethodAllocate, txn(1)).U32(AttrRequestedTransport, 17<<24).End(true))
	f.send(time.Millisecond, server, client, w.Begin(ClassError, MethodAllocate, txn(1)).ErrorCode(401, "Unauthorized").End(true))
	f.send(2*time.Millisecond, client, server, w.Begin(ClassRequest, MethodAllocate, txn(2)).End(true))
	f.send(3*time.Millisecond, server, client, w.Begin(ClassSuccess, MethodAllocate, txn(2)).
		Address(AttrXORRelayedAddress, relayed, true).Address(AttrXORMappedAddress, client, true).U32(AttrLifetime, 60).End(true))
	f.send(4*time.Millisecond, client, server, w.Begin(ClassRequest, MethodChannelBind, txn(3)).
		U32(AttrChannelNumber, 0x4000<<16).Address(AttrXORPeerAddress, peer, true).End(true))
	f.send(5*time.Millisecond, server, client, w.Begin(ClassSuccess, MethodChannelBind, txn(3)).End(true))

	src, dst, _, ok := f.tr.Channel(Obs{TS: t0.Add(time.Second), Src: client, Dst: server}, 0x4000)
	if !ok || src != relayed || dst != peer {
		t.Fatalf("client→server ChannelData: got %s→%s %v, want %s→%s", src, dst, ok, relayed, peer)
	}
	src, dst, _, ok = f.tr.Channel(Obs{TS: t0.Add(time.Second), Src: server, Dst: client}, 0x4000)
	if !ok || src != peer || dst != relayed {
		t.Fatalf("server→client ChannelData: got %s→%s %v, want %s→%s", src, dst, ok, peer, relayed)
	}
	if _, _, known, ok := f.tr.Channel(Obs{TS: t0.Add(time.Second), Src: server, Dst: client}, 0x4001); ok || !known {
		t.Fatal("an unbound channel was unwrapped, or its allocation forgotten")
	}
	if _, _, known, _ := f.tr.Channel(Obs{TS: t0.Add(time.Second), Src: peer, Dst: nat}, 0x4000); known {
		t.Fatal("a datagram shaped like ChannelData between strangers was taken for TURN")
	}
	// Send and Data indications carry the same relayed packets.
	src, dst, ok = f.send(2*time.Second, client, server, w.Begin(ClassIndication, MethodSend, txn(4)).
		Address(AttrXORPeerAddress, peer, true).Attr(AttrData, []byte{0x80, 0}).End(false))
	if !ok || src != relayed || dst != peer {
		t.Fatalf("Send indication: got %s→%s %v", src, dst, ok)
	}
	r := f.tr.Report(t0.Add(30 * time.Second))
	a := r.Allocations[0]
	if a.Relayed != relayed.String() || a.LifetimeSec != 60 || a.State != "active" || a.Lapsed || len(a.Channels) != 1 ||
		!a.Channels[0].Confirmed || a.PacketsToPeer != 2 || a.PacketsFromPeer != 1 {
		t.Fatalf("got allocation %+v", a)
	}
	if r.Counts.Relayed != 3 || r.Counts.RelayUnbound != 1 || r.Methods[0].ErrorCodes["401"] != 1 {
		t.Fatalf("got counts %+v methods %+v", r.Counts, r.Methods)
	}
	// The lifetime ran out at 60 s; relayed media at 61 s finds it lapsed.
	f.tr.Channel(Obs{TS: t0.Add(61 * time.Second), Src: client, Dst: server}, 0x4000)
	a = f.tr.Report(t0.Add(70 * time.Second)).Allocations[0]
	if !a.Lapsed || a.State != "expired" || a.LapsedAt == nil || !a.LapsedAt.Equal(t0.Add(61*time.Second)) {
		t.Fatalf("got allocation %+v, want lapsed at 61 s", a)
	}
}

func TestTrackerRefreshKeepsAnAllocationAndLifetimeZeroDeletesIt(t *testing.T) {
	f := &feeder{t: t, tr: NewTracker(Config{})}
	w := &f.w
	f.send(0, client, server, w.Begin(ClassRequest, MethodAllocate, txn(1)).End(true))
	f.send(0, server, client, w.Begin(ClassSuccess, MethodAllocate, txn(1)).Address(AttrXORRelayedAddress, relayed, true).U32(AttrLifetime, 60).End(true))
	f.send(50*time.Second, client, server, w.Begin(ClassRequest, MethodRefresh, txn(2)).End(true))
	f.send(50*time.Second, server, client, w.Begin(ClassSuccess, MethodRefresh, txn(2)).U32(AttrLifetime, 60).End(true))
	f.send(100*time.Second, client, server, w.Begin(ClassRequest, MethodRefresh, txn(3)).U32(AttrLifetime, 0).End(true))
	f.send(100*time.Second, server, client, w.Begin(ClassSuccess, MethodRefresh, txn(3)).U32(AttrLifetime, 0).End(true))
	a := f.tr.Report(t0.Add(300 * time.Second)).Allocations[0]
	if a.Lapsed || a.State != "deleted" || a.Refreshes != 1 {
		t.Fatalf("got %+v, want deleted after one refresh, never lapsed", a)
	}
	// a Refresh refused 437 says the server dropped the allocation
	f.send(0, client, nat, w.Begin(ClassRequest, MethodAllocate, txn(4)).End(true))
	f.send(0, nat, client, w.Begin(ClassSuccess, MethodAllocate, txn(4)).Address(AttrXORRelayedAddress, relayed, true).End(true))
	f.send(10*time.Second, client, nat, w.Begin(ClassRequest, MethodRefresh, txn(5)).End(true))
	f.send(10*time.Second, nat, client, w.Begin(ClassError, MethodRefresh, txn(5)).ErrorCode(437, "Allocation Mismatch").End(true))
	r := f.tr.Report(t0.Add(20 * time.Second))
	if r.LapsedAllocations != 1 || !r.Allocations[1].Lapsed || r.Allocations[1].LifetimeSec != 600 {
		t.Fatalf("got %+v", r.Allocations[1])
	}
}

func TestTrackerFindsTheNominatedPairAndRoleConflicts(t *testing.T) {
	f := &feeder{t: t, tr: NewTracker(Config{})}
	w := &f.w
	a, b := client, peer
	check := func(n byte, src, dst netip.AddrPort, controlling, use bool) []byte {
		w.Begin(ClassRequest, MethodBinding, txn(n)).U32(AttrPriority, 100)
		if controlling {
			w.U64(AttrICEControlling, 1)
		} else {
			w.U64(AttrICEControlled, 2)
		}
		if use {
			w.Attr(AttrUseCandidate, nil)
		}
		return w.End(true)
	}
	f.send(0, a, b, check(1, a, b, true, false))
	f.send(0, b, a, check(2, b, a, true, false)) // both controlling: a conflict
	f.send(0, a, b, w.Begin(ClassError, MethodBinding, txn(2)).ErrorCode(487, "Role Conflict").End(true))
	f.send(0, b, a, w.Begin(ClassSuccess, MethodBinding, txn(1)).Address(AttrXORMappedAddress, a, true).End(true))
	f.send(time.Second, a, b, check(3, a, b, true, true))
	f.send(time.Second, b, a, w.Begin(ClassSuccess, MethodBinding, txn(3)).Address(AttrXORMappedAddress, a, true).End(true))
	r := f.tr.Report(t0.Add(time.Minute))
	if len(r.ICE.Nominated) != 1 || r.ICE.Nominated[0].From != a.String() || r.ICE.Nominated[0].To != b.String() || r.ICE.Nominated[0].Succeeded != 2 {
		t.Fatalf("got nominated %+v", r.ICE.Nominated)
	}
	if r.Counts.RoleConflicts != 2 || len(r.ICE.RoleConflicts) != 2 {
		t.Fatalf("got %d role conflicts %+v, want the double claim and the 487", r.Counts.RoleConflicts, r.ICE.RoleConflicts)
	}
	if len(r.Mappings) != 1 || !r.Mappings[0].ICE || r.Mappings[0].Translated {
		t.Fatalf("got mappings %+v", r.Mappings)
	}
}

func TestTrackerTablesStayWithinTheirCapsAndCountEvictions(t *testing.T) {
	f := &feeder{t: t, tr: NewTracker(Config{MaxTransactions: 8, MaxMappings: 4, MaxAllocations: 2, MaxICEPairs: 3})}
	w := &f.w
	for i := 0; i < 100; i++ {
		src := netip.AddrPortFrom(client.Addr(), uint16(1000+i))
		id := [12]byte{byte(i), byte(i >> 8), 7}
		f.send(0, src, server, w.Begin(ClassRequest, MethodAllocate, id).End(false))
		f.send(0, server, src, w.Begin(ClassSuccess, MethodAllocate, id).Address(AttrXORRelayedAddress, relayed, true).Address(AttrXORMappedAddress, nat, true).End(false))
		id[2] = 8
		f.send(0, src, peer, w.Begin(ClassRequest, MethodBinding, id).U32(AttrPriority, 1).U64(AttrICEControlling, 1).End(false))
		w.Begin(ClassSuccess, MethodBinding, [12]byte{})
		f.send(0, src, server, w.Attr(AttrSoftware, []byte{byte(i)}).End(false))
	}
	r := f.tr.Report(t0)
	c := r.Counts
	if len(f.tr.txs) > 8 || len(f.tr.mappings) > 4 || len(f.tr.allocs) > 2 || len(f.tr.pairs) > 3 || len(f.tr.software) > MaxSoftware {
		t.Fatalf("tables over their caps: %d %d %d %d %d", len(f.tr.txs), len(f.tr.mappings), len(f.tr.allocs), len(f.tr.pairs), len(f.tr.software))
	}
	if c.TransactionsEvicted != 192 || c.AllocationsEvicted != 98 || c.MappingsEvicted != 96 || c.ICEPairsEvicted != 97 || c.SoftwareOver != 68 {
		t.Fatalf("got evictions %+v", c)
	}
}
