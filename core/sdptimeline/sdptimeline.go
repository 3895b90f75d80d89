// Package sdptimeline builds the ordered SDP offer/answer history of one
// dialog (engine.md §5): for every SDP body the signaling carried, who sent
// it, whether it offered or answered, which codecs, media address and port,
// packetization and direction it declared, and what changed against the
// same party's previous description (hold, resume, a switch to or from T.38
// fax, a media anchor move, a codec change).
//
// Build is the one function every surface uses (get_sdp_timeline,
// check_codec_negotiation, the per-call report, lint), so they cannot
// disagree about which body offered and which answered.
//
// # Offer or answer (RFC 3264, RFC 3261 §13.2.1, RFC 3262, RFC 3311)
//
//   - A request carrying SDP (INVITE, re-INVITE, UPDATE, PRACK outside the
//     case below) offers.
//   - A response carrying SDP answers when its request offered; otherwise
//     (an INVITE without a body) the response offers and the answer is due
//     in the PRACK or ACK of the same party, which is then labelled answer.
//   - An ACK never offers: SDP in an ACK is labelled answer.
//
// Only the transactions of offer/answer take part (INVITE, ACK, PRACK,
// UPDATE and their responses); SDP elsewhere (an OPTIONS 200 listing
// capabilities) is counted, not listed.
//
// Transactions are keyed by the From tag, CSeq number and method of the
// request (each party numbers its own CSeq). Retransmissions are skipped,
// and so is the same body seen again in the same transaction, direction and
// status from another hop (a stateful proxy captured on both sides): the
// history lists a description once. A relay that rewrites the SDP between
// hops shows up as a MediaAnchorChange instead.
//
// # Events
//
// Each exchange is compared with the previous description sent by the same
// party (the From tag of a request, the To tag of a response):
//
//   - Hold: a re-offer (re-INVITE or UPDATE) whose primary stream is
//     sendonly or inactive, or whose connection address is 0.0.0.0 (RFC
//     2543 style), from a party that was not holding (RFC 3264 §8.4). An
//     initial INVITE never holds: a call set up recvonly or inactive is not
//     put on hold, nor is one retried after a challenge.
//   - Resume: a re-offer that is neither, from a party that was holding.
//   - T38Switch / T38End: an active T.38 image stream appears or goes.
//   - MediaAnchorChange: the primary stream's address or port moved (hold
//     addresses and port 0 excluded; not reported beside a T.38 switch,
//     where the primary stream itself changes).
//   - CodecChange: the first codec of the primary stream changed (not
//     reported beside a T.38 switch, which changes it by definition, nor
//     for a disabled stream).
//   - T38Fallback: an audio offer after a T.38 offer that was refused.
//
// # Outcomes
//
// Every offer is answered (an SDP answer was captured), rejected (its
// transaction ended with a final error, 488, 606, 491, a 401/407
// challenge, and no answer) or no_answer (neither was captured). A refused
// offer changes nothing (RFC 3261 §14.1: "as if no re-INVITE had been
// issued"): its would-be events are listed as Proposed, never as Events,
// and its party's state does not move. A T.38 offer is accepted when its
// answer keeps an image stream with a port, refused when rejected or when
// the answer declines that stream (RFC 3264 §6), offered otherwise.
//
// # Bounds
//
// The input is one dialog's retained messages (at most the store's
// per-dialog cap, 500 by default), so every map here is bounded by it.
package sdptimeline

import (
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sdp"
)

// Directions of an exchange.
const (
	Offer  = "offer"
	Answer = "answer"
)

// Events an exchange may carry, in the order they are listed.
const (
	EventT38Switch         = "T38Switch"
	EventT38End            = "T38End"
	EventHold              = "Hold"
	EventResume            = "Resume"
	EventMediaAnchorChange = "MediaAnchorChange"
	EventCodecChange       = "CodecChange"
	EventT38Fallback       = "T38Fallback"
)

// Outcomes of an offer.
const (
	// OutcomeAnswered: an SDP answer to the offer was captured.
	OutcomeAnswered = "answered"
	// OutcomeRejected: the offer's transaction ended with a final error
	// response (a 488 or 606, a 491 glare, a 401/407 challenge...) and no
	// answer (RFC 3261 §14.1, RFC 3264 §6).
	OutcomeRejected = "rejected"
	// OutcomeNoAnswer: neither an answer nor a final error was captured.
	OutcomeNoAnswer = "no_answer"
)

// T.38 fates of an offer carrying an active image stream.
const (
	T38Accepted = "accepted"
	T38Refused  = "refused"
	T38Offered  = "offered"
)

// Stream is one m= line of a description.
type Stream struct {
	// Type is the media type: audio, video, image, application...
	Type string `json:"type" desc:"media type (audio, video, image, ...)"`
	// Port is the m= port; 0 means the stream is disabled or rejected.
	Port int `json:"port" desc:"m= port; 0 = stream disabled or rejected"`
	// Proto is the transport protocol (RTP/AVP, RTP/SAVP, udptl, ...).
	Proto string `json:"proto" desc:"transport protocol"`
	// Addr is the effective connection address (media c=, else session
	// c=); absent when the description has none.
	Addr string `json:"addr,omitempty" desc:"effective connection address"`
	// Mode is the effective direction.
	Mode string `json:"mode" enum:"sendrecv|sendonly|recvonly|inactive" desc:"effective direction"`
	// Ptime is the a=ptime packetization in ms; absent when not declared.
	Ptime int `json:"ptime,omitempty" desc:"declared packetization, ms"`
	// Codecs are the formats in m= line order (see CodecName).
	Codecs []string `json:"codecs" desc:"formats in m= line order, as the SDP names them"`
	// T38 marks a T.38 fax stream (m=image ... udptl t38).
	T38 bool `json:"t38,omitempty" desc:"T.38 fax stream"`
}

// Exchange is one SDP body of the dialog.
type Exchange struct {
	// MessageIndex is the position of the carrying message in its dialog.
	MessageIndex int `json:"message_index" desc:"index of the carrying message in the dialog"`
	// Direction is Offer or Answer.
	Direction string `json:"direction" enum:"offer|answer" desc:"offer or answer (RFC 3264)"`
	// Transaction names the transaction that carried it: INVITE,
	// re-INVITE, UPDATE, PRACK, ACK or another method.
	Transaction string `json:"transaction" desc:"INVITE, re-INVITE, UPDATE, PRACK, ACK or another method"`
	// Method is the request method (requests only).
	Method string `json:"method,omitempty" desc:"request method (requests only)"`
	// StatusCode is the response code (responses only).
	StatusCode int `json:"status_code,omitempty" desc:"response code (responses only)"`
	// Timestamp, Src, Dst and Frame locate the carrying message.
	Timestamp time.Time      `json:"timestamp" desc:"capture time of the carrying message"`
	Src       netip.AddrPort `json:"src" desc:"sender of the carrying message"`
	Dst       netip.AddrPort `json:"dst" desc:"receiver of the carrying message"`
	Frame     string         `json:"frame,omitempty" desc:"evidence pointer of the carrying message"`
	// Codecs, MediaAddr, MediaPort, Ptime and Mode describe the primary
	// stream: the first audio stream with a non-zero port, else the first
	// stream with a non-zero port, else the first stream. A description
	// without m= lines leaves them empty.
	Codecs    []string `json:"codecs" desc:"formats of the primary stream, in m= line order"`
	MediaAddr string   `json:"media_addr,omitempty" desc:"connection address of the primary stream"`
	MediaPort int      `json:"media_port" desc:"port of the primary stream; 0 = disabled"`
	Ptime     int      `json:"ptime,omitempty" desc:"declared packetization of the primary stream, ms"`
	Mode      string   `json:"mode,omitempty" enum:"sendrecv|sendonly|recvonly|inactive" desc:"direction of the primary stream"`
	// Events are what changed against the same party's previous
	// description, in the order of the Event constants.
	Events []string `json:"events,omitempty" desc:"changes against the same party's previous description"`
	// Streams are every m= line.
	Streams []Stream `json:"streams" desc:"every m= line"`
	// AnswersExchange is, on an answer, the index in Timeline.Exchanges of
	// the offer it answers; -1 on offers and on answers whose offer was
	// not captured.
	AnswersExchange int `json:"-"`
	// Problems counts what the SDP parser tolerated in the body.
	Problems int `json:"sdp_problems,omitempty" desc:"problems the SDP parser tolerated in the body"`
	// Outcome is, on an offer, what became of it: OutcomeAnswered,
	// OutcomeRejected or OutcomeNoAnswer. Empty on answers.
	Outcome string `json:"-"`
	// RejectedCode is, on a rejected offer, the final response code that
	// ended its transaction without an answer (488, 606, 491...).
	RejectedCode int `json:"rejected_code,omitempty" desc:"final response that refused this offer (no answer came)"`
	// Proposed lists, on a rejected offer (or a T.38 offer whose answer
	// declined the image stream), the events the offer would have caused:
	// they did not happen (RFC 3261 §14.1: the session is unchanged).
	Proposed []string `json:"proposed_events,omitempty" desc:"events a refused offer proposed; they did not happen"`
	// T38 is, on an offer with an active T.38 image stream, what became of
	// the fax attempt: accepted, refused or offered (no answer captured).
	T38 string `json:"t38,omitempty" enum:"accepted|refused|offered" desc:"fate of a T.38 offer"`

	party   string
	reoffer bool
}

// Timeline is the offer/answer history of one dialog.
type Timeline struct {
	// Exchanges in capture order.
	Exchanges []Exchange
	// Unreadable counts messages whose SDP body did not parse (no v= and
	// no m= line).
	Unreadable int
	// HopCopies counts bodies skipped because the same body had already
	// been listed for the same transaction, direction and status (another
	// hop of a proxy).
	HopCopies int
	// OutsideOfferAnswer counts SDP bodies in transactions that take no
	// part in offer/answer (an OPTIONS 200 describing capabilities, a
	// MESSAGE, a NOTIFY): not listed.
	OutsideOfferAnswer int
}

// Offers counts the offers.
func (t *Timeline) Offers() int {
	n := 0
	for i := range t.Exchanges {
		if t.Exchanges[i].Direction == Offer {
			n++
		}
	}
	return n
}

// CodecName renders one format as the SDP names it: the rtpmap encoding
// name and clock rate ("PCMU/8000", "opus/48000/2": channels only above 1),
// the RFC 3551 name for a static type without rtpmap, "PT<n>" for a payload
// type nothing names, or the raw token for a non-RTP format ("t38").
func CodecName(f sdp.Format) string {
	if f.Encoding == "" {
		if f.PayloadType >= 0 {
			return "PT" + strconv.Itoa(f.PayloadType)
		}
		return f.Fmt
	}
	var b strings.Builder
	b.WriteString(f.Encoding)
	if f.ClockRate > 0 {
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(f.ClockRate))
		if f.Channels > 1 {
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(f.Channels))
		}
	}
	return b.String()
}

// CodecKey is the identity under which two codec names match: the name
// lower-cased, a missing channel count read as 1 ("PCMU/8000" and
// "pcmu/8000/1" match; "PCMU/8000" and "PCMU/16000" do not).
func CodecKey(name string) string {
	k := strings.ToLower(name)
	if strings.Count(k, "/") == 2 && strings.HasSuffix(k, "/1") {
		k = strings.TrimSuffix(k, "/1")
	}
	return k
}

// IsMediaCodec reports whether a codec carries media rather than events,
// comfort noise, redundancy or FEC (telephone-event, CN, red, ulpfec,
// flexfec, rtx): a negotiation that agrees only on those carries no audio.
func IsMediaCodec(name string) bool {
	enc := strings.ToLower(name)
	if i := strings.IndexByte(enc, '/'); i >= 0 {
		enc = enc[:i]
	}
	switch enc {
	case "telephone-event", "cn", "red", "ulpfec", "flexfec", "rtx":
		return false
	}
	return true
}

// txKey names a transaction: the requesting party's From tag, the CSeq
// number and method.
type txKey struct {
	fromTag string
	cseq    uint32
	method  string
}

// copyKey names a body already listed for a transaction, direction and
// status.
type copyKey struct {
	tx     txKey
	status int
	dir    string
	body   uint64
}

// partyState is what a party's previous description said.
type partyState struct {
	seen      bool
	held      bool
	addr      string
	port      int
	codec     string
	t38Active bool
}

// Build returns the offer/answer history of one dialog's messages (in
// arrival order, as dialog.Detail.Messages holds them).
func Build(msgs []dialog.Message) Timeline {
	tl := Timeline{Exchanges: []Exchange{}}
	offerOf := map[txKey]int{}   // tx whose request offered -> exchange index
	reinvite := map[txKey]bool{} // INVITE tx sent inside a dialog
	pending := map[string]int{}  // From tag -> exchange index of a response offer awaiting PRACK/ACK
	copies := map[copyKey]bool{} // bodies already listed
	final := finals(msgs)        // tx -> its final response
	for i := range msgs {
		m := &msgs[i]
		if m.Msg == nil || m.Retransmission {
			continue
		}
		msg := m.Msg
		if msg.IsRequest && msg.Method == "INVITE" && msg.To.Tag != "" {
			reinvite[txKey{msg.From.Tag, msg.CSeq.Number, "INVITE"}] = true
		}
		body, ok := msg.SDPBody()
		if !ok {
			continue
		}
		sess, err := sdp.Parse(body)
		if err != nil {
			tl.Unreadable++
			continue
		}
		key := txKey{msg.From.Tag, msg.CSeq.Number, msg.CSeq.Method}
		if msg.IsRequest {
			key.method = msg.Method
		}
		switch key.method {
		case "INVITE", "ACK", "PRACK", "UPDATE":
		default:
			tl.OutsideOfferAnswer++
			continue
		}
		ex := Exchange{
			MessageIndex: m.Index, Timestamp: m.TS, Src: m.Src, Dst: m.Dst,
			AnswersExchange: -1, Problems: len(sess.Errors),
		}
		if !m.Frame.IsZero() {
			ex.Frame = m.Frame.String()
		}
		// Offer or answer.
		switch {
		case msg.IsRequest && (msg.Method == "ACK" || msg.Method == "PRACK"):
			if j, ok := pending[msg.From.Tag]; ok {
				ex.Direction, ex.AnswersExchange = Answer, j
				delete(pending, msg.From.Tag)
			} else if msg.Method == "ACK" {
				ex.Direction = Answer // an ACK never offers
			} else {
				ex.Direction = Offer
			}
		case msg.IsRequest:
			ex.Direction = Offer
		default:
			if j, ok := offerOf[key]; ok {
				ex.Direction, ex.AnswersExchange = Answer, j
			} else {
				ex.Direction = Offer
			}
		}
		status := 0
		if !msg.IsRequest {
			status = msg.StatusCode
		}
		ck := copyKey{tx: key, status: status, dir: ex.Direction, body: hash(body)}
		if copies[ck] {
			tl.HopCopies++
			continue
		}
		copies[ck] = true

		if msg.IsRequest {
			ex.Method = msg.Method
		} else {
			ex.StatusCode = msg.StatusCode
		}
		ex.Transaction = key.method
		if key.method == "INVITE" && reinvite[key] {
			ex.Transaction = "re-INVITE"
		}
		ex.Streams = streams(sess)
		if p := primary(ex.Streams); p >= 0 {
			s := ex.Streams[p]
			ex.Codecs, ex.MediaAddr, ex.MediaPort, ex.Ptime, ex.Mode = s.Codecs, s.Addr, s.Port, s.Ptime, s.Mode
		}

		// Events against the same party's previous description.
		// A party sends requests under its From tag and responses under its
		// To tag.
		ex.party = msg.From.Tag
		if !msg.IsRequest {
			ex.party = msg.To.Tag
		}
		if ex.party == "" {
			ex.party = "addr:" + m.Src.String()
		}
		ex.reoffer = ex.Transaction == "re-INVITE" || ex.Transaction == "UPDATE"

		idx := len(tl.Exchanges)
		if ex.Direction == Offer {
			if msg.IsRequest {
				offerOf[key] = idx
				// A request's offer is refused when its transaction ends
				// with a final error and no answer (set below when one
				// answers it).
				if c := final[key]; c >= 300 {
					ex.RejectedCode = c
				}
			} else {
				pending[msg.From.Tag] = idx
			}
		}
		tl.Exchanges = append(tl.Exchanges, ex)
	}
	outcomes(&tl)
	return tl
}

// finals maps every transaction of offer/answer to its final response: a
// 2xx when any branch sent one, else the first final error.
func finals(msgs []dialog.Message) map[txKey]int {
	final := map[txKey]int{}
	for i := range msgs {
		m := &msgs[i]
		if m.Msg == nil || m.Retransmission || m.Msg.IsRequest || m.Msg.StatusCode < 200 {
			continue
		}
		switch m.Msg.CSeq.Method {
		case "INVITE", "UPDATE", "PRACK":
		default:
			continue
		}
		k := txKey{m.Msg.From.Tag, m.Msg.CSeq.Number, m.Msg.CSeq.Method}
		if c, ok := final[k]; !ok || (m.Msg.StatusCode < 300 && c >= 300) {
			final[k] = m.Msg.StatusCode
		}
	}
	return final
}

// outcomes settles what became of every offer, then reads the events of
// each exchange against its party's previous description. An offer that
// was refused changes nothing: RFC 3261 §14.1 keeps the session "as if no
// re-INVITE had been issued", so its would-be events are Proposed, not
// Events, and its party's state stays. A T.38 offer is accepted only when
// its answer keeps an image stream with a port (RFC 3264 §6); an audio
// re-offer after a refused T.38 offer is the fallback to audio.
func outcomes(tl *Timeline) {
	answer := make([]int, len(tl.Exchanges)) // offer index -> its last answer, -1 without
	for i := range answer {
		answer[i] = -1
	}
	for j := range tl.Exchanges {
		if a := tl.Exchanges[j].AnswersExchange; tl.Exchanges[j].Direction == Answer && a >= 0 && a < len(answer) {
			answer[a] = j
		}
	}
	parties := map[string]*partyState{}
	t38Refused := false // a T.38 offer was refused and no T.38 session began since
	for i := range tl.Exchanges {
		ex := &tl.Exchanges[i]
		ps := parties[ex.party]
		if ps == nil {
			ps = &partyState{}
			parties[ex.party] = ps
		}
		if ex.Direction != Offer {
			ex.Events = events(ps, ex, ex.reoffer, true)
			if activeT38(ex) {
				t38Refused = false
			}
			continue
		}
		switch {
		case answer[i] >= 0:
			ex.Outcome, ex.RejectedCode = OutcomeAnswered, 0
		case ex.RejectedCode != 0:
			ex.Outcome = OutcomeRejected
		default:
			ex.Outcome = OutcomeNoAnswer
		}
		t38 := activeT38(ex)
		t38Taken := true
		if t38 {
			switch {
			case ex.Outcome == OutcomeRejected:
				ex.T38 = T38Refused
			case ex.Outcome == OutcomeAnswered && !activeT38(&tl.Exchanges[answer[i]]):
				ex.T38 = T38Refused
			case ex.Outcome == OutcomeAnswered:
				ex.T38 = T38Accepted
			default:
				ex.T38 = T38Offered
			}
			t38Taken = ex.T38 != T38Refused
		}
		if ex.Outcome == OutcomeRejected || (!t38Taken && primaryT38(ex)) {
			// Read against a copy: the party's state does not move.
			cp := *ps
			ex.Proposed = events(&cp, ex, ex.reoffer, true)
		} else {
			ex.Events = events(ps, ex, ex.reoffer, t38Taken)
			if !t38Taken {
				ex.Proposed = []string{EventT38Switch}
			}
		}
		fallback := t38Refused && !t38 && ex.MediaPort != 0 && ex.Outcome != OutcomeRejected
		if fallback {
			ex.Events = append(ex.Events, EventT38Fallback)
		}
		switch {
		case t38 && ex.T38 == T38Refused:
			t38Refused = true
		case t38 && ex.T38 == T38Accepted, fallback:
			t38Refused = false
		}
	}
}

// primaryT38 reports whether the primary stream of a description is a T.38
// one (a fax offer without an active audio stream).
func primaryT38(ex *Exchange) bool {
	p := primary(ex.Streams)
	return p >= 0 && ex.Streams[p].T38
}

// activeT38 reports whether a description carries a T.38 image stream with
// a port.
func activeT38(ex *Exchange) bool {
	for _, s := range ex.Streams {
		if s.T38 && s.Port != 0 {
			return true
		}
	}
	return false
}

// events compares a description with its party's previous one and updates
// the party's state.
// t38Taken false reads a T.38 offer whose answer declined the image stream
// as not switching to T.38.
func events(ps *partyState, ex *Exchange, reoffer, t38Taken bool) []string {
	held := isHold(ex)
	t38 := activeT38(ex) && t38Taken
	codec := ""
	if len(ex.Codecs) > 0 {
		codec = ex.Codecs[0]
	}
	var ev []string
	if ps.seen {
		switch {
		case t38 && !ps.t38Active:
			ev = append(ev, EventT38Switch)
		case !t38 && ps.t38Active:
			ev = append(ev, EventT38End)
		}
	}
	if ex.Direction == Offer && reoffer {
		switch {
		case held && !ps.held:
			ev = append(ev, EventHold)
		case !held && ps.held:
			ev = append(ev, EventResume)
		}
	}
	anchored := ex.MediaPort != 0 && ex.MediaAddr != "" && !nullAddr(ex.MediaAddr)
	if ps.seen && anchored && ps.addr != "" && t38 == ps.t38Active && (ps.addr != ex.MediaAddr || ps.port != ex.MediaPort) {
		ev = append(ev, EventMediaAnchorChange)
	}
	if ps.seen && codec != "" && ex.MediaPort != 0 && ps.codec != "" && CodecKey(codec) != CodecKey(ps.codec) && t38 == ps.t38Active {
		ev = append(ev, EventCodecChange)
	}

	ps.seen = true
	ps.t38Active = t38
	if ex.Direction == Offer && reoffer {
		ps.held = held
	} else if ex.Direction == Offer {
		ps.held = false
	}
	if anchored {
		ps.addr, ps.port = ex.MediaAddr, ex.MediaPort
	}
	if codec != "" && ex.MediaPort != 0 {
		ps.codec = codec
	}
	return ev
}

// isHold reports whether a description puts its primary stream on hold:
// sendonly or inactive, or a null connection address.
func isHold(ex *Exchange) bool {
	if ex.MediaPort == 0 {
		return false
	}
	return ex.Mode == string(sdp.SendOnly) || ex.Mode == string(sdp.Inactive) || nullAddr(ex.MediaAddr)
}

func nullAddr(a string) bool {
	if a == "0.0.0.0" || a == "::" {
		return true
	}
	if ip, err := netip.ParseAddr(a); err == nil {
		return ip.IsUnspecified()
	}
	return false
}

// streams converts the m= lines of a session.
func streams(s *sdp.Session) []Stream {
	out := make([]Stream, 0, len(s.Media))
	for i := range s.Media {
		md := &s.Media[i]
		st := Stream{
			Type: md.Type, Port: md.Port, Proto: md.Proto, Addr: md.Conn,
			Mode: string(md.Direction), Ptime: md.Ptime, T38: md.IsT38(),
			Codecs: make([]string, 0, len(md.Formats)),
		}
		if st.Mode == "" {
			st.Mode = string(sdp.SendRecv)
		}
		for _, f := range md.Formats {
			st.Codecs = append(st.Codecs, CodecName(f))
		}
		out = append(out, st)
	}
	return out
}

// primary picks the stream the exchange's summary describes.
func primary(ss []Stream) int {
	for i := range ss {
		if ss[i].Type == "audio" && ss[i].Port != 0 {
			return i
		}
	}
	for i := range ss {
		if ss[i].Port != 0 {
			return i
		}
	}
	if len(ss) > 0 {
		return 0
	}
	return -1
}

func hash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// For reads the timeline of one dialog detail (its retained messages).
func For(det *dialog.Detail) Timeline { return Build(det.Messages) }
