package tlsprobe

import (
	"bytes"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// Framer bounds.
const (
	// MaxStreams caps the reassembly table (one entry per process, SSL
	// object and direction); the least recently used stream is evicted.
	MaxStreams = 1024
	// MaxMessageBytes caps one stream's buffer: a message that has not
	// ended by then is dropped with the buffer (SIP over a stream
	// transport carries Content-Length, RFC 3261 §18.3).
	MaxMessageBytes = 64 << 10
)

// SIPTLSPort is the port the probed process's placeholder address carries:
// 5061, SIP over TLS (RFC 3261 §26.2).
const SIPTLSPort = 5061

// Placeholder addresses. A uprobe sees a process's plaintext, not its
// socket: the messages carry placeholders, never the wire's addresses.
// The probed process is 127.a.b.c:5061 with a.b.c its pid's low 24 bits
// (Linux's pid_max is at most 2^22); its peer is 127.0.0.1 with port
// 10000 + the stream's ordinal modulo 50000, so the messages of one TLS
// session (process, SSL object) share a 5-tuple and a peer port.
func placeholder(pid uint32, ordinal uint64) (local, peer netip.AddrPort) {
	local = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, byte(pid >> 16), byte(pid >> 8), byte(pid)}), SIPTLSPort)
	peer = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(10000+ordinal%50000))
	return
}

// FrameStats counts what the framer did.
type FrameStats struct {
	Calls      uint64 // records read
	Bytes      uint64 // bytes they carried
	Messages   uint64 // SIP messages handed on
	Evicted    uint64 // streams evicted at MaxStreams
	Oversized  uint64 // buffers dropped at MaxMessageBytes
	Gaps       uint64 // calls longer than the copy (MaxCopy): the stream's buffer was dropped
	NotSIP     uint64 // buffers dropped because they did not start like SIP
	Streams    int    // streams held now
	KeepAlives uint64 // CRLF keep-alives skipped (RFC 5626 §4.4.1)
}

type streamKey struct {
	pid uint32
	ssl uint64
	dir int
}

type stream struct {
	buf     []byte
	ordinal uint64
	used    uint64
}

// Framer reassembles the records of each (process, SSL object,
// direction) into SIP messages by Content-Length and hands each to the
// sink as a packet with origin uprobe and the placeholder addresses.
type Framer struct {
	mu      sync.Mutex
	sink    packet.Sink
	streams map[streamKey]*stream
	session map[[2]uint64]uint64 // (pid, ssl) → ordinal, shared by both directions
	next    uint64
	tick    uint64
	st      FrameStats
	now     func() time.Time
}

// NewFramer returns a framer handing messages to sink.
func NewFramer(sink packet.Sink) *Framer {
	return &Framer{sink: sink, streams: map[streamKey]*stream{}, session: map[[2]uint64]uint64{}, now: time.Now}
}

// Stats returns the counters.
func (f *Framer) Stats() FrameStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.st
	s.Streams = len(f.streams)
	return s
}

// Add takes one record.
func (f *Framer) Add(r Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.Calls++
	f.st.Bytes += uint64(len(r.Data))
	k := streamKey{r.PID, r.SSL, r.Dir}
	s := f.streams[k]
	if s == nil {
		if len(f.streams) >= MaxStreams {
			f.evictOldest()
		}
		sk := [2]uint64{uint64(r.PID), r.SSL}
		ord, ok := f.session[sk]
		if !ok {
			f.next++
			ord = f.next
			if len(f.session) >= 2*MaxStreams {
				clear(f.session) // ordinals only name peers; a reused one is harmless
			}
			f.session[sk] = ord
		}
		s = &stream{ordinal: ord}
		f.streams[k] = s
	}
	f.tick++
	s.used = f.tick
	if r.Truncated {
		// the copy missed the call's tail: what follows cannot be framed
		// until a message starts a later call
		f.st.Gaps++
		s.buf = s.buf[:0]
		return
	}
	s.buf = append(s.buf, r.Data...)
	f.drain(r, s)
	if len(s.buf) > MaxMessageBytes {
		f.st.Oversized++
		s.buf = nil
	}
}

func (f *Framer) evictOldest() {
	var oldest streamKey
	var at uint64 = ^uint64(0)
	for k, s := range f.streams {
		if s.used < at {
			oldest, at = k, s.used
		}
	}
	delete(f.streams, oldest)
	f.st.Evicted++
}

// drain hands on every complete message at the start of the buffer.
func (f *Framer) drain(r Record, s *stream) {
	for {
		// CRLF keep-alives between messages (RFC 5626 §4.4.1)
		i := 0
		for i+1 < len(s.buf) && s.buf[i] == '\r' && s.buf[i+1] == '\n' {
			i += 2
		}
		if i > 0 {
			f.st.KeepAlives++
			s.buf = s.buf[i:]
		}
		if len(s.buf) == 0 {
			s.buf = nil
			return
		}
		if !looksSIP(s.buf) {
			f.st.NotSIP++
			s.buf = nil
			return
		}
		if eol := bytes.Index(s.buf, []byte("\r\n")); eol >= 0 && !startLine(s.buf[:eol]) {
			f.st.NotSIP++
			s.buf = nil
			return
		}
		end := bytes.Index(s.buf, []byte("\r\n\r\n"))
		if end < 0 {
			return
		}
		end += 4
		cl, ok := contentLength(s.buf[:end])
		if !ok || cl > MaxMessageBytes {
			f.st.NotSIP++
			s.buf = nil
			return
		}
		if len(s.buf) < end+cl {
			return
		}
		msg := s.buf[:end+cl]
		local, peer := placeholder(r.PID, s.ordinal)
		p := &packet.Packet{TS: f.now(), Transport: packet.TransportTLS, Payload: msg, Origin: packet.OriginUprobe}
		if r.Dir == DirWrite {
			p.Src, p.Dst = local, peer
		} else {
			p.Src, p.Dst = peer, local
		}
		f.st.Messages++
		f.sink.HandlePacket(p)
		s.buf = append([]byte(nil), s.buf[end+cl:]...)
	}
}

// looksSIP: a request line "METHOD sip:" / "METHOD sips:" / "METHOD tel:"
// or a status line "SIP/2.0 " (RFC 3261 §7.1, §7.2), as far as the
// buffer goes.
func looksSIP(b []byte) bool {
	if bytes.HasPrefix(b, []byte("SIP/2.0 ")) || (len(b) < 8 && bytes.HasPrefix([]byte("SIP/2.0 "), b)) {
		return true
	}
	for i := 0; i < len(b) && i < 32; i++ {
		c := b[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c == '-', c == '.', c == '!', c == '%', c == '*', c == '_', c == '+', c == '`', c == '\'', c == '~':
			continue
		case c == ' ' && i > 0:
			return true
		default:
			return false
		}
	}
	return len(b) < 32
}

// startLine: a whole first line is a status line or a request line
// ending in the SIP version (RFC 3261 §7.1), so an HTTP request the same
// library carries ("GET / HTTP/1.1") is not handed on.
func startLine(l []byte) bool {
	return bytes.HasPrefix(l, []byte("SIP/2.0 ")) || bytes.HasSuffix(l, []byte(" SIP/2.0"))
}

// contentLength reads Content-Length (or its compact form l, RFC 3261
// §7.3.3) from a header block; absent means 0. ok is false for a bad
// value or two different ones.
func contentLength(h []byte) (int, bool) {
	n, seen := 0, false
	for _, line := range bytes.Split(h, []byte("\r\n")) {
		c := bytes.IndexByte(line, ':')
		if c <= 0 {
			continue
		}
		name := bytes.TrimSpace(line[:c])
		if !bytes.EqualFold(name, []byte("Content-Length")) && !bytes.EqualFold(name, []byte("l")) {
			continue
		}
		v, err := strconv.Atoi(string(bytes.TrimSpace(line[c+1:])))
		if err != nil || v < 0 || (seen && v != n) {
			return 0, false
		}
		n, seen = v, true
	}
	return n, true
}
