package ratelimit

import (
	"net/netip"
	"sync"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock                   { return &fakeClock{t: time.Unix(1700000000, 0)} }
func addr(s string) netip.Addr               { return netip.MustParseAddr(s) }
func allowN(l *Limiter, a netip.Addr, n int) int {
	got := 0
	for i := 0; i < n; i++ {
		if l.Allow(a) {
			got++
		}
	}
	return got
}

func TestLimiterBucket(t *testing.T) {
	cases := []struct {
		name       string
		rate       float64
		burst      int
		first      int // attempts at t0
		wantFirst  int
		wait       time.Duration
		second     int
		wantSecond int
	}{
		{name: "burst then refill one second", rate: 10, burst: 5, first: 8, wantFirst: 5, wait: time.Second, second: 20, wantSecond: 5},
		{name: "default burst is rate", rate: 100, first: 150, wantFirst: 100, wait: 100 * time.Millisecond, second: 50, wantSecond: 10},
		{name: "fractional rate rounds burst up", rate: 2.5, first: 5, wantFirst: 3, wait: 400 * time.Millisecond, second: 5, wantSecond: 1},
		{name: "no refill without time", rate: 1, burst: 1, first: 3, wantFirst: 1, wait: 0, second: 3, wantSecond: 0},
		{name: "zero rate never refuses", rate: 0, first: 1000, wantFirst: 1000, wait: 0, second: 10, wantSecond: 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			l := New(Config{Rate: tc.rate, Burst: tc.burst, Now: c.now})
			a := addr("192.0.2.1")
			if got := allowN(l, a, tc.first); got != tc.wantFirst {
				t.Fatalf("first round allowed %d, want %d", got, tc.wantFirst)
			}
			c.advance(tc.wait)
			if got := allowN(l, a, tc.second); got != tc.wantSecond {
				t.Fatalf("second round allowed %d, want %d", got, tc.wantSecond)
			}
			st := l.Stats()
			wantRefused := uint64(tc.first - tc.wantFirst + tc.second - tc.wantSecond)
			if st.Refused != wantRefused || l.Refused() != wantRefused {
				t.Fatalf("refused %d (Refused() %d), want %d", st.Refused, l.Refused(), wantRefused)
			}
			if st.Allowed != uint64(tc.wantFirst+tc.wantSecond) {
				t.Fatalf("allowed %d, want %d", st.Allowed, tc.wantFirst+tc.wantSecond)
			}
		})
	}
}

func TestLimiterPerAddressNotSocket(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 1, Burst: 2, Now: c.now})
	// the same peer through an IPv4-mapped IPv6 socket address shares the bucket
	if !l.Allow(addr("198.51.100.7")) || !l.Allow(addr("::ffff:198.51.100.7")) {
		t.Fatal("first two events refused, want allowed")
	}
	if l.Allow(addr("198.51.100.7")) {
		t.Fatal("third event allowed, want refused (mapped address must share the bucket)")
	}
	// another peer has its own bucket
	if !l.Allow(addr("198.51.100.8")) {
		t.Fatal("other peer refused, want allowed")
	}
	if got := l.Stats().Peers; got != 2 {
		t.Fatalf("peers %d, want 2", got)
	}
}

// TestLimiterFloodCap floods the peer table with 50k unique addresses and
// checks the cap after every insertion.
func TestLimiterFloodCap(t *testing.T) {
	const maxPeers = 4096
	const flood = 50000
	c := newClock()
	l := New(Config{Rate: 1, Burst: 1, MaxPeers: maxPeers, Now: c.now})
	victim := addr("203.0.113.1")
	if !l.Allow(victim) {
		t.Fatal("victim's first event refused")
	}
	for i := 0; i < flood; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if !l.Allow(a) {
			t.Fatalf("new peer %v refused, want a full bucket", a)
		}
		st := l.Stats()
		if st.Peers > maxPeers {
			t.Fatalf("after %d peers the table holds %d, cap %d", i+1, st.Peers, maxPeers)
		}
	}
	st := l.Stats()
	if st.Peers != maxPeers {
		t.Fatalf("peers %d, want %d", st.Peers, maxPeers)
	}
	if want := uint64(flood + 1 - maxPeers); st.Evicted != want {
		t.Fatalf("evicted %d, want %d", st.Evicted, want)
	}
	// the most recent peer is still remembered: its bucket is empty
	n := flood - 1
	last := netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)})
	if l.Allow(last) {
		t.Fatal("most recent peer allowed a second event, want refused (it must still be remembered)")
	}
}

func TestBucket(t *testing.T) {
	c := newClock()
	b := NewBucket(1000, 10, c.now)
	got := 0
	for i := 0; i < 25; i++ {
		if b.Allow() {
			got++
		}
	}
	if got != 10 {
		t.Fatalf("allowed %d, want 10", got)
	}
	c.advance(5 * time.Millisecond)
	got = 0
	for i := 0; i < 25; i++ {
		if b.Allow() {
			got++
		}
	}
	if got != 5 {
		t.Fatalf("after 5 ms allowed %d, want 5", got)
	}
	if b.Refused() != 35 {
		t.Fatalf("refused %d, want 35", b.Refused())
	}
}

func TestLimiterConcurrent(t *testing.T) {
	l := New(Config{Rate: 1e9, MaxPeers: 16})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				l.Allow(netip.AddrFrom4([4]byte{127, 0, byte(g), byte(i % 40)}))
			}
		}(g)
	}
	wg.Wait()
	st := l.Stats()
	if st.Allowed+st.Refused != 8000 {
		t.Fatalf("allowed+refused %d, want 8000", st.Allowed+st.Refused)
	}
	if st.Peers > 16 {
		t.Fatalf("peers %d, cap 16", st.Peers)
	}
}
