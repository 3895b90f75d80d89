// Package engine is the capture engine: it owns one capture's stores and
// the one packet router every source feeds.
//
// Files (a background load), a live interface and a HEP listener all enter
// through the same two doors: HandleFrame for link-layer frames (decoded to
// transport packets first) and HandlePacket for transport packets (HEP
// datagrams from a listener). Both end in route, which classifies a packet
// as HEP (unwrapped and routed again with Origin hep and the envelope's
// addresses and timestamp), SIP (parsed, counted, applied to the dialog
// store, its SDP handed to the media store), media (RTP/RTCP/UDPTL taken by
// the media store) or other (counted). There is no second classifier.
//
// One mutex serializes every producer, so the stores have a single writer
// whatever the number of sources; readers use the stores' own read locks and
// the engine's atomic counters. A file load holds the mutex (and the stream
// store's write lock) across runs of at most capture.BatchFrames frames, so
// a reader waits at most for one run (well under a millisecond), and the
// counters readers see are published at the end of every run.
//
// With Config.Cores at 2 or more, a file load keeps classification and
// the dialog store on the loader's goroutine and hands media to Cores-1
// workers, sharded by host pair, each with a stream store of its own; they
// are merged into the capture's stream store when the load ends
// (sharded.go). Runs of SIP are parsed by Cores-1 other workers and applied
// by the loader's goroutine in packet order (sipshard.go).
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sipnab/sipnab/core/ami"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/core/stun"
)

// Config sets up a Capture. The zero value is ready to use.
type Config struct {
	// Node names this server in capture_identity (--node-name).
	Node string
	// Dialog bounds the dialog store.
	Dialog dialog.Config
	// Media configures the stream store.
	Media media.Config
	// Decode bounds the frame decoder.
	Decode decode.Config
	// STUN bounds the STUN/TURN/ICE evidence tables.
	STUN stun.Config
	// Expand controls how directory inputs are searched.
	Expand capture.ExpandOptions
	// Load tunes the background file load (frame limit, inflation
	// ceiling). Its Logger defaults to the engine's logger. The engine
	// always reads plain pcap files through a memory mapping
	// (capture.LoadOptions.Mmap).
	Load capture.LoadOptions
	// MaxHEPInflated bounds an inflated HEP payload (hep.DefaultMaxInflated
	// when 0).
	MaxHEPInflated int
	// Cores is how many cores a file load uses (--cores). 0 or 1 routes
	// every packet on the loader's goroutine. N >= 2 keeps the router and
	// the dialog store on the loader's goroutine and hands RTP, RTCP and
	// UDPTL to N-1 workers, sharded by host pair, each with its own stream
	// store fed every SDP in packet order; the stores are merged when the
	// load ends, into the same streams and counters one core gives. During
	// such a load the capture's stream store stays empty. SIP is parsed by
	// N-1 more workers and applied in packet order by the loader's
	// goroutine (without a tap), so during the load the dialog store may
	// lag the frames read by a few hundred messages. Ignored with a custom
	// media sink.
	Cores int
	// Gate is the port gate (gate.go): nil analyses SIP on every port.
	// sipnab's command line sets it from --portrange and --ws-portrange.
	Gate *PortGate
	// Detect are the security detectors (core/detect, engine.md §13):
	// every applied SIP message (not a retransmission or a capture
	// duplicate) is fed to them in capture order. nil gives a detector
	// with nothing armed.
	Detect *detect.Detector
}

// Capture is one capture: its stores, its sources and its counters.
type Capture struct {
	cfg      Config
	log      *slog.Logger
	instance string
	started  time.Time

	dialogs *dialog.Store
	media   MediaSink

	// malMu guards the malformed-SIP examples (written by the router
	// under wmu, read by Status without it).
	malMu       sync.Mutex
	malExamples []MalformedSIP
	malByReason map[string]uint64

	// wmu is the single-writer lock: every producer routes under it.
	wmu      sync.Mutex
	decoders [sourceKinds]*decode.Decoder
	hepDec   hep.Decoder
	hepMsg   hep.Message
	inner    packet.Packet
	sinks    [sourceKinds]packet.Sink
	// sipParser parses every SIP message into one reused Message: the
	// dialog store keeps a message's bytes (its own copy) and strings into
	// them, never the Message, its headers or its Vias.
	sipParser sip.Parser
	ownMedia  bool // media is the engine's own *media.Store (SetMediaSink)
	// ref is the evidence pointer of the frame being routed, once the SIP
	// path needed it (frameRef): packet.RefOf hashes the whole frame.
	ref refCache
	// stun is the STUN/TURN/ICE evidence (stun.go); stunMsg the message
	// it parses into and relayed the packet a TURN relay's data is routed
	// as.
	stun    *stun.Tracker
	stunMsg stun.Message
	relayed packet.Packet

	// Under wmu: the router's tallies not yet published to ctr, the stream
	// store's writer lock when held across a run, and the sharded media
	// path of a multi-core file load.
	pend    tally
	batch   batchMedia // the media sink's run interface (nil when it has none)
	batchOn bool       // batch's writer lock is held
	shard   *sharder
	self    []selfAddr // where this capture's HEP listeners receive (self.go)
	tap     Tap        // -O / -H re-emission (tap.go); nil when off
	sendTo  sendAddr   // the -H receiver: live packets to it are skipped (tap.go)

	gated gateTally // the port gate's count (under wmu; gate.go)

	ctr counters
	ami ami.Tracker // cleartext AMI sightings (core/ami; read by AMISightings)

	smu      sync.Mutex // sources
	load     *capture.Load
	loadDone chan struct{} // closed after the load ended and was flushed
	inputs   []capture.Input
	warnings []capture.Warning
	hepL     []*heplisten.Listener
	live     []liveSource
	closed   bool          // Close stopped the live sources and HEP listeners
	egress   *EgressStatus // what -O and -H did, once they ended (SetEgress)

	// sdpParser (under wmu) parses the SDP bodies the engine's own stream
	// store takes on the loader's goroutine into one reused Session
	// (parseSDP). Last: it is a kilobyte the router's other fields need
	// not be spread around.
	sdpParser sdp.Parser
}

// MediaSink is what the router needs from the stream store. core/media's
// Store satisfies it.
type MediaSink interface {
	// Observe offers a UDP payload; true when it was taken as media.
	Observe(p *packet.Packet) bool
	// OnSDP registers the media endpoints an SDP offer or answer announces.
	OnSDP(callID string, ts time.Time, s *sdp.Session, offer bool, src netip.AddrPort)
}

// batchMedia is a media sink that takes runs of packets under one writer
// lock (core/media's Store does).
type batchMedia interface {
	LockWriter()
	ObserveLocked(p *packet.Packet) bool
	UnlockWriter()
}

type sourceKind int

const (
	kindFile sourceKind = iota
	kindLive
	kindHEP
	sourceKinds
)

// liveSource is a running live capture.
type liveSource struct {
	name string
	stop func() error
	done <-chan struct{}
	err  func() error
}

// tally is the router's counts since they were last published (under
// wmu, plain integers: the hot path pays no atomic operation per packet).
type tally struct {
	frames, bytes, invalidTS, packets                   uint64
	sipMessages, sipMalformed, sipNoCallID, sipRetrans  uint64
	sipDups                                             uint64
	sipRefused, sdpBodies, sdpBad, media, other         uint64
	hepEnvelopes, hepMalformed, hepSIP, hepRTP, hepRTCP uint64
	hepOther, hepNested, hepNotSIP, hepKeepalives       uint64
	ownListener, ownSender                              uint64
	stun                                                uint64
}

// publish adds the pending tallies to the counters readers see. Called with
// wmu held at the end of every run.
func (c *Capture) publish() {
	t := &c.pend
	add := func(a *atomic.Uint64, v *uint64) {
		if *v != 0 {
			a.Add(*v)
			*v = 0
		}
	}
	add(&c.ctr.frames, &t.frames)
	add(&c.ctr.bytes, &t.bytes)
	add(&c.ctr.invalidTS, &t.invalidTS)
	add(&c.ctr.packets, &t.packets)
	add(&c.ctr.sipMessages, &t.sipMessages)
	add(&c.ctr.sipMalformed, &t.sipMalformed)
	add(&c.ctr.sipNoCallID, &t.sipNoCallID)
	add(&c.ctr.sipRetrans, &t.sipRetrans)
	add(&c.ctr.sipDups, &t.sipDups)
	add(&c.ctr.sipRefused, &t.sipRefused)
	add(&c.ctr.sdpBodies, &t.sdpBodies)
	add(&c.ctr.sdpBad, &t.sdpBad)
	add(&c.ctr.media, &t.media)
	add(&c.ctr.other, &t.other)
	add(&c.ctr.hepEnvelopes, &t.hepEnvelopes)
	add(&c.ctr.hepMalformed, &t.hepMalformed)
	add(&c.ctr.hepSIP, &t.hepSIP)
	add(&c.ctr.hepRTP, &t.hepRTP)
	add(&c.ctr.hepRTCP, &t.hepRTCP)
	add(&c.ctr.hepOther, &t.hepOther)
	add(&c.ctr.hepNested, &t.hepNested)
	add(&c.ctr.hepNotSIP, &t.hepNotSIP)
	add(&c.ctr.hepKeepalives, &t.hepKeepalives)
	add(&c.ctr.ownListener, &t.ownListener)
	add(&c.ctr.stun, &t.stun)
	add(&c.ctr.ownSender, &t.ownSender)
}

// endRun ends a run of routed packets (wmu held): SIP pending in a sharded
// load's pipeline is applied, the stream store's writer lock is released
// and the tallies are published.
func (c *Capture) endRun() {
	c.drainSIP()
	c.releaseMedia()
	c.publish()
}

// releaseMedia releases the stream store's writer lock if a run holds it
// (the router's own shard's on a sharded load).
func (c *Capture) releaseMedia() {
	if c.batchOn {
		c.batchOn = false
		c.batch.UnlockWriter()
	}
	if c.shard != nil {
		c.shard.release()
	}
}

// counters are the router's tallies as readers see them.
type counters struct {
	frames        atomic.Uint64 // frames handed to HandleFrame
	bytes         atomic.Uint64
	invalidTS     atomic.Uint64
	packets       atomic.Uint64 // transport packets routed (inner HEP payloads included)
	hepDatagrams  atomic.Uint64 // datagrams from HEP listeners
	sipMessages   atomic.Uint64
	sipMalformed  atomic.Uint64
	sipNoCallID   atomic.Uint64
	sipRetrans    atomic.Uint64
	sipDups       atomic.Uint64
	sipRefused    atomic.Uint64
	sdpBodies     atomic.Uint64
	sdpBad        atomic.Uint64
	media         atomic.Uint64
	other         atomic.Uint64
	hepEnvelopes  atomic.Uint64
	hepMalformed  atomic.Uint64
	hepSIP        atomic.Uint64
	hepRTP        atomic.Uint64
	hepRTCP       atomic.Uint64
	hepOther      atomic.Uint64
	hepNested     atomic.Uint64
	hepNotSIP     atomic.Uint64
	hepKeepalives atomic.Uint64
	ownListener   atomic.Uint64 // live packets to our own HEP listener, skipped
	stun          atomic.Uint64 // STUN and TURN ChannelData messages (stun.go)
	ownSender     atomic.Uint64 // live packets to our own -H receiver, skipped (tap.go)
}

// New returns an empty capture. log may be nil.
func New(cfg Config, log *slog.Logger) *Capture {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Load.Logger == nil {
		cfg.Load.Logger = log
	}
	cfg.Load.Mmap = true
	if cfg.Detect == nil {
		cfg.Detect = detect.New(detect.Config{})
	}
	c := &Capture{
		cfg:      cfg,
		log:      log,
		instance: mintInstance(),
		started:  time.Now(),
		dialogs:  dialog.New(cfg.Dialog),
		stun:     stun.NewTracker(cfg.STUN),
	}
	ms := media.NewStore(cfg.Media)
	ms.SetNATEvidence(c.stun)
	c.SetMediaSink(ms)
	c.hepDec.MaxInflated = cfg.MaxHEPInflated
	routerDecode := c.withICMP(cfg.Decode) // icmp.go
	for k := range c.decoders {
		c.decoders[k] = decode.New(routerDecode)
		c.sinks[k] = packet.SinkFunc(c.routeLocked)
	}
	c.sinks[kindLive] = packet.SinkFunc(c.routeLive)
	return c
}

func mintInstance() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%016x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// Dialogs returns the dialog store.
func (c *Capture) Dialogs() *dialog.Store { return c.dialogs }

// Detector returns the security detectors (never nil: unarmed without
// Config.Detect).
func (c *Capture) Detector() *detect.Detector { return c.cfg.Detect }

// Media returns the stream store (nil when a custom sink was installed).
func (c *Capture) Media() *media.Store {
	s, _ := c.media.(*media.Store)
	return s
}

// SetMediaSink replaces the stream store the router feeds. Call it before
// any source starts.
func (c *Capture) SetMediaSink(m MediaSink) {
	c.media = m
	c.batch, _ = m.(batchMedia)
	_, c.ownMedia = m.(*media.Store)
}

// Identity names the capture: node, an instance minted when the capture was
// created (a new capture voids every cursor of an old one), and generations
// that move when a store drops content (eviction).
type Identity struct {
	// Node is the server's node name.
	Node string `json:"node" desc:"server node name"`
	// Instance changes whenever a different capture is loaded.
	Instance string `json:"instance" desc:"capture instance; a new one voids old cursors"`
	// DialogGeneration moves when dialogs are evicted.
	DialogGeneration uint64 `json:"dialog_generation" desc:"moves when dialogs are evicted"`
	// StreamGeneration moves when streams are evicted.
	StreamGeneration uint64 `json:"stream_generation" desc:"moves when streams are evicted"`
}

// Identity returns the capture's identity now.
func (c *Capture) Identity() Identity {
	id := Identity{Node: c.cfg.Node, Instance: c.instance, DialogGeneration: c.dialogs.Generation()}
	if m := c.Media(); m != nil {
		id.StreamGeneration = m.Stats().StreamsEvicted
	}
	return id
}

// LoadFiles starts reading capture files (and directories and globs) in the
// background, in first-packet-timestamp order, and returns at once. A named
// file that cannot be opened or is not pcap/pcapng is an immediate error
// (naming the format it is, when known); a file discovered in a directory
// that cannot be read is skipped with a warning. One capture loads files
// once.
func (c *Capture) LoadFiles(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return errors.New("loading capture: no input named")
	}
	inputs, warns, err := capture.Expand(paths, c.cfg.Expand)
	if err != nil {
		return fmt.Errorf("loading capture: %w", err)
	}
	for _, w := range warns {
		c.log.Warn("skipping capture file", "path", w.Path, "err", w.Err)
	}
	if len(inputs) == 0 {
		return fmt.Errorf("loading capture: no capture file found in %s", strings.Join(paths, ", "))
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.load != nil {
		return errors.New("loading capture: files are already loading into this capture")
	}
	c.inputs, c.warnings = inputs, warns
	c.loadDone = make(chan struct{})
	c.startSharding()
	c.load = capture.StartWith(ctx, inputs, &fileSink{c: c}, c.cfg.Load)
	go func(l *capture.Load, done chan struct{}) {
		<-l.Done()
		c.flush(kindFile)
		c.stopSharding()
		close(done)
	}(c.load, c.loadDone)
	return nil
}

// fileSink feeds a file load's frames to the router, holding the writer
// lock across each run of frames the loader hands it (capture.BatchSink).
type fileSink struct {
	c    *Capture
	held bool
}

func (s *fileSink) HandleFrame(f *packet.Frame) {
	if !s.held {
		s.c.wmu.Lock()
		s.held = true
	}
	s.c.frameLocked(kindFile, f)
}

func (s *fileSink) EndBatch() {
	if s.held {
		s.held = false
		// SIP the pipeline of a sharded load holds stays pending across
		// the file's runs (sipshard.go); every other run drains it.
		s.c.releaseMedia()
		s.c.publish()
		s.c.wmu.Unlock()
	}
}

// Wait blocks until the file load (if any) has finished and its last
// buffered packets were routed.
func (c *Capture) Wait() {
	c.smu.Lock()
	done := c.loadDone
	c.smu.Unlock()
	if done != nil {
		<-done
	}
}

// Done is closed when the file load has finished (nil when no files were
// loaded).
func (c *Capture) Done() <-chan struct{} {
	c.smu.Lock()
	defer c.smu.Unlock()
	return c.loadDone
}

// StartHEP starts a HEP listener whose datagrams enter the router. The
// listener stops when ctx ends or Close is called.
func (c *Capture) StartHEP(ctx context.Context, cfg heplisten.Config) (*heplisten.Listener, error) {
	if cfg.Logger == nil {
		cfg.Logger = c.log
	}
	sink := packet.SinkFunc(func(p *packet.Packet) {
		c.ctr.hepDatagrams.Add(1)
		c.ctr.frames.Add(1)
		c.ctr.bytes.Add(uint64(len(p.Payload)))
		c.HandlePacket(p)
	})
	l, err := heplisten.Listen(ctx, cfg, sink)
	if err != nil {
		return nil, err // heplisten's errors already say "starting HEP listener: ..."
	}
	c.wmu.Lock()
	c.watchListener(l)
	c.wmu.Unlock()
	c.smu.Lock()
	c.hepL = append(c.hepL, l)
	c.smu.Unlock()
	return l, nil
}

// HEPIngest is one HEP listener of the capture as the stores' readers need
// it: the source name its frames carry (the <source> of their evidence
// pointers) and what it checks before admitting a datagram.
type HEPIngest struct {
	Name string `json:"name"`
	heplisten.Admission
}

// HEPIngest returns the capture's HEP listeners' admission checks, in the
// order they were started: the run's configured ingest posture. Ingest
// refuses a datagram that fails them, so every message a listener
// delivered arrived under its posture (a HEP envelope read from a file or
// a live interface passed no listener and no check).
func (c *Capture) HEPIngest() []HEPIngest {
	c.smu.Lock()
	defer c.smu.Unlock()
	out := make([]HEPIngest, 0, len(c.hepL))
	for _, l := range c.hepL {
		out = append(out, HEPIngest{Name: l.Name(), Admission: l.Admission()})
	}
	return out
}

// AttachLive registers a running live source (the frames of which the
// caller feeds to HandleFrame): its name, how to stop it, a channel closed
// when it ends and the error it ended with.
func (c *Capture) AttachLive(name string, stop func() error, done <-chan struct{}, errf func() error) {
	c.smu.Lock()
	c.live = append(c.live, liveSource{name: name, stop: stop, done: done, err: errf})
	c.smu.Unlock()
}

// Close stops every live source and HEP listener. A file load is stopped by
// cancelling the context given to LoadFiles.
func (c *Capture) Close() error {
	c.smu.Lock()
	hl, lv := c.hepL, c.live
	if len(hl) > 0 || len(lv) > 0 {
		c.closed = true
	}
	c.smu.Unlock()
	var errs []error
	for _, l := range hl {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range lv {
		if s.stop != nil {
			if err := s.stop(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	c.flush(kindLive)
	return errors.Join(errs...)
}

// HandleFrame routes one live-capture frame (packet.FrameSink). Frames from
// a file load enter through LoadFiles.
func (c *Capture) HandleFrame(f *packet.Frame) { c.handleFrame(kindLive, f) }

func (c *Capture) handleFrame(k sourceKind, f *packet.Frame) {
	c.wmu.Lock()
	c.frameLocked(k, f)
	c.endRun()
	c.wmu.Unlock()
}

// frameLocked decodes one frame and routes its packets (wmu held).
func (c *Capture) frameLocked(k sourceKind, f *packet.Frame) {
	c.pend.frames++
	c.pend.bytes += uint64(len(f.Data))
	if f.InvalidTS {
		c.pend.invalidTS++
	}
	if c.tap != nil {
		c.tap.Frame(f)
	}
	if c.shard != nil && c.tap == nil && c.shard.takeFrame(k, f) {
		return
	}
	c.decoders[k].Decode(f, c.sinks[k])
}

// HandlePacket routes one transport packet (packet.Sink): a packet a
// caller decoded itself. HEP listeners started with StartHEP enter here too.
func (c *Capture) HandlePacket(p *packet.Packet) {
	c.wmu.Lock()
	c.routeLocked(p)
	c.endRun()
	c.wmu.Unlock()
}

// flush emits what a decoder still holds (TCP streams without their final
// segment boundary) once its source has ended.
func (c *Capture) flush(k sourceKind) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.decoders[k].Flush(c.sinks[k])
	c.endRun()
}

// action is what the router decided to do with a packet.
type action uint8

const (
	actOther       action = iota // counted as other
	actHEP                       // unwrap the HEP envelope, route its payload
	actHEPNested                 // HEP inside HEP: counted, not unwrapped twice
	actSIP                       // parse, apply to the dialog store, SDP to media
	actMedia                     // offer to the stream store (RTP, RTCP, UDPTL)
	actSTUN                      // STUN: record, unwrap a Send/Data indication (stun.go)
	actChannelData               // TURN ChannelData: unwrap by its channel binding (stun.go)
	actGated                     // SIP outside the port gate: counted, not analysed
)

// classify is the router's one decision, the same for every source and
// for the single- and multi-core paths (only the appliers differ).
func (c *Capture) classify(p *packet.Packet) action {
	b := p.Payload
	switch {
	case len(b) == 0:
		return actOther
	case hep.Looks(b):
		if p.Origin == packet.OriginHEP {
			return actHEPNested
		}
		return actHEP
	case c.sipParser.Looks(b):
		// (the parser keeps where the start line is: routeSIP's Parse of
		// this payload does not look for it again)
		if g := c.cfg.Gate; g != nil && !g.admits(p) {
			return actGated
		}
		return actSIP
	case p.Transport != packet.TransportUDP:
		return actOther
	case b[0] < 0x80:
		// STUN (0-3) or TURN ChannelData (64-127), RFC 7983 §7; RTP's
		// first byte is 128-191 and never comes here
		if a := maybeSTUN(b); a != actOther {
			return a
		}
	}
	if c.media != nil && p.Transport == packet.TransportUDP {
		return actMedia
	}
	return actOther
}

// routeLocked is the router: every packet of every source passes here, with
// wmu held.
func (c *Capture) routeLocked(p *packet.Packet) {
	c.pend.packets++
	switch c.classify(p) {
	case actHEP:
		c.routeHEP(p)
	case actHEPNested:
		c.pend.hepNested++
		c.pend.other++
	case actSIP:
		c.routeSIP(p, p.Payload)
	case actMedia:
		if c.tap != nil {
			c.tapMedia(p)
		}
		c.routeMedia(p)
	case actGated:
		c.gated.note(p)
	case actSTUN:
		c.drainSIP()
		c.routeSTUN(p)
	case actChannelData:
		c.drainSIP()
		c.routeChannelData(p)
	default:
		c.pend.other++
		c.ami.Observe(p) // two prefix tests on TCP payloads that are not SIP
	}
}

// routeMedia hands a UDP payload to the stream store: on a sharded load to
// its host pair's worker (which counts it), else to the store under the
// run's writer lock. A UDP payload the store does not take is counted as
// other; the AMI check, which reads TCP only, has nothing to see in it.
func (c *Capture) routeMedia(p *packet.Packet) {
	if c.shard != nil {
		c.drainSIP() // the media path sees every earlier SDP first
		c.shard.route(p)
		return
	}
	var ok bool
	if c.batch != nil {
		if !c.batchOn {
			c.batch.LockWriter()
			c.batchOn = true
		}
		ok = c.batch.ObserveLocked(p)
	} else {
		ok = c.media.Observe(p)
	}
	if ok {
		c.pend.media++
	} else {
		c.pend.other++
	}
}

// onSDP hands an SDP offer or answer to the stream store (to every shard
// on a sharded load, in packet order).
func (c *Capture) onSDP(callID string, ts time.Time, s *sdp.Session, offer bool, src netip.AddrPort) {
	if c.shard != nil {
		c.shard.onSDP(callID, ts, s, offer, src)
		return
	}
	c.releaseMedia()
	c.media.OnSDP(callID, ts, s, offer, src)
}

// routeSIP parses, counts and applies every SIP message in b (a datagram
// may carry more than one). On a sharded file load without a tap it hands
// the packet to the SIP pipeline instead (sipshard.go).
func (c *Capture) routeSIP(p *packet.Packet, b []byte) {
	if c.shard != nil && c.shard.sip != nil && c.tap == nil && len(b) == len(p.Payload) && c.shard.sip.batching() {
		c.shard.sip.take(p)
		return
	}
	c.ref.f = nil // a new packet: its frame is hashed again (frameRef)
	for n := 0; n < maxSIPPerDatagram && len(b) > 0; n++ {
		m, err := c.sipParser.Parse(b)
		if err != nil {
			return
		}
		c.applySIP(p, m, nil)
		next, ok := nextSIP(b, m)
		if !ok {
			return
		}
		b = next
	}
}

// applySIP counts and applies one parsed message. pre, when not nil, is
// what the SIP pipeline's worker computed from the message's bytes (the
// frame pointer, the SDP), which applySIP otherwise computes itself.
func (c *Capture) applySIP(p *packet.Packet, m *sip.Message, pre *sipParsed) {
	c.pend.sipMessages++
	if c.tap != nil {
		c.tap.SIP(p, m.Raw)
	}
	if len(m.Malformed) > 0 {
		c.pend.sipMalformed++
		c.noteMalformed(p, m)
	}
	o := dialog.Observation{
		Msg: m, TS: p.TS, Src: p.Src, Dst: p.Dst, Transport: p.Transport,
		Origin: p.Origin, DSCP: p.DSCP, HasDSCP: p.HasDSCP, IPID: p.IPID, HasIPID: p.HasIPID,
	}
	if p.Frame != nil {
		if pre != nil {
			o.Frame = pre.ref
		} else {
			o.Frame = c.frameRef(p.Frame)
		}
		o.InvalidTS = p.Frame.InvalidTS
	}
	r := c.dialogs.Apply(o)
	switch {
	case r.NoCallID:
		c.pend.sipNoCallID++
	case r.Refused:
		c.pend.sipRefused++
	case r.Retransmission:
		c.pend.sipRetrans++
	case r.Duplicate:
		c.pend.sipDups++
	}
	if !r.Retransmission && !r.Duplicate {
		c.cfg.Detect.Observe(p.TS, p.Src, p.Dst, m)
	}
	if m.CallID == "" || r.Refused || r.Retransmission || r.Duplicate || c.media == nil {
		return
	}
	var s *sdp.Session
	var has bool
	var err error
	if pre != nil {
		s, has, err = pre.sess, pre.hasSDP, pre.sdpErr
	} else if body, ok := m.SDPBody(); ok && len(body) > 0 {
		// The body is a view into the message's own bytes (never the
		// reader's buffer), which nothing writes again: the Session's
		// strings share them instead of copying the body.
		has = true
		s, err = c.parseSDP(unsafe.String(unsafe.SliceData(body), len(body)))
	}
	if !has {
		return
	}
	c.pend.sdpBodies++
	if err != nil {
		c.pend.sdpBad++
		return
	}
	offer := m.IsRequest && !strings.EqualFold(m.Method, "ACK")
	c.onSDP(m.CallID, p.TS, s, offer, p.Src)
}

// refCache holds the evidence pointer of one frame.
type refCache struct {
	f   *packet.Frame
	ord uint64
	ref packet.FrameRef
}

// frameRef returns the evidence pointer of f, hashing the frame once
// however many SIP messages it carries (a datagram or a TCP segment may
// carry several; a malformed one is also named in its example). The cache
// is emptied as each SIP packet enters routeSIP, and as the SIP pipeline
// of a sharded load applies each packet (sipshard.go), so it never
// outlives the packet whose frame it names.
func (c *Capture) frameRef(f *packet.Frame) packet.FrameRef {
	if c.ref.f != f || c.ref.ord != f.Ordinal {
		c.ref = refCache{f: f, ord: f.Ordinal, ref: packet.RefOf(f)}
	}
	return c.ref.ref
}

// parseSDP parses an SDP body for onSDP. The engine's own stream store
// keeps nothing of the Session past OnSDP (media.Store.OnSDP), so when it
// takes the Session at once the capture's reused Session serves; a sharded
// load queues the Session to its workers and another sink may keep it, so
// those get a Session of their own.
func (c *Capture) parseSDP(text string) (*sdp.Session, error) {
	if c.ownMedia && c.shard == nil {
		return c.sdpParser.ParseText(text)
	}
	return sdp.ParseText(text)
}

// MaxMalformedExamples bounds the malformed SIP messages a capture names
// by frame; the rest are counted (Status.SIPMalformed).
const MaxMalformedExamples = 20

// MalformedSIP names one SIP message the parser flagged: the frame that
// carried it, its Call-ID when it had one, and what was wrong.
type MalformedSIP struct {
	Frame   string   `json:"frame,omitempty"`
	CallID  string   `json:"call_id,omitempty"`
	Reasons []string `json:"reasons"`
}

// noteMalformed keeps the first MaxMalformedExamples malformed messages by
// frame and counts every one by reason (the reasons are the parser's fixed
// set, so the map is bounded). Malformed SIP is rare: the copies here
// never touch a well-formed message's path.
func (c *Capture) noteMalformed(p *packet.Packet, m *sip.Message) {
	c.malMu.Lock()
	defer c.malMu.Unlock()
	if c.malByReason == nil {
		c.malByReason = map[string]uint64{}
	}
	for _, r := range m.Malformed {
		c.malByReason[r]++
	}
	if len(c.malExamples) >= MaxMalformedExamples {
		return
	}
	ex := MalformedSIP{Reasons: append([]string(nil), m.Malformed...)}
	if p.Frame != nil {
		ex.Frame = c.frameRef(p.Frame).String()
	}
	if m.CallID != "" {
		ex.CallID = strings.Clone(m.CallID[:min(len(m.CallID), 200)])
	}
	c.malExamples = append(c.malExamples, ex)
}

// routeHEP unwraps a HEP envelope and routes its payload again with the
// envelope's addressing and timestamp.
func (c *Capture) routeHEP(p *packet.Packet) {
	c.pend.hepEnvelopes++
	m := &c.hepMsg
	if err := c.hepDec.DecodeInto(p.Payload, m); err != nil {
		c.pend.hepMalformed++
		c.pend.other++
		return
	}
	if len(m.Payload) == 0 {
		c.pend.hepKeepalives++
		return
	}
	in := &c.inner
	*in = packet.Packet{
		TS: p.TS, Src: m.Src, Dst: m.Dst, Transport: p.Transport, Payload: m.Payload,
		Origin: packet.OriginHEP, Frame: p.Frame, Reassembled: p.Reassembled,
	}
	if m.HasTS {
		in.TS = m.TS
	}
	switch m.Protocol {
	case 17:
		in.Transport = packet.TransportUDP
	case 6:
		in.Transport = packet.TransportTCP
	case 132:
		in.Transport = packet.TransportSCTP
	}
	if m.HasTOS {
		in.DSCP, in.HasDSCP = m.TOS>>2, true
	}
	if m.HasAgentID {
		in.HEPAgentID = m.LegacyAgentID()
	}
	proto := uint8(hep.ProtoSIP)
	if m.HasProtoType {
		proto = m.ProtoType
	}
	switch proto {
	case hep.ProtoSIP:
		c.pend.hepSIP++
		switch c.classify(in) {
		case actHEPNested:
			// HEP inside HEP is not unwrapped twice
			c.pend.hepNested++
			c.pend.other++
			return
		case actSIP:
			c.pend.packets++
			c.routeSIP(in, in.Payload)
			return
		}
		c.pend.hepNotSIP++
		c.pend.other++
	case hep.ProtoRTP, hep.ProtoRTPAlt, hep.ProtoRTCP:
		if proto == hep.ProtoRTCP {
			c.pend.hepRTCP++
		} else {
			c.pend.hepRTP++
		}
		in.Transport = packet.TransportUDP
		c.routeLocked(in)
	default:
		c.pend.hepOther++
		c.pend.other++
	}
}

// StartLive starts a live capture whose frames enter the router. It stops
// when ctx ends or Close is called; a permission or device error is
// returned at once.
func (c *Capture) StartLive(ctx context.Context, o live.Options) (*live.Capture, error) {
	lc, err := live.Start(ctx, o, packet.FrameSinkFunc(c.HandleFrame))
	if err != nil {
		return nil, fmt.Errorf("starting live capture: %w", err)
	}
	c.AttachLive(lc.Handle().Device(), lc.Stop, lc.Done(), lc.Err)
	return lc, nil
}
