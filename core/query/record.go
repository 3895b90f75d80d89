package query

import (
	"net/netip"
	"unsafe"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/media"
)

// Record is one dialog seen through the filter language (filter.Record).
// The row is always there; the messages, the RTP streams and the media
// diagnosis load on first use, so a filter that reads only row fields costs
// no store lookups. A Record is used by one goroutine at a time and must
// not be retained past the call that produced it.
type Record struct {
	q   *Querier
	Row *dialog.Summary

	snap *snapshot // the snapshot Row belongs to, at index idx; nil when none
	idx  int

	loaded    uint8 // which lazy parts were loaded (loadedDetail...)
	detail    *dialog.Detail
	extra     *dialog.Extra
	extraVal  dialog.Extra
	streams   []media.StreamInfo
	endpoints []media.Endpoint
	diag      *analysis.MediaDiagnosis
	// mf is what the filter reads of the streams and the diagnosis:
	// the maintained state's (maintained.go), or mfVal computed here.
	mf    *mediaFacts
	mfVal mediaFacts
}

const (
	loadedDetail uint8 = 1 << iota
	loadedStreams
	loadedExtra
)

var _ filter.Record = (*Record)(nil)

// resetAt points the record at row i of a snapshot and forgets what it
// loaded.
func (r *Record) resetAt(s *snapshot, i int) {
	*r = Record{q: r.q, Row: &s.rows[i], snap: s, idx: i}
}

// Extra returns what the dialog's retained messages say beyond its row
// (first addresses, User-Agent, To host, next hop), without parsing them:
// from the snapshot's extras when the store has not moved since the rows
// were read, else looked up by Call-ID (loaded once). False when the dialog
// left the store.
func (r *Record) Extra() (*dialog.Extra, bool) {
	if r.loaded&loadedExtra == 0 {
		r.loaded |= loadedExtra
		if xs := r.snap.allExtras(r.q); xs != nil {
			r.extra = &xs[r.idx]
		} else if e, ok := r.q.dialogs.Extra(r.Row.CallID); ok {
			r.extraVal = e
			r.extra = &r.extraVal
		}
	}
	return r.extra, r.extra != nil
}

// firstAddrs returns the addresses of the dialog's first retained message.
func (r *Record) firstAddrs() (src, dst netip.AddrPort, ok bool) {
	e, ok := r.Extra()
	if !ok || !e.Retained {
		return netip.AddrPort{}, netip.AddrPort{}, false
	}
	return e.Src, e.Dst, true
}

// Detail returns the dialog's detail with its retained messages (loaded
// once); false when the dialog left the store since the row was read.
func (r *Record) Detail() (*dialog.Detail, bool) {
	if r.loaded&loadedDetail == 0 {
		r.loaded |= loadedDetail
		if d, ok := r.q.dialogs.Get(r.Row.CallID); ok {
			r.detail = &d
		}
	}
	return r.detail, r.detail != nil
}

// Streams returns the RTP streams linked to the dialog, oldest first
// (loaded once; none without a stream store).
func (r *Record) Streams() []media.StreamInfo {
	r.loadStreams()
	return r.streams
}

func (r *Record) loadStreams() {
	if r.loaded&loadedStreams != 0 {
		return
	}
	r.loaded |= loadedStreams
	if r.q.media == nil {
		return
	}
	r.streams = r.q.media.StreamsFor(r.Row.CallID)
	r.endpoints = r.q.media.EndpointsFor(r.Row.CallID)
}

// Diagnosis returns the dialog's media diagnosis (loaded once). Without
// streams and SDP endpoints the diagnosis is not applicable and no dialog
// detail is read.
func (r *Record) Diagnosis() *analysis.MediaDiagnosis {
	if r.diag != nil {
		return r.diag
	}
	r.loadStreams()
	if len(r.streams) == 0 && len(r.endpoints) == 0 {
		r.diag = &analysis.MediaDiagnosis{Reason: "no SDP was seen for this dialog and no RTP reached the capture point"}
		return r.diag
	}
	var facts analysis.DialogFacts
	if d, ok := r.q.dialogs.GetWith(r.Row.CallID, dialog.Options{NoMessages: true}); ok {
		facts = analysis.FactsFrom(d)
	} else {
		facts = analysis.DialogFacts{CallID: r.Row.CallID, Method: r.Row.Method, State: r.Row.State, CreatedAt: r.Row.CreatedAt}
	}
	src := fixedMedia{streams: r.streams, endpoints: r.endpoints}
	if r.q.media != nil {
		// the capture's RTP counter: no_media judges only a capture that
		// holds RTP
		src.stats = r.q.media.Stats()
	}
	m := analysis.DiagnoseMedia(facts, src, analysis.Options{SlowSetup: r.q.slowSetup()})
	r.diag = &m
	return r.diag
}

// fixedMedia serves the streams and endpoints already read for one dialog
// to the diagnosis, so they are not read twice.
type fixedMedia struct {
	streams   []media.StreamInfo
	endpoints []media.Endpoint
	stats     media.Stats
}

func (f fixedMedia) StreamsFor(string) []media.StreamInfo { return f.streams }
func (f fixedMedia) EndpointsFor(string) []media.Endpoint { return f.endpoints }
func (f fixedMedia) All() []media.StreamInfo              { return f.streams }
func (f fixedMedia) Stats() media.Stats                   { return f.stats }

// UA returns the first non-empty User-Agent (Server on a response) among
// the retained messages.
func (r *Record) UA() (string, bool) {
	e, ok := r.Extra()
	if !ok || e.UA == "" {
		return "", false
	}
	return e.UA, true
}

// First returns the dialog's first retained message.
func (r *Record) First() (*dialog.Message, bool) {
	d, ok := r.Detail()
	if !ok || len(d.Messages) == 0 {
		return nil, false
	}
	return &d.Messages[0], true
}

// Codecs returns the distinct codec names of the linked RTP streams, in
// stream order (a fresh slice).
func (r *Record) Codecs() []string {
	return append([]string(nil), r.facts().codecs...)
}

// isRTP: UDPTL fax flows share the stream store but are not RTP.
func isRTP(s *media.StreamInfo) bool { return s.Kind != "fax" }

func addrText(a netip.Addr) (string, bool) {
	if !a.IsValid() {
		return "", false
	}
	return a.Unmap().String(), true
}

// Str implements filter.Record.
func (r *Record) Str(f filter.Field) (string, bool) {
	s := r.Row
	switch f {
	case filter.FieldFromUser:
		return s.FromUser, s.FromUser != ""
	case filter.FieldToUser:
		return s.ToUser, s.ToUser != ""
	case filter.FieldMethod:
		return s.Method, s.Method != ""
	case filter.FieldCallID:
		return s.CallID, true
	case filter.FieldState:
		return s.State, s.State != ""
	case filter.FieldUA:
		return r.UA()
	case filter.FieldSrcIP:
		if src, _, ok := r.firstAddrs(); ok {
			return addrText(src.Addr())
		}
	case filter.FieldDstIP:
		if _, dst, ok := r.firstAddrs(); ok {
			return addrText(dst.Addr())
		}
	}
	return "", false
}

func ms(p *int64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p) / 1000, true
}

// Num implements filter.Record.
func (r *Record) Num(f filter.Field) (float64, bool) {
	s := r.Row
	switch f {
	case filter.FieldMsgCount:
		return float64(s.MsgCount), true
	case filter.FieldRetransmits:
		return float64(s.Timing.Retransmits), true
	case filter.FieldDuration:
		return ms(s.Timing.DurationMs)
	case filter.FieldPDD:
		return ms(s.Timing.PDDMs)
	case filter.FieldSetupTime:
		return ms(s.Timing.SetupMs)
	case filter.FieldFinalStatusCode:
		// the call's final response (docs/data-model.md); 0 is none: absent
		return float64(s.FinalStatusCode), s.FinalStatusCode != 0
	case filter.FieldSrcPort:
		if src, _, ok := r.firstAddrs(); ok && src.IsValid() {
			return float64(src.Port()), true
		}
	case filter.FieldDstPort:
		if _, dst, ok := r.firstAddrs(); ok && dst.IsValid() {
			return float64(dst.Port()), true
		}
	case filter.FieldRTPMOS, filter.FieldRTPJitter, filter.FieldRTPLoss, filter.FieldRTPPackets:
		return r.mediaNum(f)
	}
	return 0, false
}

// mediaNum reads the linked streams' folded values (mediaFacts).
func (r *Record) mediaNum(f filter.Field) (float64, bool) {
	m := r.facts()
	switch f {
	case filter.FieldRTPMOS:
		return m.mos, m.has&hasMOS != 0
	case filter.FieldRTPJitter:
		return m.jitter, m.has&hasJitter != 0
	case filter.FieldRTPLoss:
		return m.loss, m.has&hasLoss != 0
	case filter.FieldRTPPackets:
		return m.packets, m.has&hasRTP != 0
	}
	return 0, false
}

// Bool implements filter.Record.
func (r *Record) Bool(f filter.Field) (bool, bool) {
	if f == filter.FieldRTPOrphaned {
		// A stream linked to this dialog has an associated dialog.
		return false, r.facts().has&hasRTP != 0
	}
	d := r.diagFlags()
	if d&diagApplicable == 0 {
		return false, false
	}
	if bit, ok := diagBit[f]; ok {
		return d&bit != 0, true
	}
	return false, false
}

// Each implements filter.Record.
func (r *Record) Each(f filter.Field, fn func(string) bool) bool {
	switch f {
	case filter.FieldPayload:
		d, ok := r.Detail()
		if !ok {
			return false
		}
		for i := range d.Messages {
			m := d.Messages[i].Msg
			if m == nil || len(m.Raw) == 0 {
				continue
			}
			// Raw is immutable once parsed: a view, not a copy.
			if fn(unsafe.String(&m.Raw[0], len(m.Raw))) {
				return true
			}
		}
	case filter.FieldRTPCodec:
		for _, c := range r.facts().codecs {
			if fn(c) {
				return true
			}
		}
	case filter.FieldRTPSSRC:
		for _, c := range r.facts().ssrcs {
			if fn(c) {
				return true
			}
		}
	}
	return false
}
