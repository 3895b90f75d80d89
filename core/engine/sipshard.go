package engine

// The SIP half of a multi-core file load (Config.Cores >= 2): parsing on
// workers, applying in packet order on the router.
//
// Design (bench/README.md, "Cores", the SIP step): the router keeps
// reading, decoding and classifying every frame. A SIP packet is not parsed
// where it is met: the packet, its frame and its payload are copied into the
// arena of a batch (sipBatchItems packets or sipBatchArena bytes), and a
// full batch goes to one of Cores-1 parse workers in turn. A worker parses
// every SIP message of every packet (sip.Parser, one per item, so the parsed
// Messages of a whole batch live until they are applied), computes the
// frame pointer's digest (packet.RefOf) and parses each message's SDP body
// (sdp.ParseText), all functions of the bytes alone. The router applies the
// parsed messages to the dialog store, and their SDP to the media path, in
// the order the packets came (applySIP): the oldest batch first, a batch
// only when its worker is done with it. So the dialog store, the malformed
// examples, the counters and every SDP event see exactly the sequence one
// core gives, and the --json-run document is the same byte for byte (bench
// TestCoresGiveTheSameDocument; engine TestSIPPipelineKeepsEveryAnswer).
//
// What the router still does per SIP message: the copy into the batch and
// applySIP (the dialog store, the SDP hand-over to media). What left it: the
// SIP parse, the SDP parse and the SHA-256 of the frame pointer.
//
// The router never idles waiting for a worker: the items of a sent batch
// are claimed one at a time (sipBatch.claim) by its worker and, when the
// router must apply the batch before the worker is through, by the router
// too, which parses the first unclaimed item instead of waiting and waits
// only for the one item the worker is parsing. On a machine whose cores are
// busy (or during the garbage collector's turn) a worker may get no core
// for a while; the router then does the parse itself, and two cores cost
// the copy into the batch, not the worker's wait. A batch the router
// applied wholly while its worker had not yet looked at it is reused once
// the worker gives it back (recycle), not waited for.
//
// Batching starts with a run of SIP: the first sipRunToBatch SIP packets
// after a drain (or at the start) are parsed and applied where they are
// met, as on one core, and only the packets after them go into batches.
// So SIP interleaved with media (a carrier's capture, where every media
// packet drains) is not copied for nothing, and the workers start at the
// first batch sent: a load that sends none costs no goroutine.
//
// Order with everything else: anything whose outcome a pending SIP message
// could change waits until every pending message is applied (drain): a
// media packet or frame (the media path must have seen the SDP of every
// earlier message), an ICMP error (matched against the dialog store), STUN
// and TURN (relayed data is routed again), and the end of every run that is
// not a file load's (a live frame, a HEP datagram, a decoder flush, the end
// of the load). A batch that has not been sent when it must be drained is
// parsed by the router itself, so a capture whose SIP is interleaved with
// media (a carrier's) never waits for a worker: only runs of sipBatchItems
// SIP packets with nothing between them go to the workers. A file load's
// run ends (fileSink.EndBatch) without a drain, so the dialog store a reader
// sees during a load may lag the frames read by a few batches; the counters
// of SIP messages are counted when they are applied, so they agree with the
// store at every run's end.
//
// With a tap (-O, -H) SIP is parsed and applied where it is met, as on one
// core: the tap must see SIP and media in packet order.

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
)

// Batch bounds of the SIP pipeline. Variables so that a test can force
// every packet through the workers (TestSIPPipelineKeepsEveryAnswer).
var (
	sipBatchItems = 128       // SIP packets per batch
	sipBatchArena = 192 << 10 // bytes of copied frames and payloads per batch
)

// sipWorkerBatches counts the batches parse workers parsed (a test reads
// it to know the workers took part).
var sipWorkerBatches atomic.Uint64

// sipInflightPerWorker is how many sent batches a worker may hold: one being
// parsed and one waiting, so a worker never idles while the router applies.
const sipInflightPerWorker = 2

// sipRetiredPerWorker bounds the batches applied but not yet given back by
// their worker (see recycle): past it the router waits for the oldest.
const sipRetiredPerWorker = 4

// sipRunToBatch is how many SIP packets must follow one another, with
// nothing between them that drains the pipeline, before the router starts
// copying them into batches: an eighth of a batch. A shorter run (a
// carrier's SIP between its media) is parsed where it is met, as on one
// core, and costs no copy.
func sipRunToBatch() int { return sipBatchItems / 8 }

// sipPipe is the SIP pipeline of a sharded load. Every method but the
// workers' run is the router's (under the capture's wmu).
type sipPipe struct {
	c        *Capture
	workers  []chan *sipBatch
	next     int         // the worker the next full batch goes to
	cur      *sipBatch   // being filled; nil when none
	inflight []*sipBatch // sent to workers, oldest first
	retired  []*sipBatch // applied, not yet given back by their worker
	free     []*sipBatch
	wg       sync.WaitGroup
	started  bool // the workers run (started at the first batch sent)
	run      int  // SIP packets since the last drain (sipRunToBatch)
}

// sipBatch is a run of SIP packets in packet order.
type sipBatch struct {
	items []sipItem // len: the packets taken; cap: sipBatchItems
	arena []byte
	claim atomic.Int32  // items claimed for parsing, by the worker or the router
	done  chan struct{} // the worker is done with the batch (capacity 1)
}

// sipItem is one SIP packet: its copy, then what the parse made of it.
type sipItem struct {
	pkt      packet.Packet
	frame    packet.Frame
	hasFrame bool
	msgs     []sipParsed
	parsers  []*sip.Parser // one per message of the datagram, kept for reuse
	ready    atomic.Bool   // msgs are parsed
}

// sipParsed is one parsed message and what applySIP would otherwise compute
// from its bytes.
type sipParsed struct {
	m      *sip.Message
	ref    packet.FrameRef // packet.RefOf of the packet's frame
	sess   *sdp.Session    // its SDP, when it has a body and parses
	hasSDP bool            // it has a non-empty SDP body
	sdpErr error           // the body did not parse
}

// startSIPPipe sets up the parse workers of a sharded load; they start at
// the first batch sent, so a load that never sends one (a short capture,
// SIP interleaved with media) costs no goroutine.
func (s *sharder) startSIPPipe(n int) {
	q := &sipPipe{c: s.c}
	for i := 0; i < n; i++ {
		q.workers = append(q.workers, make(chan *sipBatch, sipInflightPerWorker+sipRetiredPerWorker))
	}
	s.sip = q
}

// start starts the parse workers.
func (q *sipPipe) start() {
	q.started = true
	for _, ch := range q.workers {
		q.wg.Add(1)
		go q.work(ch)
	}
}

// stop applies what is pending and ends the workers.
func (q *sipPipe) stop() {
	q.drain()
	for _, ch := range q.workers {
		close(ch)
	}
	q.wg.Wait()
}

// work is a parse worker. It claims the items of a batch one at a time,
// as the router does when it must apply a batch the worker has not
// finished (applyOldest): so the router never idles waiting for a worker
// that has no core (a busy machine, or the garbage collector's turn).
func (q *sipPipe) work(in <-chan *sipBatch) {
	defer q.wg.Done()
	for b := range in {
		b.parseClaimed()
		sipWorkerBatches.Add(1)
		b.done <- struct{}{}
	}
}

// parseClaimed parses the items of the batch no one has claimed yet.
func (b *sipBatch) parseClaimed() {
	for b.parseNext() {
	}
}

// parseNext claims the first item no one has claimed and parses it; false
// when every item is claimed.
func (b *sipBatch) parseNext() bool {
	k := b.claim.Add(1) - 1
	if k >= int32(len(b.items)) {
		return false
	}
	it := &b.items[k]
	it.parse()
	it.ready.Store(true)
	return true
}

// drainSIP applies every SIP message the pipeline holds (wmu held); nothing
// when the load is not sharded or nothing is pending. It also ends the
// current run of SIP packets (sipRunToBatch).
func (c *Capture) drainSIP() {
	if c.shard != nil && c.shard.sip != nil {
		q := c.shard.sip
		q.run = 0
		if q.pending() {
			q.drain()
		}
	}
}

// batching reports whether the SIP packet met now goes to the pipeline:
// when something is pending (order), or once the current run of SIP is
// long enough for a batch to be worth a copy. Else the router parses it
// where it is met, as on one core.
func (q *sipPipe) batching() bool {
	if q.pending() {
		return true
	}
	if q.run < sipRunToBatch() {
		q.run++
		return false
	}
	return true
}

// pending reports whether any SIP packet waits to be applied.
func (q *sipPipe) pending() bool {
	return len(q.inflight) > 0 || (q.cur != nil && len(q.cur.items) > 0)
}

// drain applies every pending SIP packet in order: the batches the workers
// have, oldest first, then the one being filled, parsed here.
func (q *sipPipe) drain() {
	for len(q.inflight) > 0 {
		q.applyOldest()
	}
	if b := q.cur; b != nil && len(b.items) > 0 {
		q.cur = nil
		b.parse()
		q.apply(b)
		q.free = append(q.free, b)
	}
}

// take copies a SIP packet into the batch being filled, sending the batch
// to a worker when it is full.
func (q *sipPipe) take(p *packet.Packet) {
	data, off, inside, need := packedSize(p)
	b := q.cur
	if b != nil && (len(b.items) == cap(b.items) || (len(b.arena)+need > cap(b.arena) && len(b.items) > 0)) {
		q.send()
		b = nil
	}
	if b == nil {
		b = q.batch()
		q.cur = b
	}
	var buf []byte
	if need <= cap(b.arena)-len(b.arena) {
		start := len(b.arena)
		b.arena = b.arena[:start+need]
		buf = b.arena[start : start+need : start+need]
	} else {
		buf = make([]byte, need) // larger than a whole arena: a buffer of its own
	}
	b.items = b.items[:len(b.items)+1]
	it := &b.items[len(b.items)-1]
	it.hasFrame = packInto(buf, data, off, inside, p, &it.pkt, &it.frame)
	if it.hasFrame {
		it.pkt.Frame = &it.frame
	}
	it.msgs = it.msgs[:0]
	it.ready.Store(false)
}

// batch returns an empty batch: a free one, one a worker gave back since
// it was retired, or a new one.
func (q *sipPipe) batch() *sipBatch {
	if n := len(q.free); n > 0 {
		b := q.free[n-1]
		q.free = q.free[:n-1]
		return b.reset()
	}
	for i, b := range q.retired {
		select {
		case <-b.done:
			q.retired = append(q.retired[:i], q.retired[i+1:]...)
			return b.reset()
		default:
		}
	}
	return &sipBatch{
		items: make([]sipItem, 0, sipBatchItems),
		arena: make([]byte, 0, sipBatchArena),
		done:  make(chan struct{}, 1),
	}
}

// reset empties an applied batch no worker holds.
func (b *sipBatch) reset() *sipBatch {
	b.items = b.items[:0]
	b.arena = b.arena[:0]
	b.claim.Store(0)
	return b
}

// send hands the batch being filled to the next worker, first applying the
// oldest batch sent when the workers hold as many as they may.
func (q *sipPipe) send() {
	b := q.cur
	q.cur = nil
	if b == nil || len(b.items) == 0 {
		return
	}
	if len(q.inflight) >= sipInflightPerWorker*len(q.workers) {
		q.applyOldest()
	}
	if !q.started {
		q.start()
	}
	q.workers[q.next] <- b
	q.next = (q.next + 1) % len(q.workers)
	q.inflight = append(q.inflight, b)
}

// applyOldest applies the oldest batch sent, item by item as they are
// parsed. When the next item is not parsed yet the router parses the first
// item no one has claimed (in this batch) instead of waiting, and waits
// for the worker only when the worker holds the last unparsed items.
func (q *sipPipe) applyOldest() {
	b := q.inflight[0]
	copy(q.inflight, q.inflight[1:])
	q.inflight[len(q.inflight)-1] = nil
	q.inflight = q.inflight[:len(q.inflight)-1]
	given := false // the worker gave the batch back
	for i := range b.items {
		it := &b.items[i]
		for !it.ready.Load() {
			if b.parseNext() {
				continue
			}
			<-b.done // every item is claimed: the worker parses this one
			given = true
		}
		q.applyItem(it)
	}
	q.recycle(b, given)
}

// recycle takes an applied batch back: at once when its worker gave it
// back, else once it does (retired), so the router does not wait for a
// worker that claims nothing more.
func (q *sipPipe) recycle(b *sipBatch, given bool) {
	if !given {
		select {
		case <-b.done:
			given = true
		default:
		}
	}
	if given {
		q.free = append(q.free, b)
		return
	}
	q.retired = append(q.retired, b)
	if len(q.retired) > sipRetiredPerWorker*len(q.workers) {
		o := q.retired[0]
		q.retired = q.retired[1:]
		<-o.done
		q.free = append(q.free, o)
	}
}

// apply applies a batch the router parsed itself, in packet order.
func (q *sipPipe) apply(b *sipBatch) {
	for i := range b.items {
		q.applyItem(&b.items[i])
	}
}

// applyItem applies one parsed packet and empties its item for reuse.
func (q *sipPipe) applyItem(it *sipItem) {
	q.c.ref.f = nil // item frames are reused: frameRef (a malformed example) hashes again
	for j := range it.msgs {
		q.c.applySIP(&it.pkt, it.msgs[j].m, &it.msgs[j])
		it.msgs[j] = sipParsed{}
	}
	it.msgs = it.msgs[:0]
}

// parse parses every item of the batch (on a worker, or on the router when
// it drains a batch it had not sent).
func (b *sipBatch) parse() {
	for i := range b.items {
		b.items[i].parse()
	}
}

// parse parses the messages of one packet as routeSIP does, and what
// applySIP needs of each from its bytes alone.
func (it *sipItem) parse() {
	var ref packet.FrameRef
	if it.hasFrame {
		ref = packet.RefOf(&it.frame)
	}
	b := it.pkt.Payload
	for n := 0; n < maxSIPPerDatagram && len(b) > 0; n++ {
		if n == len(it.parsers) {
			it.parsers = append(it.parsers, new(sip.Parser))
		}
		m, err := it.parsers[n].Parse(b)
		if err != nil {
			return
		}
		pm := sipParsed{m: m, ref: ref}
		if m.CallID != "" {
			pm.sess, pm.hasSDP, pm.sdpErr = parseSDPOf(m)
		}
		it.msgs = append(it.msgs, pm)
		next, ok := nextSIP(b, m)
		if !ok {
			return
		}
		b = next
	}
}

// maxSIPPerDatagram bounds the messages read from one datagram.
const maxSIPPerDatagram = 64

// nextSIP returns what follows message m in b when it is another SIP
// message (a datagram may carry more than one).
func nextSIP(b []byte, m *sip.Message) ([]byte, bool) {
	rest := m.JunkPrefixBytes + len(m.Raw)
	if m.TrailingBytes <= 0 || rest >= len(b) || !sip.Looks(b[rest:]) {
		return nil, false
	}
	return b[rest:], true
}

// parseSDPOf parses m's SDP body: has is false when m has no non-empty SDP
// body. The body is a view into the message's own bytes (never the
// reader's buffer), which nothing writes again: the Session's strings share
// them instead of copying the body.
func parseSDPOf(m *sip.Message) (s *sdp.Session, has bool, err error) {
	body, ok := m.SDPBody()
	if !ok || len(body) == 0 {
		return nil, false, nil
	}
	s, err = sdp.ParseText(unsafe.String(unsafe.SliceData(body), len(body)))
	return s, true, err
}
