package engine

// The multi-core file load (Config.Cores >= 2).
//
// Design: the loader's goroutine reads, decodes and classifies every frame
// (one router, the same classify as on one core) and keeps everything that
// needs one order across the whole capture: HEP unwrapping, SIP parsing, the
// dialog store (a dialog's messages cross host pairs: proxy hops, B2BUA
// legs) and the SDP parse. Media, 99 % of the packets of a carrier capture
// and most of the work past the decoder, goes to Cores-1 workers, sharded by
// host pair (the unordered pair of IP addresses, ports ignored): a stream,
// its reverse direction and the RTCP between the same hosts always land on
// one worker, and the stream store matches RTCP to streams on the report's
// host pair only. Every worker owns a media.Store; every SDP offer or answer
// is sent to every worker in the same queue as the packets, so each worker
// sees the endpoints exactly when one store would. When the load ends the
// workers drain and their stores are merged (media.Store.Merge) into the
// capture's stream store, which is empty until then.
//
// Packets cross to a worker by copy: the frame's bytes and the payload (when
// it is not inside the frame, e.g. a reassembled datagram) go into the
// batch's arena, so nothing borrowed outlives the decoder's callback. A
// batch holds up to shardOps packets or shardArena bytes; each worker has a
// queue of shardQueue batches, which gives backpressure, and batches are
// recycled, so the steady state allocates nothing.
//
// Results equal one core's: same streams, same counters, byte for byte in
// the --json document (TestCoresGiveTheSameDocument), as long as no worker's
// store reaches its stream or probation cap (each shard applies the caps on
// its own).

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"
	"unsafe"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
)

const (
	shardOps   = 512       // packets per batch
	shardArena = 192 << 10 // bytes per batch
	shardQueue = 4         // batches queued per worker
)

// sharder is the media half of a sharded load. Its router-side methods run
// under the capture's wmu.
type sharder struct {
	c       *Capture
	workers []*shardWorker
	free    chan *shardBatch
	wg      sync.WaitGroup
}

type shardWorker struct {
	store *media.Store
	in    chan *shardBatch
	cur   *shardBatch // being filled by the router
}

type shardBatch struct {
	ops   []shardOp
	arena []byte
}

// shardOp is a packet (frame and payload copied into the arena) or an SDP
// event.
type shardOp struct {
	sdp      *sdpEvent
	pkt      packet.Packet
	frame    packet.Frame
	hasFrame bool
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
	n := c.cfg.Cores - 1
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
	for i := 0; i < n; i++ {
		w := &shardWorker{store: media.NewStore(st.Config()), in: make(chan *shardBatch, shardQueue)}
		s.workers = append(s.workers, w)
		s.wg.Add(1)
		go s.run(w)
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
	c.shard = nil
	stores := make([]*media.Store, 0, len(s.workers))
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

// run is a worker: it applies its batches to its store and counts what the
// store took, as the router does on one core.
func (s *sharder) run(w *shardWorker) {
	defer s.wg.Done()
	for b := range w.in {
		var taken, other uint64
		held := false
		for i := range b.ops {
			op := &b.ops[i]
			if ev := op.sdp; ev != nil {
				if held {
					w.store.UnlockWriter()
					held = false
				}
				w.store.OnSDP(ev.callID, ev.ts, ev.s, ev.offer, ev.src)
				op.sdp = nil
				continue
			}
			if op.hasFrame {
				op.pkt.Frame = &op.frame
			}
			if !held {
				w.store.LockWriter()
				held = true
			}
			if w.store.ObserveLocked(&op.pkt) {
				taken++
			} else {
				other++
			}
		}
		if held {
			w.store.UnlockWriter()
		}
		s.c.ctr.media.Add(taken)
		s.c.ctr.other.Add(other)
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

// route copies a media packet into its host pair's worker's batch.
func (s *sharder) route(p *packet.Packet) {
	w := s.workers[0]
	if len(s.workers) > 1 {
		w = s.workers[hostPairHash(p.Src.Addr(), p.Dst.Addr())%uint64(len(s.workers))]
	}
	var data []byte
	if p.Frame != nil {
		data = p.Frame.Data
	}
	off, inside := within(data, p.Payload)
	need := len(data)
	if !inside {
		need += len(p.Payload)
	}
	b := s.batch(w, need)
	b.ops = b.ops[:len(b.ops)+1] // the op is overwritten field by field
	op := &b.ops[len(b.ops)-1]
	op.sdp = nil
	copyPacket(&op.pkt, p)
	var buf []byte
	if need <= cap(b.arena)-len(b.arena) {
		start := len(b.arena)
		b.arena = append(b.arena, data...)
		if !inside {
			b.arena = append(b.arena, p.Payload...)
		}
		buf = b.arena[start:len(b.arena):len(b.arena)]
	} else {
		// larger than a whole arena (a maximal frame): a buffer of its own
		buf = append(make([]byte, 0, need), data...)
		if !inside {
			buf = append(buf, p.Payload...)
		}
	}
	fd := buf[:len(data):len(data)]
	if inside {
		op.pkt.Payload = fd[off : off+len(p.Payload) : off+len(p.Payload)]
	} else {
		op.pkt.Payload = buf[len(data):]
	}
	op.pkt.Frame = nil
	op.hasFrame = p.Frame != nil
	if op.hasFrame {
		copyFrame(&op.frame, p.Frame)
		op.frame.Data = fd
	}
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

// onSDP queues an SDP event to every worker, in order with the packets.
func (s *sharder) onSDP(callID string, ts time.Time, sess *sdp.Session, offer bool, src netip.AddrPort) {
	ev := &sdpEvent{callID: callID, ts: ts, s: sess, offer: offer, src: src}
	for _, w := range s.workers {
		b := s.batch(w, 0)
		b.ops = b.ops[:len(b.ops)+1]
		b.ops[len(b.ops)-1].sdp = ev
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
// of a flow, and every flow between the same two hosts, hash alike.
func hostPairHash(a, b netip.Addr) uint64 {
	return mix(addrKey(a)) ^ mix(addrKey(b))
}

func addrKey(a netip.Addr) uint64 {
	x := a.As16()
	return binary.LittleEndian.Uint64(x[:8]) ^ binary.LittleEndian.Uint64(x[8:])*0x9E3779B97F4A7C15
}

// mix is SplitMix64's finalizer.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}
