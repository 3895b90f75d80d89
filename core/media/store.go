// Package media is the stream store: every RTP stream of a capture (bound to
// its dialog through SDP, or found by heuristics and kept as an orphan), its
// RFC 3550 loss and jitter, per-interval quality, comfort noise, RFC 4733
// events, T.38/UDPTL fax flows and the RTCP claims kept beside it.
//
// One goroutine writes (Observe, OnSDP); any number read (StreamsFor, All,
// Stats) under a read lock and get copies. RTP is never gated by port.
package media

import (
	"hash/maphash"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sipnab/sipnab/core/mos"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/rtp"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/stun"
)

// Defaults (engine.md §8, §17).
const (
	DefaultMaxStreams      = 50000
	DefaultMaxCandidates   = 10000
	DefaultMaxEndpoints    = 100000
	DefaultQualityInterval = 5 * time.Second
	DefaultLostSeqRing     = 1000
	IntervalRetention      = time.Hour
	// MinSequential is how many consecutive packets promote unsignaled
	// UDP to an orphaned RTP stream.
	MinSequential = 3
	// CNShareWithhold is the comfort-noise share above which one-way audio
	// is not concluded.
	CNShareWithhold = 0.3
	// SharedEndpointWindow is how close two dialogs' announcements of one
	// media address must be for both to keep it: the two legs of a B2BUA
	// that hands its endpoints direct media announce the same two
	// addresses within a call setup (b2bua-asterisk.pcapng: 30 ms and
	// 180 ms apart). Farther apart, the later dialog took the address over
	// (a port reused by a later call). The same 2 s as the default leg
	// correlation window (engine.md §6).
	SharedEndpointWindow = 2 * time.Second
	// maxSharers bounds the other dialogs an endpoint or a stream is
	// shared with.
	maxSharers = 4
	// maxShareScan bounds how many of a sharer's latest streams an SDP
	// taking over an address re-examines.
	maxShareScan = 256
)

// Config sets the store's bounds and scoring inputs. Zero values take the
// defaults.
type Config struct {
	// MaxStreams caps the streams held (--max-streams); the oldest is
	// evicted and counted.
	MaxStreams int
	// MaxCandidates caps unsignaled flows held in probation before they
	// prove to be RTP.
	MaxCandidates int
	// MaxEndpoints caps the SDP-announced media endpoints remembered.
	MaxEndpoints int
	// QualityInterval is the per-interval snapshot length
	// (--quality-interval, 1-300 s).
	QualityInterval time.Duration
	// LossThresholdPct is the loss_pct above which a quality interval is
	// degraded: the run's loss threshold (--loss-threshold), the limit the
	// high_loss finding judges a stream with. Nil: HighLossPct (5).
	LossThresholdPct *float64
	// JitterThresholdMs is the jitter_ms above which a quality interval is
	// degraded: the run's jitter threshold (--jitter-threshold), the limit
	// the high_jitter finding judges a stream with. Nil: HighJitterMs (50).
	JitterThresholdMs *float64
	// LostSeqRing is how many lost sequence numbers a stream keeps.
	LostSeqRing int
	// OneWayDelayMs is the operator's one-way path delay
	// (--one-way-delay); used when HasOneWayDelay.
	OneWayDelayMs  float64
	HasOneWayDelay bool
	// CodecIe holds operator-declared equipment impairments (Ie, Bpl) by
	// lowercase codec name ([media.codec_ie]).
	CodecIe map[string]mos.Declared
	// WidebandListening is the G.113 Appendix IV listening context of
	// AMR-WB's wideband score (--amr-wb-listening); "" is monotic.
	WidebandListening mos.Listening
	// RetainAudio keeps the payloads of G.711 packets for export_audio
	// (--retain-audio; audio.go): call audio is content, so holding it is
	// the operator's decision. AudioFramesPerStream bounds each stream's
	// ring (0: DefaultAudioFrames, 1500), AudioMaxBytes the bytes of every
	// stream together (0: DefaultAudioMaxBytes, 64 MiB).
	RetainAudio          bool
	AudioFramesPerStream int
	AudioMaxBytes        int64
	// Logger receives rare notices; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MaxStreams <= 0 {
		c.MaxStreams = DefaultMaxStreams
	}
	if c.MaxCandidates <= 0 {
		c.MaxCandidates = DefaultMaxCandidates
	}
	if c.MaxEndpoints <= 0 {
		c.MaxEndpoints = DefaultMaxEndpoints
	}
	if c.QualityInterval <= 0 {
		c.QualityInterval = DefaultQualityInterval
	}
	if c.QualityInterval < time.Second {
		c.QualityInterval = time.Second
	}
	if c.QualityInterval > 300*time.Second {
		c.QualityInterval = 300 * time.Second
	}
	if c.LostSeqRing <= 0 {
		c.LostSeqRing = DefaultLostSeqRing
	}
	return c
}

// format is one payload type of an SDP media section.
//
// The codec comes first and the small fields share one word after it: 32
// bytes rather than 40 (pt first padded a word of its own), which puts an endpoint with its three inline formats
// (endpointBlock) in the 320-byte size class rather than 352.
type format struct {
	codec  rtp.Codec
	pt     uint8
	rtpmap bool          // named by an rtpmap line (else the static table)
	amr    rtp.AMRParams // RFC 4867 fmtp of an AMR or AMR-WB format (amr.go)
}

// endpoint is one SDP-announced media address:port.
type endpoint struct {
	addr      netip.AddrPort
	callID    string
	mediaType string
	formats   []format
	fax       bool // m=image udptl
	rtcp      bool // this is the RTCP port of a media section
	offer     bool
	direction sdp.Direction
	hold      bool
	ptime     int
	ice       bool // an ICE srflx or relay candidate (iceTraversal)
	at        time.Time
	signaler  netip.AddrPort
	ordinal   uint64
	// sharers are the other dialogs whose SDP named this address within
	// SharedEndpointWindow of the announcement before theirs (a B2BUA's
	// legs with direct media name the same two endpoints); at most
	// maxSharers, newest kept.
	sharers []sharer
}

// sharer is a dialog that also named an endpoint's address: its own
// announcement (ep) stays listed under it (EndpointsFor), out of the
// address index.
type sharer struct {
	callID string
	at     time.Time
	ep     *endpoint
}

// named reports whether callID's SDP named the endpoint's address: it owns
// it or shares it.
func (ep *endpoint) named(callID string) bool {
	if ep.callID == callID {
		return true
	}
	for _, x := range ep.sharers {
		if x.callID == callID {
			return true
		}
	}
	return false
}

// candidate is an unsignaled flow in probation.
type candidate struct {
	key     Key
	n       int
	pkts    [MinSequential]candPkt
	ordinal uint64
}

type candPkt struct {
	ns      int64
	h       rtp.Header
	dscp    uint8
	hasDSCP bool
	frame   packet.FrameRef // set on the first packet only (probation)
	origin  packet.Origin
}

// Stats are the store's counters.
type Stats struct {
	Streams           int    `json:"streams"`
	OrphanedStreams   int    `json:"orphaned_streams"`
	FaxStreams        int    `json:"fax_streams"`
	StreamsEvicted    uint64 `json:"streams_evicted"`
	Candidates        int    `json:"candidates"`
	CandidatesEvicted uint64 `json:"candidates_evicted"`
	Endpoints         int    `json:"endpoints"`
	EndpointsEvicted  uint64 `json:"endpoints_evicted"`
	RTPPackets        uint64 `json:"rtp_packets"`
	RTCPPackets       uint64 `json:"rtcp_packets"`
	RTCPMalformed     uint64 `json:"rtcp_malformed"`
	RTCPUnknownSSRC   uint64 `json:"rtcp_unknown_ssrc"`
	UDPTLPackets      uint64 `json:"udptl_packets"`
	Rejected          uint64 `json:"rejected"` // UDP datagrams that were not media
}

// Store holds the streams of one capture.
type Store struct {
	cfg        Config
	nat        *stun.Tracker // STUN/TURN evidence for readers (nat.go)
	intervalNs int64
	ivCap      int

	mu       sync.RWMutex
	rev      atomic.Uint64
	dirty    bool // a packet was taken since LockWriter
	hot      *[hotSlots]*stream
	ordinal  uint64
	streams  keyIndex[*stream]
	order    []*stream // creation order; nil entries were evicted or removed
	orderHd  int
	byCall   map[string][]*stream
	bySSRC   map[uint32][]*stream
	orphanEP map[netip.AddrPort][]*stream

	cands    keyIndex[*candidate]
	candQ    []Key
	candHd   int
	eps      epIndex                   // announced endpoints by address (epindex.go)
	epByCall map[uint64]*callEndpoints // by callHash (sdp.go)
	epSeed   maphash.Seed
	epQ      addrQueue // the endpoints' addresses, oldest first (evictEndpoint)
	epOrd    uint64
	codecs   codecMemo // rtpmap encodings resolved lately (sdp.go)
	stats    Stats
	lastNs   int64 // arrival of the latest packet taken (LastPacketAt)
	orphans  int
	faxes    int
	chg      changeLog  // changes.go
	audio    audioState // retained audio (audio.go)
}

// NewStore returns an empty store.
func NewStore(cfg Config) *Store {
	cfg = cfg.withDefaults()
	iv := int64(cfg.QualityInterval)
	return &Store{
		cfg:        cfg,
		intervalNs: iv,
		ivCap:      int((int64(IntervalRetention) + iv - 1) / iv),
		streams:    newKeyIndex[*stream](),
		hot:        new([hotSlots]*stream),
		byCall:     make(map[string][]*stream),
		bySSRC:     make(map[uint32][]*stream),
		orphanEP:   make(map[netip.AddrPort][]*stream),
		cands:      newKeyIndex[*candidate](),
		eps:        newEPIndex(),
		epByCall:   make(map[uint64]*callEndpoints),
		epSeed:     maphash.MakeSeed(),
	}
}

// Config returns the effective configuration.
func (st *Store) Config() Config { return st.cfg }

// Revision numbers the store's content: an unchanged value proves unchanged
// content.
func (st *Store) Revision() uint64 { return st.rev.Load() }

// Observe offers one UDP payload to the store. It returns true when the
// payload was taken as RTP, RTCP or UDPTL, or held as a candidate RTP packet
// of a flow still in probation.
func (st *Store) Observe(p *packet.Packet) bool {
	if p == nil || p.Transport != packet.TransportUDP || len(p.Payload) == 0 {
		return false
	}
	st.mu.Lock()
	ok := st.observe(p)
	st.mu.Unlock()
	if ok {
		st.rev.Add(1)
	}
	return ok
}

func (st *Store) observe(p *packet.Packet) bool {
	ok := st.take(p)
	if ok {
		if ns := p.TS.UnixNano(); ns > st.lastNs {
			st.lastNs = ns
		}
	}
	return ok
}

// LastPacketAt returns the arrival time of the latest packet the store took
// (RTP, RTCP, UDPTL, or a candidate RTP packet in probation); zero when it
// took none. With the dialog store's latest message it is where the capture
// ends (analysis.CaptureEnd). Each stream's own latest packet is its
// StreamInfo.LastSeen.
func (st *Store) LastPacketAt() time.Time {
	st.mu.RLock()
	ns := st.lastNs
	st.mu.RUnlock()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func (st *Store) take(p *packet.Packet) bool {
	b := p.Payload
	if rtp.LooksLikeRTCP(b) {
		return st.observeRTCP(p)
	}
	h, err := rtp.Parse(b)
	if err == nil {
		if s := st.get(Key{Src: p.Src, Dst: p.Dst, SSRC: h.SSRC}); s != nil {
			st.update(s, p.TS.UnixNano(), &h, b, p.DSCP, p.HasDSCP)
			st.stats.RTPPackets++
			return true
		}
	}
	// Not an existing RTP stream: a T.38 endpoint's datagrams are fax
	// whatever their bytes look like.
	if st.eps.len() > 0 {
		if ep := st.faxEndpoint(p); ep != nil {
			st.observeFax(p, ep)
			return true
		}
	}
	if err != nil {
		st.stats.Rejected++
		return false
	}
	k := Key{Src: p.Src, Dst: p.Dst, SSRC: h.SSRC}
	ns := p.TS.UnixNano()
	// New flow: signaled endpoints bind at once, anything else waits.
	var ep *endpoint
	if st.eps.len() > 0 {
		ep = st.mediaEndpoint(p.Dst)
		if ep == nil {
			ep = st.mediaEndpoint(p.Src)
		}
	}
	if ep != nil {
		s := st.newStream(k, ns, ep, packet.RefOf(p.Frame), p.Origin)
		st.update(s, ns, &h, b, p.DSCP, p.HasDSCP)
		st.stats.RTPPackets++
		return true
	}
	return st.probation(k, p, ns, &h)
}

// hotSlots is the size of the store's direct-mapped cache of streams.
const hotSlots = 1 << 12

// hotSlot is where a key lives in the cache: a mix of the SSRC (random per
// stream) and the ports.
func hotSlot(k Key) uint32 {
	h := k.SSRC ^ (uint32(k.Src.Port())<<16 | uint32(k.Dst.Port()))
	return (h * 0x9E3779B1) >> (32 - 12)
}

// get returns the stream with key k (nil when none). A direct-mapped cache
// in front of the map answers the packets of the streams in flight with one
// key comparison (the lookup runs once per RTP packet).
func (st *Store) get(k Key) *stream {
	slot := &st.hot[hotSlot(k)]
	if s := *slot; s != nil && s.key == k {
		return s
	}
	s := st.lookup(k)
	if s != nil {
		*slot = s
	}
	return s
}

// lookup returns the stream with key k (nil when none) from the maps
// alone. Readers, which hold only the read lock, use it: the cache is the
// writer's.
func (st *Store) lookup(k Key) *stream {
	// Zoned keys are never in the packed map, and the packed form of an
	// unzoned key is unique: a hit whose key differs is the unzoned twin of
	// a zoned k.
	if s := st.streams.m[k.packAddrs()]; s != nil && s.key == k {
		return s
	}
	if st.streams.zoned == nil {
		return nil
	}
	return st.streams.zoned[k]
}

// forget removes a stream leaving the store from the cache.
func (st *Store) forget(s *stream) {
	if slot := &st.hot[hotSlot(s.key)]; *slot == s {
		*slot = nil
	}
}

func (st *Store) mediaEndpoint(a netip.AddrPort) *endpoint {
	ep := st.eps.get(a)
	if ep == nil || ep.fax || ep.rtcp {
		return nil
	}
	return ep
}

func (st *Store) faxEndpoint(p *packet.Packet) *endpoint {
	if ep := st.eps.get(p.Dst); ep != nil && ep.fax {
		return ep
	}
	if ep := st.eps.get(p.Src); ep != nil && ep.fax {
		return ep
	}
	return nil
}

// probation holds an unsignaled flow until MinSequential packets show
// version 2, a constant SSRC (part of the key), a consistent plausible
// payload type and continuous sequence numbers, then replays them into a
// new orphaned stream.
func (st *Store) probation(k Key, p *packet.Packet, ns int64, h *rtp.Header) bool {
	if !rtp.PlausiblePayloadType(h.PayloadType) {
		st.stats.Rejected++
		return false
	}
	c, _ := st.cands.get(k)
	if c != nil && c.n > 0 {
		last := &c.pkts[c.n-1].h
		d := h.Seq - last.Seq
		if h.PayloadType != c.pkts[0].h.PayloadType || d == 0 || d > 10 {
			c.n = 0 // continuity broken: start over from this packet
		}
	}
	if c == nil {
		if st.cands.len() >= st.cfg.MaxCandidates {
			st.evictCandidate()
		}
		st.ordinal++
		c = &candidate{key: k, ordinal: st.ordinal}
		st.cands.set(k, c)
		st.candQ = append(st.candQ, k)
	}
	c.pkts[c.n] = candPkt{ns: ns, h: *h, dscp: p.DSCP, hasDSCP: p.HasDSCP, origin: p.Origin}
	if c.n == 0 {
		// only the first packet's frame names the stream (newStream below):
		// the others are not hashed (packet.RefOf reads the whole frame)
		c.pkts[0].frame = packet.RefOf(p.Frame)
	}
	c.n++
	if c.n < MinSequential {
		return true
	}
	st.cands.del(k)
	s := st.newStream(k, c.pkts[0].ns, nil, c.pkts[0].frame, c.pkts[0].origin)
	for i := 0; i < c.n; i++ {
		cp := &c.pkts[i]
		st.update(s, cp.ns, &cp.h, nil, cp.dscp, cp.hasDSCP)
		st.stats.RTPPackets++
	}
	return true
}

func (st *Store) evictCandidate() {
	for st.candHd < len(st.candQ) {
		k := st.candQ[st.candHd]
		st.candHd++
		if _, ok := st.cands.get(k); ok {
			st.cands.del(k)
			st.stats.CandidatesEvicted++
			break
		}
	}
	st.compactCandQ()
}

func (st *Store) compactCandQ() {
	if st.candHd > 1024 && st.candHd*2 > len(st.candQ) {
		n := copy(st.candQ, st.candQ[st.candHd:])
		clear(st.candQ[n:])
		st.candQ = st.candQ[:n]
		st.candHd = 0
	}
}

func (st *Store) newStream(k Key, ns int64, ep *endpoint, ref packet.FrameRef, origin packet.Origin) *stream {
	if st.streams.len() >= st.cfg.MaxStreams {
		st.evictStream()
	}
	st.ordinal++
	s := &stream{key: k, ordinal: st.ordinal, frame: ref, origin: origin, firstNs: ns, ivIdx: -1}
	st.streams.set(k, s)
	st.order = append(st.order, s)
	st.bySSRC[k.SSRC] = append(st.bySSRC[k.SSRC], s)
	if k.Fax {
		st.faxes++
	}
	if ep != nil {
		st.bind(s, ep)
	} else {
		st.orphans++
		s.orphanIdx = true
		st.orphanEP[k.Src] = append(st.orphanEP[k.Src], s)
		st.orphanEP[k.Dst] = append(st.orphanEP[k.Dst], s)
	}
	return s
}

func (st *Store) bind(s *stream, ep *endpoint) {
	st.markStream(s)
	s.ep = ep
	s.callID = ep.callID
	st.byCall[ep.callID] = append(st.byCall[ep.callID], s)
	for _, e := range [2]*endpoint{st.eps.get(s.key.Src), st.eps.get(s.key.Dst)} {
		if e == nil {
			continue
		}
		if e.callID != s.callID {
			st.share(s, e.callID)
		}
		for _, x := range e.sharers {
			st.share(s, x.callID)
		}
	}
}

// share lists the stream under callID too when that dialog's SDP named both
// of its ends (and it is not listed there already).
func (st *Store) share(s *stream, callID string) {
	if callID == s.callID || len(s.shared) >= maxSharers {
		return
	}
	for _, c := range s.shared {
		if c == callID {
			return
		}
	}
	src, dst := st.eps.get(s.key.Src), st.eps.get(s.key.Dst)
	if src == nil || dst == nil || !src.named(callID) || !dst.named(callID) {
		return
	}
	st.markCall(callID)
	s.shared = append(s.shared, callID)
	st.byCall[callID] = append(st.byCall[callID], s)
}

// unindexCalls takes a leaving stream out of the per-dialog lists.
func (st *Store) unindexCalls(s *stream) {
	st.markStream(s) // its dialogs lose it (callID and shared stay set)
	for i := -1; i < len(s.shared); i++ {
		c := s.callID
		if i >= 0 {
			c = s.shared[i]
		}
		if c == "" {
			continue
		}
		if l := removeStream(st.byCall[c], s); len(l) == 0 {
			delete(st.byCall, c)
		} else {
			st.byCall[c] = l
		}
	}
}

func removeStream(list []*stream, s *stream) []*stream {
	for i, x := range list {
		if x == s {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			return list[:last]
		}
	}
	return list
}

func (st *Store) unindexOrphan(s *stream) {
	if !s.orphanIdx {
		return
	}
	s.orphanIdx = false
	st.orphans--
	for _, a := range [2]netip.AddrPort{s.key.Src, s.key.Dst} {
		l := removeStream(st.orphanEP[a], s)
		if len(l) == 0 {
			delete(st.orphanEP, a)
		} else {
			st.orphanEP[a] = l
		}
	}
}

func (st *Store) evictStream() {
	for st.orderHd < len(st.order) {
		s := st.order[st.orderHd]
		st.order[st.orderHd] = nil
		st.orderHd++
		if s == nil || st.get(s.key) != s {
			continue
		}
		st.streams.del(s.key)
		st.forget(s)
		st.unindexOrphan(s)
		if s.key.Fax {
			st.faxes--
		}
		if l := removeStream(st.bySSRC[s.key.SSRC], s); len(l) == 0 {
			delete(st.bySSRC, s.key.SSRC)
		} else {
			st.bySSRC[s.key.SSRC] = l
		}
		st.unindexCalls(s)
		st.dropAudio(s) // its bytes leave the budget with it (counted with the stream)
		st.stats.StreamsEvicted++
		break
	}
	if st.orderHd > 1024 && st.orderHd*2 > len(st.order) {
		n := copy(st.order, st.order[st.orderHd:])
		clear(st.order[n:])
		st.order = st.order[:n]
		st.orderHd = 0
	}
}

// update folds one RTP packet into a stream. It allocates nothing once the
// stream exists, apart from amortized growth of the interval ring and the
// first lost-sequence ring.
func (st *Store) update(s *stream, ns int64, h *rtp.Header, payload []byte, dscp uint8, hasDSCP bool) {
	st.markStream(s)
	st.intervalTick(s, ns)
	s.seq(h.Seq, st.cfg.LostSeqRing)
	first := s.packets == 0
	s.packets++
	s.octets += uint64(h.PayloadLen)
	if first {
		s.firstPT = h.PayloadType
	}
	s.countPT(h.PayloadType)
	if ns > s.lastNs {
		s.lastNs = ns
	}
	if hasDSCP {
		switch {
		case !s.hasDSCP:
			s.dscp, s.hasDSCP = dscp, true
		case dscp != s.dscp && (!s.remarked || dscp != s.remarkedTo):
			s.remarkedTo, s.remarked = dscp, true
		}
	}
	codec, basis := s.codecFor(h.PayloadType)
	if st.cfg.RetainAudio && payload != nil && isG711(codec) {
		st.retain(s, ns, h, payload)
	}
	cn := h.PayloadType == rtp.PTComfortNoise || h.PayloadType == rtp.PTComfortNoiseOld
	switch {
	case cn:
		s.cnFrames++
		if !s.inCN {
			s.inCN = true
			s.cnPeriods++
			s.cnStartNs = ns
		}
	case s.inCN:
		s.inCN = false
		if ns > s.cnStartNs {
			s.cnTotalNs += ns - s.cnStartNs
		}
	}
	if codec.Kind == rtp.KindEvent {
		st.event(s, h, payload, codec.ClockRate)
	}
	if codec.Name == "G723" {
		s.g723Rate(h, payload)
	}
	if codec.Kind == rtp.KindAudio {
		if fl, ok := rtp.AMRFlavorOf(codec.Name); ok {
			s.amrFrames(fl, h, payload)
		}
	}
	st.timing(s, ns, h, codec, basis, first, cn)
	s.ivPackets++
}

// g723Rate counts a G.723.1 packet by its bit rate. RFC 3551 §4.5.3: the
// two low bits of a frame's first octet give its type, 00 a 6.3 kbit/s
// frame of 24 octets, 01 a 5.3 kbit/s frame of 20 (10 is a 4-octet SID);
// a packet counts when its first frame's type and its payload size (whole
// frames of that size) agree.
func (s *stream) g723Rate(h *rtp.Header, payload []byte) {
	if payload == nil || h.PayloadLen <= 0 || h.PayloadOffset+h.PayloadLen > len(payload) {
		return
	}
	switch n := h.PayloadLen; payload[h.PayloadOffset] & 3 {
	case 0:
		if n%24 == 0 {
			s.g723[0]++
		}
	case 1:
		if n%20 == 0 {
			s.g723[1]++
		}
	}
}

// event counts RFC 4733 events once each: the first End-bit packet of an
// event timestamp (the end packet is sent three times). Digit values are
// never kept.
func (st *Store) event(s *stream, h *rtp.Header, payload []byte, clock uint32) {
	if payload == nil || h.PayloadOffset+h.PayloadLen > len(payload) {
		return
	}
	ev, err := rtp.ParseEvent(payload[h.PayloadOffset : h.PayloadOffset+h.PayloadLen])
	if err != nil || !ev.End {
		return
	}
	if s.endSeen && s.lastEndTS == h.Timestamp {
		return
	}
	s.endSeen, s.lastEndTS = true, h.Timestamp
	s.events++
	if clock > 0 {
		s.eventNs += int64(ev.Duration) * int64(time.Second) / int64(clock)
	}
}
