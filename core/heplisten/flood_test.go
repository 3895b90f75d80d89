package heplisten

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// slowSink is a sink that takes its time, so a UDP flood overruns the
// socket's receive buffer and the kernel drops datagrams.
type slowSink struct {
	mu   sync.Mutex
	n    uint64
	d    time.Duration
	gate chan struct{} // when set, the first packet waits for it to close
}

func (s *slowSink) HandlePacket(*packet.Packet) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	if s.d > 0 && n%64 == 0 {
		time.Sleep(s.d)
	}
}

func (s *slowSink) count() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestUDPFloodEveryDatagramIsAccounted: a flood over UDP from two
// sources. Every datagram sent is either received (then admitted or
// refused, by reason) or dropped by the kernel at a full receive buffer and
// counted from SO_RXQ_OVFL: sent = admitted + refused + kernel drops,
// exactly. One case spends the rate budgets, one blocks the sink until the
// whole flood is sent so the receive buffer overflows.
func TestUDPFloodEveryDatagramIsAccounted(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		blockSink  bool
		wantReason []string // refusal reasons that must appear
		wantKernel bool     // kernel drops must appear
	}{
		{"rate budgets spent", Config{GlobalRate: 3000, PerPeerRate: 2000, PerPeerBurst: 500}, false, []string{ReasonGlobalRate}, false},
		{"receive buffer overflows", Config{GlobalRate: -1}, true, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &slowSink{}
			if tc.blockSink {
				sink.gate = make(chan struct{})
			}
			cfg := tc.cfg
			cfg.UDP = "127.0.0.1:0"
			l, err := Listen(context.Background(), cfg, sink)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			msg := hep3(sipInvite)
			const perSource = 20000
			var wg sync.WaitGroup
			for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(src)}, net.UDPAddrFromAddrPort(l.UDPAddr()))
					if err != nil {
						t.Error(err)
						return
					}
					defer c.Close()
					for i := 0; i < perSource; i++ {
						if _, err := c.Write(msg); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if sink.gate != nil {
				close(sink.gate)
			}
			sent := uint64(2 * perSource)
			// The kernel reports its drops with the next datagram read:
			// once the flood is drained, one more datagram carries the
			// final count.
			prev := l.Stats().Received
			for {
				time.Sleep(100 * time.Millisecond)
				s := l.Stats()
				if s.Received == prev {
					break
				}
				prev = s.Received
			}
			c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(l.UDPAddr()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			c.Close()
			sent++
			// Received is counted as a datagram is read, before it is
			// admitted or refused: wait for the closing datagram to be
			// read and every datagram read to be decided, or a loaded box
			// reads the counters between the two.
			s := waitFor(t, l, "the closing datagram", func(s Stats) bool {
				return s.Received+derefU(s.KernelDropped) >= sent && s.Received == s.Admitted+s.RefusedTotal()
			})
			if s.KernelDropped == nil {
				t.Skip("this kernel does not report receive-buffer drops (SO_RXQ_OVFL)")
			}
			if got := s.Admitted + s.RefusedTotal() + *s.KernelDropped; got != sent {
				t.Errorf("sent %d, accounted %d (admitted %d + refused %v + kernel dropped %d)", sent, got, s.Admitted, s.Refused, *s.KernelDropped)
			}
			if s.Received != s.Admitted+s.RefusedTotal() {
				t.Errorf("received %d != admitted %d + refused %d", s.Received, s.Admitted, s.RefusedTotal())
			}
			for _, r := range tc.wantReason {
				if s.Refused[r] == 0 {
					t.Errorf("no %s refusal: %v", r, s.Refused)
				}
			}
			if tc.wantKernel && *s.KernelDropped == 0 {
				t.Errorf("a blocked sink under a %d-datagram flood yet no kernel drop counted", sent)
			}
			if s.Lost() != s.Refused[ReasonGlobalRate]+s.Refused[ReasonRateLimited]+*s.KernelDropped {
				t.Errorf("Lost() = %d, stats %+v", s.Lost(), s)
			}
			waitSink(t, sink, s.Admitted)
			t.Logf("sent %d: admitted %d, refused %v, kernel dropped %d", sent, s.Admitted, s.Refused, *s.KernelDropped)
		})
	}
}

// waitSink waits until the sink has every admitted packet (admission is
// counted just before delivery).
func waitSink(t *testing.T, s *slowSink, want uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.count() != want {
		if time.Now().After(deadline) {
			t.Fatalf("sink got %d, want %d", s.count(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func derefU(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestTCPFloodIsThrottledNeverDropped: over TCP a message above the budget
// waits (TCP's flow control slows the sender) instead of being refused:
// every message sent is delivered, and the wait is counted.
func TestTCPFloodIsThrottledNeverDropped(t *testing.T) {
	sink := &slowSink{}
	l, err := Listen(context.Background(), Config{TCP: "127.0.0.1:0", GlobalRate: 2000, PerPeerRate: 1500, PerPeerBurst: 100}, sink)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 1500
	var all []byte
	for i := 0; i < n; i++ {
		all = append(all, hep3(sipInvite)...)
	}
	c, err := net.Dial("tcp", l.TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(all); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, l, "every TCP message", func(s Stats) bool { return s.Admitted >= n })
	if s.Admitted != n || s.RefusedTotal() != 0 {
		t.Errorf("admitted %d of %d, refused %v: TCP must not be rate-dropped", s.Admitted, n, s.Refused)
	}
	if s.TCPThrottled == 0 || s.TCPThrottledMS == 0 {
		t.Errorf("1,500 messages at once against a 100-message per-peer burst were not throttled: %+v", s)
	}
	waitSink(t, sink, n)
}

// TestIdleConnectionsCannotShutOutALiveSender: at the connection cap, the
// connection silent longest (past ReapIdleAfter) is closed to admit a new
// sender; a connection that keeps sending is never the one closed; when
// every connection is live, a new one is refused and counted.
func TestIdleConnectionsCannotShutOutALiveSender(t *testing.T) {
	sink := &slowSink{}
	l, err := Listen(context.Background(), Config{TCP: "127.0.0.1:0", MaxConns: 2, ReapIdleAfter: 300 * time.Millisecond}, sink)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	msg := hep3(sipInvite)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", l.TCPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	idle := dial()
	if _, err := idle.Write(msg); err != nil {
		t.Fatal(err)
	}
	live := dial()
	waitFor(t, l, "two connections", func(s Stats) bool { return s.TCPConns == 2 && s.Admitted == 1 })
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the live sender: a message every 50 ms
		defer close(done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				if _, err := live.Write(msg); err != nil {
					t.Errorf("live sender: %v", err)
					return
				}
			}
		}
	}()
	time.Sleep(500 * time.Millisecond) // the idle connection passes ReapIdleAfter
	newcomer := dial()
	if _, err := newcomer.Write(msg); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, l, "the newcomer's message", func(s Stats) bool { return s.TCPIdleReaped == 1 && s.TCPAccepted == 3 })
	if s.Refused[ReasonTooManyConns] != 0 {
		t.Errorf("a connection was refused while an idle one held a slot: %v", s.Refused)
	}
	_ = idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	var b [1]byte
	if _, err := idle.Read(b[:]); err == nil {
		t.Error("the idle connection is still open")
	}
	// Both remaining connections are live now: a fourth is refused.
	go func() {
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for i := 0; i < 20; i++ {
			<-tk.C
			_, _ = newcomer.Write(msg)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	extra := dial()
	_ = extra.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := extra.Read(b[:]); err == nil {
		t.Error("a connection past the cap was not closed")
	}
	s = waitFor(t, l, "the refusal", func(s Stats) bool { return s.Refused[ReasonTooManyConns] == 1 })
	if s.TCPIdleReaped != 1 {
		t.Errorf("idle reaped %d, want 1 (live connections are never reaped)", s.TCPIdleReaped)
	}
	close(stop)
	<-done
	if l.Stats().TCPConns != 2 {
		t.Errorf("open connections %d, want 2", l.Stats().TCPConns)
	}
}
