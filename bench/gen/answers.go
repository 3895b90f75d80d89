package gen

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Generator names this generator and the version of its answer format.
const Generator = "sipnab bench/gen v1"

// Thresholds behind the problem reasons and the degraded-stream set.
const (
	// DegradedMOSBelow: a stream is degraded when its MOS is below this.
	// Generated streams stay far from it (degraded ones score under 3.2,
	// the others above 3.9, whatever jitter statistic feeds the E-model and
	// whether Bpl is 10 or 25.1).
	DegradedMOSBelow = 3.6
	ProblemLossPct   = 5.0   // high_loss: a stream loses more than this share (percent)
	ProblemJitterMs  = 50.0  // high_jitter: a stream's jitter (final and max) above this
	ProblemPDDMs     = 11000 // slow_setup: INVITE to first 18x above this
	LateMediaMs      = 500   // late_media: first RTP this long after the 200 OK
)

// Problem reasons, one per rule of the "problems" alias the calls can hit.
const (
	ReasonFailed     = "failed"      // state Failed (final 4xx/5xx/6xx other than 487)
	ReasonOneWay     = "one_way"     // answered, RTP in one direction only
	ReasonHighLoss   = "high_loss"   // a stream's loss_pct > 5
	ReasonHighJitter = "high_jitter" // a stream's jitter_ms and jitter_max_ms > 50
	ReasonSlowSetup  = "slow_setup"  // PDD > 11 s
	ReasonLateMedia  = "late_media"  // first RTP > 500 ms after the 200 OK
	ReasonDurAsym    = "duration_asymmetry"
)

// Answers is everything an analyzer must find in the generated capture.
type Answers struct {
	// Generator names the generator and its answer format.
	Generator string `json:"generator"`
	// Config is the configuration the capture was generated from.
	Config Config `json:"config"`
	// Definitions states how each measured value is defined.
	Definitions Definitions `json:"definitions"`
	// Capture describes the file as written.
	Capture CaptureFacts `json:"capture"`
	// Dialogs lists every Call-ID, in order of its first message.
	Dialogs []Dialog `json:"dialogs"`
	// Streams lists every RTP stream, in order of its first packet.
	Streams []Stream `json:"streams"`
	// Counts are message and dialog counts.
	Counts Counts `json:"counts"`
	// ByMethod holds carrier metrics per opening method (group_dialogs by method).
	ByMethod map[string]MethodMetrics `json:"by_method"`
	// FailedCalls are the Call-IDs in state Failed, sorted.
	FailedCalls []string `json:"failed_calls"`
	// ProblemCalls are the dialogs the "problems" alias selects, sorted by
	// Call-ID, with the rules each one hits.
	ProblemCalls []ProblemCall `json:"problem_calls"`
	// DegradedStreams are the streams whose MOS is below DegradedMOSBelow.
	DegradedStreams []StreamKey `json:"degraded_streams"`
}

// Definitions document the measurements in the answers.
type Definitions struct {
	PDD              string  `json:"pdd"`
	Trying           string  `json:"trying"`
	Setup            string  `json:"setup"`
	Conversation     string  `json:"conversation"`
	Loss             string  `json:"loss"`
	Jitter           string  `json:"jitter"`
	MOS              string  `json:"mos"`
	OneWayDelayMs    float64 `json:"one_way_delay_ms"`
	DegradedMOSBelow float64 `json:"degraded_mos_below"`
	ProblemLossPct   float64 `json:"problem_loss_pct"`
	ProblemJitterMs  float64 `json:"problem_jitter_ms"`
	ProblemPDDMs     float64 `json:"problem_pdd_ms"`
	LateMediaMs      float64 `json:"late_media_ms"`
	ASR              string  `json:"asr"`
	NER              string  `json:"ner"`
}

// CaptureFacts describe the written file.
type CaptureFacts struct {
	Format      string    `json:"format"`   // "pcap" (microsecond timestamps)
	LinkType    string    `json:"linktype"` // "ethernet"
	Frames      int       `json:"frames"`
	SIPMessages int       `json:"sip_messages"`
	RTPPackets  int       `json:"rtp_packets"`
	FirstTime   time.Time `json:"first_time"`
	LastTime    time.Time `json:"last_time"`
	SHA256      string    `json:"sha256"`
}

// Dialog is one Call-ID.
type Dialog struct {
	CallID string `json:"call_id"`
	// Method is the opening method: INVITE or REGISTER.
	Method string `json:"method"`
	// Kind is what the generator made happen (see the Kind constants).
	Kind  Kind   `json:"kind"`
	State string `json:"state"` // InCall, Completed, Cancelled, Failed, Registered
	// FinalStatus is the INVITE's final response code; absent for REGISTER.
	FinalStatus int    `json:"final_status_code,omitempty"`
	FinalReason string `json:"final_reason,omitempty"`
	// Messages counts every SIP message with this Call-ID.
	Messages  int            `json:"messages"`
	Requests  map[string]int `json:"requests"`
	Responses map[string]int `json:"responses"`
	FromUser  string         `json:"from_user"`
	ToUser    string         `json:"to_user"`
	// Src and Dst are the signaling addresses of the dialog's first request.
	Src       string    `json:"src"`
	Dst       string    `json:"dst"`
	FirstTime time.Time `json:"first_time"`
	LastTime  time.Time `json:"last_time"`
	// TryingMs is INVITE to 100 Trying.
	TryingMs *float64 `json:"trying_ms,omitempty"`
	// PDDMs is INVITE to the first 18x; absent when no 18x was sent.
	PDDMs *float64 `json:"pdd_ms,omitempty"`
	// SetupMs is INVITE to 200 OK; absent when the call was not answered.
	SetupMs *float64 `json:"setup_ms,omitempty"`
	// ConversationMs is 200 OK to BYE; absent without both.
	ConversationMs *float64 `json:"conversation_ms,omitempty"`
	// MediaDelayMs is 200 OK to the first RTP packet of the call.
	MediaDelayMs *float64 `json:"media_delay_ms,omitempty"`
	// Codec is the answered codec (PCMU or PCMA); absent when not answered.
	Codec   string      `json:"codec,omitempty"`
	Streams []StreamKey `json:"streams,omitempty"`
	// Problems are the rules of the "problems" alias this dialog hits.
	Problems []string `json:"problems,omitempty"`
}

// StreamKey identifies a stream the way tshark and sipnab do.
type StreamKey struct {
	SSRC string `json:"ssrc"` // 0x + 8 lowercase hex digits
	Src  string `json:"src"`  // ip:port
	Dst  string `json:"dst"`
}

func (k StreamKey) String() string { return k.SSRC + " " + k.Src + " -> " + k.Dst }

// Stream is one RTP stream as the receiver at the capture point measures it.
type Stream struct {
	StreamKey
	CallID string `json:"call_id"`
	// Direction is caller_to_callee or callee_to_caller.
	Direction   string     `json:"direction"`
	Impairment  Impairment `json:"impairment"`
	PayloadType int        `json:"payload_type"`
	Codec       string     `json:"codec"`
	ClockRate   int        `json:"clock_rate"`
	// Packets received (written to the file) and payload octets.
	Packets int `json:"packets"`
	Octets  int `json:"octets"`
	// Expected is RFC 3550's extended highest minus base sequence plus one.
	Expected int     `json:"expected"`
	Lost     int     `json:"lost"`
	LossPct  float64 `json:"loss_pct"`
	// LostSeqs are the dropped sequence numbers, in sending order.
	LostSeqs   []uint16 `json:"lost_seqs,omitempty"`
	Duplicates int      `json:"duplicates"`
	OutOfOrder int      `json:"out_of_order"`
	FirstSeq   uint16   `json:"first_seq"`
	LastSeq    uint16   `json:"last_seq"`
	// SeqWraps says the 16-bit sequence number wrapped inside the stream.
	SeqWraps  bool      `json:"seq_wraps"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// JitterMs is the RFC 3550 jitter after the last packet; JitterMaxMs its
	// largest value; JitterMeanMs its mean over every packet but the first.
	JitterMs     float64 `json:"jitter_ms"`
	JitterMaxMs  float64 `json:"jitter_max_ms"`
	JitterMeanMs float64 `json:"jitter_mean_ms"`
	MaxDeltaMs   float64 `json:"max_delta_ms"`
	// MOS and RFactor come from EModel on LossPct, JitterMs and the assumed
	// 100 ms one-way delay with engine.md's Bpl 10; MOSWorst uses
	// JitterMaxMs instead; MOSG113 and RFactorG113 use G.113's Bpl 25.1 for
	// G.711 with concealment (what core/mos computes).
	MOS         float64 `json:"mos"`
	RFactor     float64 `json:"r_factor"`
	MOSWorst    float64 `json:"mos_worst"`
	MOSG113     float64 `json:"mos_g113"`
	RFactorG113 float64 `json:"r_factor_g113"`
	MOSGrounded bool    `json:"mos_grounded"`
	Degraded    bool    `json:"degraded"`
}

// Counts are message counts (as tshark -Y sip counts them) and dialog counts.
type Counts struct {
	CallIDs     int `json:"call_ids"`
	SIPRequests int `json:"sip_requests"`
	// SIPResponses counts responses; MessagesByMethod requests by method.
	SIPResponses     int            `json:"sip_responses"`
	MessagesByMethod map[string]int `json:"messages_by_method"`
	ResponsesByCode  map[string]int `json:"responses_by_code"`
	// Dialog counts (aggregate_dialogs): by opening method, by state, and by
	// final INVITE status ("(none)" for dialogs without one).
	DialogsByMethod      map[string]int `json:"dialogs_by_method"`
	DialogsByState       map[string]int `json:"dialogs_by_state"`
	DialogsByFinalStatus map[string]int `json:"dialogs_by_final_status"`
	DialogsByKind        map[Kind]int   `json:"dialogs_by_kind"`
	Streams              int            `json:"streams"`
}

// MethodMetrics are group_dialogs' carrier metrics for one opening method.
type MethodMetrics struct {
	Dialogs int `json:"dialogs"`
	// Seizures, Answered and Delivered are the populations behind ASR/NER;
	// absent (with NotGrounded) for non-INVITE groups.
	Seizures  int `json:"seizures,omitempty"`
	Answered  int `json:"answered,omitempty"`
	Delivered int `json:"delivered,omitempty"`
	// ASR and NER in percent, 2 decimals.
	ASR *float64 `json:"asr,omitempty"`
	NER *float64 `json:"ner,omitempty"`
	// ACDMs is the mean conversation time of calls with a 200 OK and a BYE.
	ACDMs          *float64          `json:"acd_ms,omitempty"`
	CompletedCalls int               `json:"completed_calls,omitempty"`
	PDDP50Ms       *float64          `json:"pdd_p50_ms,omitempty"`
	PDDP95Ms       *float64          `json:"pdd_p95_ms,omitempty"`
	PDDMeasured    int               `json:"pdd_measured,omitempty"`
	NotGrounded    map[string]string `json:"not_grounded,omitempty"`
	SetupP50Ms     *float64          `json:"setup_p50_ms,omitempty"`
}

// ProblemCall is one dialog the "problems" alias selects.
type ProblemCall struct {
	CallID  string   `json:"call_id"`
	Reasons []string `json:"reasons"`
}

func ms(d usec) float64      { return float64(d) / 1000 }
func ptr(f float64) *float64 { return &f }
func round2(f float64) float64 {
	return math.Round(f*100) / 100
}

// nearestRank is the nearest-rank percentile of sorted values.
func nearestRank(sorted []float64, p float64) float64 {
	n := int(math.Ceil(p / 100 * float64(len(sorted))))
	n = max(n, 1)
	return sorted[n-1]
}

func buildAnswers(p *plan, callLogs, regLogs []*dialogLog, rtps []*rtpSource, frames int) *Answers {
	start := p.cfg.start()
	at := func(u usec) time.Time { return start.Add(time.Duration(u) * time.Microsecond) }
	cfg := p.cfg
	cfg.Start = start
	a := &Answers{
		Generator: Generator,
		Config:    cfg,
		Definitions: Definitions{
			PDD:              "INVITE to the first 18x response (100 Trying is trying_ms)",
			Trying:           "INVITE to 100 Trying",
			Setup:            "INVITE to the 200 OK",
			Conversation:     "200 OK to BYE (ACD basis)",
			Loss:             "RFC 3550: expected (extended highest - base + 1) minus received; loss_pct = 100*lost/expected",
			Jitter:           "RFC 3550 6.4.1 in arrival order: D = (Rj-Ri) - (Sj-Si)/8 ms with R the pcap timestamp in µs, J += (|D|-J)/16, in ms",
			MOS:              "simplified G.107 (engine.md §9): d = 100 ms + jitter_ms, Id = 0.024d (+0.11(d-177.3) above 177.3, the linear G.107 fit core/mos uses), Ie,eff = Ie+(95-Ie)Ppl/(Ppl+Bpl), Ie = 0 for G.711, R = 93.2-Id-Ie,eff, MOS = 1+0.035R+R(R-60)(100-R)7e-6 clamped [1,4.5]; mos: Bpl 10 (engine.md), mos_g113: Bpl 25.1 (G.113 G.711 with PLC), mos_worst: Bpl 10 on jitter_max_ms",
			OneWayDelayMs:    AssumedOneWayDelayMs,
			DegradedMOSBelow: DegradedMOSBelow,
			ProblemLossPct:   ProblemLossPct,
			ProblemJitterMs:  ProblemJitterMs,
			ProblemPDDMs:     ProblemPDDMs,
			LateMediaMs:      LateMediaMs,
			ASR:              "100 * answered / seizures; seizures = INVITE dialogs not still ringing at capture end",
			NER:              "100 * (answered + final 480/486/487/600/603) / seizures",
		},
		Capture: CaptureFacts{Format: "pcap", LinkType: "ethernet", Frames: frames},
		Counts: Counts{
			MessagesByMethod:     map[string]int{},
			ResponsesByCode:      map[string]int{},
			DialogsByMethod:      map[string]int{},
			DialogsByState:       map[string]int{},
			DialogsByFinalStatus: map[string]int{},
			DialogsByKind:        map[Kind]int{},
		},
		ByMethod: map[string]MethodMetrics{},
	}

	// Streams.
	streamOf := map[*streamPlan]*Stream{}
	for _, src := range rtps {
		sp, st := src.sp, &src.stats
		s := Stream{
			StreamKey:   StreamKey{SSRC: fmt.Sprintf("0x%08x", sp.ssrc), Src: sp.src.String(), Dst: sp.dst.String()},
			CallID:      sp.call.callID,
			Direction:   "callee_to_caller",
			Impairment:  sp.imp,
			PayloadType: int(sp.codec.pt),
			Codec:       sp.codec.name,
			ClockRate:   clockRate,
			Packets:     st.packets,
			Octets:      st.octets,
			Expected:    st.expected(),
			Duplicates:  st.dups,
			OutOfOrder:  st.ooo,
			FirstSeq:    st.baseSeq,
			LastSeq:     uint16(st.maxExt),
			SeqWraps:    st.maxExt > 0xffff,
			FirstSeen:   at(st.firstUS),
			LastSeen:    at(st.lastUS),
			JitterMs:    st.jitter,
			JitterMaxMs: st.jitterMax,
			MaxDeltaMs:  st.maxDeltaMS,
			MOSGrounded: true,
		}
		if sp.fromCall {
			s.Direction = "caller_to_callee"
		}
		if st.packets > 1 {
			s.JitterMeanMs = st.jitterSum / float64(st.packets-1)
		}
		s.Lost = s.Expected - s.Packets
		if s.Expected > 0 {
			s.LossPct = 100 * float64(s.Lost) / float64(s.Expected)
		}
		for _, k := range sp.drops {
			s.LostSeqs = append(s.LostSeqs, sp.seq0+uint16(k))
		}
		s.MOS, s.RFactor = EModel(s.LossPct, s.JitterMs, AssumedOneWayDelayMs, G711Ie, SpecBpl)
		s.MOSWorst, _ = EModel(s.LossPct, s.JitterMaxMs, AssumedOneWayDelayMs, G711Ie, SpecBpl)
		s.MOSG113, s.RFactorG113 = EModel(s.LossPct, s.JitterMs, AssumedOneWayDelayMs, G711Ie, G711PLCBpl)
		s.Degraded = s.MOS < DegradedMOSBelow
		a.Streams = append(a.Streams, s)
		a.Capture.RTPPackets += s.Packets
	}
	sort.SliceStable(a.Streams, func(i, j int) bool {
		if !a.Streams[i].FirstSeen.Equal(a.Streams[j].FirstSeen) {
			return a.Streams[i].FirstSeen.Before(a.Streams[j].FirstSeen)
		}
		return a.Streams[i].SSRC < a.Streams[j].SSRC
	})
	for i := range a.Streams {
		if a.Streams[i].Degraded {
			a.DegradedStreams = append(a.DegradedStreams, a.Streams[i].StreamKey)
		}
	}
	bySSRC := make(map[string]*Stream, len(a.Streams))
	for i := range a.Streams {
		bySSRC[a.Streams[i].SSRC] = &a.Streams[i] // SSRCs are unique in a capture
	}
	for _, src := range rtps {
		streamOf[src.sp] = bySSRC[fmt.Sprintf("0x%08x", src.sp.ssrc)]
	}

	// INVITE dialogs.
	for i, c := range p.calls {
		l := callLogs[i]
		d := Dialog{
			CallID: c.callID, Method: "INVITE", Kind: c.kind,
			Messages: l.messages, Requests: l.requests, Responses: codeMap(l.responses),
			FromUser: c.fromNum, ToUser: c.toNum, Src: c.caller.String(), Dst: c.callee.String(),
			FirstTime: at(l.first), LastTime: at(l.last),
			TryingMs: ptr(ms(c.t100 - c.t0)),
		}
		if c.t180 != 0 {
			d.PDDMs = ptr(ms(c.t180 - c.t0))
		}
		switch c.kind {
		case KindBusy:
			d.State, d.FinalStatus = "Failed", 486
		case KindUnavailable:
			d.State, d.FinalStatus = "Failed", 503
		case KindCancelled:
			d.State, d.FinalStatus = "Cancelled", 487
		default:
			d.State, d.FinalStatus = "Completed", 200
			if c.kind == KindInCallAtEnd {
				d.State = "InCall"
			}
			d.SetupMs = ptr(ms(c.tFinal - c.t0))
			d.Codec = c.codec.name
			if c.tBye != 0 {
				d.ConversationMs = ptr(ms(c.tBye - c.tFinal))
			}
		}
		d.FinalReason = reasons[d.FinalStatus]
		var first usec = -1
		for _, sp := range c.streams {
			s := streamOf[sp]
			d.Streams = append(d.Streams, s.StreamKey)
			f := s.FirstSeen.Sub(start).Microseconds()
			if first < 0 || f < first {
				first = f
			}
		}
		if first >= 0 {
			d.MediaDelayMs = ptr(ms(first - c.tFinal))
		}
		d.Problems = problems(d, c, streamOf)
		a.Dialogs = append(a.Dialogs, d)
	}
	// REGISTER dialogs.
	for i, g := range p.regs {
		l := regLogs[i]
		a.Dialogs = append(a.Dialogs, Dialog{
			CallID: g.callID, Method: "REGISTER", Kind: g.kind, State: "Registered",
			Messages: l.messages, Requests: l.requests, Responses: codeMap(l.responses),
			FromUser: g.user, ToUser: g.user, Src: g.ua.String(), Dst: g.registrar.String(),
			FirstTime: at(l.first), LastTime: at(l.last),
		})
	}
	sort.SliceStable(a.Dialogs, func(i, j int) bool {
		if !a.Dialogs[i].FirstTime.Equal(a.Dialogs[j].FirstTime) {
			return a.Dialogs[i].FirstTime.Before(a.Dialogs[j].FirstTime)
		}
		return a.Dialogs[i].CallID < a.Dialogs[j].CallID
	})

	// Counts, metrics and sets.
	inv := MethodMetrics{}
	var pdds, setups []float64
	var convSum float64
	for _, d := range a.Dialogs {
		a.Counts.CallIDs++
		a.Capture.SIPMessages += d.Messages
		for m, n := range d.Requests {
			a.Counts.MessagesByMethod[m] += n
			a.Counts.SIPRequests += n
		}
		for c, n := range d.Responses {
			a.Counts.ResponsesByCode[c] += n
			a.Counts.SIPResponses += n
		}
		a.Counts.DialogsByMethod[d.Method]++
		a.Counts.DialogsByState[d.State]++
		a.Counts.DialogsByKind[d.Kind]++
		if d.FinalStatus != 0 {
			a.Counts.DialogsByFinalStatus[strconv.Itoa(d.FinalStatus)]++
		} else {
			a.Counts.DialogsByFinalStatus["(none)"]++
		}
		if d.State == "Failed" {
			a.FailedCalls = append(a.FailedCalls, d.CallID)
		}
		if len(d.Problems) > 0 {
			a.ProblemCalls = append(a.ProblemCalls, ProblemCall{CallID: d.CallID, Reasons: d.Problems})
		}
		if d.Method != "INVITE" {
			continue
		}
		inv.Dialogs++
		inv.Seizures++ // no INVITE is left ringing at capture end
		switch d.FinalStatus {
		case 200:
			inv.Answered++
			inv.Delivered++
		case 480, 486, 487, 600, 603:
			inv.Delivered++
		}
		if d.PDDMs != nil {
			pdds = append(pdds, *d.PDDMs)
		}
		if d.SetupMs != nil {
			setups = append(setups, *d.SetupMs)
		}
		if d.ConversationMs != nil {
			inv.CompletedCalls++
			convSum += *d.ConversationMs
		}
	}
	a.Counts.Streams = len(a.Streams)
	if inv.Dialogs > 0 {
		inv.ASR = ptr(round2(100 * float64(inv.Answered) / float64(inv.Seizures)))
		inv.NER = ptr(round2(100 * float64(inv.Delivered) / float64(inv.Seizures)))
		if inv.CompletedCalls > 0 {
			inv.ACDMs = ptr(round2(convSum / float64(inv.CompletedCalls)))
		}
		slices.Sort(pdds)
		slices.Sort(setups)
		inv.PDDMeasured = len(pdds)
		if len(pdds) > 0 {
			inv.PDDP50Ms = ptr(nearestRank(pdds, 50))
			inv.PDDP95Ms = ptr(nearestRank(pdds, 95))
		}
		if len(setups) > 0 {
			inv.SetupP50Ms = ptr(nearestRank(setups, 50))
		}
		a.ByMethod["INVITE"] = inv
	}
	if n := a.Counts.DialogsByMethod["REGISTER"]; n > 0 {
		a.ByMethod["REGISTER"] = MethodMetrics{Dialogs: n, NotGrounded: map[string]string{
			"asr": "not an INVITE dialog", "ner": "not an INVITE dialog", "acd": "not an INVITE dialog", "pdd": "not an INVITE dialog"}}
	}
	sort.Strings(a.FailedCalls)
	sort.Slice(a.ProblemCalls, func(i, j int) bool { return a.ProblemCalls[i].CallID < a.ProblemCalls[j].CallID })
	if len(a.Dialogs) > 0 {
		a.Capture.FirstTime = a.Dialogs[0].FirstTime
	}
	for _, d := range a.Dialogs {
		if d.LastTime.After(a.Capture.LastTime) {
			a.Capture.LastTime = d.LastTime
		}
		if d.FirstTime.Before(a.Capture.FirstTime) {
			a.Capture.FirstTime = d.FirstTime
		}
	}
	for _, s := range a.Streams {
		if s.LastSeen.After(a.Capture.LastTime) {
			a.Capture.LastTime = s.LastSeen
		}
		if s.FirstSeen.Before(a.Capture.FirstTime) {
			a.Capture.FirstTime = s.FirstSeen
		}
	}
	return a
}

func codeMap(m map[int]int) map[string]int {
	out := make(map[string]int, len(m))
	for c, n := range m {
		out[strconv.Itoa(c)] = n
	}
	return out
}

// problems lists the rules of the "problems" alias the dialog hits.
func problems(d Dialog, c *callPlan, streamOf map[*streamPlan]*Stream) []string {
	var out []string
	if d.State == "Failed" {
		out = append(out, ReasonFailed)
	}
	answered := d.State == "Completed" || d.State == "InCall"
	if answered && len(c.streams) == 1 {
		out = append(out, ReasonOneWay)
	}
	var loss, jitter bool
	for _, sp := range c.streams {
		s := streamOf[sp]
		loss = loss || s.LossPct > ProblemLossPct
		jitter = jitter || (s.JitterMs > ProblemJitterMs && s.JitterMaxMs > ProblemJitterMs)
	}
	if loss {
		out = append(out, ReasonHighLoss)
	}
	if jitter {
		out = append(out, ReasonHighJitter)
	}
	if d.PDDMs != nil && *d.PDDMs > ProblemPDDMs {
		out = append(out, ReasonSlowSetup)
	}
	if d.MediaDelayMs != nil && *d.MediaDelayMs > LateMediaMs {
		out = append(out, ReasonLateMedia)
	}
	if len(c.streams) == 2 {
		a, b := streamOf[c.streams[0]], streamOf[c.streams[1]]
		da, db := a.LastSeen.Sub(a.FirstSeen), b.LastSeen.Sub(b.FirstSeen)
		diff := (da - db).Abs()
		if diff >= 2*time.Second && float64(diff) >= 0.05*float64(max(da, db)) {
			out = append(out, ReasonDurAsym)
		}
	}
	return out
}

// Dialog returns the dialog with the given Call-ID.
func (a *Answers) Dialog(callID string) (*Dialog, bool) {
	for i := range a.Dialogs {
		if a.Dialogs[i].CallID == callID {
			return &a.Dialogs[i], true
		}
	}
	return nil, false
}

// Stream returns the stream with the given key.
func (a *Answers) Stream(k StreamKey) (*Stream, bool) {
	for i := range a.Streams {
		if a.Streams[i].StreamKey == k {
			return &a.Streams[i], true
		}
	}
	return nil, false
}
