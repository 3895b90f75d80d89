// Package hepsend makes sipnab a HEP capture agent (-H host:port): it
// forwards the SIP messages (HEP payload type 1) and RTCP packets (type 5)
// the router reads to a HEP receiver (Homer, heplify-server, Kamailio's
// sipcapture, another sipnab's -L), as HEP version 3 envelopes over UDP
// (one envelope per datagram) or TCP (a stream of envelopes, each
// self-delimited by its total length). RTP is never forwarded.
//
// Every envelope carries the captured packet's addresses, ports, IP
// protocol and capture time (seconds and microseconds: HEP3 has no finer
// field), the capture agent id (chunk 0x000c, --hep-capture-id) and, when
// set, the shared secret (chunk 0x000e, --hep-auth-key).
//
// The router never waits on the network: messages go through a bounded
// queue (count and bytes) to one sending goroutine. A message that finds
// the queue full is dropped and counted (Stats.DroppedQueueFull), unless
// the sender was configured to wait for room (Config.Block: a file source,
// whose reading may slow down instead). A message the network refuses is
// counted too (Stats.DroppedSendError, with the last error), and so is
// every message still queued when Close gives up waiting. Nothing is
// dropped silently.
package hepsend

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/packet"
)

// Defaults.
const (
	DefaultQueueLen   = 8192
	DefaultQueueBytes = 16 << 20
	// DrainTimeout is how long Close waits for queued messages to leave.
	DrainTimeout = 5 * time.Second
	// redialEvery is the least time between two TCP connection attempts.
	redialEvery  = time.Second
	writeTimeout = 5 * time.Second
	// maxPayload is the largest payload that fits one HEP3 envelope
	// beside the chunks sipnab writes (at most 150 bytes of them with an
	// IPv6 address pair and a 64-byte auth key).
	maxPayload = hep.MaxLen - 6 - 150 - MaxAuthKey
	// MaxAuthKey bounds the shared secret.
	MaxAuthKey = 256
)

// Config sets up a Sender.
type Config struct {
	// Addr is the receiver, host:port.
	Addr string
	// Network is "udp" (default) or "tcp".
	Network string
	// CaptureID is the capture agent id written in chunk 0x000c.
	CaptureID uint32
	// AuthKey is the shared secret written in chunk 0x000e ("" : none).
	AuthKey string
	// QueueLen and QueueBytes bound the send queue (DefaultQueueLen and
	// DefaultQueueBytes when 0).
	QueueLen, QueueBytes int
	// Block makes Forward wait for room in the queue instead of dropping
	// (for file sources, which can wait).
	Block bool
	// Logger receives the first drop of each kind and connection changes.
	Logger *slog.Logger
}

// Stats are a Sender's counts.
type Stats struct {
	Receiver          string `json:"receiver"`
	Network           string `json:"network"`
	Queued            uint64 `json:"queued"`
	Sent              uint64 `json:"sent"`
	SentSIP           uint64 `json:"sent_sip"`
	SentRTCP          uint64 `json:"sent_rtcp"`
	SentBytes         uint64 `json:"sent_bytes"`
	DroppedQueueFull  uint64 `json:"dropped_queue_full"`
	DroppedTooLarge   uint64 `json:"dropped_too_large"`
	DroppedSendError  uint64 `json:"dropped_send_error"`
	DroppedAtStop     uint64 `json:"dropped_at_stop"`
	Connects          uint64 `json:"connects,omitempty"`
	LastError         string `json:"last_error,omitempty"`
	QueueHighWater    int    `json:"queue_high_water"`
	QueueCapacity     int    `json:"queue_capacity"`
	QueueBytesCeiling int    `json:"queue_bytes_ceiling"`
}

// Dropped is every message not delivered to the network.
func (s Stats) Dropped() uint64 {
	return s.DroppedQueueFull + s.DroppedTooLarge + s.DroppedSendError + s.DroppedAtStop
}

type item struct {
	msg hep.Message
	buf []byte // owns msg.Payload
}

// Sender forwards messages to one HEP receiver.
type Sender struct {
	cfg     Config
	network string
	q       chan *item
	qBytes  atomic.Int64
	done    chan struct{}
	stop    chan struct{}
	closeMu sync.Mutex
	closed  bool

	// counters (atomic: Forward runs on the router's goroutine, the
	// sending on its own)
	queued, sent, sentSIP, sentRTCP, sentBytes        atomic.Uint64
	dropFull, dropLarge, dropSend, dropStop, connects atomic.Uint64
	highWater                                         atomic.Int64
	errMu                                             sync.Mutex
	lastErr                                           string
	warned                                            [4]atomic.Bool

	conn     net.Conn
	lastDial time.Time
	remote   netip.AddrPort
}

// Remote is the receiver's address as resolved at Start, and its
// transport ("udp" or "tcp").
func (s *Sender) Remote() (network string, addr netip.AddrPort) { return s.network, s.remote }

// Start checks the configuration, resolves the receiver and starts the
// sending goroutine. With TCP it connects once; a receiver that is not
// there yet is retried on the next message (at most once a second), its
// messages counted as send errors meanwhile.
func Start(cfg Config) (*Sender, error) {
	network := strings.ToLower(cfg.Network)
	switch network {
	case "", "udp":
		network = "udp"
	case "tcp":
	default:
		return nil, fmt.Errorf("starting HEP sender: transport %q: want udp or tcp", cfg.Network)
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("starting HEP sender: receiver %q: want host:port: %v", cfg.Addr, err)
	}
	if len(cfg.AuthKey) > MaxAuthKey {
		return nil, fmt.Errorf("starting HEP sender: auth key of %d bytes exceeds %d", len(cfg.AuthKey), MaxAuthKey)
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Sender{cfg: cfg, network: network, q: make(chan *item, cfg.QueueLen), done: make(chan struct{}), stop: make(chan struct{})}
	if network == "udp" {
		ua, err := net.ResolveUDPAddr("udp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("starting HEP sender: %w", err)
		}
		s.remote = ua.AddrPort()
	} else {
		ta, err := net.ResolveTCPAddr("tcp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("starting HEP sender: %w", err)
		}
		s.remote = ta.AddrPort()
	}
	if network == "udp" {
		c, err := net.Dial("udp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("starting HEP sender: %w", err)
		}
		s.conn = c
	} else if err := s.dial(); err != nil {
		cfg.Logger.Warn("HEP receiver not reachable yet; retrying on the next message", "receiver", cfg.Addr, "error", err)
	}
	go s.run()
	return s, nil
}

// dial connects the TCP stream.
func (s *Sender) dial() error {
	s.lastDial = time.Now()
	c, err := net.DialTimeout("tcp", s.cfg.Addr, 2*time.Second)
	if err != nil {
		s.setErr(err)
		return err
	}
	s.conn = c
	s.connects.Add(1)
	return nil
}

func (s *Sender) setErr(err error) {
	s.errMu.Lock()
	s.lastErr = err.Error()
	s.errMu.Unlock()
}

// warnOnce logs the first drop of a kind.
func (s *Sender) warnOnce(kind int, msg string, args ...any) {
	if !s.warned[kind].Swap(true) {
		s.cfg.Logger.Warn(msg, args...)
	}
}

const (
	warnFull = iota
	warnLarge
	warnSend
)

// Forward queues one payload read from p for the receiver: proto is the
// HEP payload type (hep.ProtoSIP or hep.ProtoRTCP). It copies what it
// keeps and never blocks unless the Sender was configured to; false when
// the message was dropped (counted).
func (s *Sender) Forward(p *packet.Packet, payload []byte, proto uint8) bool {
	if len(payload) > maxPayload {
		s.dropLarge.Add(1)
		s.warnOnce(warnLarge, "HEP sender: a payload too large for one HEP envelope was not sent (counted)", "bytes", len(payload), "max", maxPayload)
		return false
	}
	it := &item{buf: append([]byte(nil), payload...)}
	m := &it.msg
	*m = hep.Message{Version: 3, Src: p.Src, Dst: p.Dst, TS: p.TS, HasTS: true,
		ProtoType: proto, HasProtoType: true, AgentID: s.cfg.CaptureID, HasAgentID: true, Payload: it.buf}
	switch p.Transport {
	case packet.TransportUDP:
		m.Protocol = 17
	case packet.TransportSCTP:
		m.Protocol = 132
	default: // TCP, TLS, WebSocket: carried on TCP
		m.Protocol = 6
	}
	if a := p.Src.Addr(); a.Is6() && !a.Is4In6() {
		m.Family = hep.FamilyIPv6
	} else {
		m.Family = hep.FamilyIPv4
		m.Src = netip.AddrPortFrom(p.Src.Addr().Unmap(), p.Src.Port())
		m.Dst = netip.AddrPortFrom(p.Dst.Addr().Unmap(), p.Dst.Port())
	}
	if p.HasDSCP {
		m.TOS, m.HasTOS = p.DSCP<<2, true
	}
	if s.cfg.AuthKey != "" {
		m.AuthKey = []byte(s.cfg.AuthKey)
	}
	n := int64(len(it.buf))
	if s.qBytes.Add(n) > int64(s.cfg.QueueBytes) && !s.cfg.Block {
		s.qBytes.Add(-n)
		s.dropFull.Add(1)
		s.warnOnce(warnFull, "HEP sender: send queue full; messages are dropped and counted", "queue_bytes", s.cfg.QueueBytes)
		return false
	}
	if s.cfg.Block {
		// Wait for the bytes to drain below the ceiling, then for a slot.
		for s.qBytes.Load() > int64(s.cfg.QueueBytes) && s.qBytes.Load() > n {
			select {
			case <-s.stop:
				s.qBytes.Add(-n)
				s.dropStop.Add(1)
				return false
			case <-time.After(time.Millisecond):
			}
		}
		select {
		case s.q <- it:
		case <-s.stop:
			s.qBytes.Add(-n)
			s.dropStop.Add(1)
			return false
		}
	} else {
		select {
		case s.q <- it:
		default:
			s.qBytes.Add(-n)
			s.dropFull.Add(1)
			s.warnOnce(warnFull, "HEP sender: send queue full; messages are dropped and counted", "queue_len", s.cfg.QueueLen)
			return false
		}
	}
	s.queued.Add(1)
	if l := int64(len(s.q)); l > s.highWater.Load() {
		s.highWater.Store(l)
	}
	return true
}

// run sends the queue until Close.
func (s *Sender) run() {
	defer close(s.done)
	for {
		select {
		case it := <-s.q:
			s.send(it)
		case <-s.stop:
			// Drain what is queued, within DrainTimeout.
			deadline := time.Now().Add(DrainTimeout)
			for {
				select {
				case it := <-s.q:
					if time.Now().After(deadline) {
						s.qBytes.Add(-int64(len(it.buf)))
						s.dropStop.Add(1)
						continue
					}
					s.send(it)
				default:
					if s.conn != nil {
						s.conn.Close()
					}
					return
				}
			}
		}
	}
}

func (s *Sender) send(it *item) {
	s.qBytes.Add(-int64(len(it.buf)))
	b, err := hep.Encode(&it.msg)
	if err != nil {
		s.dropLarge.Add(1)
		s.setErr(err)
		s.warnOnce(warnLarge, "HEP sender: a message could not be encoded (counted)", "error", err)
		return
	}
	if s.conn == nil {
		if time.Since(s.lastDial) < redialEvery || s.dial() != nil {
			s.dropSend.Add(1)
			s.warnOnce(warnSend, "HEP sender: receiver not connected; messages are dropped and counted", "receiver", s.cfg.Addr)
			return
		}
		s.cfg.Logger.Info("HEP receiver connected", "receiver", s.cfg.Addr)
	}
	if s.network == "tcp" {
		_ = s.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	if _, err := s.conn.Write(b); err != nil {
		s.dropSend.Add(1)
		s.setErr(err)
		s.warnOnce(warnSend, "HEP sender: a send failed; failed messages are dropped and counted", "receiver", s.cfg.Addr, "error", err)
		if s.network == "tcp" {
			s.conn.Close()
			s.conn = nil
		}
		return
	}
	s.sent.Add(1)
	s.sentBytes.Add(uint64(len(b)))
	if it.msg.ProtoType == hep.ProtoRTCP {
		s.sentRTCP.Add(1)
	} else {
		s.sentSIP.Add(1)
	}
}

// Close stops accepting messages, sends what is queued (for at most
// DrainTimeout; the rest is counted as DroppedAtStop) and closes the
// connection. Forward must not be called after Close.
func (s *Sender) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	close(s.stop)
	s.closeMu.Unlock()
	<-s.done
	return nil
}

// Stats returns the counts so far.
func (s *Sender) Stats() Stats {
	st := Stats{
		Receiver: s.cfg.Addr, Network: s.network,
		Queued: s.queued.Load(), Sent: s.sent.Load(), SentSIP: s.sentSIP.Load(), SentRTCP: s.sentRTCP.Load(), SentBytes: s.sentBytes.Load(),
		DroppedQueueFull: s.dropFull.Load(), DroppedTooLarge: s.dropLarge.Load(), DroppedSendError: s.dropSend.Load(), DroppedAtStop: s.dropStop.Load(),
		Connects: s.connects.Load(), QueueHighWater: int(s.highWater.Load()), QueueCapacity: s.cfg.QueueLen, QueueBytesCeiling: s.cfg.QueueBytes,
	}
	s.errMu.Lock()
	st.LastError = s.lastErr
	s.errMu.Unlock()
	return st
}
