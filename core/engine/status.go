package engine

import (
	"errors"
	"sort"
	"time"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/hepsend"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/stun"
)

// Status is what the capture has read so far and how it got there. Every
// counter is readable during a load.
type Status struct {
	// Source says what feeds the capture: file, live, hep, a "+"-joined
	// mix, or none.
	Source string `json:"source"`
	// Name names the source (the file names, the interface, the listener).
	Name string `json:"name,omitempty"`
	// FramesRead counts frames read from every source (HEP datagrams from
	// a listener included).
	FramesRead uint64 `json:"frames_read"`
	// Bytes counts their captured bytes.
	Bytes uint64 `json:"bytes"`
	// Elapsed is the time since the capture started reading (the load's
	// duration once a file load has finished).
	Elapsed time.Duration `json:"-"`
	// ElapsedSec is Elapsed in seconds.
	ElapsedSec float64 `json:"elapsed_sec"`
	// Loading is true while a file load runs.
	Loading bool `json:"loading"`
	// SourceExhausted: every source was read to its end. Never true while
	// a live source or a HEP listener runs.
	SourceExhausted bool `json:"source_exhausted"`
	// SourceStoppedEarly: a source ended before its end (a truncated or
	// unreadable file, a live source fault).
	SourceStoppedEarly bool `json:"source_stopped_early"`
	// StoppedOnRequest: reading was stopped on request (a frame limit, a
	// cancelled load, Close ending a live source or a HEP listener). Not a
	// fault.
	StoppedOnRequest bool `json:"stopped_on_request,omitempty"`
	// Complete is true when every source was read whole (SourceExhausted,
	// not SourceStoppedEarly) and the stores shed nothing: no dialog
	// evicted or refused at the dialog cap, no message past the per-dialog
	// retention cap, no stream, SDP endpoint or RTP candidate evicted at
	// its cap, and no SIP set aside by the port gate (the answers lack
	// those calls; docs/capture-sources.md). IncompleteReasons names why
	// it is false. An incomplete run that read its sources whole still
	// exits 0 (engine.md §19): nothing failed.
	Complete bool `json:"complete"`
	// IncompleteReasons names why Complete is false, one code each:
	// source_stopped_early, stopped_on_request, source_not_exhausted (a
	// load still running, a live or HEP source, no source), dialogs_evicted
	// and dialogs_refused (the dialog cap, --limit), messages_not_retained
	// (the per-dialog message cap), streams_evicted (--max-streams),
	// media_endpoints_evicted, rtp_candidates_evicted, hep_data_lost (a
	// HEP listener refused or the kernel dropped what a sender meant to
	// deliver: hep.listeners), stun_evidence_evicted (a STUN/TURN/ICE
	// table shed entries at its cap, docs/stun.md), detector_evidence_evicted
	// (a security detector's table or the findings ring shed entries:
	// detectors), sip_not_analyzed (SIP
	// outside the port gate's ports: not_analyzed). The counts are in
	// dialog_store, stream_store, hep, stun and not_analyzed. Absent when
	// complete.
	IncompleteReasons []string `json:"incomplete_reasons,omitempty"`
	// Files is the file load's account of each input.
	Files []capture.FileResult `json:"inputs"`
	// Warnings lists discovered files that were skipped.
	Warnings []string `json:"warnings,omitempty"`
	// Errors lists why sources stopped early.
	Errors []string `json:"errors,omitempty"`

	// InvalidTimestamps counts frames whose timestamp was unusable (wall
	// clock substituted).
	InvalidTimestamps uint64 `json:"invalid_timestamps"`
	// SnappedFrames counts frames cut short by the snap length.
	SnappedFrames uint64 `json:"snapped_frames"`
	// UndecodableFrames counts frames that yielded nothing because they
	// could not be decoded; Undecodable breaks them down by reason.
	UndecodableFrames uint64            `json:"undecodable_frames"`
	Undecodable       map[string]uint64 `json:"undecodable"`
	// OtherTrafficFrames counts frames of traffic that could not have
	// carried SIP or RTP (ARP, LLDP, STP, CDP, ICMP echo...): read and set
	// aside, never undecodable; OtherTraffic breaks them down by kind
	// ("arp", "lldp", "stp", "icmp"...; kinds past the decoder's table are
	// under "other_kinds").
	OtherTrafficFrames uint64            `json:"other_traffic_frames"`
	OtherTraffic       map[string]uint64 `json:"other_traffic"`
	// Packets counts transport packets routed (HEP inner payloads
	// included).
	Packets uint64 `json:"packets"`

	// SIPMessages counts every SIP message seen, retransmissions, capture
	// duplicates and malformed messages included (tshark's count).
	SIPMessages uint64 `json:"sip_messages"`
	// SIPMalformed counts SIP messages the parser flagged (they are kept).
	SIPMalformed uint64 `json:"sip_malformed"`
	// SIPMalformedReasons counts them by what was wrong ("junk before the
	// start line", "unparseable Content-Length"...); SIPMalformedExamples
	// names the first MaxMalformedExamples by frame. Absent when none.
	SIPMalformedReasons  map[string]uint64 `json:"sip_malformed_reasons,omitempty"`
	SIPMalformedExamples []MalformedSIP    `json:"sip_malformed_examples,omitempty"`
	// SIPWithoutCallID counts SIP messages without a Call-ID (counted,
	// in no dialog).
	SIPWithoutCallID uint64 `json:"sip_without_call_id"`
	// SIPRetransmissions counts SIP messages recognized as retransmissions:
	// re-sent by their sender (RFC 3261 §17), capture duplicates excluded.
	SIPRetransmissions uint64 `json:"sip_retransmissions"`
	// SIPDuplicates counts capture duplicates: a SIP message seen again,
	// the same bytes in the same dialog within the duplicate window (a
	// mirrored copy, a second interface, a second HEP agent;
	// core/dialog/dup.go). Counted in sip_messages, never as a
	// retransmission, applied to nothing.
	SIPDuplicates uint64 `json:"sip_duplicates"`
	// SIPRefused counts SIP messages of Call-IDs refused at the dialog cap.
	SIPRefused uint64 `json:"sip_refused,omitempty"`
	// SDPBodies counts SDP bodies handed to the stream store; SDPUnreadable
	// those the SDP parser refused.
	SDPBodies     uint64 `json:"sdp_bodies"`
	SDPUnreadable uint64 `json:"sdp_unreadable,omitempty"`
	// MediaPackets counts packets the stream store took (RTP, RTCP, UDPTL,
	// probation candidates).
	MediaPackets uint64 `json:"media_packets"`
	// OtherPackets counts packets that were neither HEP, SIP nor media.
	OtherPackets uint64 `json:"other_packets"`
	// HEP counts HEP envelopes found in the capture or received.
	HEP HEPCounts `json:"hep"`
	// NotAnalyzed is the port gate's account of the SIP it did not analyse
	// (gate.go); absent without a gate (Config.Gate).
	NotAnalyzed *NotAnalyzed `json:"not_analyzed,omitempty"`
	// STUN counts STUN messages and TURN ChannelData messages and what
	// their tracker kept and shed (core/stun); absent when the capture
	// held none.
	STUN *stun.Stats `json:"stun,omitempty"`
	// Detectors are the security detectors' counters (core/detect,
	// engine.md §13): findings recorded, and what their attacker-keyed
	// tables shed; absent when none is armed.
	Detectors *detect.Stats `json:"detectors,omitempty"`

	// Dialogs are the dialog store's counters.
	Dialogs dialog.Stats `json:"dialog_store"`
	// ICMP counts the ICMP/ICMPv6 errors the decoders read (errors) and
	// how the dialog store matched them to dialogs (core/dialog/icmp.go);
	// absent when no ICMP error was read.
	ICMP *ICMPCounts `json:"icmp,omitempty"`
	// Media are the stream store's counters (absent with a custom sink).
	Media *media.Stats `json:"stream_store,omitempty"`
	// Identity is the capture's identity.
	Identity Identity `json:"capture_identity"`
	// Egress is what -O wrote and -H forwarded (docs/egress.md), with
	// every message -H did not deliver counted by reason; set when they
	// end (SetEgress), absent without them or while they run.
	Egress *EgressStatus `json:"egress,omitempty"`

	icmpErrors uint64 // the decoders' ICMP errors, for ICMP
}

// EgressStatus is what the run's re-emission did (docs/egress.md).
type EgressStatus struct {
	// Output is -O's account: records and bytes written, the files it
	// created (and the ring deleted), frames a classic pcap could not
	// hold.
	Output *OutputStatus `json:"output,omitempty"`
	// HEPSend is -H's account: envelopes sent by type, and every message
	// not delivered, by reason (queue full, too large, send error, unsent
	// at the stop).
	HEPSend *hepsend.Stats `json:"hep_send,omitempty"`
}

// OutputStatus is -O's account of one run (core/pcapout.Stats).
type OutputStatus struct {
	Frames          uint64   `json:"frames"`
	Bytes           uint64   `json:"bytes"`
	Files           []string `json:"files"`
	Deleted         int      `json:"deleted_by_ring"`
	RingKept        []string `json:"ring_kept,omitempty"`
	SkippedLinkType uint64   `json:"skipped_link_type"`
	Error           string   `json:"error,omitempty"`
}

// SetEgress records what -O and -H did, once they have ended; Status
// carries it from then on.
func (c *Capture) SetEgress(e *EgressStatus) {
	c.smu.Lock()
	c.egress = e
	c.smu.Unlock()
}

// ICMPCounts are the ICMP errors read and how they were matched.
type ICMPCounts struct {
	// Errors counts the ICMP and ICMPv6 errors the decoders read; the
	// store's counters say how many it was offered and matched.
	Errors uint64 `json:"errors"`
	dialog.ICMPStats
}

// HEPCounts counts HEP envelopes by what they carried.
type HEPCounts struct {
	// Datagrams counts datagrams received by HEP listeners.
	Datagrams uint64 `json:"datagrams"`
	// Envelopes counts HEP envelopes unwrapped (listener and in-capture).
	Envelopes uint64 `json:"envelopes"`
	// Malformed counts envelopes that could not be decoded.
	Malformed uint64 `json:"malformed"`
	// KeepAlives counts envelopes without a payload.
	KeepAlives uint64 `json:"keepalives"`
	// SIP, RTP, RTCP and Other count envelopes by payload type.
	SIP   uint64 `json:"sip"`
	RTP   uint64 `json:"rtp"`
	RTCP  uint64 `json:"rtcp"`
	Other uint64 `json:"other"`
	// NotSIP counts SIP-typed envelopes whose payload was not SIP.
	NotSIP uint64 `json:"not_sip"`
	// Nested counts HEP envelopes found inside a HEP payload (not
	// unwrapped twice).
	Nested uint64 `json:"nested"`
	// OwnListenerSkipped counts live-capture packets addressed to one of
	// this capture's running HEP listeners. They are skipped, not routed:
	// the listener receives the same datagrams itself, and routing both
	// copies would count every HEP message twice (the second as a capture
	// duplicate) on a host that captures live and receives HEP.
	OwnListenerSkipped uint64 `json:"own_listener_skipped"`
	// OwnSenderSkipped counts live-capture packets addressed to this
	// capture's HEP receiver (-H; SkipLiveTo), skipped: they carry the
	// envelopes sipnab itself sends, and routing them would analyse every
	// message twice and forward it again, without end. Absent without -H.
	OwnSenderSkipped uint64 `json:"own_sender_skipped,omitempty"`
	// Listeners are the running HEP listeners' admission counters, one
	// each (absent without a listener): datagrams received, admitted and
	// refused by reason, the kernel's receive-buffer drops, TCP messages
	// held back by a rate budget and idle connections reaped
	// (core/heplisten).
	Listeners []HEPListener `json:"listeners,omitempty"`
}

// Lost sums what the HEP listeners lost (HEPListener.Lost).
func (h HEPCounts) Lost() uint64 {
	var n uint64
	for _, l := range h.Listeners {
		n += l.Lost
	}
	return n
}

// HEPListener is one HEP listener's account.
type HEPListener struct {
	Name string `json:"name"`
	heplisten.Stats
	// Lost counts what senders meant to deliver and the capture lacks:
	// refusals for rate, shape and the connection cap, kernel drops and
	// read errors (not_allowed and auth_failed are refusals, not losses).
	Lost uint64 `json:"lost"`
}

// Status returns the capture's state now. During a file load it waits at
// most for the run of frames being routed (capture.BatchFrames, well under a
// millisecond: the decoders' counters are read under the writer lock), and
// its counters are those published at the end of the last run. During a
// multi-core load (Config.Cores) the stream store is filled when the load
// ends, and media_packets and other_packets move as the workers finish
// their batches.
func (c *Capture) Status() Status {
	st := Status{
		FramesRead:         c.ctr.frames.Load(),
		Bytes:              c.ctr.bytes.Load(),
		InvalidTimestamps:  c.ctr.invalidTS.Load(),
		Packets:            c.ctr.packets.Load(),
		SIPMessages:        c.ctr.sipMessages.Load(),
		SIPMalformed:       c.ctr.sipMalformed.Load(),
		SIPWithoutCallID:   c.ctr.sipNoCallID.Load(),
		SIPRetransmissions: c.ctr.sipRetrans.Load(),
		SIPDuplicates:      c.ctr.sipDups.Load(),
		SIPRefused:         c.ctr.sipRefused.Load(),
		SDPBodies:          c.ctr.sdpBodies.Load(),
		SDPUnreadable:      c.ctr.sdpBad.Load(),
		MediaPackets:       c.ctr.media.Load(),
		OtherPackets:       c.ctr.other.Load(),
		HEP: HEPCounts{
			Datagrams: c.ctr.hepDatagrams.Load(), Envelopes: c.ctr.hepEnvelopes.Load(),
			Malformed: c.ctr.hepMalformed.Load(), KeepAlives: c.ctr.hepKeepalives.Load(),
			SIP: c.ctr.hepSIP.Load(), RTP: c.ctr.hepRTP.Load(), RTCP: c.ctr.hepRTCP.Load(),
			Other: c.ctr.hepOther.Load(), NotSIP: c.ctr.hepNotSIP.Load(), Nested: c.ctr.hepNested.Load(),
			OwnListenerSkipped: c.ctr.ownListener.Load(),
			OwnSenderSkipped:   c.ctr.ownSender.Load(),
		},
		Undecodable:  map[string]uint64{},
		OtherTraffic: map[string]uint64{},
		Dialogs:      c.dialogs.Stats(),
		Identity:     c.Identity(),
	}
	if ss := c.stun.Stats(); ss.Any() {
		st.STUN = &ss
	}
	if ds := c.cfg.Detect.Stats(); len(ds.Armed) > 0 {
		st.Detectors = &ds
	}
	if m := c.Media(); m != nil {
		ms := m.Stats()
		st.Media = &ms
	}
	c.decodeStats(&st)
	if st.icmpErrors > 0 {
		st.ICMP = &ICMPCounts{Errors: st.icmpErrors, ICMPStats: c.dialogs.ICMPStats()}
	}
	c.malMu.Lock()
	if len(c.malByReason) > 0 {
		st.SIPMalformedReasons = make(map[string]uint64, len(c.malByReason))
		for k, v := range c.malByReason {
			st.SIPMalformedReasons[k] = v
		}
		st.SIPMalformedExamples = append([]MalformedSIP(nil), c.malExamples...)
	}
	c.malMu.Unlock()

	c.smu.Lock()
	load, loadDone, inputs := c.load, c.loadDone, c.inputs
	warns := c.warnings
	nHEP, live := len(c.hepL), append([]liveSource(nil), c.live...)
	closed := c.closed
	c.smu.Unlock()

	var kinds, names []string
	exhausted := true
	if load != nil {
		kinds = append(kinds, "file")
		for _, in := range inputs {
			names = append(names, in.Name)
		}
		snap := load.Snapshot()
		flushed := false
		select {
		case <-loadDone:
			flushed = true
		default:
		}
		st.Loading = !flushed
		st.Files = snap.Files
		st.Elapsed = snap.Elapsed
		st.StoppedOnRequest = snap.StoppedOnRequest
		st.SourceStoppedEarly = snap.StoppedEarly
		exhausted = exhausted && flushed && snap.Exhausted
		for _, f := range snap.Files {
			if f.Error != "" {
				st.Errors = append(st.Errors, f.Name+": "+f.Error)
			}
		}
	}
	for _, w := range warns {
		st.Warnings = append(st.Warnings, w.String())
	}
	if len(live) > 0 {
		kinds = append(kinds, "live")
		for _, s := range live {
			names = append(names, s.name)
			if s.err != nil {
				if err := s.err(); err != nil && !errors.Is(err, errStopped) {
					st.SourceStoppedEarly = true
					st.Errors = append(st.Errors, s.name+": "+err.Error())
				}
			}
		}
		exhausted = false
	}
	c.smu.Lock()
	st.Egress = c.egress
	c.smu.Unlock()
	if nHEP > 0 {
		kinds = append(kinds, "hep")
		c.smu.Lock()
		for _, l := range c.hepL {
			names = append(names, l.Name())
			ls := l.Stats()
			st.HEP.Listeners = append(st.HEP.Listeners, HEPListener{Name: l.Name(), Stats: ls, Lost: ls.Lost()})
		}
		c.smu.Unlock()
		exhausted = false
	}
	switch len(kinds) {
	case 0:
		st.Source = "none"
		exhausted = false
	case 1:
		st.Source = kinds[0]
	default:
		st.Source = kinds[0]
		for _, k := range kinds[1:] {
			st.Source += "+" + k
		}
	}
	if closed && !st.SourceStoppedEarly {
		// Close ended the live sources and HEP listeners without a fault:
		// what was read before it is whole, the rest was never asked for.
		st.StoppedOnRequest = true
	}
	if load == nil {
		st.Elapsed = time.Since(c.started)
	}
	st.ElapsedSec = st.Elapsed.Seconds()
	st.Name = joinNames(names)
	st.SourceExhausted = exhausted
	st.IncompleteReasons = incompleteReasons(&st)
	st.Complete = len(st.IncompleteReasons) == 0
	return st
}

// incompleteReasons lists why a status is not complete: how the read
// ended, then what the stores shed.
func incompleteReasons(st *Status) []string {
	var r []string
	switch {
	case st.SourceStoppedEarly:
		r = append(r, "source_stopped_early")
	case st.StoppedOnRequest:
		r = append(r, "stopped_on_request")
	case !st.SourceExhausted:
		r = append(r, "source_not_exhausted")
	}
	add := func(n uint64, code string) {
		if n > 0 {
			r = append(r, code)
		}
	}
	add(st.Dialogs.Evicted, "dialogs_evicted")
	add(st.Dialogs.Refused, "dialogs_refused")
	add(st.Dialogs.MessagesNotRetained, "messages_not_retained")
	if m := st.Media; m != nil {
		add(m.StreamsEvicted, "streams_evicted")
		add(m.EndpointsEvicted, "media_endpoints_evicted")
		add(m.CandidatesEvicted, "rtp_candidates_evicted")
	}
	add(st.HEP.Lost(), "hep_data_lost")
	if na := st.NotAnalyzed; na != nil {
		add(na.SIPMessages, "sip_not_analyzed")
	}
	if s := st.STUN; s != nil {
		add(s.TransactionsEvicted+s.AllocationsEvicted+s.MappingsEvicted+s.ICEPairsEvicted, "stun_evidence_evicted")
	}
	if d := st.Detectors; d != nil && d.EvidenceLost() {
		r = append(r, "detector_evidence_evicted")
	}
	return r
}

var errStopped = errors.New("stopped on request")

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// decodeStats sums the decoders' counters. Decoders are owned by the
// writer, so their counters are read under the writer lock (a read costs
// one message's wait at most).
func (c *Capture) decodeStats(st *Status) {
	c.wmu.Lock()
	all := make([]decode.Stats, 0, len(c.decoders))
	for _, d := range c.decoders {
		all = append(all, d.Stats())
	}
	st.NotAnalyzed = c.notAnalyzed()
	c.wmu.Unlock()
	for _, s := range all {
		st.SnappedFrames += s.SnappedFrames
		st.UndecodableFrames += s.UndecodableFrames
		for _, r := range s.Undecodable {
			st.Undecodable[r.Name] += r.Count
		}
		if s.UndecodableReasonsDropped > 0 {
			st.Undecodable["other_reasons"] += s.UndecodableReasonsDropped
		}
		st.icmpErrors += s.ICMPErrors
		st.OtherTrafficFrames += s.OtherTrafficFrames
		for _, r := range s.OtherTraffic {
			st.OtherTraffic[r.Name] += r.Count
		}
		if s.OtherTrafficKindsDropped > 0 {
			st.OtherTraffic["other_kinds"] += s.OtherTrafficKindsDropped
		}
	}
}

// UndecodableReasons returns the reasons sorted by count (largest first),
// then name.
func (st *Status) UndecodableReasons() []decode.ReasonCount { return byCount(st.Undecodable) }

// OtherTrafficKinds returns the kinds of other traffic sorted by count
// (largest first), then name.
func (st *Status) OtherTrafficKinds() []decode.ReasonCount { return byCount(st.OtherTraffic) }

func byCount(m map[string]uint64) []decode.ReasonCount {
	out := make([]decode.ReasonCount, 0, len(m))
	for k, v := range m {
		out = append(out, decode.ReasonCount{Name: k, Count: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// UndecodableByReason returns the undecodable frames counted by reason
// class and number (decode.ReasonCount Code and Number: 1 no decoder for
// the link type, 2 non-IP EtherType or LLC frame, 3 unsupported IP
// protocol, 4 truncated frame, 5 decoder rejected), summed over the
// decoders and sorted by code then number, and the frames whose reason
// found no free slot in a decoder's fixed-slot table (counted in
// Status.UndecodableFrames, under no reason). It reads what Status reads,
// under the writer lock.
func (c *Capture) UndecodableByReason() (reasons []decode.ReasonCount, dropped uint64) {
	c.wmu.Lock()
	all := make([]decode.Stats, 0, len(c.decoders))
	for _, d := range c.decoders {
		all = append(all, d.Stats())
	}
	c.wmu.Unlock()
	type key struct {
		code   int
		number uint32
	}
	at := map[key]int{}
	for _, s := range all {
		dropped += s.UndecodableReasonsDropped
		for _, r := range s.Undecodable {
			k := key{r.Code, r.Number}
			if i, ok := at[k]; ok {
				reasons[i].Count += r.Count
				continue
			}
			at[k] = len(reasons)
			reasons = append(reasons, r)
		}
	}
	sort.Slice(reasons, func(i, j int) bool {
		if reasons[i].Code != reasons[j].Code {
			return reasons[i].Code < reasons[j].Code
		}
		return reasons[i].Number < reasons[j].Number
	})
	return reasons, dropped
}

// HEPListeners returns the running HEP listeners (-L), in the order they
// were started; their rosters and counters are read through their own
// methods (core/heplisten).
func (c *Capture) HEPListeners() []*heplisten.Listener {
	c.smu.Lock()
	defer c.smu.Unlock()
	return append([]*heplisten.Listener(nil), c.hepL...)
}

// LiveSources returns the names of the live sources attached (AttachLive),
// in order.
func (c *Capture) LiveSources() []string {
	c.smu.Lock()
	defer c.smu.Unlock()
	out := make([]string, 0, len(c.live))
	for _, s := range c.live {
		out = append(out, s.name)
	}
	return out
}
