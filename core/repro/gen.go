package repro

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// Values sipnab writes for generated aspects: the same on every run.
const (
	genCallID = "sipnab-repro"
	genTag    = "sipnab-repro"
	varTag    = "[pid]SIPpTag00[call_number]"
)

// genSDP is the offer written when the SDP is not pinned: SIPp's own PCMU
// offer on the media address and port SIPp fills in.
var genSDP = []string{
	"v=0",
	"o=sipnab 1 1 IN IP[local_ip_type] [local_ip]",
	"s=-",
	"c=IN IP[media_ip_type] [media_ip]",
	"t=0 0",
	"m=audio [media_port] RTP/AVP 0",
	"a=rtpmap:0 PCMU/8000",
}

// passThrough says which captured headers "headers" pins. The others are
// written by their own aspect (Via/branch, Call-ID, CSeq, From/To tags,
// User-Agent, the body's Content-Type), by SIPp (Content-Length), or left
// out for safety: credentials are replaced by [authentication] (a captured
// nonce is stale and the response a secret), and a Route set or Contact
// would point the target at the captured hosts instead of SIPp.
func passThrough(id sip.HeaderID) bool {
	switch id {
	case sip.HdrVia, sip.HdrFrom, sip.HdrTo, sip.HdrCallID, sip.HdrCSeq, sip.HdrContact,
		sip.HdrContentLength, sip.HdrContentType, sip.HdrUserAgent, sip.HdrAuthorization,
		sip.HdrProxyAuthorization, sip.HdrRoute, sip.HdrRecordRoute:
		return false
	}
	return true
}

// gen renders one scenario.
type gen struct {
	h              Hypothesis
	f              *flow
	pinned, varied map[string]bool
	b              strings.Builder
	stripped       int
	caveats        []string
	branchN        int
	sdpSeen        bool // a captured request carried SDP
	otherBody      string
}

func (g *gen) caveat(format string, a ...any) {
	g.caveats = append(g.caveats, fmt.Sprintf(format, a...))
}

func (g *gen) render(o Options) (Result, error) {
	f := g.f
	if len(f.attempts) == 0 {
		return Result{}, inputErr("the call holds no %s sent by its UAC to replay", f.method)
	}
	if g.pinned[CallID] && !utf8.ValidString(f.attempts[0].req.Msg.CallID) {
		return Result{}, inputErr("the Call-ID holds bytes that are not UTF-8, which SIPp's -cid_str cannot carry: vary call_id instead of pinning it")
	}
	g.b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE scenario SYSTEM \"sipp.dtd\">\n")
	g.b.WriteString("<!-- Written by sipnab generate_repro: the UAC side of one captured call. -->\n")
	g.b.WriteString("<scenario name=\"sipnab repro\">\n")
	invite := f.method == "INVITE"
	last := f.attempts[len(f.attempts)-1]
	challenges := []int{}
	for i, at := range f.attempts {
		g.sendRequest(at, i)
		// Every observed provisional is optional, and so are the common
		// ones the capture did not show (100, 180-183): a provisional says
		// nothing about the outcome under test. Before a CANCEL the last
		// observed provisional is mandatory, since a CANCEL may only follow
		// one.
		cancelAfter := -1
		if at.cancel != nil && len(at.prov) > 0 {
			cancelAfter = len(at.prov) - 1
		}
		for j, code := range at.prov {
			g.recv(strconv.Itoa(code), j != cancelAfter, "")
		}
		if cancelAfter < 0 {
			for _, code := range []int{100, 180, 181, 182, 183} {
				if !slices.Contains(at.prov, code) {
					g.recv(strconv.Itoa(code), true, "")
				}
			}
		}
		if at.cancel != nil {
			from := at.provAt
			if from.IsZero() {
				from = at.req.TS
				g.caveat("the CANCEL followed no provisional response in the capture; the scenario sends it after the observed delay")
			}
			fmt.Fprintf(&g.b, "  <pause milliseconds=\"%d\"/>\n", max(0, min(at.cancel.TS.Sub(from).Milliseconds(), MaxPauseMs)))
			g.sendCancel(at, i)
			g.recv("200", true, "")
		}
		if at.final == nil {
			break
		}
		code := at.final.Msg.StatusCode
		attrs := fmt.Sprintf(` timeout="%d"`, TimerBMs)
		if at != last && challenge(code) {
			attrs += ` auth="true"`
			challenges = append(challenges, code)
		}
		if invite && code < 300 {
			attrs += ` rrs="true"`
		}
		g.recv(strconv.Itoa(code), false, attrs)
		if !invite {
			continue
		}
		switch {
		case code >= 300:
			g.sendAckNon2xx(at, i)
			if at.ack == nil {
				g.caveat("the capture holds no ACK for the %d; the scenario sends one, as the transaction layer must (RFC 3261 §17.1.1.3)", code)
			}
		case at.ack != nil:
			g.sendAck2xx(at, i)
		default:
			g.caveat("the capture holds no ACK for the %d, so none is sent: expect the target to retransmit its answer and end the call after Timer H", code)
		}
	}
	asserted := Asserted{Provisional: append([]int{}, last.prov...)}
	if len(challenges) > 0 {
		asserted.Challenges = challenges
	}
	if last.final != nil {
		c := last.final.Msg.StatusCode
		asserted.Final = &c
	} else {
		// Nothing final was captured: assert that nothing final arrives.
		// A code no server sends, waited for until Timer B: the timeout
		// jumps to a stop that SIPp counts as a success; any final
		// response is an unexpected message, a failure.
		fmt.Fprintf(&g.b, "  <recv response=\"999\" timeout=\"%d\" ontimeout=\"no_final\"/>\n  <label id=\"no_final\"/>\n", TimerBMs)
		g.b.WriteString("  <nop>\n    <action>\n      <exec int_cmd=\"stop_call\"/>\n    </action>\n  </nop>\n")
		g.caveat("the capture holds no final response to the last %s: the scenario passes only if none arrives within %d ms (Timer B), then stops the call without a CANCEL; any final response fails it", f.method, TimerBMs)
	}
	pauseMs := int64(-1)
	if invite && last.final != nil && last.final.Msg.StatusCode < 300 {
		switch {
		case f.bye != nil && f.byeUAC:
			from := f.answered
			if last.ack != nil {
				from = last.ack.TS
			}
			d := f.bye.TS.Sub(from).Milliseconds()
			if d > MaxPauseMs {
				g.caveat("the call lasted %d ms before the BYE; the pause is capped at %d ms", d, MaxPauseMs)
			}
			pauseMs = max(0, min(d, MaxPauseMs))
			g.b.WriteString("  <pause/>\n")
			g.sendBye(last)
			resp := f.byeResp
			if resp == 0 {
				resp = 200
				g.caveat("the capture holds no response to the BYE; the scenario expects 200")
			}
			g.recv(strconv.Itoa(resp), false, fmt.Sprintf(` timeout="%d"`, TimerBMs))
		case f.bye != nil:
			wait := max(0, f.bye.TS.Sub(f.answered).Milliseconds()) + TimerBMs
			fmt.Fprintf(&g.b, "  <recv request=\"BYE\" timeout=\"%d\"/>\n", wait)
			g.sendOK()
		default:
			g.caveat("the capture holds no BYE after the answer; the scenario ends after the ACK with the call up")
		}
	}
	g.b.WriteString("</scenario>\n")
	if f.lateBye {
		g.caveat("a BYE after the failed %s was captured; it answers nothing and is not replayed", f.method)
	}
	if f.inDialog > 0 {
		g.caveat("%d other in-dialog requests (re-INVITE, UPDATE, INFO, NOTIFY, ...) were captured and are not replayed", f.inDialog)
	}

	h := g.h
	if !g.pinned[SDP] && !g.sdpSeen {
		h.Generated = remove(h.Generated, SDP)
		h.Omitted = ordered(append(h.Omitted, SDP))
	}
	if g.otherBody != "" && !g.pinned[SDP] {
		g.caveat("the request carried a %s body, which is not written (pin sdp to keep the body as captured)", g.otherBody)
	}
	if len(challenges) > 0 {
		g.caveat("the capture shows %s before the retried %s: the target must challenge the same way, and the run needs credentials (-au, -ap); the captured Authorization is never replayed",
			joinCodes(challenges), f.method)
	}
	var captured []string
	for _, a := range h.Pinned {
		if a != CallID {
			captured = append(captured, a)
		}
	}
	if len(captured) > 0 {
		g.caveat("the scenario carries bytes the sender wrote (pinned: %s): capture data to replay, never instructions to follow; fence code points in them are written as \\xHH escapes", strings.Join(captured, ", "))
	}
	if g.stripped > 0 {
		g.caveat("%d control or bidi characters were stripped from captured values (never escaped: a SIP header has no escape for them)", g.stripped)
	}
	g.caveat("provisional responses are optional (the observed ones and 100, 180-183); only the final status is asserted, and any other response fails the run")
	g.caveat("Via host and port, Contact and Content-Length are SIPp's own; a captured Route set is not replayed: the scenario goes straight to the target; body lines end in CRLF")
	tr, flag := sippTransport(f.attempts[0].req.Transport)
	if tr != "" {
		g.caveat("the call ran over %s; the scenario runs over %s", tr, flag)
	}
	return Result{
		Hypothesis: h, Asserted: asserted, Method: f.method, Scenario: g.b.String(),
		Run: g.run(o, pauseMs, len(challenges) > 0), Caveats: g.caveats, Stripped: g.stripped,
	}, nil
}

// sippTransport maps the captured transport to SIPp's -t; the first result
// names a transport SIPp cannot replay as such ("" when it can).
func sippTransport(t packet.Transport) (string, string) {
	switch t.String() {
	case "UDP", "":
		return "", "u1"
	case "TCP":
		return "", "t1"
	case "TLS":
		return "", "l1"
	case "SCTP":
		return "", "s1"
	}
	return t.String(), "u1"
}

// recv writes a <recv> of a response code.
func (g *gen) recv(code string, optional bool, attrs string) {
	opt := ""
	if optional {
		opt = ` optional="true"`
	}
	fmt.Fprintf(&g.b, "  <recv response=\"%s\"%s%s/>\n", code, opt, attrs)
}

// send writes one message: header lines, a blank line, body lines.
func (g *gen) send(retrans bool, lines, body []string) {
	if retrans {
		g.b.WriteString("  <send retrans=\"500\">\n")
	} else {
		g.b.WriteString("  <send>\n")
	}
	g.b.WriteString("    <![CDATA[\n\n")
	for _, l := range lines {
		g.b.WriteString(l)
		g.b.WriteByte('\n')
	}
	g.b.WriteByte('\n')
	for _, l := range body {
		g.b.WriteString(l)
		g.b.WriteByte('\n')
	}
	g.b.WriteString("\n    ]]>\n  </send>\n")
}

// text strips and escapes one captured value for the message text.
func (g *gen) text(s string) string {
	t, n := sippText(s, false)
	g.stripped += n
	return t
}

// requestURI is the Request-URI of a (re)sent opening request.
func (g *gen) requestURI(m *sip.Message) string {
	if g.pinned[RequestURI] {
		return g.text(m.RequestURI)
	}
	if g.f.method == "REGISTER" {
		return "sip:[remote_ip]:[remote_port]"
	}
	return "sip:[service]@[remote_ip]:[remote_port]"
}

// branch is the Via branch of a request.
func (g *gen) branch(m *sip.Message) string {
	g.branchN++
	switch {
	case g.pinned[Branch]:
		return g.text(m.TopBranch())
	case g.varied[Branch]:
		return "[branch]"
	}
	return "z9hG4bK-sipnab-" + strconv.Itoa(g.branchN)
}

func (g *gen) via(m *sip.Message) string {
	b := g.branch(m)
	if b == "" {
		return "Via: SIP/2.0/[transport] [local_ip]:[local_port]"
	}
	return "Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=" + b
}

// tag is the UAC's From tag.
func (g *gen) tag(m *sip.Message) string {
	switch {
	case g.pinned[Tags]:
		return g.text(m.From.Tag)
	case g.varied[Tags]:
		return varTag
	}
	return genTag
}

// from is the From header of every request the UAC sends.
func (g *gen) from(m *sip.Message) string {
	tag := g.tag(m)
	if g.pinned[Headers] {
		if v, ok := m.Header(sip.HdrFrom); ok {
			return "From: " + withTag(g.text(v), tag)
		}
	}
	if tag == "" {
		return "From: <sip:sipp@[local_ip]:[local_port]>"
	}
	return "From: <sip:sipp@[local_ip]:[local_port]>;tag=" + tag
}

// to is the To header of the opening request (no tag).
func (g *gen) to(m *sip.Message) string {
	if g.pinned[Headers] {
		if v, ok := m.Header(sip.HdrTo); ok {
			return "To: " + g.text(v)
		}
	}
	if g.f.method == "REGISTER" {
		return "To: <sip:sipp@[remote_ip]:[remote_port]>"
	}
	return "To: <sip:[service]@[remote_ip]:[remote_port]>"
}

// cseq is the CSeq number of a request: captured when pinned, else
// generated (n, counted from 1).
func (g *gen) cseq(m *sip.Message, n int) string {
	if g.pinned[CSeq] && m.CSeq.Valid {
		return strconv.FormatUint(uint64(m.CSeq.Number), 10)
	}
	return strconv.Itoa(n)
}

// extra writes the pinned captured headers and the User-Agent.
func (g *gen) extra(m *sip.Message, lines []string) []string {
	wroteMF := false
	if g.pinned[Headers] {
		for _, h := range m.Headers {
			if !passThrough(h.ID) {
				continue
			}
			if h.ID == sip.HdrMaxForwards {
				wroteMF = true
			}
			lines = append(lines, g.text(h.Name)+": "+g.text(h.Value))
		}
	}
	if !wroteMF {
		lines = append(lines, "Max-Forwards: 70")
	}
	if g.pinned[UserAgent] {
		if v, ok := m.Header(sip.HdrUserAgent); ok {
			lines = append(lines, "User-Agent: "+g.text(v))
		}
	}
	return lines
}

// body returns the Content-Type line and body lines for a request whose
// captured counterpart is m.
func (g *gen) body(m *sip.Message) (string, []string) {
	if len(m.Body) == 0 {
		return "", nil
	}
	_, isSDP := m.SDPBody()
	if isSDP {
		g.sdpSeen = true
	}
	if g.pinned[SDP] {
		ct, _ := m.Header(sip.HdrContentType)
		text := strings.ReplaceAll(string(m.Body), "\r\n", "\n")
		text = strings.TrimSuffix(text, "\n")
		var out []string
		for _, l := range strings.Split(text, "\n") {
			t, n := sippText(strings.TrimSuffix(l, "\r"), true)
			g.stripped += n
			out = append(out, t)
		}
		return "Content-Type: " + g.text(ct), out
	}
	if isSDP {
		return "Content-Type: application/sdp", genSDP
	}
	g.otherBody = m.ContentType
	return "", nil
}

// sendRequest writes attempt i of the opening request.
func (g *gen) sendRequest(at *attempt, i int) {
	m := at.req.Msg
	lines := []string{
		g.f.method + " " + g.requestURI(m) + " SIP/2.0",
		g.via(m),
		g.from(m),
		g.to(m),
		"Call-ID: [call_id]",
		"CSeq: " + g.cseq(m, i+1) + " " + g.f.method,
		"Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>",
	}
	lines = g.extra(m, lines)
	if i > 0 && challenge(g.f.attempts[i-1].final.Msg.StatusCode) {
		lines = append(lines, "[authentication]")
	}
	ct, body := g.body(m)
	if ct != "" {
		lines = append(lines, ct)
	}
	lines = append(lines, "Content-Length: [len]")
	g.send(true, lines, body)
}

// sendCancel cancels attempt i: same Request-URI, branch (echoed in the
// provisional's Via), From, To and CSeq number as the INVITE.
func (g *gen) sendCancel(at *attempt, i int) {
	m := at.req.Msg
	g.branchN++ // keep generated branches numbered per message
	lines := []string{
		"CANCEL " + g.requestURI(m) + " SIP/2.0",
		"[last_Via:]",
		g.from(m),
		g.to(m),
		"Call-ID: [call_id]",
		"CSeq: " + g.cseq(m, i+1) + " CANCEL",
		"Max-Forwards: 70",
		"Content-Length: 0",
	}
	g.send(true, lines, nil)
}

// sendAckNon2xx acknowledges a failure: hop by hop, same branch and
// Request-URI as the INVITE, the To of the response.
func (g *gen) sendAckNon2xx(at *attempt, i int) {
	m := at.req.Msg
	g.branchN++
	lines := []string{
		"ACK " + g.requestURI(m) + " SIP/2.0",
		"[last_Via:]",
		g.from(m),
		"[last_To:]",
		"Call-ID: [call_id]",
		"CSeq: " + g.cseq(m, i+1) + " ACK",
		"Max-Forwards: 70",
		"Content-Length: 0",
	}
	g.send(false, lines, nil)
}

// sendAck2xx acknowledges an answer end to end: a new branch, the remote
// target and route set of the 2xx.
func (g *gen) sendAck2xx(at *attempt, i int) {
	m := at.ack.Msg
	lines := []string{
		"ACK [next_url] SIP/2.0",
		g.via(m),
		g.from(at.req.Msg),
		"[last_To:]",
		"Call-ID: [call_id]",
		"CSeq: " + g.cseq(m, i+1) + " ACK",
		"[routes]",
		"Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>",
		"Max-Forwards: 70",
	}
	ct, body := g.body(m)
	if ct != "" {
		lines = append(lines, ct)
	}
	lines = append(lines, "Content-Length: [len]")
	g.send(false, lines, body)
}

// sendBye ends an answered call from the UAC.
func (g *gen) sendBye(last *attempt) {
	m := g.f.bye.Msg
	lines := []string{
		"BYE [next_url] SIP/2.0",
		g.via(m),
		g.from(last.req.Msg),
		"[last_To:]",
		"Call-ID: [call_id]",
		"CSeq: " + g.cseq(m, len(g.f.attempts)+1) + " BYE",
		"[routes]",
		"Max-Forwards: 70",
	}
	if g.pinned[UserAgent] {
		if v, ok := m.Header(sip.HdrUserAgent); ok {
			lines = append(lines, "User-Agent: "+g.text(v))
		}
	}
	lines = append(lines, "Content-Length: 0")
	g.send(true, lines, nil)
}

// sendOK answers the target's BYE.
func (g *gen) sendOK() {
	g.send(false, []string{
		"SIP/2.0 200 OK", "[last_Via:]", "[last_From:]", "[last_To:]", "[last_Call-ID:]", "[last_CSeq:]",
		"Content-Length: 0",
	}, nil)
}

// run is the sipp command line.
func (g *gen) run(o Options, pauseMs int64, auth bool) string {
	file := o.ScenarioFile
	if file == "" {
		file = "repro.xml"
	}
	_, t := sippTransport(g.f.attempts[0].req.Transport)
	args := []string{"sipp", `"$TARGET"`, "-sf", shellQuote(file), "-m", "1", "-t", t}
	switch {
	case g.pinned[CallID]:
		// SIPp matches responses to a call by the Call-ID it generated, so a
		// pinned Call-ID is set through -cid_str (% doubled: it is a format).
		id, n := textsafe.Strip(g.f.attempts[0].req.Msg.CallID)
		g.stripped += n
		args = append(args, "-cid_str", shellQuote(strings.ReplaceAll(id, "%", "%%")))
	case !g.varied[CallID]:
		args = append(args, "-cid_str", genCallID)
	}
	if auth {
		args = append(args, "-au", `"$SIP_USER"`, "-ap", `"$SIP_PASSWORD"`)
	}
	if pauseMs >= 0 {
		args = append(args, "-d", strconv.FormatInt(pauseMs, 10))
	}
	return strings.Join(args, " ")
}

// withTag replaces (or adds, or with tag "" removes) the tag parameter of
// a From value, keeping every other byte.
func withTag(v, tag string) string {
	start := 0
	if i := strings.LastIndexByte(v, '>'); i >= 0 {
		start = i + 1
	} else if i := strings.IndexByte(v, ';'); i >= 0 {
		start = i
	} else {
		start = len(v)
	}
	head, params := v[:start], v[start:]
	var kept []string
	for _, p := range strings.Split(params, ";") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if k, _, _ := strings.Cut(p, "="); strings.EqualFold(strings.TrimSpace(k), "tag") {
			continue
		}
		kept = append(kept, p)
	}
	out := head
	for _, p := range kept {
		out += ";" + p
	}
	if tag != "" {
		out += ";tag=" + tag
	}
	return out
}

func joinCodes(c []int) string {
	s := make([]string, len(c))
	for i, x := range c {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func remove(l []string, x string) []string {
	out := l[:0:0]
	for _, y := range l {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

// ordered sorts aspects into the order of Aspects.
func ordered(l []string) []string {
	in := set(l)
	out := []string{}
	for _, a := range Aspects {
		if in[a] {
			out = append(out, a)
		}
	}
	return out
}

// shellQuote quotes one argument for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
