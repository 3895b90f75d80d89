package heplisten

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

const sipInvite = "INVITE sip:bob@example.com SIP/2.0\r\nCall-ID: hep-test-1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"

// hep3 builds a HEP3 message carrying a SIP payload (IPv4, UDP).
func hep3(payload string) []byte {
	var b bytes.Buffer
	chunk := func(typ uint16, val []byte) {
		var h [6]byte
		binary.BigEndian.PutUint16(h[2:], typ)
		binary.BigEndian.PutUint16(h[4:], uint16(6+len(val)))
		b.Write(h[:])
		b.Write(val)
	}
	u16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	b.WriteString("HEP3\x00\x00")
	chunk(1, []byte{2})            // IP family
	chunk(2, []byte{17})           // IP protocol
	chunk(3, []byte{192, 0, 2, 1}) // src IPv4
	chunk(4, []byte{192, 0, 2, 2}) // dst IPv4
	chunk(7, u16(5060))            // src port
	chunk(8, u16(5060))            // dst port
	chunk(9, u32(1700000000))      // seconds
	chunk(10, u32(0))              // microseconds
	chunk(11, []byte{1})           // protocol type SIP
	chunk(12, u32(2001))           // capture agent id
	chunk(15, []byte(payload))     // payload
	out := b.Bytes()
	binary.BigEndian.PutUint16(out[4:], uint16(len(out)))
	return out
}

// hep2 builds a HEP v2 datagram (IPv4) carrying a SIP payload.
func hep2(payload string) []byte {
	h := make([]byte, 28)
	h[0], h[1], h[2], h[3] = 2, 28, 2, 17
	binary.BigEndian.PutUint16(h[4:], 5060)
	binary.BigEndian.PutUint16(h[6:], 5060)
	copy(h[8:], []byte{192, 0, 2, 1})
	copy(h[12:], []byte{192, 0, 2, 2})
	binary.BigEndian.PutUint32(h[16:], 1700000000)
	return append(h, payload...)
}

// TestMain doubles as the sending process: the tests re-run this binary
// with HEP_HELPER set, so datagrams come from a separate process.
func TestMain(m *testing.M) {
	if mode := os.Getenv("HEP_HELPER"); mode != "" {
		if err := helper(mode, os.Getenv("HEP_TARGET"), os.Getenv("HEP_SOURCE"), os.Getenv("HEP_COUNT")); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helper(mode, target, source, countS string) error {
	count, _ := strconv.Atoi(countS)
	if count == 0 {
		count = 1
	}
	src := net.ParseIP(source)
	switch mode {
	case "udp3", "udp2", "udpjunk":
		raddr, err := net.ResolveUDPAddr("udp", target)
		if err != nil {
			return err
		}
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: src}, raddr)
		if err != nil {
			return err
		}
		defer c.Close()
		msg := hep3(sipInvite)
		if mode == "udp2" {
			msg = hep2(sipInvite)
		} else if mode == "udpjunk" {
			msg = []byte("GET / HTTP/1.0\r\n\r\n")
		}
		for i := 0; i < count; i++ {
			if _, err := c.Write(msg); err != nil {
				return err
			}
		}
		return nil
	case "tcp3", "tcp2":
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}}
		c, err := d.Dial("tcp", target)
		if err != nil {
			return err
		}
		defer c.Close()
		if mode == "tcp2" {
			_, err = c.Write(hep2(sipInvite))
		} else {
			// count messages: all but the last in one write, the last
			// split across two writes
			var all []byte
			for i := 0; i < count; i++ {
				all = append(all, hep3(sipInvite)...)
			}
			one := len(hep3(sipInvite))
			cut := len(all) - one/2
			if _, err = c.Write(all[:cut]); err == nil {
				time.Sleep(50 * time.Millisecond)
				_, err = c.Write(all[cut:])
			}
		}
		if err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
			return err // a refused connection is closed by the listener: expected
		}
		// wait for the listener to close or read everything
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		var b [1]byte
		_, _ = c.Read(b[:])
		return nil
	}
	return fmt.Errorf("unknown mode %q", mode)
}

func send(t *testing.T, mode string, target netip.AddrPort, source string, count int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HEP_HELPER="+mode, "HEP_TARGET="+target.String(), "HEP_SOURCE="+source, "HEP_COUNT="+strconv.Itoa(count))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper %s from %s: %v\n%s", mode, source, err, out)
	}
}

type recorder struct {
	mu   sync.Mutex
	pkts []recPkt
}

type recPkt struct {
	src, dst  netip.AddrPort
	transport packet.Transport
	origin    packet.Origin
	payload   []byte
	source    string
	ordinal   uint64
}

func (r *recorder) HandlePacket(p *packet.Packet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pkts = append(r.pkts, recPkt{src: p.Src, dst: p.Dst, transport: p.Transport, origin: p.Origin, payload: append([]byte(nil), p.Payload...), source: p.Frame.Source, ordinal: p.Frame.Ordinal})
}

func (r *recorder) snapshot() []recPkt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recPkt(nil), r.pkts...)
}

// waitFor polls the listener until cond holds (a deadline for failure, not
// a timing assertion).
func waitFor(t *testing.T, l *Listener, what string, cond func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := l.Stats()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: stats %+v", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAdmissionFromAnotherProcess(t *testing.T) {
	rec := &recorder{}
	l, err := Listen(context.Background(), Config{UDP: "127.0.0.1:0", TCP: "127.0.0.1:0", Allow: []string{"127.0.0.2", "127.0.0.16/30"}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	send(t, "udp3", l.UDPAddr(), "127.0.0.2", 1)
	send(t, "udp2", l.UDPAddr(), "127.0.0.17", 1)
	waitFor(t, l, "two UDP datagrams", func(s Stats) bool { return s.Received >= 2 })
	send(t, "tcp3", l.TCPAddr(), "127.0.0.2", 3)
	waitFor(t, l, "three TCP messages", func(s Stats) bool { return s.Received >= 5 })
	send(t, "udp3", l.UDPAddr(), "127.0.0.3", 2) // not allowed
	send(t, "udpjunk", l.UDPAddr(), "127.0.0.2", 1)
	send(t, "tcp2", l.TCPAddr(), "127.0.0.2", 1) // HEP2 cannot be framed on TCP
	send(t, "tcp3", l.TCPAddr(), "127.0.0.4", 1) // refused at accept
	s := waitFor(t, l, "all refusals", func(s Stats) bool {
		return s.Refused[ReasonNotAllowed] >= 3 && s.Refused[ReasonMalformed] >= 1 && s.Refused[ReasonHEP2OnTCP] >= 1
	})

	if s.Admitted != 5 {
		t.Fatalf("admitted %d, want 5 (1 HEP3 + 1 HEP2 over UDP, 3 HEP3 over TCP)", s.Admitted)
	}
	want := map[string]uint64{ReasonNotAllowed: 3, ReasonMalformed: 1, ReasonHEP2OnTCP: 1}
	for k, v := range want {
		if s.Refused[k] != v {
			t.Errorf("refused[%s] = %d, want %d", k, s.Refused[k], v)
		}
	}
	pkts := rec.snapshot()
	if len(pkts) != 5 {
		t.Fatalf("sink got %d packets, want 5", len(pkts))
	}
	h3, h2 := hep3(sipInvite), hep2(sipInvite)
	wantPk := []struct {
		src string
		tr  packet.Transport
		b   []byte
	}{
		{"127.0.0.2", packet.TransportUDP, h3},
		{"127.0.0.17", packet.TransportUDP, h2},
		{"127.0.0.2", packet.TransportTCP, h3},
		{"127.0.0.2", packet.TransportTCP, h3},
		{"127.0.0.2", packet.TransportTCP, h3},
	}
	for i, w := range wantPk {
		p := pkts[i]
		if p.src.Addr().String() != w.src || p.transport != w.tr || !bytes.Equal(p.payload, w.b) || p.origin != packet.OriginWire {
			t.Errorf("packet %d: got %v %v %d bytes origin %v, want %s %v %d bytes wire", i+1, p.src, p.transport, len(p.payload), p.origin, w.src, w.tr, len(w.b))
		}
		if p.ordinal != uint64(i+1) || p.source != "hep:"+l.UDPAddr().String() {
			t.Errorf("packet %d: got frame %s#%d", i+1, p.source, p.ordinal)
		}
		wantDst := l.UDPAddr()
		if w.tr == packet.TransportTCP {
			wantDst = l.TCPAddr()
		}
		if p.dst != wantDst {
			t.Errorf("packet %d: got dst %v, want %v", i+1, p.dst, wantDst)
		}
	}
	senders := l.Senders()
	if len(senders) != 2 {
		t.Fatalf("roster has %d senders, want 2", len(senders))
	}
	byAddr := map[string]Sender{}
	for _, s := range senders {
		byAddr[s.Addr.String()] = s
	}
	if s := byAddr["127.0.0.2"]; s.Packets != 4 || s.HEP3 != 4 || s.HEP2 != 0 {
		t.Errorf("sender 127.0.0.2: %+v, want 4 HEP3 packets", s)
	}
	if s := byAddr["127.0.0.17"]; s.Packets != 1 || s.HEP2 != 1 {
		t.Errorf("sender 127.0.0.17: %+v, want 1 HEP2 packet", s)
	}
	refused := map[string]RefusedSource{}
	for _, r := range l.RefusedSources() {
		refused[r.Addr.String()] = r
	}
	if r := refused["127.0.0.3"]; r.Count != 2 || r.Reasons[ReasonNotAllowed] != 2 {
		t.Errorf("refused 127.0.0.3: %+v, want 2 not_allowed", r)
	}
	if r := refused["127.0.0.4"]; r.Count != 1 || r.Reasons[ReasonNotAllowed] != 1 {
		t.Errorf("refused 127.0.0.4: %+v, want 1 not_allowed", r)
	}
	if r := refused["127.0.0.2"]; r.Reasons[ReasonMalformed] != 1 || r.Reasons[ReasonHEP2OnTCP] != 1 {
		t.Errorf("refused 127.0.0.2: %+v, want 1 malformed and 1 hep2_on_tcp", r)
	}
}

func TestPerPeerRateLimit(t *testing.T) {
	frozen := time.Unix(1700000000, 0)
	rec := &recorder{}
	l, err := Listen(context.Background(), Config{UDP: "127.0.0.1:0", PerPeerRate: 1, PerPeerBurst: 3, Now: func() time.Time { return frozen }}, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	send(t, "udp3", l.UDPAddr(), "127.0.0.5", 10)
	send(t, "udp2", l.UDPAddr(), "127.0.0.6", 2) // another peer has its own budget
	s := waitFor(t, l, "12 datagrams", func(s Stats) bool { return s.Received >= 12 })
	if s.Admitted != 5 || s.Refused[ReasonRateLimited] != 7 {
		t.Fatalf("admitted %d, rate_limited %d; want 5 and 7", s.Admitted, s.Refused[ReasonRateLimited])
	}
	if len(rec.snapshot()) != 5 {
		t.Fatalf("sink got %d packets, want 5", len(rec.snapshot()))
	}
}

func TestGlobalRateAndAuth(t *testing.T) {
	frozen := time.Unix(1700000000, 0)
	rec := &recorder{}
	auth := func(b []byte) bool { return bytes.Contains(b, []byte("Call-ID: hep-test-1")) }
	l, err := Listen(context.Background(), Config{UDP: "127.0.0.1:0", GlobalRate: 4, Authenticate: auth, Now: func() time.Time { return frozen }}, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	send(t, "udp3", l.UDPAddr(), "127.0.0.7", 6)
	s := waitFor(t, l, "6 datagrams", func(s Stats) bool { return s.Received >= 6 })
	if s.Admitted != 4 || s.Refused[ReasonGlobalRate] != 2 {
		t.Fatalf("admitted %d, global_rate %d; want 4 and 2", s.Admitted, s.Refused[ReasonGlobalRate])
	}
	l2, err := Listen(context.Background(), Config{UDP: "127.0.0.1:0", Authenticate: func([]byte) bool { return false }}, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	send(t, "udp3", l2.UDPAddr(), "127.0.0.7", 1)
	s = waitFor(t, l2, "1 datagram", func(s Stats) bool { return s.Received >= 1 })
	if s.Admitted != 0 || s.Refused[ReasonAuthFailed] != 1 {
		t.Fatalf("admitted %d, auth_failed %d; want 0 and 1", s.Admitted, s.Refused[ReasonAuthFailed])
	}
}

func TestListenRefusals(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"wildcard without allowlist", Config{UDP: "0.0.0.0:0"}, "without a source allowlist"},
		{"wildcard tcp without allowlist", Config{UDP: "127.0.0.1:0", TCP: ":0"}, "without a source allowlist"},
		{"bad allowlist entry", Config{UDP: "127.0.0.1:0", Allow: []string{"10.0.0.0/99"}}, "bad allowlist entry"},
		{"nothing to listen on", Config{}, "no UDP or TCP address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Listen(context.Background(), tc.cfg, &recorder{})
			if err == nil {
				l.Close()
				t.Fatal("got a listener, want a refusal")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q, want it to contain %q", err, tc.want)
			}
		})
	}
	// a wildcard bind with an allowlist is fine
	l, err := Listen(context.Background(), Config{UDP: "0.0.0.0:0", Allow: []string{"127.0.0.1"}}, &recorder{})
	if err != nil {
		t.Fatalf("wildcard with allowlist: %v", err)
	}
	l.Close()
}

// TestRosterFlood admits 50k unique senders and checks the roster cap after
// every datagram; then refuses 50k unique sources and checks that list's cap.
func TestRosterFlood(t *testing.T) {
	l, err := Listen(context.Background(), Config{UDP: "127.0.0.1:0", Allow: []string{"10.0.0.0/8"}, GlobalRate: -1}, packet.SinkFunc(func(*packet.Packet) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	msg := hep3(sipInvite)
	const flood = 50000
	for i := 0; i < flood; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		l.handle(msg, netip.AddrPortFrom(a, 9060), l.UDPAddr(), packet.TransportUDP)
		if s := l.Stats(); s.Senders > DefaultMaxSenders {
			t.Fatalf("after %d senders the roster holds %d, cap %d", i+1, s.Senders, DefaultMaxSenders)
		}
	}
	s := l.Stats()
	if s.Senders != DefaultMaxSenders || s.SendersEvicted != flood-DefaultMaxSenders || s.Admitted != flood {
		t.Fatalf("roster %d evicted %d admitted %d; want %d, %d, %d", s.Senders, s.SendersEvicted, s.Admitted, DefaultMaxSenders, flood-DefaultMaxSenders, flood)
	}
	for i := 0; i < flood; i++ {
		a := netip.AddrFrom4([4]byte{172, byte(i >> 16), byte(i >> 8), byte(i)})
		l.handle(msg, netip.AddrPortFrom(a, 9060), l.UDPAddr(), packet.TransportUDP)
		if s := l.Stats(); s.RefusedSources > DefaultMaxRefused {
			t.Fatalf("after %d refused sources the list holds %d, cap %d", i+1, s.RefusedSources, DefaultMaxRefused)
		}
	}
	s = l.Stats()
	if s.RefusedSources != DefaultMaxRefused || s.RefusedEvicted != flood-DefaultMaxRefused || s.Refused[ReasonNotAllowed] != flood {
		t.Fatalf("refused list %d evicted %d not_allowed %d", s.RefusedSources, s.RefusedEvicted, s.Refused[ReasonNotAllowed])
	}
	if got := len(l.RefusedSources()); got != DefaultMaxRefused {
		t.Fatalf("RefusedSources() has %d entries", got)
	}
}

func TestHEPShape(t *testing.T) {
	h3 := hep3(sipInvite)
	long := append(append([]byte(nil), h3...), 0)
	cases := []struct {
		name    string
		b       []byte
		wantVer int
	}{
		{"hep3", h3, 3},
		{"hep2", hep2(sipInvite), 2},
		{"hep3 length larger than datagram", h3[:len(h3)-1], 0},
		{"hep3 length smaller than datagram", long, 0},
		{"hep3 header only with length 3", []byte("HEP3\x00\x03"), 0},
		{"sip", []byte(sipInvite), 0},
		{"short", []byte{2, 28}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := hepVersion(tc.b)
			if got != tc.wantVer || (got == 0) != (reason != "") {
				t.Fatalf("got version %d reason %q, want %d", got, reason, tc.wantVer)
			}
		})
	}
}

// FuzzFramer feeds arbitrary TCP streams to the HEP3 framer: it must end on
// a framing error or the end of the stream, never panic, and every message
// it yields must carry its own length.
func FuzzFramer(f *testing.F) {
	f.Add(append(hep3(sipInvite), hep3("x")...))
	f.Add(hep2(sipInvite))
	f.Add([]byte("HEP3\x00\x06HEP3\x00\x05"))
	f.Add([]byte("HEP3\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := newFramer(bytes.NewReader(b), nil)
		total := 0
		for {
			msg, _, err := fr.next()
			if err != nil {
				return
			}
			if len(msg) < 6 || int(binary.BigEndian.Uint16(msg[4:6])) != len(msg) {
				t.Fatalf("message of %d bytes with length field %d", len(msg), binary.BigEndian.Uint16(msg[4:6]))
			}
			total += len(msg)
			if total > len(b) {
				t.Fatalf("framed %d bytes out of %d", total, len(b))
			}
		}
	})
}

// TestAdmissionSaysWhatTheListenerChecks: Admission reports the
// authentication hook and the allowlist as configured, which is what
// every admitted datagram passed (explain_attribution reads it).
func TestAdmissionSaysWhatTheListenerChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want Admission
	}{
		{"loopback, nothing", Config{UDP: "127.0.0.1:0"}, Admission{}},
		{"allowlist", Config{UDP: "127.0.0.1:0", Allow: []string{"127.0.0.0/8"}}, Admission{Allowlisted: true}},
		{"authentication", Config{UDP: "127.0.0.1:0", Authenticate: func([]byte) bool { return true }}, Admission{Authenticated: true}},
		{"both", Config{UDP: "127.0.0.1:0", Allow: []string{"127.0.0.1"}, Authenticate: func([]byte) bool { return true }}, Admission{Authenticated: true, Allowlisted: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Listen(context.Background(), tc.cfg, &recorder{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := l.Admission(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
