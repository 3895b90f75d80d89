package media

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sdp"
)

// TestMergeKeepsEveryCounter feeds one store every packet and two shards
// the packets of their host pair (every SDP to both, as the router does),
// with flows still in probation and endpoints evicted at the cap, and wants
// the merged shards to report the single store's streams and counters.
func TestMergeKeepsEveryCounter(t *testing.T) {
	cfg := Config{MaxEndpoints: 2}
	single := NewStore(cfg)
	shards := []*Store{NewStore(cfg), NewStore(cfg)}
	all := append([]*Store{single}, shards...)
	offer := func(callID string, port int) {
		s, err := sdp.Parse([]byte(fmt.Sprintf("v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio %d RTP/AVP 0\r\n", port)))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range all {
			st.OnSDP(callID, t0, s, true, epA)
		}
	}
	// Three endpoints under a cap of two: one is evicted in every store.
	offer("a", 4000)
	offer("b", 4002)
	offer("c", 4004)
	send := func(shard int, src, dst netip.AddrPort, seq uint16, ssrc uint32) {
		p := udp(src, dst, t0.Add(time.Duration(seq)*20*time.Millisecond), rtpPkt(0, false, seq, uint32(seq)*160, ssrc, make([]byte, 160)))
		single.Observe(p)
		shards[shard].Observe(p)
	}
	// A signaled stream on shard 0, an orphan on shard 1, and one
	// unsignaled flow per shard still in probation (two packets of three).
	for seq := uint16(1); seq <= 5; seq++ {
		send(0, netip.MustParseAddrPort("10.0.0.9:7000"), netip.MustParseAddrPort("10.0.0.1:4004"), seq, 1)
		send(1, netip.MustParseAddrPort("10.1.0.1:7000"), netip.MustParseAddrPort("10.1.0.2:7002"), seq, 2)
	}
	for seq := uint16(1); seq <= 2; seq++ {
		send(0, netip.MustParseAddrPort("10.0.0.9:7100"), netip.MustParseAddrPort("10.0.0.8:7102"), seq, 3)
		send(1, netip.MustParseAddrPort("10.2.0.1:7100"), netip.MustParseAddrPort("10.2.0.2:7102"), seq, 4)
	}
	merged := NewStore(cfg)
	merged.Merge(shards...)
	want, got := single.Stats(), merged.Stats()
	if want.Candidates != 2 || want.EndpointsEvicted != 1 || want.Streams != 2 || want.OrphanedStreams != 1 {
		t.Fatalf("the single store does not hold the case the test means: %+v", want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged counters:\n got %+v\nwant %+v", got, want)
	}
	g, _ := json.Marshal(merged.All())
	w, _ := json.Marshal(single.All())
	if string(g) != string(w) {
		t.Fatalf("merged streams differ:\n got %s\nwant %s", g, w)
	}
}

// TestMergeIntoAnEmptyStoreAdoptsTheLargest: merged into an empty store,
// the largest shard's tables are taken whole and the rest merged into
// them; whether one shard saw every packet or two shared them, the result
// (and the store's behaviour on the packets that follow) equals one store
// fed every packet.
func TestMergeIntoAnEmptyStoreAdoptsTheLargest(t *testing.T) {
	flows := []struct {
		src, dst string
		ssrc     uint32
		packets  uint16
	}{
		{"10.0.0.9:7000", "10.0.0.1:4004", 1, 5}, // signaled
		{"10.1.0.1:7000", "10.1.0.2:7002", 2, 5}, // orphan
		{"10.0.0.9:7100", "10.0.0.8:7102", 3, 2}, // in probation
		{"10.2.0.1:7100", "10.2.0.2:7102", 4, 2}, // in probation
	}
	for _, tc := range []struct {
		name  string
		shard []int // flows[i] goes to shard[i]
	}{
		{"one shard saw everything", []int{0, 0, 0, 0}},
		{"two shards, the larger adopted", []int{0, 1, 0, 0}},
		{"two shards, the larger second", []int{1, 1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{MaxEndpoints: 2}
			single := NewStore(cfg)
			shards := []*Store{NewStore(cfg), NewStore(cfg)}
			s, err := sdp.Parse([]byte("v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 4004 RTP/AVP 0\r\n"))
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range append([]*Store{single}, shards...) {
				st.OnSDP("a", t0, s, true, epA)
			}
			send := func(st *Store, i int, seq uint16) {
				f := flows[i]
				st.Observe(udp(netip.MustParseAddrPort(f.src), netip.MustParseAddrPort(f.dst),
					t0.Add(time.Duration(seq)*20*time.Millisecond), rtpPkt(0, false, seq, uint32(seq)*160, f.ssrc, make([]byte, 160))))
			}
			for i, f := range flows {
				for seq := uint16(1); seq <= f.packets; seq++ {
					send(single, i, seq)
					send(shards[tc.shard[i]], i, seq)
				}
			}
			merged := NewStore(cfg)
			merged.Merge(shards...)
			same := func(when string) {
				t.Helper()
				if g, w := merged.Stats(), single.Stats(); !reflect.DeepEqual(g, w) {
					t.Fatalf("%s: merged counters:\n got %+v\nwant %+v", when, g, w)
				}
				g, _ := json.Marshal(merged.All())
				w, _ := json.Marshal(single.All())
				if string(g) != string(w) {
					t.Fatalf("%s: merged streams differ:\n got %s\nwant %s", when, g, w)
				}
			}
			same("after the merge")
			if merged.Stats().Streams != 2 || merged.Stats().Candidates != 2 {
				t.Fatalf("the case is not the one meant: %+v", merged.Stats())
			}
			// the probation flows' third packets promote them on both
			for i := 2; i < 4; i++ {
				send(single, i, 3)
				send(merged, i, 3)
			}
			same("after more packets")
			if merged.Stats().Streams != 4 {
				t.Fatalf("probation flows were not promoted: %+v", merged.Stats())
			}
		})
	}
}

// TestMergeIntoAStoreHoldingStreamsDoesNotAdopt: a store that already holds
// a stream keeps it, and the others' streams are added beside it.
func TestMergeIntoAStoreHoldingStreamsDoesNotAdopt(t *testing.T) {
	st, other := NewStore(Config{}), NewStore(Config{})
	for seq := uint16(1); seq <= 5; seq++ {
		ts := t0.Add(time.Duration(seq) * 20 * time.Millisecond)
		st.Observe(udp(netip.MustParseAddrPort("10.1.0.1:7000"), netip.MustParseAddrPort("10.1.0.2:7002"), ts, rtpPkt(0, false, seq, uint32(seq)*160, 1, make([]byte, 160))))
		other.Observe(udp(netip.MustParseAddrPort("10.3.0.1:7000"), netip.MustParseAddrPort("10.3.0.2:7002"), ts, rtpPkt(0, false, seq, uint32(seq)*160, 2, make([]byte, 160))))
	}
	st.Merge(other)
	if got := st.Stats(); got.Streams != 2 || got.RTPPackets != 10 {
		t.Fatalf("got %+v, want 2 streams of 10 RTP packets", got)
	}
}

// TestMergeDoesNotAdoptAStoreOfOtherCaps: an empty store merging a store
// configured with a larger stream cap copies its streams under its own cap
// (evicting and counting) instead of taking the other's tables whole.
func TestMergeDoesNotAdoptAStoreOfOtherCaps(t *testing.T) {
	st, other := NewStore(Config{MaxStreams: 1}), NewStore(Config{MaxStreams: 4})
	for seq := uint16(1); seq <= 5; seq++ {
		ts := t0.Add(time.Duration(seq) * 20 * time.Millisecond)
		for i, src := range []string{"10.1.0.1:7000", "10.3.0.1:7000"} {
			other.Observe(udp(netip.MustParseAddrPort(src), netip.MustParseAddrPort("10.1.0.2:7002"), ts, rtpPkt(0, false, seq, uint32(seq)*160, uint32(i+1), make([]byte, 160))))
		}
	}
	st.Merge(other)
	if got := st.Stats(); got.Streams != 1 || got.StreamsEvicted != 1 {
		t.Fatalf("got %d streams, %d evicted; want 1 kept under the cap of 1 and 1 evicted", got.Streams, got.StreamsEvicted)
	}
}
