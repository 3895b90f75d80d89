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
