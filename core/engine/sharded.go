package engine

// The multi-core file load (Config.Cores >= 2).
//
// Design: the loader's goroutine reads every frame and keeps everything that
// needs one order across the whole capture: decoding with reassembly (IP
// fragments, TCP), HEP, and applying SIP to the dialog store (a dialog's
// messages cross host pairs: proxy hops, B2BUA legs); the SIP and SDP
// parses of runs of SIP go to parse workers and come back in order
// (sipshard.go). Media, 99 %
// of the frames of a carrier capture and most of the work, goes to Cores-1
// workers, sharded by host pair (the unordered pair of IP addresses, ports
// ignored): a stream, its reverse direction and the RTCP between the same
// hosts always land on one worker, and the stream store matches RTCP to
// streams on the report's host pair only. Every worker owns a
// media.Store; every SDP offer or answer is sent to every worker in the same
// queue as the media, so each worker sees the endpoints exactly when one
// store would. When the load ends the workers drain and their stores are
// merged (media.Store.Merge) into the capture's stream store, which is empty
// until then.
//
// What crosses to a worker:
//   - A plain frame, undecoded: Ethernet/IPv4 without options, unfragmented,
//     not snapped, UDP whose lengths agree with the frame, not a UDP
//     tunnel's port (VXLAN, GTP-U, GENEVE), with a payload that is neither
//     HEP nor SIP (mediaFrame). The
//     router reads its addresses and payload at fixed offsets, classifies the
//     payload as classify would (media), advances its own decoder's clock
//     (Decoder.Tick: reassembly entries expire at the same frames as on one
//     core) and hands the frame over; the worker reads the packet the
//     router's decoder would have made at the same fixed offsets
//     (plainPacket: such a frame needs no decoder state), so the frame is
//     decoded once, not twice.
//   - Any other media packet, decoded by the router (VLAN, IPv6, tunnels,
//     reassembled datagrams, HEP payloads).
//   - SDP events, to every worker.
// Frames and packets cross by copy into the batch's arena (frame bytes, and
// a payload that is not inside its frame), so nothing borrowed outlives the
// decoder's callback. A batch holds up to shardOps items or shardArena
// bytes; each worker has a queue of shardQueue batches (backpressure), and
// batches are recycled, so the steady state allocates nothing.
//
// Results equal one core's: same streams, same counters, byte for byte in
// the --json-run document (bench TestCoresGiveTheSameDocument), as long as no
// worker's store reaches its stream or probation cap (each shard applies
// the caps on its own).

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"
	"unsafe"

	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
)

const (
	maxShards  = 63       // workers at most, whatever Cores says
	shardOps   = 256      // items per batch
	shardArena = 96 << 10 // bytes per batch (1024 ops, 384 KiB took 2-4 % more CPU: Load/cores=2, carrier)
	shardQueue = 4        // batches queued per worker
)

// sharder is the media half of a sharded load. Its router-side methods run
// under the capture's wmu.
type sharder struct {
	c       *Capture
	workers []*shardWorker
	free    chan *shardBatch
	wg      sync.WaitGroup

	// On two cores with inlineShare above 0 (not by default) the router
	// keeps the host pairs of inlineBuckets of every 64 hash buckets itself,
	// in a store of its own, to give the two goroutines the same work.
	inline        *media.Store
	inlineBuckets uint64
	inlineHeld    bool // the router holds inline's writer lock (a run)
	// inline takes SDP only once the router meets a packet of its share
	// (inlineUsed): until then the events wait in inlineQ, and when
	// inlineQueueMax of them wait the router gives its share to the worker
	// (see onSDP), so SIP-only traffic costs the router no SDP twice.
	inlineUsed bool
	inlineQ    []*sdpEvent

	// sip parses SIP on workers for the router to apply in order
	// (sipshard.go); nil with a tap.
	sip *sipPipe
}

// inlineQueueMax is how many SDP events the router's share waits for its
// first packet before the router gives the share up (a variable for
// TestSIPPipelineKeepsEveryAnswer).
var inlineQueueMax = 1024

// inlineShare is the router's share of the host pairs on two cores, in
// 64ths (a variable for the tests). It was 6 while the router hashed every
// host pair through netip.Addr and the worker decoded every frame again;
// now that a plain frame costs the router a check, a copy and no hash, and
// the worker no decode, the router on the bench carrier capture spends
// about what the worker does with no share at all (CPU profile of
// Load/cores=2: router 37-43 ms, worker 37-39 ms per load at shares 0, 2
// and 6), and at 0 it skips the hash and the SDP queue, and the worker's
// store is adopted whole when the load ends (media.Store.Merge) — the
// least CPU of the three on both the carrier and memory presets.
var inlineShare uint64 = 0

type shardWorker struct {
	store *media.Store
	in    chan *shardBatch
	cur   *shardBatch   // being filled by the router
	pkt   packet.Packet // the packet of a plain frame (plainPacket)
	// counts of the batch being applied (worker goroutine only)
	taken, other, packets uint64
}

type shardBatch struct {
	ops   []shardOp
	arena []byte
}

type opKind uint8

const (
	opPacket opKind = iota // pkt (and frame when hasFrame), decoded by the router
	opFrame                // frame, to decode
	opSDP                  // sdp
)

// shardOp is one item of a batch.
type shardOp struct {
	kind     opKind
	hasFrame bool
	sdp      *sdpEvent
	pkt      packet.Packet
	frame    packet.Frame
}

type sdpEvent struct {
	callID string
	ts     time.Time
	s      *sdp.Session
	offer  bool
	src    netip.AddrPort
}

// startSharding sets up the workers of a multi-core load when the
// configuration asks for one and the stream store is the engine's own and
// still untouched.
func (c *Capture) startSharding() {
	n := min(c.cfg.Cores-1, maxShards)
	if n < 1 {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	st, ok := c.media.(*media.Store)
	if !ok || st.Revision() != 0 || c.shard != nil {
		return
	}
	c.releaseMedia()
	s := &sharder{c: c, free: make(chan *shardBatch, n*(shardQueue+2))}
	if n == 1 && inlineShare > 0 {
		s.inline, s.inlineBuckets = media.NewStore(st.Config()), inlineShare
	}
	for i := 0; i < n; i++ {
		w := &shardWorker{
			store: media.NewStore(st.Config()),
			in:    make(chan *shardBatch, shardQueue),
		}
		s.workers = append(s.workers, w)
		s.wg.Add(1)
		go s.run(w)
	}
	if c.tap == nil {
		s.startSIPPipe(n)
	}
	c.shard = s
}

// stopSharding drains the workers and merges their stores into the
// capture's stream store.
func (c *Capture) stopSharding() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	s := c.shard
	if s == nil {
		return
	}
	if s.sip != nil {
		s.sip.stop() // applies what it holds: SDP events reach the workers below
		s.sip = nil
	}
	c.shard = nil
	s.release()
	stores := make([]*media.Store, 0, len(s.workers)+1)
	if s.inline != nil && s.inlineUsed {
		// an unused share is left out: every worker saw the SDP it
		// waits for, and Merge takes endpoints once
		stores = append(stores, s.inline)
	}
	for _, w := range s.workers {
		if w.cur != nil && len(w.cur.ops) > 0 {
			w.in <- w.cur
		}
		w.cur = nil
		close(w.in)
		stores = append(stores, w.store)
	}
	s.wg.Wait()
	c.media.(*media.Store).Merge(stores...)
}

// HandlePacket is the worker decoder's sink: a packet of a frame the router
// handed over (classified media by the router already).
func (w *shardWorker) HandlePacket(p *packet.Packet) {
	w.packets++
	w.observe(p)
}

func (w *shardWorker) observe(p *packet.Packet) {
	if w.store.ObserveLocked(p) {
		w.taken++
	} else {
		w.other++
	}
}

// run is a worker: it applies its batches to its store and counts what the
// store took, as the router does on one core.
func (s *sharder) run(w *shardWorker) {
	defer s.wg.Done()
	for b := range w.in {
		held := false
		for i := range b.ops {
			op := &b.ops[i]
			if op.kind == opSDP {
				if held {
					w.store.UnlockWriter()
					held = false
				}
				ev := op.sdp
				w.store.OnSDP(ev.callID, ev.ts, ev.s, ev.offer, ev.src)
				op.sdp = nil
				continue
			}
			if !held {
				w.store.LockWriter()
				held = true
			}
			if op.kind == opFrame {
				plainPacket(&w.pkt, &op.frame)
				w.HandlePacket(&w.pkt)
				continue
			}
			if op.hasFrame {
				op.pkt.Frame = &op.frame
			}
			w.observe(&op.pkt)
		}
		if held {
			w.store.UnlockWriter()
		}
		c := &s.c.ctr
		c.media.Add(w.taken)
		c.other.Add(w.other)
		c.packets.Add(w.packets)
		w.taken, w.other, w.packets = 0, 0, 0
		b.ops = b.ops[:0]
		b.arena = b.arena[:0]
		select {
		case s.free <- b:
		default:
		}
	}
}

// batch returns the worker's batch being filled, with room for one more op
// of need arena bytes, sending the full one on its way.
func (s *sharder) batch(w *shardWorker, need int) *shardBatch {
	b := w.cur
	if b != nil && (len(b.ops) == cap(b.ops) || len(b.arena)+need > cap(b.arena)) {
		w.in <- b
		b = nil
	}
	if b == nil {
		select {
		case b = <-s.free:
		default:
			b = &shardBatch{ops: make([]shardOp, 0, shardOps), arena: make([]byte, 0, shardArena)}
		}
		w.cur = b
	}
	return b
}

// worker picks the worker of a host pair; nil when the router keeps it.
func (s *sharder) worker(a, b netip.Addr) *shardWorker {
	if len(s.workers) == 1 && s.inline == nil {
		return s.workers[0]
	}
	return s.workerOf(hostPairHash(a, b))
}

// workerOf picks the worker of a host pair's hash; nil when the router
// keeps it.
func (s *sharder) workerOf(h uint64) *shardWorker {
	if h%64 < s.inlineBuckets {
		return nil
	}
	if len(s.workers) == 1 {
		return s.workers[0] // (no division: the usual two-core case)
	}
	return s.workers[(h/64)%uint64(len(s.workers))]
}

// release ends the router's run on its inline store.
func (s *sharder) release() {
	if s.inlineHeld {
		s.inlineHeld = false
		s.inline.UnlockWriter()
	}
}

// observeInline folds a media packet of a host pair the router keeps.
func (s *sharder) observeInline(p *packet.Packet) {
	if !s.inlineUsed {
		s.inlineUsed = true
		for _, ev := range s.inlineQ {
			s.inline.OnSDP(ev.callID, ev.ts, ev.s, ev.offer, ev.src)
		}
		s.inlineQ = nil
	}
	if !s.inlineHeld {
		s.inline.LockWriter()
		s.inlineHeld = true
	}
	if s.inline.ObserveLocked(p) {
		s.c.pend.media++
	} else {
		s.c.pend.other++
	}
}

// next appends an op to w's batch, with room for need arena bytes, and
// returns it with the arena room (nil when it would not fit in a batch).
func (s *sharder) next(w *shardWorker, need int, kind opKind) (*shardOp, []byte) {
	b := s.batch(w, need)
	b.ops = b.ops[:len(b.ops)+1] // the op is overwritten field by field
	op := &b.ops[len(b.ops)-1]
	op.kind = kind
	op.sdp = nil
	if need > cap(b.arena)-len(b.arena) {
		return op, nil
	}
	start := len(b.arena)
	b.arena = b.arena[:start+need]
	return op, b.arena[start : start+need : start+need]
}

// takeFrame hands a plain media frame to its host pair's worker undecoded
// (see the package notes); false when the frame is of another kind (the
// router decodes it).
func (s *sharder) takeFrame(k sourceKind, f *packet.Frame) bool {
	a, b, ok := mediaFrame(f)
	if !ok {
		return false
	}
	w := s.workers[0]
	if len(s.workers) > 1 || s.inline != nil {
		w = s.workerOf(hostPairHash4(a, b))
	}
	if w == nil {
		return false // the router's own host pair: decoded and kept here
	}
	s.c.drainSIP() // the worker sees every earlier SDP first
	s.c.decoders[k].Tick(f, s.c.sinks[k])
	op, buf := s.next(w, len(f.Data), opFrame)
	if buf == nil {
		buf = make([]byte, len(f.Data))
	}
	copy(buf, f.Data)
	copyFrame(&op.frame, f)
	op.frame.Data = buf
	op.hasFrame = true
	return true
}

// mediaFrame reports whether f is an Ethernet/IPv4/UDP frame a worker can
// decode on its own, carrying a payload the router classifies as media: no
// IP options, not a fragment, the IP and UDP lengths exactly those of the
// frame (no padding, no trailer, not snapped), not a UDP tunnel's port
// (decode.TunnelPort: VXLAN, GTP-U, GENEVE), and a non-empty payload that
// is neither HEP, SIP, STUN nor TURN ChannelData. It returns the IPv4
// addresses.
func mediaFrame(f *packet.Frame) (src, dst [4]byte, ok bool) {
	d := f.Data
	if f.LinkType != decode.LinkEthernet || len(d) <= 42 || f.OrigLen != len(d) {
		return src, dst, false
	}
	if d[12] != 0x08 || d[13] != 0x00 || d[14] != 0x45 || d[23] != 17 || d[20]&0x3f != 0 || d[21] != 0 {
		return src, dst, false
	}
	if int(binary.BigEndian.Uint16(d[16:18])) != len(d)-14 || int(binary.BigEndian.Uint16(d[38:40])) != len(d)-34 ||
		decode.TunnelPort(binary.BigEndian.Uint16(d[36:38])) {
		return src, dst, false
	}
	payload := d[42:]
	if payload[0] < 0x80 && maybeSTUN(payload) != actOther {
		return src, dst, false // STUN and TURN ChannelData stay on the router (stun.go)
	}
	if hep.Looks(payload) || sip.Looks(payload) {
		return src, dst, false
	}
	return [4]byte(d[26:30]), [4]byte(d[30:34]), true
}

// plainPacket fills p with the packet a decoder makes of a plain frame
// (one mediaFrame accepted: Ethernet, IPv4 without options, unfragmented,
// UDP whose lengths are the frame's, not a tunnel's port, a payload): the
// addresses, ports, DSCP and Identification (RFC 791) at their fixed
// offsets, the payload after the UDP header. FuzzPlainPacketEqualsDecoder
// holds it to the decoder's packet.
func plainPacket(p *packet.Packet, f *packet.Frame) {
	d := f.Data
	p.TS = f.TS
	p.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(d[26:30])), binary.BigEndian.Uint16(d[34:36]))
	p.Dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(d[30:34])), binary.BigEndian.Uint16(d[36:38]))
	p.Transport = packet.TransportUDP
	p.Payload = d[42:]
	p.Origin = packet.OriginWire
	p.DSCP, p.HasDSCP = d[15]>>2, true
	p.IPID, p.HasIPID = binary.BigEndian.Uint16(d[18:20]), true
	p.Frame = f
	p.Reassembled = false
	p.HEPAgentID = 0
}

// route copies a media packet the router decoded into its host pair's
// worker's batch.
func (s *sharder) route(p *packet.Packet) {
	w := s.worker(p.Src.Addr(), p.Dst.Addr())
	if w == nil {
		s.observeInline(p)
		return
	}
	data, off, inside, need := packedSize(p)
	op, buf := s.next(w, need, opPacket)
	if buf == nil {
		// larger than a whole arena (a maximal frame): a buffer of its own
		buf = make([]byte, need)
	}
	op.hasFrame = packInto(buf, data, off, inside, p, &op.pkt, &op.frame)
}

// packedSize says what a copy of p handed to another goroutine needs: the
// frame's bytes (data), where the payload lies in them (off, when inside),
// and the bytes to reserve (the frame, plus the payload when it lies
// outside the frame: a reassembled or unwrapped one).
func packedSize(p *packet.Packet) (data []byte, off int, inside bool, need int) {
	if p.Frame != nil {
		data = p.Frame.Data
	}
	off, inside = within(data, p.Payload)
	need = len(data)
	if !inside {
		need += len(p.Payload)
	}
	return data, off, inside, need
}

// packInto copies p (sized by packedSize) into buf and the reused dst and
// frame: dst's Payload and frame's Data point into buf, dst.Frame is left
// nil for the caller to set. It reports whether p had a frame.
func packInto(buf, data []byte, off int, inside bool, p *packet.Packet, dst *packet.Packet, frame *packet.Frame) bool {
	copy(buf, data)
	if !inside {
		copy(buf[len(data):], p.Payload)
	}
	copyPacket(dst, p)
	fd := buf[:len(data):len(data)]
	if inside {
		dst.Payload = fd[off : off+len(p.Payload) : off+len(p.Payload)]
	} else {
		dst.Payload = buf[len(data):]
	}
	dst.Frame = nil
	if p.Frame == nil {
		return false
	}
	copyFrame(frame, p.Frame)
	frame.Data = fd
	return true
}

// copyPacket and copyFrame copy field by field into reused ops: a
// whole-struct assignment costs a typed copy with write barriers (the
// router does this for every media packet). TestCopiesSetEveryField keeps
// them complete.
func copyPacket(d, s *packet.Packet) {
	d.TS = s.TS
	d.Src, d.Dst = s.Src, s.Dst
	d.Transport = s.Transport
	d.Payload = s.Payload
	d.Origin = s.Origin
	d.DSCP, d.HasDSCP = s.DSCP, s.HasDSCP
	d.IPID, d.HasIPID = s.IPID, s.HasIPID
	d.Frame = s.Frame
	d.Reassembled = s.Reassembled
	d.HEPAgentID = s.HEPAgentID
}

func copyFrame(d, s *packet.Frame) {
	d.TS = s.TS
	d.LinkType = s.LinkType
	d.Data = s.Data
	d.OrigLen = s.OrigLen
	d.Source = s.Source
	d.SourceID = s.SourceID
	d.Ordinal = s.Ordinal
	d.InvalidTS = s.InvalidTS
}

// onSDP queues an SDP event to every worker, in order with the media.
func (s *sharder) onSDP(callID string, ts time.Time, sess *sdp.Session, offer bool, src netip.AddrPort) {
	ev := &sdpEvent{callID: callID, ts: ts, s: sess, offer: offer, src: src}
	switch {
	case s.inline == nil:
	case s.inlineUsed:
		s.release()
		s.inline.OnSDP(callID, ts, sess, offer, src)
	case len(s.inlineQ) < inlineQueueMax:
		s.inlineQ = append(s.inlineQ, ev)
	default:
		// inlineQueueMax SDP events and no packet of the router's share:
		// SIP-heavy traffic, where the router has work enough. The share
		// goes to the worker (the split of host pairs changes no answer).
		s.inline, s.inlineBuckets, s.inlineQ = nil, 0, nil
	}
	for _, w := range s.workers {
		op, _ := s.next(w, 0, opSDP)
		op.sdp = ev
	}
}

// within reports whether inner lies inside outer and at which offset.
func within(outer, inner []byte) (int, bool) {
	if len(outer) == 0 || len(inner) == 0 {
		return 0, false
	}
	o := uintptr(unsafe.Pointer(unsafe.SliceData(outer)))
	i := uintptr(unsafe.Pointer(unsafe.SliceData(inner)))
	if i < o || i+uintptr(len(inner)) > o+uintptr(len(outer)) {
		return 0, false
	}
	return int(i - o), true
}

// hostPairHash hashes the unordered pair of two addresses: both directions
// of a flow, and every flow between the same two hosts, hash alike. An IPv4
// address hashes as its IPv4-mapped IPv6 form, whichever way it was
// written.
func hostPairHash(a, b netip.Addr) uint64 {
	return mix(addrKey(a)) ^ mix(addrKey(b))
}

// hostPairHash4 is hostPairHash of two IPv4 addresses, from their bytes
// (the router's path for a plain frame, which never builds a netip.Addr).
func hostPairHash4(a, b [4]byte) uint64 {
	return mix(addrKey4(a)) ^ mix(addrKey4(b))
}

const golden = 0x9E3779B97F4A7C15

func addrKey(a netip.Addr) uint64 {
	if a.Is4() || a.Is4In6() {
		return addrKey4(a.Unmap().As4())
	}
	x := a.As16()
	return binary.LittleEndian.Uint64(x[:8]) ^ binary.LittleEndian.Uint64(x[8:])*golden
}

// addrKey4 is addrKey of an IPv4 address: its IPv4-mapped form
// (::ffff:a.b.c.d, RFC 4291 §2.5.5.2) has eight zero bytes, then 00 00 ff
// ff and the address.
func addrKey4(a [4]byte) uint64 {
	return (0xffff0000 | uint64(binary.LittleEndian.Uint32(a[:]))<<32) * golden
}

// mix is SplitMix64's finalizer.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}
