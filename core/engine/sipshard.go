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

// sipPipe is the SIP pipeline of a sharded load. Every method but the
// workers' run is the router's (under the capture's wmu).
type sipPipe struct {
	c        *Capture
	workers  []chan *sipBatch
	next     int         // the worker the next full batch goes to
	cur      *sipBatch   // being filled; nil when none
	inflight []*sipBatch // sent to workers, oldest first
	free     []*sipBatch
	wg       sync.WaitGroup
}

// sipBatch is a run of SIP packets in packet order.
type sipBatch struct {
	items []sipItem // len: the packets taken; cap: sipBatchItems
	arena []byte
	done  chan struct{} // a worker parsed the batch (capacity 1)
}

// sipItem is one SIP packet: its copy, then what the parse made of it.
type sipItem struct {
	pkt      packet.Packet
	frame    packet.Frame
	hasFrame bool
	msgs     []sipParsed
	parsers  []*sip.Parser // one per message of the datagram, kept for reuse
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

// startSIPPipe starts the parse workers of a sharded load.
func (s *sharder) startSIPPipe(n int) {
	q := &sipPipe{c: s.c}
	for i := 0; i < n; i++ {
		ch := make(chan *sipBatch, sipInflightPerWorker)
		q.workers = append(q.workers, ch)
		q.wg.Add(1)
		go q.run(ch)
	}
	s.sip = q
}

// stop applies what is pending and ends the workers.
func (q *sipPipe) stop() {
	q.drain()
	for _, ch := range q.workers {
		close(ch)
	}
	q.wg.Wait()
}

// run is a parse worker.
func (q *sipPipe) run(in <-chan *sipBatch) {
	defer q.wg.Done()
	for b := range in {
		b.parse()
		sipWorkerBatches.Add(1)
		b.done <- struct{}{}
	}
}

// drainSIP applies every SIP message the pipeline holds (wmu held); nothing
// when the load is not sharded or nothing is pending.
func (c *Capture) drainSIP() {
	if c.shard != nil && c.shard.sip != nil && c.shard.sip.pending() {
		c.shard.sip.drain()
	}
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
}

// batch returns an empty batch.
func (q *sipPipe) batch() *sipBatch {
	if n := len(q.free); n > 0 {
		b := q.free[n-1]
		q.free = q.free[:n-1]
		return b
	}
	return &sipBatch{
		items: make([]sipItem, 0, sipBatchItems),
		arena: make([]byte, 0, sipBatchArena),
		done:  make(chan struct{}, 1),
	}
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
	q.workers[q.next] <- b
	q.next = (q.next + 1) % len(q.workers)
	q.inflight = append(q.inflight, b)
}

// applyOldest waits for the oldest batch sent and applies it.
func (q *sipPipe) applyOldest() {
	b := q.inflight[0]
	copy(q.inflight, q.inflight[1:])
	q.inflight[len(q.inflight)-1] = nil
	q.inflight = q.inflight[:len(q.inflight)-1]
	<-b.done
	q.apply(b)
}

// apply applies a parsed batch in packet order and recycles it.
func (q *sipPipe) apply(b *sipBatch) {
	for i := range b.items {
		it := &b.items[i]
		q.c.ref.f = nil // item frames are reused: frameRef (a malformed example) hashes again
		for j := range it.msgs {
			q.c.applySIP(&it.pkt, it.msgs[j].m, &it.msgs[j])
			it.msgs[j] = sipParsed{}
		}
		it.msgs = it.msgs[:0]
	}
	b.items = b.items[:0]
	b.arena = b.arena[:0]
	q.free = append(q.free, b)
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
