package media

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sdp"
)

// announce is one SDP media line: callID names addr at t0+at.
type announce struct {
	callID string
	addr   netip.AddrPort
	at     time.Duration
	offer  bool
}

func sdpAt(st *Store, a announce) {
	s := &sdp.Session{Conn: a.addr.Addr().String(), Media: []sdp.Media{{Type: "audio", Port: int(a.addr.Port()), Formats: []sdp.Format{{PayloadType: 0}}}}}
	st.OnSDP(a.callID, t0.Add(a.at), s, a.offer, a.addr)
}

// TestSharedEndpoints checks streams whose two ends the SDP of two dialogs
// named (a B2BUA handing its endpoints direct media, as b2bua-asterisk.pcapng
// does): the stream belongs to both dialogs. The code before bound it to
// the dialog that announced the address last, and the other leg read no
// media. A later dialog taking an address over after the window does not
// share it.
func TestSharedEndpoints(t *testing.T) {
	phone1 := netip.MustParseAddrPort("172.16.98.1:8000")
	phone2 := netip.MustParseAddrPort("172.16.98.145:8000")
	pbx := netip.MustParseAddrPort("172.16.98.101:18010")
	// The order of b2bua-asterisk.pcapng frames 35, 37, 38, 41 (leg B
	// offers phone1, leg A offers phone2, leg A answers phone1, leg B
	// answers phone2), at its offsets.
	direct := []announce{
		{"legB", phone1, 0, true},
		{"legA", phone2, 7 * time.Millisecond, true},
		{"legA", phone1, 30 * time.Millisecond, false},
		{"legB", phone2, 187 * time.Millisecond, false},
	}
	type flow struct {
		src, dst netip.AddrPort
		ssrc     uint32
		at       time.Duration // first packet
		n        int
	}
	cases := []struct {
		name     string
		sdps     []announce
		flows    []flow
		wantFor  map[string][]uint32 // Call-ID → SSRCs StreamsFor lists
		wantEPs  map[string]int      // Call-ID → len(EndpointsFor)
		wantSide map[uint32][]string // SSRC → shared_with
	}{
		{
			name: "b2bua direct media, stream after both answers",
			sdps: direct,
			flows: []flow{
				{phone2, phone1, 0x6ab21e82, 500 * time.Millisecond, 355},
			},
			wantFor:  map[string][]uint32{"legA": {0x6ab21e82}, "legB": {0x6ab21e82}},
			wantEPs:  map[string]int{"legA": 2, "legB": 2},
			wantSide: map[uint32][]string{0x6ab21e82: {"legB"}},
		},
		{
			// b2bua-asterisk.pcapng's 0x44830d58 arrives between frames 38
			// and 41: it joins leg B when leg B's answer names phone2.
			name: "stream before the second leg's answer joins it",
			sdps: direct,
			flows: []flow{
				{phone1, phone2, 0x44830d58, 100 * time.Millisecond, 1},
			},
			wantFor:  map[string][]uint32{"legA": {0x44830d58}, "legB": {0x44830d58}},
			wantEPs:  map[string]int{"legA": 2, "legB": 2},
			wantSide: map[uint32][]string{0x44830d58: {"legB"}},
		},
		{
			name: "a stream to an address only one leg named is not shared",
			sdps: append(append([]announce(nil), direct...), announce{"legB", pbx, 300 * time.Millisecond, true}),
			flows: []flow{
				{phone2, pbx, 0x1111, 400 * time.Millisecond, 5},
			},
			wantFor: map[string][]uint32{"legA": nil, "legB": {0x1111}},
			wantEPs: map[string]int{"legA": 2, "legB": 3},
		},
		{
			// A port reused by a later call 30 s on: the new call takes
			// the address, the old one keeps nothing of it.
			name: "port reused after the window is taken over",
			sdps: []announce{
				{"old", phone1, 0, true},
				{"old", phone2, 10 * time.Millisecond, false},
				{"new", phone1, 30 * time.Second, true},
				{"new", phone2, 30*time.Second + 10*time.Millisecond, false},
			},
			flows: []flow{
				{phone1, phone2, 0x2222, 31 * time.Second, 10},
			},
			wantFor: map[string][]uint32{"old": nil, "new": {0x2222}},
			wantEPs: map[string]int{"old": 0, "new": 2},
		},
		{
			name: "one dialog re-announcing is not sharing",
			sdps: []announce{
				{"c", phone1, 0, true},
				{"c", phone2, 10 * time.Millisecond, false},
				{"c", phone1, 20 * time.Millisecond, true},
			},
			flows: []flow{
				{phone1, phone2, 0x3333, 100 * time.Millisecond, 3},
			},
			wantFor: map[string][]uint32{"c": {0x3333}},
			wantEPs: map[string]int{"c": 2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, merged := range []bool{false, true} {
				st := NewStore(Config{})
				feed := st
				if merged {
					feed = NewStore(Config{})
				}
				// SDP and packets in time order.
				fi, pi := 0, 0
				for fi < len(tc.sdps) || pi < len(tc.flows) {
					if pi == len(tc.flows) || (fi < len(tc.sdps) && tc.sdps[fi].at <= tc.flows[pi].at) {
						sdpAt(feed, tc.sdps[fi])
						fi++
						continue
					}
					f := tc.flows[pi]
					for i := 0; i < f.n; i++ {
						at := t0.Add(f.at + time.Duration(i)*20*time.Millisecond)
						feed.Observe(udp(f.src, f.dst, at, rtpPkt(0, false, uint16(i+1), uint32(160*i), f.ssrc, make([]byte, 160))))
					}
					pi++
				}
				if merged {
					st.Merge(feed)
				}
				for id, want := range tc.wantFor {
					var got []uint32
					for _, s := range st.StreamsFor(id) {
						var x uint32
						fmt.Sscanf(s.SSRC, "0x%x", &x)
						got = append(got, x)
					}
					if !slices.Equal(got, want) {
						t.Errorf("merged %v: StreamsFor(%s): got %x, want %x", merged, id, got, want)
					}
				}
				for id, want := range tc.wantEPs {
					if got := len(st.EndpointsFor(id)); got != want {
						t.Errorf("merged %v: EndpointsFor(%s): got %d, want %d", merged, id, got, want)
					}
				}
				for _, s := range st.All() {
					var x uint32
					fmt.Sscanf(s.SSRC, "0x%x", &x)
					if !slices.Equal(s.SharedWith, tc.wantSide[x]) {
						t.Errorf("merged %v: %s shared_with: got %v, want %v", merged, s.SSRC, s.SharedWith, tc.wantSide[x])
					}
				}
			}
		})
	}
}

// TestSharedEndpointFlood announces one address from 50k Call-IDs inside
// the window: an address keeps at most maxSharers other dialogs, the
// announcements listed per dialog stay bounded, and a stream between two
// such addresses is listed under at most 1+maxSharers dialogs.
func TestSharedEndpointFlood(t *testing.T) {
	a := netip.MustParseAddrPort("192.0.2.1:4000")
	b := netip.MustParseAddrPort("192.0.2.2:4000")
	st := NewStore(Config{MaxEndpoints: 100})
	for i := 0; i < 50000; i++ {
		id := fmt.Sprintf("flood-%d", i)
		at := time.Duration(i) * time.Microsecond
		sdpAt(st, announce{id, a, at, true})
		sdpAt(st, announce{id, b, at, false})
		if i%97 == 0 {
			st.Observe(udp(a, b, t0.Add(at), rtpPkt(0, false, uint16(i), uint32(i), uint32(i), make([]byte, 20))))
		}
		st.mu.RLock()
		for _, addr := range []netip.AddrPort{a, b} {
			if n := len(st.eps.get(addr).sharers); n > maxSharers {
				t.Fatalf("step %d: %v has %d sharers, cap %d", i, addr, n, maxSharers)
			}
		}
		n := 0
		for _, l := range st.epByCall {
			n += len(l.l)
		}
		if n > 2*(1+maxSharers) {
			t.Fatalf("step %d: %d announcements listed, want at most %d", i, n, 2*(1+maxSharers))
		}
		st.mu.RUnlock()
	}
	for _, s := range st.All() {
		if len(s.SharedWith) > maxSharers {
			t.Errorf("%s: shared with %d dialogs, cap %d", s.SSRC, len(s.SharedWith), maxSharers)
		}
	}
}

// TestLastPacketAt checks the store's latest packet time: the latest
// arrival among the packets it took (not the last one offered), zero when
// it took none, the latest of the shards after a merge.
func TestLastPacketAt(t *testing.T) {
	rtpAt := func(st *Store, ms int, seq uint16) bool {
		return st.Observe(udp(epA, epB, t0.Add(time.Duration(ms)*time.Millisecond), rtpPkt(0, false, seq, uint32(seq)*160, 9, make([]byte, 160))))
	}
	cases := []struct {
		name string
		feed func(st *Store)
		want time.Duration // after t0; -1: zero time
	}{
		{"nothing taken", func(st *Store) {}, -1},
		{"not media", func(st *Store) {
			st.Observe(udp(epA, epB, t0.Add(time.Second), []byte("hello, not rtp")))
		}, -1},
		{"in order", func(st *Store) {
			for i := 0; i < 5; i++ {
				rtpAt(st, 20*i, uint16(i))
			}
		}, 80 * time.Millisecond},
		{"a late arrival stamped earlier does not move it back", func(st *Store) {
			for i := 0; i < 5; i++ {
				rtpAt(st, 20*i, uint16(i))
			}
			rtpAt(st, 10, 5)
		}, 80 * time.Millisecond},
		{"a rejected datagram after the media does not count", func(st *Store) {
			for i := 0; i < 3; i++ {
				rtpAt(st, 20*i, uint16(i))
			}
			st.Observe(udp(epB, epA, t0.Add(time.Minute), []byte{0x00, 0x01}))
		}, 40 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Config{})
			tc.feed(st)
			want := time.Time{}
			if tc.want >= 0 {
				want = t0.Add(tc.want)
			}
			if got := st.LastPacketAt(); !got.Equal(want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	a, b := NewStore(Config{}), NewStore(Config{})
	rtpAt(a, 0, 1)
	rtpAt(a, 20, 2)
	rtpAt(a, 40, 3)
	b.Observe(udp(epB, epA, t0.Add(3*time.Second), rtpPkt(0, false, 1, 0, 10, make([]byte, 160))))
	m := NewStore(Config{})
	m.Merge(a, b)
	if got, want := m.LastPacketAt(), t0.Add(3*time.Second); !got.Equal(want) {
		t.Errorf("merged: got %v, want %v", got, want)
	}
}
