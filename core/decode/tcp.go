package decode

import (
	"bytes"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/websocket"
)

// tcpKey identifies one direction of a TCP connection.
type tcpKey struct {
	src, dst netip.AddrPort
}

type oooSeg struct {
	seq  uint32
	data []byte
}

type streamMode uint8

const (
	modeAuto streamMode = iota // classify each unit: SIP, HEP3, HTTP upgrade, other
	modeWS                     // WebSocket frames after an upgrade
)

// maxOOOSegments bounds the out-of-order segments queued per direction.
const maxOOOSegments = 64

// tcpDir is the reassembly state of one direction of a TCP connection.
type tcpDir struct {
	key      tcpKey
	elem     *listElem
	last     time.Time // capture time of the last segment
	haveSeq  bool
	sawSYN   bool   // the stream's start is known
	base     uint32 // without a SYN: the lowest sequence number delivered
	next     uint32 // next expected sequence number
	buf      []byte // in-order bytes not yet framed: a prefix of one unit
	ooo      []oooSeg
	oooBytes int
	mode     streamMode
	skip     int // bytes still to discard (a declined WebSocket frame)
	ws       websocket.Assembler
	wsSpan   bool // the WebSocket message being assembled spans segments
	closed   bool
	held     int // bytes accounted to this direction in Decoder.held
}

// afterTCP feeds one TCP segment to its direction's reassembly.
func (d *Decoder) afterTCP() reason {
	t := &d.tcp
	d.st.TCPSegments++
	s, u := d.addrs()
	key := tcpKey{netip.AddrPortFrom(s, uint16(t.SrcPort)), netip.AddrPortFrom(u, uint16(t.DstPort))}
	payload := t.Payload
	dir := d.streams[key]
	if dir == nil {
		if (len(payload) == 0 && !t.SYN) || t.RST {
			if len(payload) == 0 {
				d.st.EmptyPayloads++
			}
			return reasonNone
		}
		d.makeRoom(true, 0)
		dir = &tcpDir{key: key, ws: websocket.Assembler{Max: d.cfg.MaxWSPayload}}
		dir.elem = d.tcpList.pushBack(dir)
		d.streams[key] = dir
	} else {
		d.tcpList.moveToBack(dir.elem)
	}
	d.current = dir
	d.feedTCP(dir, t)
	d.current = nil
	return reasonNone
}

// feedTCP applies one segment to its direction.
func (d *Decoder) feedTCP(dir *tcpDir, t *layers.TCP) {
	payload := t.Payload
	dir.last = d.now
	seq := t.Seq
	if t.SYN {
		if dir.haveSeq && seq+1 != dir.next {
			// A new connection on the same addresses.
			d.flushPartial(dir)
			d.resetDir(dir)
		}
		dir.haveSeq, dir.next, dir.closed, dir.sawSYN = true, seq+1, false, true
		seq++
	}
	if !dir.haveSeq {
		dir.haveSeq, dir.next, dir.base = true, seq, seq
	}
	if len(payload) == 0 {
		d.st.EmptyPayloads++
	} else {
		d.segment(dir, seq, payload)
		if missing := d.tcpMissing(len(payload)); missing > 0 {
			// The segment was cut by the snap length: the rest is a gap.
			d.st.TCPGaps++
			d.flushPartial(dir)
			if int32(seq+uint32(len(payload))-dir.next) >= 0 {
				dir.next = seq + uint32(len(payload)) + uint32(missing)
			}
			d.drain(dir)
		}
	}
	if (t.FIN || t.RST) && len(dir.ooo) == 0 {
		d.flushPartial(dir)
		d.resetDir(dir)
		dir.closed = true
	}
	d.account(dir)
}

// tcpMissing returns how many bytes of the current segment the capture did
// not keep, when the IP header tells.
func (d *Decoder) tcpMissing(have int) int {
	if !d.truncated && !d.frame.Snapped() {
		return 0
	}
	if d.reassembled {
		return 0
	}
	var want int
	hl := int(d.tcp.DataOffset) * 4
	switch d.netLayer {
	case layers.LayerTypeIPv4:
		want = int(d.ip4.Length) - int(d.ip4.IHL)*4 - hl
	case layers.LayerTypeIPv6:
		if d.ip6.NextHeader != layers.IPProtocolTCP {
			return 0
		}
		want = int(d.ip6.Length) - hl
	}
	if want > have {
		return want - have
	}
	return 0
}

// segment places a segment's payload in its direction's stream.
func (d *Decoder) segment(dir *tcpDir, seq uint32, p []byte) {
	rel := int32(seq - dir.next)
	switch {
	case rel < 0:
		over := int(-int64(rel))
		if over >= len(p) {
			if d.early(dir, seq, p) {
				return
			}
			d.st.TCPRetransmissions++
			return
		}
		d.st.TCPOverlaps++
		p = p[over:]
	case rel > 0:
		d.queue(dir, seq, p)
		return
	}
	d.deliver(dir, p, false)
	d.drain(dir)
}

// early handles a segment that precedes everything delivered on a stream
// whose capture began mid-connection: without a SYN it is not a
// retransmission but bytes sent before the first captured segment. They are
// framed on their own and emitted late, and the stream's known start moves
// back to them so that their own retransmissions are recognized.
func (d *Decoder) early(dir *tcpDir, seq uint32, p []byte) bool {
	if dir.sawSYN || int32(seq+uint32(len(p))-dir.base) > 0 || int32(dir.base-seq) > int32(d.cfg.MaxStreamBuffer) {
		return false
	}
	d.st.TCPOutOfOrder++
	dir.base = seq
	tmp := tcpDir{key: dir.key, ws: websocket.Assembler{Max: d.cfg.MaxWSPayload}, mode: dir.mode}
	if n := d.frameUnits(&tmp, p, false, true); n < len(p) {
		d.emitStream(dir, packet.TransportTCP, p[n:], true)
	}
	return true
}

// queue holds an out-of-order segment until the bytes before it arrive.
func (d *Decoder) queue(dir *tcpDir, seq uint32, p []byte) {
	for _, q := range dir.ooo {
		if q.seq == seq && len(q.data) >= len(p) {
			d.st.TCPRetransmissions++
			return
		}
	}
	if len(p) > d.cfg.MaxStreamBuffer {
		// Too large to hold: give up on the missing bytes.
		d.st.TCPGaps++
		d.flushPartial(dir)
		dir.next = seq
		d.deliver(dir, p, false)
		d.drain(dir)
		return
	}
	if dir.oooBytes+len(p) > d.cfg.MaxStreamBuffer || len(dir.ooo) >= maxOOOSegments {
		d.gap(dir)
		d.segment(dir, seq, p)
		return
	}
	d.st.TCPOutOfOrder++
	d.makeRoom(false, len(p))
	i := len(dir.ooo)
	for i > 0 && int32(dir.ooo[i-1].seq-seq) > 0 {
		i--
	}
	dir.ooo = append(dir.ooo, oooSeg{})
	copy(dir.ooo[i+1:], dir.ooo[i:])
	dir.ooo[i] = oooSeg{seq: seq, data: bytes.Clone(p)}
	dir.oooBytes += len(p)
	d.account(dir)
}

// gap gives up on the bytes missing before the first queued segment.
func (d *Decoder) gap(dir *tcpDir) {
	d.st.TCPGaps++
	d.flushPartial(dir)
	if len(dir.ooo) > 0 {
		dir.next = dir.ooo[0].seq
		d.drain(dir)
	}
}

// drain delivers queued segments that have become contiguous.
func (d *Decoder) drain(dir *tcpDir) {
	for len(dir.ooo) > 0 {
		q := dir.ooo[0]
		rel := int32(q.seq - dir.next)
		if rel > 0 {
			break
		}
		n := copy(dir.ooo, dir.ooo[1:])
		dir.ooo[n] = oooSeg{}
		dir.ooo = dir.ooo[:n]
		dir.oooBytes -= len(q.data)
		over := int(-int64(rel))
		if over >= len(q.data) {
			d.st.TCPRetransmissions++
			continue
		}
		d.deliver(dir, q.data[over:], true)
	}
	if len(dir.ooo) == 0 {
		dir.ooo = nil
	}
}

// deliver appends in-order bytes to the stream and frames what it can.
// fromQueue says the bytes came from an earlier frame's queued segment.
func (d *Decoder) deliver(dir *tcpDir, p []byte, fromQueue bool) {
	dir.next += uint32(len(p))
	if dir.skip > 0 {
		n := min(dir.skip, len(p))
		dir.skip -= n
		p = p[n:]
		if len(p) == 0 {
			return
		}
	}
	if len(dir.buf) == 0 {
		n := d.frameUnits(dir, p, false, fromQueue)
		if rest := p[n:]; len(rest) > 0 {
			d.makeRoom(false, len(rest))
			dir.buf = append(dir.buf[:0], rest...)
		}
	} else {
		d.makeRoom(false, len(p))
		dir.buf = append(dir.buf, p...)
		n := d.frameUnits(dir, dir.buf, true, fromQueue)
		m := copy(dir.buf, dir.buf[n:])
		dir.buf = dir.buf[:m]
	}
	if len(dir.buf) > d.cfg.MaxStreamBuffer {
		d.flushAs(dir, &d.st.TCPOverflowFlushes)
	}
	if len(dir.buf) == 0 {
		dir.buf = nil
	}
	d.account(dir)
}

// frameUnits emits every complete unit at the start of b and returns the
// number of bytes consumed. spanFirst says b begins with bytes of earlier
// segments (so the first unit is reassembled); fromQueue says all of b came
// from a queued segment.
func (d *Decoder) frameUnits(dir *tcpDir, b []byte, spanFirst, fromQueue bool) int {
	off := 0
	for off < len(b) {
		u := b[off:]
		reass := fromQueue || (spanFirst && off == 0)
		if dir.skip > 0 {
			n := min(dir.skip, len(u))
			dir.skip -= n
			off += n
			continue
		}
		if dir.mode == modeWS {
			n, need := d.wsUnit(dir, u, reass)
			if need {
				return off
			}
			if n < 0 {
				// Not WebSocket framing after all: keep the bytes visible.
				dir.mode = modeAuto
				dir.ws.Reset()
				d.emitStream(dir, packet.TransportTCP, u, reass)
				return len(b)
			}
			off += n
			continue
		}
		if k := crlfRun(u); k > 0 {
			d.st.TCPKeepalives++
			off += k
			continue
		}
		kind, n := classify(u)
		switch kind {
		case unitNeedMore:
			return off
		case unitSIP, unitHEP:
			d.emitStream(dir, packet.TransportTCP, u[:n], reass)
			off += n
		case unitUpgrade:
			d.st.WSHandshakes++
			d.emitStream(dir, packet.TransportTCP, u[:n], reass)
			dir.mode = modeWS
			off += n
		case unitWSFrame:
			dir.mode = modeWS
		default:
			// Not a unit we frame: hand the bytes over as they came, up
			// to the next line that starts a SIP message.
			if k := resync(u); k > 0 {
				d.emitStream(dir, packet.TransportTCP, u[:k], reass)
				off += k
				continue
			}
			d.emitStream(dir, packet.TransportTCP, u, reass)
			return len(b)
		}
	}
	return off
}

// crlfRun returns the number of leading CR and LF bytes (keep-alives).
func crlfRun(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// wsUnit reads one WebSocket frame at the start of u. It returns the bytes
// consumed, need=true when the frame is incomplete, or n<0 when u does not
// hold WebSocket framing.
func (d *Decoder) wsUnit(dir *tcpDir, u []byte, reass bool) (n int, need bool) {
	h, err := websocket.ParseHeader(u)
	if err == websocket.ErrShort {
		return 0, true
	}
	if err != nil {
		d.wsDecline(dir)
		return -1, false
	}
	n, ok := h.FrameLen()
	if !ok {
		d.wsDecline(dir)
		return -1, false
	}
	if h.Length > uint64(d.cfg.MaxWSPayload) || n > d.cfg.MaxStreamBuffer {
		d.wsDecline(dir)
		dir.ws.Reset()
		dir.wsSpan = false
		if n <= len(u) {
			return n, false
		}
		dir.skip = n - len(u)
		return len(u), false
	}
	if n > len(u) {
		return 0, true
	}
	payload := u[h.HeaderLen:n]
	if h.Masked {
		d.wsBuf = append(d.wsBuf[:0], payload...)
		websocket.Unmask(d.wsBuf, h.Key, 0)
		payload = d.wsBuf
	}
	if h.Opcode.IsControl() {
		d.st.WSControlFrames++
		return n, false
	}
	msg, frames, done, err := dir.ws.Add(h, payload)
	if err != nil {
		d.wsDecline(dir)
	}
	if done {
		d.st.WSMessages++
		d.emitStream(dir, packet.TransportWS, msg, reass || frames > 1 || dir.wsSpan)
		dir.wsSpan = false
	} else if dir.ws.InProgress() && reass {
		dir.wsSpan = true
	}
	return n, false
}

// wsDecline counts a WebSocket frame or message that was not unwrapped,
// under the connection's server-side (lower) port.
func (d *Decoder) wsDecline(dir *tcpDir) {
	d.st.WSDeclined++
	port := min(dir.key.src.Port(), dir.key.dst.Port())
	d.wsPorts.add(uint64(port))
}

// emitStream emits one unit of a direction's stream.
func (d *Decoder) emitStream(dir *tcpDir, tr packet.Transport, payload []byte, reassembled bool) {
	if len(payload) == 0 {
		return
	}
	d.emit(dir.key.src, dir.key.dst, tr, payload, reassembled)
}

// flushPartial emits the bytes of an unfinished unit as they are and restarts
// framing.
func (d *Decoder) flushPartial(dir *tcpDir) { d.flushAs(dir, &d.st.TCPIncomplete) }

// flushAs is flushPartial counting a non-empty flush under counter.
func (d *Decoder) flushAs(dir *tcpDir, counter *uint64) {
	if len(dir.buf) > 0 {
		*counter++
		d.emitStream(dir, packet.TransportTCP, dir.buf, true)
	}
	dir.buf = nil
	dir.mode = modeAuto
	dir.ws.Reset()
	dir.wsSpan = false
	dir.skip = 0
}

// resetDir drops queued segments and buffers.
func (d *Decoder) resetDir(dir *tcpDir) {
	dir.buf = nil
	dir.ooo = nil
	dir.oooBytes = 0
	dir.mode = modeAuto
	dir.ws.Reset()
	dir.wsSpan = false
	dir.skip = 0
	d.account(dir)
}

// account updates the bytes the direction holds.
func (d *Decoder) account(dir *tcpDir) {
	h := cap(dir.buf) + dir.oooBytes + dir.ws.Buffered()
	d.held += h - dir.held
	dir.held = h
}

// closeStale flushes what a direction still holds (its bytes came from
// earlier frames) and forgets the direction.
func (d *Decoder) closeStale(dir *tcpDir) {
	f := d.frame
	d.frame = nil
	d.staleTS = dir.last
	for len(dir.ooo) > 0 {
		d.gap(dir)
	}
	d.flushPartial(dir)
	d.frame = f
	d.resetDir(dir)
	delete(d.streams, dir.key)
	d.tcpList.remove(dir.elem)
}

// Flush emits what the reassembly still holds at the end of the input:
// queued segments past their gaps and unfinished units, each as one packet
// without a frame. Fragments of datagrams that never completed are counted
// and dropped. The decoder is empty afterwards and may be reused.
func (d *Decoder) Flush(sink packet.Sink) {
	d.sink = sink
	for e := d.tcpList.front(); e != nil; e = d.tcpList.front() {
		d.closeStale(e.value.(*tcpDir))
	}
	for e := d.fragList.front(); e != nil; e = d.fragList.front() {
		d.st.FragmentIncomplete++
		d.dropFrag(e.value.(*fragEntry))
	}
	d.sink = nil
}

// Stats returns a snapshot of the counters.
func (d *Decoder) Stats() Stats {
	s := d.st
	s.Undecodable = d.reasons.reasons()
	s.UndecodableReasonsDropped = d.reasons.dropped
	s.OtherTraffic = d.other.otherKinds()
	s.OtherTrafficKindsDropped = d.other.dropped
	s.WSDeclinedPorts = d.wsPorts.ports()
	s.WSDeclinedPortsDropped = d.wsPorts.dropped
	s.FragmentEntries = len(d.frags)
	s.TCPStreams = len(d.streams)
	s.ReassemblyBytes = d.held
	return s
}

// Entries returns the number of reassembly entries (fragment datagrams and
// TCP directions) held right now.
func (d *Decoder) Entries() int { return len(d.frags) + len(d.streams) }
