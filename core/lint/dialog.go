package lint

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
)

// dctx is a dialog as the dialog and media rules read it. The SDP
// offer/answer analysis is computed once, on first use.
type dctx struct {
	in      Input
	sdpDone bool
	bodies  []*sdpBody
	exch    []exchange
	// declarations (rules_media.go)
	declDone bool
	decls    []declared
	declByEP map[netip.AddrPort][]declared
}

func newDctx(in Input) *dctx { return &dctx{in: in} }

type sdpRole uint8

const (
	roleUnknown sdpRole = iota // the request of its transaction was not captured
	roleOffer
	roleAnswer
	roleRepeat // the offer again, in a later response of the same transaction
)

// sdpBody is one SDP body of the dialog (retransmissions excluded).
type sdpBody struct {
	pos  int // position in Input.Messages
	m    *dialog.Message
	raw  []byte
	sess *sdp.Session
	role sdpRole
	// answers are the bodies answering this offer, in order.
	answers []*sdpBody
}

// exchange is one offer with one of its answers.
type exchange struct {
	offer, answer *sdpBody
}

type txKey struct {
	num    uint32
	method string
	branch string
}

type txState struct {
	reqOffer  *sdpBody // the offer the request carried
	noSDP     bool     // the request carried no SDP (the offer comes in a response)
	respOffer *sdpBody // the offer a response carried
}

// topBranch is the top Via branch ("" when none).
func topBranch(m *sip.Message) string {
	if len(m.Vias) == 0 {
		return ""
	}
	return m.Vias[0].Branch
}

// parseRAck reads "rseq cseq method".
func parseRAck(v string) (rseq, cseq uint32, method string, ok bool) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return 0, 0, "", false
	}
	a, err1 := strconv.ParseUint(f[0], 10, 32)
	b, err2 := strconv.ParseUint(f[1], 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, "", false
	}
	return uint32(a), uint32(b), strings.ToUpper(f[2]), true
}

// analyse pairs every SDP offer with its answers (RFC 3264 in SIP, RFC 6337):
// an offer in INVITE or UPDATE is answered in a response of the same
// transaction (same CSeq and top Via branch, so the two hops of a proxy pair
// separately); an INVITE without SDP gets its offer in a response and its
// answer in the PRACK or ACK.
func (d *dctx) analyse() {
	if d.sdpDone {
		return
	}
	d.sdpDone = true
	states := map[txKey]*txState{}
	respOffers := map[uint32][]*sdpBody{} // INVITE CSeq number → offers made in responses
	for pos := range d.in.Messages {
		dm := &d.in.Messages[pos]
		m := dm.Msg
		if m == nil || dm.Retransmission || !m.CSeq.Valid {
			continue
		}
		var b *sdpBody
		if raw, ok := m.SDPBody(); ok {
			if s, err := sdp.Parse(raw); err == nil {
				b = &sdpBody{pos: pos, m: dm, raw: raw, sess: s}
				d.bodies = append(d.bodies, b)
			}
		}
		key := txKey{m.CSeq.Number, m.CSeq.Method, topBranch(m)}
		if m.IsRequest {
			switch m.Method {
			case "INVITE", "UPDATE":
				st := &txState{}
				states[key] = st
				if b != nil {
					b.role, st.reqOffer = roleOffer, b
				} else {
					st.noSDP = m.Method == "INVITE"
				}
			case "ACK", "PRACK":
				if b == nil {
					continue
				}
				num := m.CSeq.Number
				if m.Method == "PRACK" {
					num = 0
					if v, ok := m.Header(sip.HdrRAck); ok {
						if _, c, _, ok := parseRAck(v); ok {
							num = c
						}
					}
				}
				if o := lastUnanswered(respOffers[num]); o != nil {
					d.answer(o, b)
				} else if m.Method == "PRACK" {
					b.role = roleOffer
					states[key] = &txState{reqOffer: b}
				}
			}
			continue
		}
		if b == nil || m.StatusCode < 101 || m.StatusCode > 299 {
			continue
		}
		st := states[key]
		switch {
		case st == nil:
			// The request was not captured: offer or answer cannot be told.
		case st.reqOffer != nil:
			d.answer(st.reqOffer, b)
		case st.noSDP && st.respOffer == nil:
			b.role, st.respOffer = roleOffer, b
			respOffers[m.CSeq.Number] = append(respOffers[m.CSeq.Number], b)
		case st.noSDP:
			b.role = roleRepeat
		}
	}
}

func lastUnanswered(l []*sdpBody) *sdpBody {
	for i := len(l) - 1; i >= 0; i-- {
		if len(l[i].answers) == 0 {
			return l[i]
		}
	}
	return nil
}

func (d *dctx) answer(offer, ans *sdpBody) {
	ans.role = roleAnswer
	offer.answers = append(offer.answers, ans)
	d.exch = append(d.exch, exchange{offer: offer, answer: ans})
}

// sdpBodies returns every SDP body of the dialog.
func (d *dctx) sdpBodies() []*sdpBody {
	d.analyse()
	return d.bodies
}

// exchanges returns every offer/answer pair, in the order the answers came.
func (d *dctx) exchanges() []exchange {
	d.analyse()
	return d.exch
}

// txTags maps a transaction (top Via branch, CSeq) to the distinct To tags
// its responses carried: two are enough to know one differs from any tag.
type txTags map[txKey][]string

func responseTags(msgs []dialog.Message) txTags {
	out := txTags{}
	for pos := range msgs {
		r := msgs[pos].Msg
		if r == nil || r.IsRequest || r.To.Tag == "" || !r.CSeq.Valid {
			continue
		}
		k := txKey{r.CSeq.Number, r.CSeq.Method, topBranch(r)}
		if k.branch == "" {
			continue
		}
		tags := out[k]
		if len(tags) < 2 && (len(tags) == 0 || tags[0] != r.To.Tag) {
			out[k] = append(tags, r.To.Tag)
		}
	}
	return out
}

func checkToTagInitial(d *dctx, report func(int, string, string, string)) {
	msgs := d.in.Messages
	var tags txTags
	for pos := range msgs {
		dm := &msgs[pos]
		m := dm.Msg
		if m == nil || !m.IsRequest || dm.Retransmission || m.To.Tag == "" {
			continue
		}
		toLine := "To: " + m.To.URI + ";tag=" + m.To.Tag
		if h, ok := firstHeader(m, sip.HdrTo); ok {
			toLine = line(h.Name, h.Value)
		}
		if m.Method == "REGISTER" {
			report(pos, toLine+" on REGISTER", "a REGISTER To header without a tag",
				"a REGISTER never belongs to a dialog; a registrar may reject the tagged request with 481")
			continue
		}
		branch := topBranch(m)
		if branch == "" || !m.CSeq.Valid {
			continue
		}
		if tags == nil {
			tags = responseTags(msgs)
		}
		for _, tag := range tags[txKey{m.CSeq.Number, m.CSeq.Method, branch}] {
			if tag != m.To.Tag {
				report(pos, toLine+"; a response of its own transaction answered with tag "+tag,
					"no To tag on a request that opens a dialog; the responder picks the tag",
					"the responder treated the request as new and chose its own tag, so the requester's tag pointed at a dialog that did not exist")
				break
			}
		}
	}
}

// recentInvites is how many INVITE numbers an ACK finding quotes.
const recentInvites = 5

func checkAckCSeq(d *dctx, report func(int, string, string, string)) {
	invites := map[uint32]bool{}
	var recent []uint32
	for pos := range d.in.Messages {
		dm := &d.in.Messages[pos]
		m := dm.Msg
		if m == nil || !m.IsRequest || !m.CSeq.Valid {
			continue
		}
		switch m.Method {
		case "INVITE":
			if !invites[m.CSeq.Number] {
				invites[m.CSeq.Number] = true
				if len(recent) == recentInvites {
					recent = recent[1:]
				}
				recent = append(recent, m.CSeq.Number)
			}
		case "ACK":
			if len(invites) == 0 || invites[m.CSeq.Number] || dm.Retransmission {
				continue
			}
			nums := make([]string, len(recent))
			for i, n := range recent {
				nums[i] = strconv.FormatUint(uint64(n), 10)
			}
			seen := strings.Join(nums, ", ")
			if len(invites) > len(recent) {
				seen = "latest: " + seen
			}
			obs := "CSeq: " + strconv.FormatUint(uint64(m.CSeq.Number), 10) + " ACK"
			if h, ok := firstHeader(m, sip.HdrCSeq); ok {
				obs = line(h.Name, h.Value)
			}
			report(pos, obs, "the CSeq number of the INVITE acknowledged (INVITEs seen: "+seen+")",
				"the UAS matches the ACK to its INVITE by CSeq number; an unmatched ACK leaves the 2xx or error retransmitting until the transaction times out, and the call may be torn down")
		}
	}
}

func checkPrackMissing(d *dctx, report func(int, string, string, string)) {
	type relKey struct{ rseq, cseq uint32 }
	msgs := d.in.Messages
	first := map[relKey]int{}
	var order []relKey
	pracked := map[relKey]bool{}
	for pos := range msgs {
		m := msgs[pos].Msg
		if m == nil || !m.CSeq.Valid {
			continue
		}
		if m.IsRequest {
			if m.Method == "PRACK" {
				if v, ok := m.Header(sip.HdrRAck); ok {
					if r, c, meth, ok := parseRAck(v); ok && meth == "INVITE" {
						pracked[relKey{r, c}] = true
					}
				}
			}
			continue
		}
		if m.StatusCode <= 100 || m.StatusCode > 199 || m.CSeq.Method != "INVITE" || !listHas(m, sip.HdrRequire, "100rel") {
			continue
		}
		v, ok := m.Header(sip.HdrRSeq)
		if !ok {
			continue
		}
		r, ok := parseRSeq(v)
		if !ok {
			continue
		}
		k := relKey{r, m.CSeq.Number}
		if _, seen := first[k]; !seen {
			first[k] = pos
			order = append(order, k)
		}
	}
	// lastFinal is the position of the last final response to each INVITE.
	lastFinal := map[uint32]int{}
	for pos := range msgs {
		if r := msgs[pos].Msg; r != nil && !r.IsRequest && r.StatusCode >= 200 && r.CSeq.Valid && r.CSeq.Method == "INVITE" {
			lastFinal[r.CSeq.Number] = pos
		}
	}
	for _, k := range order {
		pos := first[k]
		if last, ok := lastFinal[k.cseq]; pracked[k] || !ok || last < pos {
			continue
		}
		m := msgs[pos].Msg
		report(pos, m.StartLine+" with RSeq: "+strconv.FormatUint(uint64(k.rseq), 10)+", never PRACKed before the INVITE's final response",
			"PRACK with RAck: "+strconv.FormatUint(uint64(k.rseq), 10)+" "+strconv.FormatUint(uint64(k.cseq), 10)+" INVITE",
			"the UAS retransmits an unacknowledged reliable provisional and may fail the INVITE; any SDP it carried was never confirmed")
	}
}
