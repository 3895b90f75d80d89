package media

import (
	"net/netip"
	"testing"

	"github.com/sipnab/sipnab/core/packet"
)

// TestKeyIndexKeepsKeysApart checks that keys differing in any part of a
// Key (address family, zone, ports, SSRC, fax, an absent address) never
// share an entry.
func TestKeyIndexKeepsKeysApart(t *testing.T) {
	ap := netip.MustParseAddrPort
	keys := []Key{
		{Src: ap("192.0.2.1:4000"), Dst: ap("192.0.2.2:5000"), SSRC: 1},
		{Src: ap("[::ffff:192.0.2.1]:4000"), Dst: ap("192.0.2.2:5000"), SSRC: 1},
		{Src: ap("192.0.2.1:4000"), Dst: ap("[::ffff:192.0.2.2]:5000"), SSRC: 1},
		{Src: ap("192.0.2.2:5000"), Dst: ap("192.0.2.1:4000"), SSRC: 1},
		{Src: ap("192.0.2.1:4001"), Dst: ap("192.0.2.2:5000"), SSRC: 1},
		{Src: ap("192.0.2.1:4000"), Dst: ap("192.0.2.2:5001"), SSRC: 1},
		{Src: ap("192.0.2.1:4000"), Dst: ap("192.0.2.2:5000"), SSRC: 2},
		{Src: ap("192.0.2.1:4000"), Dst: ap("192.0.2.2:5000"), Fax: true},
		{Src: ap("192.0.2.1:4000"), Dst: ap("192.0.2.2:5000")},
		{Src: ap("[fe80::1]:4000"), Dst: ap("[fe80::2]:5000"), SSRC: 1},
		{Src: ap("[fe80::1%eth0]:4000"), Dst: ap("[fe80::2]:5000"), SSRC: 1},
		{Src: ap("[fe80::1%eth1]:4000"), Dst: ap("[fe80::2]:5000"), SSRC: 1},
		{Src: ap("[fe80::1]:4000"), Dst: ap("[fe80::2%eth0]:5000"), SSRC: 1},
		{Dst: ap("192.0.2.2:5000"), SSRC: 1},
		{Src: netip.AddrPortFrom(netip.IPv4Unspecified(), 0), Dst: ap("192.0.2.2:5000"), SSRC: 1},
		{},
	}
	x := newKeyIndex[int]()
	for i, k := range keys {
		if _, ok := x.get(k); ok {
			t.Fatalf("key %d (%v) found before it was set", i, k)
		}
		x.set(k, i)
	}
	if got, want := x.len(), len(keys); got != want {
		t.Fatalf("got %d entries, want %d", got, want)
	}
	for i, k := range keys {
		if got, ok := x.get(k); !ok || got != i {
			t.Fatalf("key %d (%v): got %d (%v), want %d", i, k, got, ok, i)
		}
	}
	n := 0
	x.each(func(int) { n++ })
	if n != len(keys) {
		t.Fatalf("each visited %d entries, want %d", n, len(keys))
	}
	for i, k := range keys {
		x.del(k)
		if got, want := x.len(), len(keys)-i-1; got != want {
			t.Fatalf("after deleting key %d: got %d entries, want %d", i, got, want)
		}
	}
}

// TestStoreGetThroughTheCache checks the store's cached lookup: zoned keys
// and their unzoned twins stay apart, and an evicted stream is never
// answered from the cache.
func TestStoreGetThroughTheCache(t *testing.T) {
	ap := netip.MustParseAddrPort
	st := NewStore(Config{MaxStreams: 3})
	plain := Key{Src: ap("[fe80::1]:4000"), Dst: ap("[fe80::2]:5000"), SSRC: 9}
	zoned := Key{Src: ap("[fe80::1%eth0]:4000"), Dst: ap("[fe80::2]:5000"), SSRC: 9}
	other := Key{Src: ap("[fe80::1%eth1]:4000"), Dst: ap("[fe80::2]:5000"), SSRC: 9}
	sp := st.newStream(plain, 1, nil, packet.FrameRef{}, packet.OriginWire)
	sz := st.newStream(zoned, 2, nil, packet.FrameRef{}, packet.OriginWire)
	for i := 0; i < 3; i++ { // twice through the cache
		if got := st.get(plain); got != sp {
			t.Fatalf("plain key: got %p, want %p", got, sp)
		}
		if got := st.get(zoned); got != sz {
			t.Fatalf("zoned key: got %p, want %p", got, sz)
		}
		if got := st.get(other); got != nil {
			t.Fatalf("key of another zone: got %p, want nil", got)
		}
	}
	// Two more streams evict the oldest (plain), which the cache held.
	st.newStream(Key{Src: ap("192.0.2.1:1"), Dst: ap("192.0.2.2:2"), SSRC: 1}, 3, nil, packet.FrameRef{}, packet.OriginWire)
	st.newStream(Key{Src: ap("192.0.2.1:1"), Dst: ap("192.0.2.2:2"), SSRC: 2}, 4, nil, packet.FrameRef{}, packet.OriginWire)
	if got := st.get(plain); got != nil {
		t.Fatalf("evicted stream: got %p, want nil", got)
	}
	if got, want := st.Stats().StreamsEvicted, uint64(1); got != want {
		t.Fatalf("got %d streams evicted, want %d", got, want)
	}
}

// TestReadersLeaveTheCacheAlone: readers hold only the read lock, so All
// and Each must not write the writer's cache (go test -race would see two
// readers write it at once).
func TestReadersLeaveTheCacheAlone(t *testing.T) {
	ap := netip.MustParseAddrPort
	st := NewStore(Config{})
	for i := 0; i < 64; i++ {
		st.newStream(Key{Src: ap("192.0.2.1:1"), Dst: ap("192.0.2.2:2"), SSRC: uint32(i)}, int64(i), nil, packet.FrameRef{}, packet.OriginWire)
	}
	*st.hot = [hotSlots]*stream{}
	done := make(chan struct{})
	for r := 0; r < 4; r++ {
		go func() {
			defer func() { done <- struct{}{} }()
			_ = st.All()
			_ = st.Each(func(*StreamInfo) error { return nil })
		}()
	}
	for r := 0; r < 4; r++ {
		<-done
	}
	for i, s := range st.hot {
		if s != nil {
			t.Fatalf("slot %d was filled by a reader", i)
		}
	}
}
