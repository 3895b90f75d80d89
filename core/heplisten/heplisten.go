// Package heplisten receives HEP (Homer encapsulation protocol) datagrams
// from capture agents: HEP v2 and v3 over UDP, HEP v3 over TCP (a stream of
// HEP3 messages, each delimited by the total length in its 6-byte header).
// It needs no privileges.
//
// Every datagram passes, in order: the source allowlist (CIDR ranges or
// hosts), a global packet budget, a per-peer rate limit (per source address,
// not per socket), a HEP shape check, and an optional authentication hook.
// Refusals are counted by reason and the refused sources remembered (capped
// at 256, least recently seen forgotten first); the first refusal and then
// at most one summary every 10 s are logged. Nothing is dropped silently:
// on Linux the kernel's own drops at a full UDP receive buffer are counted
// too (SO_RXQ_OVFL, Stats.KernelDropped). A TCP message is never dropped
// for rate: TCP has flow control, so a message over the global or per-peer
// budget is held until the budget allows it (Stats.TCPThrottled), which
// slows the sender instead of losing its messages. At the TCP connection
// cap the connection silent longest is closed to admit a new one when it
// has been silent for ReapIdleAfter (10 s by default), so idle connections
// cannot shut out a live sender; otherwise the new connection is refused
// and counted. Admitted datagrams update a
// sender roster (capped at 4096 the same way) and are handed to a
// packet.Sink as one packet.Packet each: Payload holds the whole HEP
// datagram, Src the peer, Dst the local address, Transport UDP or TCP,
// Origin wire. Unwrapping the HEP envelope is the router's job (core/hep).
//
// Each packet carries a Frame so evidence can point at it: Source is the
// listener's name ("hep:<address>"), Ordinal counts admitted datagrams from
// 1, Data is the datagram. Such a frame has no link layer: its LinkType is
// 0 and must not be decoded as a link-layer frame.
//
// The sink is never called concurrently; it is called from the listener's
// goroutines under a lock, and must copy what it keeps.
package heplisten

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/ratelimit"
)

// Defaults for Config's zero values.
const (
	DefaultGlobalRate  = 50000 // datagrams per second, all peers together
	DefaultMaxSenders  = 4096
	DefaultMaxRefused  = 256
	DefaultMaxConns    = 256
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultReapIdleAfter is how long a TCP connection must have been
	// silent to be closed in favour of a new one at the connection cap.
	DefaultReapIdleAfter = 10 * time.Second
	// DefaultSilenceWarn is Config.SilenceWarn's default
	// (--hep-silence-warn 30, engine.md §1).
	DefaultSilenceWarn = 30 * time.Second
	// refusalLogEvery spaces the refusal summaries in the log.
	refusalLogEvery = 10 * time.Second
	maxDatagram     = 65535
)

// Refusal reasons, the keys of Stats.Refused.
const (
	ReasonNotAllowed   = "not_allowed"    // source outside the allowlist
	ReasonGlobalRate   = "global_rate"    // the global packet budget was spent
	ReasonRateLimited  = "rate_limited"   // the peer's own budget was spent
	ReasonMalformed    = "malformed"      // not a HEP datagram / bad HEP3 length
	ReasonHEP2OnTCP    = "hep2_on_tcp"    // HEP v1/v2 is not self-delimiting: UDP only
	ReasonAuthFailed   = "auth_failed"    // Config.Authenticate said no
	ReasonTooManyConns = "too_many_conns" // TCP connection cap reached
)

// Config sets up a Listener.
type Config struct {
	// UDP is the UDP address to listen on ("127.0.0.1:9060"); empty means
	// no UDP listener.
	UDP string
	// TCP is the TCP address to listen on; empty means no TCP listener.
	TCP string
	// Allow lists the sources admitted: CIDR ranges ("10.1.0.0/16"), IP
	// addresses, or host names (resolved once, at Listen). Empty admits
	// every source, which is only permitted on loopback addresses unless
	// Authenticate is set.
	Allow []string
	// PerPeerRate is the datagrams per second each source address may
	// send; 0 means no per-peer limit.
	PerPeerRate float64
	// PerPeerBurst is the per-peer bucket size; 0 means max(1, rate).
	PerPeerBurst int
	// MaxPeers caps the per-peer rate table; 0 means 4096.
	MaxPeers int
	// GlobalRate is the datagrams per second admitted from all peers
	// together; 0 means DefaultGlobalRate, negative means no limit.
	GlobalRate float64
	// MaxSenders caps the sender roster; 0 means DefaultMaxSenders.
	MaxSenders int
	// MaxRefused caps the refused-source list; 0 means DefaultMaxRefused.
	MaxRefused int
	// MaxConns caps concurrent TCP connections; 0 means DefaultMaxConns.
	MaxConns int
	// IdleTimeout closes a TCP connection that sends nothing for this
	// long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ReapIdleAfter: at the connection cap, the connection silent longest
	// is closed to admit a new one if it has been silent this long; 0
	// means DefaultReapIdleAfter.
	ReapIdleAfter time.Duration
	// Authenticate, when set, must accept a datagram (e.g. check the HEP3
	// shared-secret chunk with core/hep) for it to be admitted.
	Authenticate func(hep []byte) bool
	// SilenceWarn is how long a sender may go unheard before it counts as
	// silent (--hep-silence-warn); 0 means DefaultSilenceWarn.
	SilenceWarn time.Duration
	// Name is the source name frames carry; empty means "hep:<address>".
	Name string
	// SourceID is the SourceID frames carry.
	SourceID uint16
	// Logger receives listener errors; nil logs nothing.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Sender is one admitted source in the roster.
type Sender struct {
	Addr      netip.Addr `json:"addr"`
	FirstSeen time.Time  `json:"first_seen"`
	LastSeen  time.Time  `json:"last_seen"`
	Packets   uint64     `json:"packets"`
	Bytes     uint64     `json:"bytes"`
	// HEP2 and HEP3 count datagrams by HEP version.
	HEP2 uint64 `json:"hep2,omitempty"`
	HEP3 uint64 `json:"hep3,omitempty"`
	// AgentID is the last capture agent id the sender's admitted
	// datagrams claimed (HEP3 chunk 0x000c, or the HEP2 capture id;
	// hep.AgentIDOf); a datagram claiming none leaves it. HasAgentID says
	// one did. A claim, not a proof: any sender can write any id.
	AgentID    uint32 `json:"agent_id,omitempty"`
	HasAgentID bool   `json:"-"`
}

// RefusedSource is one source whose datagrams were refused.
type RefusedSource struct {
	Addr      netip.Addr        `json:"addr"`
	FirstSeen time.Time         `json:"first_seen"`
	LastSeen  time.Time         `json:"last_seen"`
	Count     uint64            `json:"count"`
	Reasons   map[string]uint64 `json:"reasons"`
}

// Stats is a snapshot of a Listener's counters.
type Stats struct {
	// Received counts datagrams (TCP: framed messages) that arrived.
	Received uint64 `json:"received"`
	// Admitted counts those handed to the sink.
	Admitted uint64 `json:"admitted"`
	// Bytes counts the bytes admitted.
	Bytes uint64 `json:"bytes"`
	// Refused counts refusals by reason (TCP connections refused at
	// accept are counted here too).
	Refused map[string]uint64 `json:"refused"`
	// Senders is the roster size; SendersEvicted counts senders forgotten
	// because the roster was full.
	Senders        int    `json:"senders"`
	SendersEvicted uint64 `json:"senders_evicted"`
	// RefusedSources is the refused-source list size; RefusedEvicted counts
	// sources forgotten because the list was full.
	RefusedSources int    `json:"refused_sources"`
	RefusedEvicted uint64 `json:"refused_evicted"`
	// TCPConns is the number of open TCP connections; TCPAccepted counts
	// the connections accepted so far.
	TCPConns    int64  `json:"tcp_conns"`
	TCPAccepted uint64 `json:"tcp_accepted"`
	// TCPIdleReaped counts connections closed at the connection cap,
	// silent for ReapIdleAfter, to admit a new one.
	TCPIdleReaped uint64 `json:"tcp_idle_reaped"`
	// TCPThrottled counts TCP messages held back by the global or
	// per-peer budget (delivered late, never dropped); TCPThrottledMS is
	// the total time they waited.
	TCPThrottled   uint64 `json:"tcp_throttled"`
	TCPThrottledMS uint64 `json:"tcp_throttled_ms"`
	// KernelDropped counts UDP datagrams the kernel dropped at a full
	// receive buffer before the listener could read them, as the kernel
	// reported with the last datagram read (SO_RXQ_OVFL). Absent where the
	// kernel does not report it (not Linux, or no UDP listener).
	KernelDropped *uint64 `json:"kernel_dropped,omitempty"`
	// ReadErrors counts socket read errors other than closing.
	ReadErrors uint64 `json:"read_errors"`
}

// lossReasons are the refusal reasons that lose data a sender meant to
// deliver; not_allowed and auth_failed refuse senders that were never
// admitted (counted, reported, not a loss).
var lossReasons = []string{ReasonGlobalRate, ReasonRateLimited, ReasonMalformed, ReasonHEP2OnTCP, ReasonTooManyConns}

// Lost counts what a sender meant to deliver and the capture does not
// hold: refusals for rate, shape and the connection cap, the kernel's
// drops and read errors.
func (s Stats) Lost() uint64 {
	var n uint64
	for _, r := range lossReasons {
		n += s.Refused[r]
	}
	if s.KernelDropped != nil {
		n += *s.KernelDropped
	}
	return n + s.ReadErrors
}

// RefusedTotal counts every refusal, whatever its reason.
func (s Stats) RefusedTotal() uint64 {
	var n uint64
	for _, v := range s.Refused {
		n += v
	}
	return n
}

// Listener is a running HEP listener.
type Listener struct {
	cfg    Config
	name   string
	now    func() time.Time
	allow  []netip.Prefix
	global *ratelimit.Bucket
	peer   *ratelimit.Limiter
	sink   packet.Sink
	log    *slog.Logger

	udp     *net.UDPConn
	tcp     *net.TCPListener
	udpAddr netip.AddrPort
	tcpAddr netip.AddrPort

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	conns       atomic.Int64
	tcpAccepted atomic.Uint64
	readErrors  atomic.Uint64
	idleReaped  atomic.Uint64
	throttled   atomic.Uint64
	throttledNS atomic.Int64
	connMu      sync.Mutex
	open        map[net.Conn]*connState

	// kernel drop counter (UDP): counting says SO_RXQ_OVFL is on; last is
	// the kernel's running count, kdrops the drops counted so far.
	kcounting bool
	klast     uint32
	kseen     bool
	kdrops    uint64

	lastWarn time.Time // last refusal summary logged (mu)

	mu       sync.Mutex // counters, roster, refused list
	received uint64
	admitted uint64
	bytes    uint64
	refused  map[string]uint64
	senders  *lru[netip.Addr, Sender]
	refusedL *lru[netip.Addr, RefusedSource]

	deliverMu sync.Mutex // serializes sink calls
	frame     packet.Frame
	pkt       packet.Packet
}

// Listen starts listening. It fails when an address cannot be bound, when
// an allowlist entry cannot be parsed or resolved, and when a non-loopback
// address would admit every source (no allowlist and no Authenticate).
func Listen(ctx context.Context, cfg Config, sink packet.Sink) (*Listener, error) {
	if cfg.UDP == "" && cfg.TCP == "" {
		return nil, errors.New("starting HEP listener: no UDP or TCP address given")
	}
	if sink == nil {
		return nil, errors.New("starting HEP listener: no sink")
	}
	allow, err := parseAllow(ctx, cfg.Allow)
	if err != nil {
		return nil, err
	}
	if len(allow) == 0 && cfg.Authenticate == nil {
		for _, a := range []string{cfg.UDP, cfg.TCP} {
			if a != "" && !loopbackBind(a) {
				return nil, fmt.Errorf("starting HEP listener: refusing to listen on %s without a source allowlist or authentication (a non-loopback address would admit anyone)", a)
			}
		}
	}
	l := &Listener{cfg: cfg, allow: allow, sink: sink, log: cfg.Logger, now: cfg.Now}
	if l.now == nil {
		l.now = time.Now
	}
	grate := cfg.GlobalRate
	if grate == 0 {
		grate = DefaultGlobalRate
	}
	l.global = ratelimit.NewBucket(grate, 0, l.now)
	if cfg.PerPeerRate > 0 {
		l.peer = ratelimit.New(ratelimit.Config{Rate: cfg.PerPeerRate, Burst: cfg.PerPeerBurst, MaxPeers: cfg.MaxPeers, Now: l.now})
	}
	maxS, maxR := cfg.MaxSenders, cfg.MaxRefused
	if maxS <= 0 {
		maxS = DefaultMaxSenders
	}
	if maxR <= 0 {
		maxR = DefaultMaxRefused
	}
	l.senders = newLRU[netip.Addr, Sender](maxS)
	l.refusedL = newLRU[netip.Addr, RefusedSource](maxR)
	l.refused = map[string]uint64{}
	l.open = map[net.Conn]*connState{}
	l.ctx, l.cancel = context.WithCancel(context.Background())

	var lc net.ListenConfig
	if cfg.UDP != "" {
		pc, err := lc.ListenPacket(ctx, "udp", cfg.UDP)
		if err != nil {
			return nil, fmt.Errorf("starting HEP listener: %w", err)
		}
		l.udp = pc.(*net.UDPConn)
		_ = l.udp.SetReadBuffer(4 << 20)
		l.kcounting = enableDropCounter(l.udp)
		l.udpAddr = l.udp.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	if cfg.TCP != "" {
		ln, err := lc.Listen(ctx, "tcp", cfg.TCP)
		if err != nil {
			if l.udp != nil {
				l.udp.Close()
			}
			return nil, fmt.Errorf("starting HEP listener: %w", err)
		}
		l.tcp = ln.(*net.TCPListener)
		l.tcpAddr = l.tcp.Addr().(*net.TCPAddr).AddrPort()
	}
	l.name = cfg.Name
	if l.name == "" {
		if l.udp != nil {
			l.name = "hep:" + l.udpAddr.String()
		} else {
			l.name = "hep:" + l.tcpAddr.String()
		}
	}
	l.frame.Source = l.name
	l.frame.SourceID = cfg.SourceID
	if l.udp != nil {
		l.wg.Add(1)
		go l.serveUDP()
	}
	if l.tcp != nil {
		l.wg.Add(1)
		go l.serveTCP()
	}
	go func() {
		select {
		case <-ctx.Done():
			l.Close()
		case <-l.ctx.Done():
		}
	}()
	return l, nil
}

// UDPAddr returns the bound UDP address (invalid when there is none).
func (l *Listener) UDPAddr() netip.AddrPort { return l.udpAddr }

// TCPAddr returns the bound TCP address (invalid when there is none).
func (l *Listener) TCPAddr() netip.AddrPort { return l.tcpAddr }

// Name returns the source name frames carry.
func (l *Listener) Name() string { return l.name }

// Admission is what a listener checks before it admits a datagram, beyond
// its rate budgets: whether an authentication hook (Config.Authenticate)
// must accept every datagram, and whether a source allowlist
// (Config.Allow) gates who may send. A listener with neither listens on
// loopback only (Listen refuses anything else).
type Admission struct {
	// Authenticated: Config.Authenticate accepted every datagram the
	// listener admitted (the hook's kind, shared secret or HMAC, is the
	// caller's: the listener does not know it).
	Authenticated bool `json:"authenticated"`
	// Allowlisted: only the sources Config.Allow names are admitted.
	Allowlisted bool `json:"allowlisted"`
}

// Admission returns the listener's admission checks. Ingest refuses any
// datagram that fails them, so everything the listener delivered arrived
// under them.
func (l *Listener) Admission() Admission {
	return Admission{Authenticated: l.cfg.Authenticate != nil, Allowlisted: len(l.allow) > 0}
}

// Close stops listening, closes every connection and waits for the
// listener's goroutines. It is safe to call more than once.
func (l *Listener) Close() error {
	l.cancel()
	if l.udp != nil {
		l.udp.Close()
	}
	if l.tcp != nil {
		l.tcp.Close()
	}
	l.connMu.Lock()
	for c := range l.open {
		c.Close()
	}
	l.connMu.Unlock()
	l.wg.Wait()
	return nil
}

// Done is closed when the listener is closed.
func (l *Listener) Done() <-chan struct{} { return l.ctx.Done() }

func parseAllow(ctx context.Context, entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if p, err := netip.ParsePrefix(e); err == nil {
			out = append(out, netip.PrefixFrom(p.Addr().Unmap(), unmapBits(p)).Masked())
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			a = a.Unmap().WithZone("")
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if strings.ContainsAny(e, "/ ") {
			return nil, fmt.Errorf("starting HEP listener: bad allowlist entry %q", e)
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", e)
		if err != nil {
			return nil, fmt.Errorf("starting HEP listener: resolving allowlist host %q: %w", e, err)
		}
		for _, a := range addrs {
			a = a.Unmap().WithZone("")
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}

// unmapBits converts a prefix length on an IPv4-mapped address to IPv4.
func unmapBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		b := p.Bits() - 96
		if b < 0 {
			b = 0
		}
		return b
	}
	return p.Bits()
}

func loopbackBind(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

func (l *Listener) allowed(a netip.Addr) bool {
	if len(l.allow) == 0 {
		return true
	}
	for _, p := range l.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (l *Listener) serveUDP() {
	defer l.wg.Done()
	buf := make([]byte, maxDatagram+1)
	oob := make([]byte, rxqOOBLen)
	local := l.udpAddr
	for {
		n, oobn, _, peer, err := l.udp.ReadMsgUDPAddrPort(buf, oob)
		if l.kcounting && oobn > 0 {
			if k, ok := dropCounter(oob[:oobn]); ok {
				l.mu.Lock()
				if l.kseen {
					l.kdrops += uint64(k - l.klast) // wraps as the kernel's uint32 does
				} else {
					l.kdrops, l.kseen = uint64(k), true
				}
				l.klast = k
				l.mu.Unlock()
			}
		}
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			l.readErrors.Add(1)
			if l.log != nil {
				l.log.Warn("reading HEP datagram", "err", err)
			}
			continue
		}
		l.handle(buf[:n], peer, local, packet.TransportUDP)
	}
}

func (l *Listener) serveTCP() {
	defer l.wg.Done()
	maxConns := int64(l.cfg.MaxConns)
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	for {
		c, err := l.tcp.AcceptTCP()
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			l.readErrors.Add(1)
			time.Sleep(10 * time.Millisecond) // e.g. EMFILE: don't spin
			continue
		}
		peer := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		pa := ratelimit.Key(peer.Addr())
		if !l.allowed(pa) {
			l.refuse(pa, ReasonNotAllowed)
			c.Close()
			continue
		}
		if l.conns.Load() >= maxConns && !l.reapIdle() {
			l.refuse(pa, ReasonTooManyConns)
			c.Close()
			continue
		}
		st := &connState{}
		st.last.Store(time.Now().UnixNano())
		l.conns.Add(1)
		l.tcpAccepted.Add(1)
		l.connMu.Lock()
		l.open[c] = st
		l.connMu.Unlock()
		l.wg.Add(1)
		go l.serveConn(c, peer, st)
	}
}

// connState is one open TCP connection's bookkeeping.
type connState struct {
	last     atomic.Int64 // wall clock (UnixNano) of the last whole message, or the accept
	released atomic.Bool  // its slot in l.conns was given back
}

// release gives the connection's slot back once.
func (l *Listener) release(st *connState) {
	if st.released.CompareAndSwap(false, true) {
		l.conns.Add(-1)
	}
}

// reapIdle closes the connection silent longest when it has been silent
// for ReapIdleAfter, and gives its slot to the caller. It reports whether
// a slot was freed.
func (l *Listener) reapIdle() bool {
	after := l.cfg.ReapIdleAfter
	if after <= 0 {
		after = DefaultReapIdleAfter
	}
	var victim net.Conn
	var vst *connState
	oldest := time.Now().Add(-after).UnixNano()
	l.connMu.Lock()
	for c, st := range l.open {
		if t := st.last.Load(); t <= oldest && !st.released.Load() {
			victim, vst, oldest = c, st, t
		}
	}
	l.connMu.Unlock()
	if victim == nil {
		return false
	}
	l.release(vst)
	victim.Close()
	l.idleReaped.Add(1)
	if l.log != nil {
		l.log.Info("closed an idle HEP connection at the connection cap to admit a new one",
			"peer", victim.RemoteAddr().String(), "silent", time.Since(time.Unix(0, oldest)).Round(time.Second).String())
	}
	return true
}

func (l *Listener) serveConn(c *net.TCPConn, peer netip.AddrPort, st *connState) {
	defer l.wg.Done()
	defer func() {
		c.Close()
		l.connMu.Lock()
		delete(l.open, c)
		l.connMu.Unlock()
		l.release(st)
	}()
	idle := l.cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	local := c.LocalAddr().(*net.TCPAddr).AddrPort()
	fr := newFramer(c, func() { _ = c.SetReadDeadline(time.Now().Add(idle)) })
	for {
		msg, reason, err := fr.next()
		if err != nil {
			if reason != "" && !st.released.Load() {
				l.count(peer.Addr(), reason)
			}
			return
		}
		st.last.Store(time.Now().UnixNano())
		if !l.throttle(peer) {
			return // the listener is closing
		}
		l.handle(msg, peer, local, packet.TransportTCP)
	}
}

// throttle holds a TCP message until the per-peer and the global budgets
// allow it: TCP has flow control, so waiting slows the sender where
// dropping would lose its messages. It returns false when the listener
// closes while waiting.
func (l *Listener) throttle(peer netip.AddrPort) bool {
	pa := ratelimit.Key(peer.Addr())
	var start time.Time
	wait := func() bool {
		if start.IsZero() {
			start = time.Now()
		}
		select {
		case <-l.ctx.Done():
			return false
		case <-time.After(time.Millisecond):
			return true
		}
	}
	for l.peer != nil && !l.peer.AllowAt(pa, l.now()) {
		if !wait() {
			return false
		}
	}
	for !l.global.Allow() {
		if !wait() {
			return false
		}
	}
	if !start.IsZero() {
		l.throttled.Add(1)
		l.throttledNS.Add(int64(time.Since(start)))
	}
	return true
}

// framer splits a TCP stream into HEP3 messages.
type framer struct {
	r      io.Reader
	before func()
	buf    []byte
}

func newFramer(r io.Reader, before func()) *framer {
	return &framer{r: r, before: before, buf: make([]byte, maxDatagram)}
}

var errBadStream = errors.New("bad HEP stream")

// next returns the next whole HEP3 message (valid until the next call). At
// a framing error it returns the refusal reason and errBadStream; at the end
// of the stream the read error and no reason.
func (f *framer) next() ([]byte, string, error) {
	if f.before != nil {
		f.before()
	}
	if _, err := io.ReadFull(f.r, f.buf[:6]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, ReasonMalformed, errBadStream
		}
		return nil, "", err
	}
	total, reason := hep3Len(f.buf[:6])
	if reason != "" {
		return nil, reason, errBadStream
	}
	if f.before != nil {
		f.before()
	}
	if _, err := io.ReadFull(f.r, f.buf[6:total]); err != nil {
		return nil, ReasonMalformed, errBadStream
	}
	return f.buf[:total], "", nil
}

// hep3Len checks a HEP3 header and returns the message's total length, or
// the refusal reason.
func hep3Len(h []byte) (int, string) {
	if len(h) < 6 {
		return 0, ReasonMalformed
	}
	if string(h[:4]) != "HEP3" {
		if h[0] == 1 || h[0] == 2 {
			return 0, ReasonHEP2OnTCP
		}
		return 0, ReasonMalformed
	}
	total := int(binary.BigEndian.Uint16(h[4:6]))
	if total < 6 {
		return 0, ReasonMalformed
	}
	return total, ""
}

// hepVersion checks the shape of one UDP datagram: a HEP3 message whose
// length field matches the datagram, or a HEP v1/v2 header. It returns 2 or
// 3, or 0 with the refusal reason.
func hepVersion(b []byte) (int, string) {
	if len(b) >= 4 && string(b[:4]) == "HEP3" {
		total, reason := hep3Len(b)
		if reason != "" || total != len(b) {
			return 0, ReasonMalformed
		}
		return 3, ""
	}
	// HEP v1/v2: version, header length, address family, protocol, ports,
	// addresses (v2 adds time and capture id)
	if len(b) >= 16 && (b[0] == 1 || b[0] == 2) && (b[2] == 2 || b[2] == 10) {
		hl := int(b[1])
		if hl >= 16 && hl <= len(b) {
			return 2, ""
		}
	}
	return 0, ReasonMalformed
}

// handle runs one datagram through admission and delivers it.
func (l *Listener) handle(b []byte, peer, local netip.AddrPort, tr packet.Transport) {
	pa := ratelimit.Key(peer.Addr())
	now := l.now()
	l.mu.Lock()
	l.received++
	l.mu.Unlock()
	if !l.allowed(pa) {
		l.refuse(pa, ReasonNotAllowed)
		return
	}
	// TCP messages passed their budgets in throttle, waiting instead of
	// being dropped.
	if tr == packet.TransportUDP {
		if !l.global.Allow() {
			l.refuse(pa, ReasonGlobalRate)
			return
		}
		if l.peer != nil && !l.peer.AllowAt(pa, now) {
			l.refuse(pa, ReasonRateLimited)
			return
		}
	}
	ver, reason := 3, ""
	if tr == packet.TransportUDP {
		ver, reason = hepVersion(b)
	}
	if reason != "" {
		l.refuse(pa, reason)
		return
	}
	if l.cfg.Authenticate != nil && !l.cfg.Authenticate(b) {
		l.refuse(pa, ReasonAuthFailed)
		return
	}
	agent, hasAgent := hep.AgentIDOf(b)
	l.mu.Lock()
	l.admitted++
	l.bytes += uint64(len(b))
	s := l.senders.get(pa, func() Sender { return Sender{Addr: pa, FirstSeen: now} })
	if hasAgent {
		s.AgentID, s.HasAgentID = agent, true
	}
	s.LastSeen = now
	s.Packets++
	s.Bytes += uint64(len(b))
	if ver == 2 {
		s.HEP2++
	} else {
		s.HEP3++
	}
	l.mu.Unlock()

	l.deliverMu.Lock()
	defer l.deliverMu.Unlock()
	f := &l.frame
	f.Ordinal++
	f.TS = now
	f.Data = b
	f.OrigLen = len(b)
	f.LinkType = 0
	l.pkt = packet.Packet{TS: now, Src: peer, Dst: local, Transport: tr, Payload: b, Origin: packet.OriginWire, Frame: f}
	l.sink.HandlePacket(&l.pkt)
}

// count records a refusal for a peer without running admission (TCP
// stream faults).
func (l *Listener) count(a netip.Addr, reason string) {
	l.refuse(ratelimit.Key(a), reason)
}

func (l *Listener) refuse(a netip.Addr, reason string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused[reason]++
	r := l.refusedL.get(a, func() RefusedSource {
		return RefusedSource{Addr: a, FirstSeen: now, Reasons: map[string]uint64{}}
	})
	r.LastSeen = now
	r.Count++
	r.Reasons[reason]++
	if l.log != nil && (l.lastWarn.IsZero() || time.Since(l.lastWarn) >= refusalLogEvery) {
		l.lastWarn = time.Now()
		by := make([]any, 0, 2*len(l.refused)+6)
		by = append(by, "listener", l.name, "reason", reason, "source", a.String())
		for _, k := range sortedKeys(l.refused) {
			by = append(by, "refused_"+k, l.refused[k])
		}
		l.log.Warn("HEP datagrams refused (counted in the capture status)", by...)
	}
}

func sortedKeys(m map[string]uint64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Stats returns the counters now.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{
		Received: l.received, Admitted: l.admitted, Bytes: l.bytes,
		Refused: make(map[string]uint64, len(l.refused)),
		Senders: l.senders.len(), SendersEvicted: l.senders.evicted,
		RefusedSources: l.refusedL.len(), RefusedEvicted: l.refusedL.evicted,
		TCPConns: l.conns.Load(), TCPAccepted: l.tcpAccepted.Load(), ReadErrors: l.readErrors.Load(),
		TCPIdleReaped: l.idleReaped.Load(), TCPThrottled: l.throttled.Load(),
		TCPThrottledMS: uint64(l.throttledNS.Load() / int64(time.Millisecond)),
	}
	if l.kcounting {
		k := l.kdrops
		s.KernelDropped = &k
	}
	for k, v := range l.refused {
		s.Refused[k] = v
	}
	return s
}

// SilenceWarn is how long a sender may go unheard before it counts as
// silent (Config.SilenceWarn, its default applied).
func (l *Listener) SilenceWarn() time.Duration {
	if l.cfg.SilenceWarn > 0 {
		return l.cfg.SilenceWarn
	}
	return DefaultSilenceWarn
}

// Trust says on what a sender is admitted: "allowlist" (its address is in
// Config.Allow), "shared_secret" (Config.Authenticate, no allowlist) or
// "loopback" (neither: Listen permits that on loopback addresses only).
func (l *Listener) Trust() string {
	switch {
	case len(l.allow) > 0:
		return "allowlist"
	case l.cfg.Authenticate != nil:
		return "shared_secret"
	}
	return "loopback"
}

// MaxSenders and MaxRefused are the roster's and the refused-source
// list's caps (Config, defaults applied).
func (l *Listener) MaxSenders() int { return l.senders.max }

// MaxRefused is the refused-source list's cap.
func (l *Listener) MaxRefused() int { return l.refusedL.max }

// Now is the listener's clock (Config.Now), which stamps first_seen and
// last_seen.
func (l *Listener) Now() time.Time { return l.now() }

// Senders returns the roster, most recently seen first.
func (l *Listener) Senders() []Sender {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Sender, 0, l.senders.len())
	l.senders.each(func(s Sender) { out = append(out, s) })
	return out
}

// Silent returns the senders not heard from for at least d, longest silent
// first.
func (l *Listener) Silent(d time.Duration) []Sender {
	now := l.now()
	var out []Sender
	for _, s := range l.Senders() {
		if now.Sub(s.LastSeen) >= d {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastSeen.Before(out[j].LastSeen) })
	return out
}

// RefusedSources returns the refused-source list, most recently refused
// first.
func (l *Listener) RefusedSources() []RefusedSource {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]RefusedSource, 0, l.refusedL.len())
	l.refusedL.each(func(r RefusedSource) {
		c := r
		c.Reasons = make(map[string]uint64, len(r.Reasons))
		for k, v := range r.Reasons {
			c.Reasons[k] = v
		}
		out = append(out, c)
	})
	return out
}
