package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sip"
)

// ReportSchemaVersion is the version of the Report shape.
const ReportSchemaVersion = 1

// MaxEvidence bounds the evidence rows a finding carries; the rest are
// counted in evidence_omitted while accumulating.
const MaxEvidence = 20

// Severities, worst first.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
	SeverityInfo     = "info"
)

var severityRank = map[string]int{SeverityCritical: 0, SeverityHigh: 1, SeverityMedium: 2, SeverityLow: 3, SeverityInfo: 4}

// Evidence is one occurrence of a finding: its measured counts and, for a
// dialog's detection, the messages and frames of the clause that fired.
type Evidence struct {
	CallID    string           `json:"call_id,omitempty"`
	Endpoints []string         `json:"endpoints,omitempty"`
	At        *time.Time       `json:"at,omitempty"`
	Counts    map[string]int64 `json:"counts,omitempty"`
	Note      string           `json:"note,omitempty"`
	// Messages are the proving messages' indexes (get_dialog's); Frames
	// their evidence pointers, or a stream's first packet's.
	Messages []int    `json:"messages,omitempty"`
	Frames   []string `json:"frames,omitempty"`
}

// Finding is one kind of problem across the capture.
type Finding struct {
	Kind string `json:"kind"`
	// Rule is the stable id of the rule behind the finding (a dialog
	// clause's rule, or a capture rule named like the kind).
	Rule string `json:"rule"`
	// Threshold are the limits the rule compared with; absent for a rule
	// without one.
	Threshold       map[string]float64 `json:"threshold,omitempty"`
	Severity        string             `json:"severity"`
	Occurrences     int64              `json:"occurrences"`
	Unit            string             `json:"unit"` // dialogs, streams, frames, messages, ...
	Summary         string             `json:"summary"`
	Evidence        []Evidence         `json:"evidence"`
	EvidenceOmitted int64              `json:"evidence_omitted"`
}

func (f *Finding) add(e Evidence) {
	f.Occurrences++
	if len(f.Evidence) < MaxEvidence {
		f.Evidence = append(f.Evidence, e)
	} else {
		f.EvidenceOmitted++
	}
}

// CaptureFacts is what the run knows about reading the capture.
type CaptureFacts struct {
	// FramesRead is the capture packet counter.
	FramesRead uint64
	// SourceExhausted: the source was read to its end. SourceStoppedEarly:
	// reading stopped before it (truncation, a limit, a fault).
	SourceExhausted    bool
	SourceStoppedEarly bool
	// Undecodable counts frames the decoder could not read, by reason.
	Undecodable map[string]uint64
	// PortGatedSIP counts SIP-looking payloads not analysed because of a
	// port restriction, by port ("5080": 12).
	PortGatedSIP map[string]uint64
	// DialogsEvicted counts dialogs the dialog store dropped at its cap.
	DialogsEvicted uint64
	// MessagesDropped counts SIP messages not retained (per-dialog caps).
	MessagesDropped uint64
	// SIPMalformed counts SIP messages the parser flagged (junk before the
	// start line, an unparseable Content-Length, a missing mandatory
	// header...); MalformedExamples names the first ones by frame.
	SIPMalformed      uint64
	MalformedExamples []MalformedExample
	// ICMPUnmatched counts the ICMP errors the dialog store tied to no
	// dialog; ICMPUnmatchedExamples are the first ones it kept
	// (core/dialog/icmp.go).
	ICMPUnmatched         uint64
	ICMPUnmatchedExamples []dialog.ICMPUnmatched
}

// MalformedExample is one malformed SIP message: its frame reference, its
// Call-ID when it had one, and what the parser found wrong.
type MalformedExample struct {
	Frame   string
	CallID  string
	Reasons []string
}

// Report is the whole-capture verdict.
type Report struct {
	SchemaVersion      int       `json:"schema_version"`
	Findings           []Finding `json:"findings"`
	DialogsExamined    int       `json:"dialogs_examined"`
	StreamsExamined    int       `json:"streams_examined"`
	FramesRead         uint64    `json:"frames_read"`
	Complete           bool      `json:"complete"`
	SourceExhausted    bool      `json:"source_exhausted"`
	SourceStoppedEarly bool      `json:"source_stopped_early"`
	// Clean is true when nothing was found and the read was complete.
	Clean bool `json:"clean"`
}

// CaptureReport diagnoses every dialog and adds what the capture as a whole
// shows: orphaned media and everything that was not read. Signaling
// detections become findings of their own kind (final_failure, or
// final_failure_<class> for the challenge, canceled, declined and redirect
// classes of core/sip StatusClass; auth_loop, retransmissions, ack_missing, abandoned_cancelled,
// abandoned_no_final_response, post_dial_delay, registration_failure,
// registration_shortened_expiry). Findings are
// ranked worst first (severity, then occurrences, then kind). Complete is
// true only when the source was read whole and nothing was shed.
func CaptureReport(dialogs []DialogFacts, src MediaSource, cf CaptureFacts, opts Options) Report {
	opts = opts.withDefaults()
	if opts.CaptureEnd.IsZero() {
		// as CaptureEnd computes it for triage_call
		opts.CaptureEnd = lastPacket(src)
		for i := range dialogs {
			opts.CaptureEnd = later(opts.CaptureEnd, dialogs[i].LastAt)
		}
	}
	return captureReport(func(yield func(*DialogFacts)) {
		for i := range dialogs {
			yield(&dialogs[i])
		}
	}, src, cf, opts)
}

// CaptureReportFromStore is CaptureReport of every dialog of a store,
// oldest first (the dialogs FactsFromStore reads), reading one dialog's
// facts at a time: the facts of a whole capture, and the messages parsed
// again to make them, are never held at once, so a report over a large
// capture costs a dialog's worth of memory beyond the store rather than a
// copy of the store's facts. The capture's end is CaptureEnd (the latest
// message of the store or packet of the streams), which is the end
// CaptureReport computes from the same dialogs.
func CaptureReportFromStore(ds *dialog.Store, src MediaSource, cf CaptureFacts, opts Options) Report {
	opts = opts.withDefaults()
	if opts.CaptureEnd.IsZero() {
		opts.CaptureEnd = CaptureEnd(ds, src)
	}
	return captureReport(func(yield func(*DialogFacts)) {
		// The messages are rebuilt into one Scratch: the facts keep
		// none of them but their strings (FactsFrom).
		var sc dialog.Scratch
		for _, id := range ds.CallIDs() {
			if d, ok := ds.GetWith(id, dialog.Options{Scratch: &sc}); ok {
				f := FactsFrom(d)
				yield(&f)
			}
		}
	}, src, cf, opts)
}

// captureReport is CaptureReport with the capture's end set: each yields
// the facts of every dialog in order.
func captureReport(each func(yield func(*DialogFacts)), src MediaSource, cf CaptureFacts, opts Options) Report {
	all := src.All()
	examined := 0
	byKind := map[string]*Finding{}
	get := func(kind, sev, unit, summary string) *Finding {
		f := byKind[kind]
		if f == nil {
			f = &Finding{Kind: kind, Rule: kind, Severity: sev, Unit: unit, Summary: summary, Evidence: []Evidence{}}
			byKind[kind] = f
		}
		return f
	}
	notCaptured := int64(0) // answered calls with SDP in a capture with no RTP at all
	each(func(dp *DialogFacts) {
		d := *dp
		examined++
		dd := Diagnose(d, src, opts)
		// Every dialog row rests on the clause of its rule: a detection
		// without a sound clause makes no row, as it makes no verdict.
		cl := newClauseQueue(dd.Evidence)
		get := cl.finder(get)
		if dd.Media.MediaNotCaptured {
			notCaptured++
		}
		at := func(t time.Time) *time.Time {
			if t.IsZero() {
				return nil
			}
			return &t
		}
		if s := dd.Signaling; s != nil {
			addSignaling(get, &d, s, at(d.CreatedAt))
		}
		m := &dd.Media
		ev := Evidence{CallID: d.CallID, At: at(d.CreatedAt)}
		if m.NoMedia {
			e := ev
			e.Endpoints = m.SDPMedia
			e.Counts = map[string]int64{"sdp_endpoints": int64(len(m.SDPMedia)), "rtp_streams": 0}
			get("no_media", SeverityHigh, "dialogs", "answered calls with negotiated SDP and no RTP").add(e)
		}
		if m.OneWayAudio {
			e := ev
			e.Endpoints, e.Note = m.ActualMedia, m.OneWayDirection
			if m.OneWayQuietPackets != nil {
				e.Counts = map[string]int64{"quiet_packets": int64(*m.OneWayQuietPackets)}
			}
			get("one_way_audio", SeverityHigh, "dialogs", "answered calls with media in one direction only").add(e)
		}
		if m.NATMismatch {
			e := ev
			for _, n := range m.NATEvidence {
				e.Endpoints = append(e.Endpoints, n.Actual)
			}
			e.Counts = map[string]int64{"streams": int64(len(m.NATEvidence))}
			get("nat_mismatch", SeverityMedium, "dialogs", "media from an address the SDP did not announce").add(e)
		}
		if m.PrivateMediaAddress {
			e := ev
			e.Endpoints = m.PrivateAddresses
			e.Counts = map[string]int64{"private_addresses": int64(len(m.PrivateAddresses))}
			get("private_media_address", SeverityMedium, "dialogs", "private address announced to a public peer").add(e)
		}
		for _, q := range m.HighLoss {
			e := ev
			e.Endpoints = []string{q.Stream.Src, q.Stream.Dst}
			e.Note = q.Stream.SSRC
			e.Counts = map[string]int64{"loss_permille": int64(q.Value * 10)}
			get("high_loss", SeverityHigh, "streams", fmt.Sprintf("streams losing more than %g%% of packets", opts.LossLimit())).add(e)
		}
		for _, q := range m.HighJitter {
			e := ev
			e.Endpoints = []string{q.Stream.Src, q.Stream.Dst}
			e.Note = q.Stream.SSRC
			e.Counts = map[string]int64{"jitter_ms": int64(q.Value)}
			get("high_jitter", SeverityMedium, "streams", fmt.Sprintf("streams with jitter (jitter_ms) over %g ms", opts.JitterLimit())).add(e)
		}
		if m.LateMediaMs != nil {
			e := ev
			e.Counts = map[string]int64{"late_ms": int64(*m.LateMediaMs)}
			get("late_media", SeverityLow, "dialogs", "first RTP more than 500 ms after the answer").add(e)
		}
		fwd, rev := directions(src.StreamsFor(d.CallID))
		for kind, a := range map[string]*Asymmetry{"codec_asymmetry": m.CodecAsymmetry, "ptime_asymmetry": m.PtimeAsymmetry, "payload_asymmetry": m.PayloadAsymmetry} {
			if a != nil {
				e := ev
				e.Note = a.Forward + " / " + a.Reverse
				e.Counts = map[string]int64{"forward_streams": int64(len(fwd)), "reverse_streams": int64(len(rev))}
				get(kind, SeverityLow, "dialogs", "the two directions of a call differ").add(e)
			}
		}
		if m.DurationAsymmetry != nil {
			e := ev
			e.Counts = map[string]int64{"forward_ms": int64(m.DurationAsymmetry.ForwardMs), "reverse_ms": int64(m.DurationAsymmetry.ReverseMs)}
			get("duration_asymmetry", SeverityLow, "dialogs", "one direction's media lasted ≥5% and ≥2 s longer").add(e)
		}
	})

	if notCaptured > 0 {
		// Said once for the capture, never as one no_media per call: with
		// no RTP anywhere the capture point sees signaling only.
		get("media_not_captured", SeverityInfo, "captures", "no RTP anywhere in the capture: media was not captured at this point (an observation, not a failure)").
			add(Evidence{Counts: map[string]int64{"answered_calls_with_sdp": notCaptured, "rtp_streams": 0}, Note: "signaling-only capture point"})
	}

	for i := range all {
		s := &all[i]
		if !s.Orphaned {
			continue
		}
		t := s.FirstSeen
		get("orphaned_media", SeverityInfo, "streams", "RTP streams no dialog's SDP announced (never named: nobody asked a relay)").
			add(Evidence{Endpoints: []string{s.Src, s.Dst}, At: &t, Note: s.SSRC, Counts: map[string]int64{"packets": int64(s.Packets)}})
	}

	st := src.Stats()
	shed := false
	retention := func(kind, summary string, n uint64) {
		if n == 0 {
			return
		}
		shed = true
		f := get(kind, SeverityHigh, "entries", summary)
		f.Occurrences += int64(n)
		f.Evidence = append(f.Evidence, Evidence{Counts: map[string]int64{"evicted": int64(n)}})
	}
	retention("streams_evicted", "streams dropped at the --max-streams cap: media answers are partial", st.StreamsEvicted)
	retention("dialogs_evicted", "dialogs dropped at the dialog cap: signaling answers are partial", cf.DialogsEvicted)
	retention("messages_dropped", "SIP messages not retained past per-dialog caps", cf.MessagesDropped)
	retention("media_endpoints_evicted", "SDP media endpoints forgotten at the cap: later RTP to them is orphaned", st.EndpointsEvicted)
	retention("rtp_candidates_evicted", "unsignaled flows dropped before they proved to be RTP", st.CandidatesEvicted)
	for reason, n := range cf.Undecodable {
		if n == 0 {
			continue
		}
		shed = true
		f := get("undecodable", SeverityMedium, "frames", "frames that could not be decoded, by reason")
		f.Occurrences += int64(n)
		f.Evidence = append(f.Evidence, Evidence{Note: reason, Counts: map[string]int64{"frames": int64(n)}})
	}
	// busiest port first, then by name: the same capture gives the same
	// evidence rows
	gated := make([]string, 0, len(cf.PortGatedSIP))
	for port, n := range cf.PortGatedSIP {
		if n > 0 {
			gated = append(gated, port)
		}
	}
	sort.Slice(gated, func(i, j int) bool {
		a, b := cf.PortGatedSIP[gated[i]], cf.PortGatedSIP[gated[j]]
		if a != b {
			return a > b
		}
		return gated[i] < gated[j]
	})
	for _, port := range gated {
		n := cf.PortGatedSIP[port]
		shed = true
		f := get("port_gated_sip", SeverityMedium, "messages", "SIP seen on ports not analysed")
		f.add(Evidence{Note: "port " + port, Counts: map[string]int64{"messages": int64(n)}})
		f.Occurrences += int64(n) - 1 // add counted one occurrence
	}
	if cf.SIPMalformed > 0 {
		// A report holding SIP the parser flagged is never clean: each row
		// names the frame and what was wrong.
		f := get("malformed_sip", SeverityMedium, "messages", "SIP messages the parser flagged as malformed (RFC 3261 §7, §20): read as far as possible, their conclusions may be wrong")
		f.Occurrences += int64(cf.SIPMalformed)
		for _, ex := range cf.MalformedExamples {
			if len(f.Evidence) >= MaxEvidence {
				break
			}
			note := strings.Join(ex.Reasons, ", ")
			if ex.Frame != "" {
				note = "frame " + ex.Frame + ": " + note
			}
			f.Evidence = append(f.Evidence, Evidence{CallID: ex.CallID, Counts: map[string]int64{"messages": 1}, Note: note})
		}
		f.EvidenceOmitted = f.Occurrences - int64(len(f.Evidence))
	}
	icmpUnmatched(get, all, cf)
	if stunFindings(get, src, opts.CaptureEnd) {
		shed = true
	}
	if st.RTCPMalformed > 0 {
		f := get("rtcp_malformed", SeverityInfo, "packets", "RTCP datagrams that did not parse whole")
		f.Occurrences += int64(st.RTCPMalformed)
		f.Evidence = append(f.Evidence, Evidence{Counts: map[string]int64{"packets": int64(st.RTCPMalformed)}})
	}

	r := Report{
		SchemaVersion:      ReportSchemaVersion,
		Findings:           make([]Finding, 0, len(byKind)),
		DialogsExamined:    examined,
		StreamsExamined:    len(all),
		FramesRead:         cf.FramesRead,
		SourceExhausted:    cf.SourceExhausted,
		SourceStoppedEarly: cf.SourceStoppedEarly,
	}
	for _, f := range byKind {
		if f.Kind != "malformed_sip" { // kept in frame order
			sort.SliceStable(f.Evidence, func(i, j int) bool { return evidenceLess(&f.Evidence[i], &f.Evidence[j]) })
		}
		r.Findings = append(r.Findings, *f)
	}
	sort.Slice(r.Findings, func(i, j int) bool {
		a, b := &r.Findings[i], &r.Findings[j]
		if severityRank[a.Severity] != severityRank[b.Severity] {
			return severityRank[a.Severity] < severityRank[b.Severity]
		}
		if a.Occurrences != b.Occurrences {
			return a.Occurrences > b.Occurrences
		}
		return a.Kind < b.Kind
	})
	r.Complete = cf.SourceExhausted && !cf.SourceStoppedEarly && !shed
	r.Clean = r.Complete && len(r.Findings) == 0
	return r
}

func evidenceLess(a, b *Evidence) bool {
	switch {
	case a.At != nil && b.At != nil && !a.At.Equal(*b.At):
		return a.At.Before(*b.At)
	case (a.At == nil) != (b.At == nil):
		return a.At != nil
	}
	if a.CallID != b.CallID {
		return a.CallID < b.CallID
	}
	return a.Note < b.Note
}

// finder returns the finding of a kind, creating it on first use, to add
// one evidence row to.
type finder func(kind, sev, unit, summary string) rowAdder

type rowAdder interface{ add(Evidence) }

// clauseQueue hands a dialog's clauses, in the order Diagnose made them,
// to the rows of the capture report: each row takes the next clause of its
// rule, with its messages, frames and threshold.
type clauseQueue map[string][]*Clause

func newClauseQueue(cs []Clause) clauseQueue {
	q := clauseQueue{}
	for i := range cs {
		q[cs[i].Rule] = append(q[cs[i].Rule], &cs[i])
	}
	return q
}

// ruleOfKind names the rule of a finding kind: final_failure_<class> is
// final_failure's; every other kind (final_failure itself included) is its
// rule's id.
func ruleOfKind(kind string) string {
	if strings.HasPrefix(kind, "final_failure_") {
		return "final_failure"
	}
	return kind
}

// finalFailureKind names the finding of a final failure of a status class
// (core/sip StatusClass): the plain failure class is the rule's own kind,
// final_failure; the classes that say why (challenge, canceled, declined,
// redirect) are final_failure_<class>.
func finalFailureKind(class string) string {
	if class == sip.ClassFailure {
		return "final_failure"
	}
	return "final_failure_" + class
}

// clauseRow adds a row only on the clause of its rule, creating the
// finding then: a detection without a sound clause makes no row (and no
// verdict).
type clauseRow struct {
	get                      func(kind, sev, unit, summary string) *Finding
	kind, sev, unit, summary string
	q                        clauseQueue
}

func (r clauseRow) add(e Evidence) {
	rule := ruleOfKind(r.kind)
	l := r.q[rule]
	if len(l) == 0 {
		return
	}
	c := l[0]
	r.q[rule] = l[1:]
	f := r.get(r.kind, r.sev, r.unit, r.summary)
	f.Rule = c.Rule
	if f.Threshold == nil && len(c.Threshold) > 0 {
		f.Threshold = c.Threshold
	}
	e.Messages, e.Frames = c.Messages, c.Frames
	f.add(e)
}

func (q clauseQueue) finder(get func(kind, sev, unit, summary string) *Finding) finder {
	return func(kind, sev, unit, summary string) rowAdder {
		return clauseRow{get: get, kind: kind, sev: sev, unit: unit, summary: summary, q: q}
	}
}

// addSignaling adds one dialog's signaling detections to the findings.
// Every evidence row names the message (index) it rests on.
func addSignaling(get finder, d *DialogFacts, s *SignalingDiagnosis, at *time.Time) {
	ev := func(counts map[string]int64, note string, _ []int) Evidence {
		return Evidence{CallID: d.CallID, At: at, Counts: counts, Note: note}
	}
	if ff := s.FinalFailure; ff != nil {
		sev := SeverityMedium
		switch {
		case ff.Code >= 500:
			sev = SeverityHigh
		case ff.Class == "canceled" || ff.Class == "declined" || ff.Class == "challenge":
			sev = SeverityLow
		}
		get(finalFailureKind(ff.Class), sev, "dialogs", "dialogs that ended on a final "+ff.Class+" response").
			add(ev(map[string]int64{"code": int64(ff.Code)}, ff.Reason, ff.Evidence))
	}
	if a := s.AuthLoop; a != nil {
		get("auth_loop", SeverityHigh, "dialogs", "requests challenged three times or more with no success").
			add(ev(map[string]int64{"challenges": int64(a.Challenges), "code": int64(a.Code)}, a.Method+" "+a.Kind, a.Evidence))
	}
	if r := s.RegistrationFailure; r != nil {
		// the row points at the decisive message: the refusal, the 2xx or
		// the last challenge
		last := r.Evidence
		if len(last) > 1 {
			last = last[len(last)-1:]
		}
		switch r.Kind {
		case RegistrationShortenedExpiry:
			c := map[string]int64{}
			if r.RequestedExpirySec != nil {
				c["requested_expiry_sec"] = *r.RequestedExpirySec
			}
			if r.GrantedExpirySec != nil {
				c["granted_expiry_sec"] = *r.GrantedExpirySec
			}
			get("registration_shortened_expiry", SeverityLow, "dialogs", "registrations granted a shorter expiry than asked").
				add(ev(c, "", last))
		default:
			get("registration_failure", SeverityHigh, "dialogs", "registrations refused or challenged in a loop").
				add(ev(map[string]int64{"code": int64(r.Code)}, r.Kind, last))
		}
	}
	for i := range s.Retransmissions {
		r := &s.Retransmissions[i]
		get("retransmissions", SeverityMedium, "requests", "requests retransmitted without any response").
			add(ev(map[string]int64{"cseq": int64(r.CSeq), "copies": int64(r.Count), "span_ms": r.SpanMs}, r.Method, r.Evidence))
	}
	for i := range s.ICMPUnreachable {
		u := &s.ICMPUnreachable[i]
		sev := SeverityHigh
		if u.Kind == "time_exceeded" || u.Kind == "other" {
			sev = SeverityMedium
		}
		get("icmp_unreachable", sev, "dialogs", "dialogs whose messages were answered by ICMP errors (port or host unreachable, prohibited, too big)").
			add(ev(map[string]int64{"errors": int64(u.Errors + u.ErrorsNotKept), "type": int64(u.Type), "code": int64(u.Code)}, u.Kind+" "+u.Endpoint+" from "+u.Reporter, u.Messages))
	}
	if a := s.AckMissing; a != nil {
		get("ack_missing", SeverityMedium, "dialogs", "2xx to an INVITE never acknowledged within Timer H (32 s)").
			add(ev(map[string]int64{"cseq": int64(a.CSeq), "answer_copies": int64(a.AnswerCopies), "waited_ms": a.WaitedMs}, "", a.Evidence))
	}
	if a := s.Abandoned; a != nil {
		if a.Kind == AbandonedCancelled {
			c := map[string]int64{"cseq": int64(a.CSeq)}
			if a.FinalCode != 0 {
				c["final_code"] = int64(a.FinalCode)
			}
			note := ""
			if a.Answered {
				note = "answered anyway: the CANCEL crossed a 2xx"
			}
			get("abandoned_cancelled", SeverityInfo, "dialogs", "calls the caller cancelled").add(ev(c, note, a.Evidence))
		} else {
			get("abandoned_no_final_response", SeverityMedium, "dialogs", "INVITEs with no final response within Timer C (180 s)").
				add(ev(map[string]int64{"cseq": int64(a.CSeq), "waited_ms": a.WaitedMs}, "", a.Evidence))
		}
	}
	if p := s.PostDialDelay; p != nil {
		get("post_dial_delay", SeverityMedium, "dialogs", "post-dial delay over the threshold").
			add(ev(map[string]int64{"pdd_ms": int64(p.PDDMs)}, "", p.Evidence))
	}
}
