package lint

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sip"
)

// reportFn files one finding of a message rule: what the message holds,
// what the section calls for, and why the difference matters.
type reportFn func(observed, expected, explanation string)

// check is a rule's evaluation: msg for message rules (called once per
// message), dlg for dialog and media rules (called once per dialog).
type check struct {
	msg func(m *dialog.Message, report reportFn)
	dlg func(d *dctx, report func(pos int, observed, expected, explanation string))
}

// checks maps every rule id to its evaluation. The RTCP-mux rule has none:
// it is never raised (ReasonRTCPPort).
var checks = map[string]check{
	"SIP-3261-8.1.1-MANDATORY-HEADER-MISSING":      {msg: checkMandatoryHeaders},
	"SIP-3261-20.16-CSEQ-MALFORMED":                {msg: checkCSeqMalformed},
	"SIP-3261-20.14-CONTENT-LENGTH-MISMATCH":       {msg: checkContentLength},
	"SIP-3261-20.14-CONTENT-LENGTH-MALFORMED":      {msg: checkContentLengthMalformed},
	"SIP-3261-7.5-JUNK-BEFORE-START-LINE":          {msg: checkJunkBeforeStartLine},
	"SIP-3261-25.1-HEADER-CONTROL-BYTE":            {msg: checkControlByte},
	"SIP-3261-20-URI-BRACKETS":                     {msg: checkURIBrackets},
	"SIP-3261-19.1.1-URI-PARAM-DEMOTED":            {msg: checkURIParamDemoted},
	"SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING":        {msg: checkMaxForwardsMissing},
	"SIP-3261-20.22-MAX-FORWARDS-RANGE":            {msg: checkMaxForwardsRange},
	"SIP-3261-8.1.1.7-BRANCH-COOKIE":               {msg: checkBranchCookie},
	"SIP-3261-8.1.1.5-CSEQ-METHOD-MISMATCH":        {msg: checkCSeqMethod},
	"SIP-3261-12.1.1-CONTACT-MISSING-IN-2XX":       {msg: checkContactIn2xx},
	"SIP-3262-3-RELIABLE-PROVISIONAL-WITHOUT-RSEQ": {msg: checkReliableRSeq},
	"SIP-4028-7.1-SESSION-EXPIRES-BELOW-MIN-SE":    {msg: checkSEBelowMinSE},
	"SIP-4028-4-SESSION-EXPIRES-TOO-SMALL":         {msg: checkSETooSmall},
	"SIP-4028-5-MIN-SE-TOO-SMALL":                  {msg: checkMinSETooSmall},
	"SIP-4028-9-REFRESHER-MISSING":                 {msg: checkRefresher},
	"SIP-7989-5-SESSION-ID-MALFORMED":              {msg: checkSessionIDMalformed},
	"SIP-7989-5-SESSION-ID-UPPERCASE":              {msg: checkSessionIDUppercase},
	"SIP-7989-11-SESSION-ID-LEGACY-FORM":           {msg: checkSessionIDLegacy},
	"SIP-3261-20.15-CONTENT-TYPE-MISSING":          {msg: checkContentType},
	"SIP-3261-8.2.6.2-TO-TAG-MISSING-IN-RESPONSE":  {msg: checkToTagInResponse},
	"SIP-3261-10.2.2-CONTACT-STAR-MISUSE":          {msg: checkContactStar},

	"SIP-3261-8.1.1.2-TO-TAG-IN-INITIAL-REQUEST": {dlg: checkToTagInitial},
	"SIP-3261-17.1.1.3-ACK-CSEQ-MISMATCH":        {dlg: checkAckCSeq},
	"SIP-3262-4-PRACK-MISSING":                   {dlg: checkPrackMissing},

	"SDP-3264-6.1-ANSWER-NO-COMMON-FORMAT":      {dlg: checkNoCommonFormat},
	"SDP-3264-6.1-ANSWER-EXTRA-FORMAT":          {dlg: checkExtraFormat},
	"SDP-3264-6.1-ANSWER-DIRECTION-ILLEGAL":     {dlg: checkDirectionIllegal},
	"SDP-3264-8.4-HOLD-CONNECTION-ZERO":         {dlg: checkHoldZero},
	"SDP-4566-5-MANDATORY-LINE-MISSING":         {dlg: checkSDPMandatoryLines},
	"SDP-4566-5.7-CONNECTION-MISSING":           {dlg: checkSDPConnection},
	"SDP-3264-6-ANSWER-MEDIA-COUNT-MISMATCH":    {dlg: checkMediaCount},
	"SDP-3264-8-ORIGIN-VERSION-NOT-INCREMENTED": {dlg: checkOriginVersion},

	"OBS-3264-6.1-PT-UNDECLARED":         {dlg: checkPTUndeclared},
	"OBS-4566-5.14-MEDIA-PORT-MISMATCH":  {dlg: checkPortMismatch},
	"OBS-3264-6.1-DIRECTION-UNMET":       {dlg: checkDirectionUnmet},
	"OBS-4566-6-PTIME-MISMATCH":          {dlg: checkPtime},
	"OBS-3551-4.2-FRAME-SIZE-IMPOSSIBLE": {dlg: checkFrameSize},
	"OBS-4566-6-MAXPTIME-EXCEEDED":       {dlg: checkMaxPtime},
	"OBS-3264-6.1-SENT-TO-NON-RECEIVER":  {dlg: checkSentToNonReceiver},
}

// has reports whether the message carries a header with this id.
func has(m *sip.Message, id sip.HeaderID) bool {
	_, ok := m.Header(id)
	return ok
}

// line renders a header as it would read on the wire (unfolded).
func line(name, value string) string { return name + ": " + value }

// firstHeader returns the first header with this id.
func firstHeader(m *sip.Message, id sip.HeaderID) (sip.Header, bool) {
	for _, h := range m.Headers {
		if h.ID == id {
			return h, true
		}
	}
	return sip.Header{}, false
}

func checkMandatoryHeaders(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	var missing []string
	for _, id := range []sip.HeaderID{sip.HdrCallID, sip.HdrCSeq, sip.HdrFrom, sip.HdrTo, sip.HdrVia} {
		if !has(m, id) {
			missing = append(missing, id.String())
		}
	}
	if len(missing) == 0 {
		return
	}
	report(m.StartLine+" (no "+strings.Join(missing, ", ")+" header)",
		"Call-ID, CSeq, From, To and Via in every request and response",
		"without them the message cannot be matched to its dialog or transaction, and a strict element drops it")
}

func checkCSeqMalformed(dm *dialog.Message, report reportFn) {
	h, ok := firstHeader(dm.Msg, sip.HdrCSeq)
	if !ok {
		return
	}
	if cs, err := sip.ParseCSeq(h.Value); err == nil && cs.Valid {
		return
	}
	report(line(h.Name, h.Value), "CSeq: <decimal number below 2^32> <method>",
		"the transaction layer matches responses, ACKs and CANCELs by CSeq; an unreadable one orphans the message")
}

func checkContentLength(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if !m.BodyTruncated {
		return
	}
	report(fmt.Sprintf("Content-Length: %d with %d body bytes present", m.ContentLength, len(m.Body)),
		"a Content-Length equal to the number of body octets",
		"the body was cut short (a lost fragment or segment, or an MTU problem) or the header is wrong; the receiver waits for bytes that never come or discards the message")
}

func checkContentLengthMalformed(dm *dialog.Message, report reportFn) {
	h, ok := firstHeader(dm.Msg, sip.HdrContentLength)
	if !ok {
		return
	}
	v := strings.TrimSpace(h.Value)
	digits := v != ""
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			digits = false
			break
		}
	}
	if digits {
		return
	}
	report(line(h.Name, h.Value), "Content-Length: <decimal number of body octets>",
		"the receiver cannot tell where the body ends: on TCP or TLS the next message is read from the wrong byte, on UDP the body is taken to the end of the datagram or the message is dropped")
}

func checkJunkBeforeStartLine(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if len(m.Malformed) == 0 || m.Malformed[0] != sip.MalJunkBeforeStartLine {
		return
	}
	report(fmt.Sprintf("%d byte(s) other than CRLF before %q", m.JunkPrefixBytes, m.StartLine),
		"the start line first (CRLF before it is ignored, nothing else)",
		"a strict element discards the message or reads the junk as its start line; the sender's framing or buffer handling is broken")
}

func checkControlByte(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	for _, h := range m.Headers {
		if !h.HasRange() || h.Start < 0 || h.End > len(m.Raw) || h.Start > h.End {
			continue
		}
		raw := m.Raw[h.Start:h.End]
		for k := 0; k < len(raw); k++ {
			c := raw[k]
			if (c < 0x20 && c != '\t') || c == 0x7f {
				if (c == '\r' || c == '\n') && isFold(raw, k) {
					continue
				}
				report(escapeControls(string(raw)), "header text without control bytes (tab in whitespace only)",
					"control bytes end or split a header on some parsers and not on others: a known header-smuggling and crash vector")
				return
			}
		}
	}
}

// isFold reports whether the CR or LF at k belongs to a line fold.
func isFold(raw []byte, k int) bool {
	if raw[k] == '\r' {
		return k+1 < len(raw) && raw[k+1] == '\n'
	}
	return k+1 < len(raw) && (raw[k+1] == ' ' || raw[k+1] == '\t')
}

// escapeControls renders control bytes visibly (\x00), since fencing strips
// them.
func escapeControls(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t') || c == 0x7f {
			fmt.Fprintf(&b, `\x%02x`, c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// indexUnquoted returns the index of the first c outside a quoted string.
func indexUnquoted(s string, c byte) int {
	inQ := false
	for i := 0; i < len(s); i++ {
		switch {
		case inQ && s[i] == '\\':
			i++
		case s[i] == '"':
			inQ = !inQ
		case !inQ && s[i] == c:
			return i
		}
	}
	return -1
}

// addrValues returns the name-addr values of From, To and every Contact
// element, each with the header name it came from.
func addrValues(m *sip.Message) (names, values []string) {
	for _, h := range m.Headers {
		switch h.ID {
		case sip.HdrFrom, sip.HdrTo:
			names, values = append(names, h.Name), append(values, strings.TrimSpace(h.Value))
		case sip.HdrContact:
			for _, e := range sip.SplitList(h.Value) {
				names, values = append(names, h.Name), append(values, e)
			}
		}
	}
	return names, values
}

func checkURIBrackets(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	for _, h := range m.Headers {
		var elems []string
		switch h.ID {
		case sip.HdrFrom, sip.HdrTo:
			elems = []string{strings.TrimSpace(h.Value)}
		case sip.HdrContact:
			elems = sip.SplitList(h.Value)
		default:
			continue
		}
		for _, v := range elems {
			if v == "*" || indexUnquoted(v, '<') >= 0 {
				continue
			}
			bad := indexUnquoted(v, '?') >= 0
			if h.ID != sip.HdrContact && indexUnquoted(v, ',') >= 0 {
				bad = true
			}
			if bad {
				report(line(h.Name, v), "<"+uriPart(v)+">"+paramPart(v),
					"outside angle brackets a comma or question mark ends the URI early: the receiver reads a different address than the one sent")
				return
			}
		}
	}
}

// uriPart and paramPart split a bare name-addr at its first ';'.
func uriPart(v string) string {
	if i := strings.IndexByte(v, ';'); i >= 0 {
		return v[:i]
	}
	return v
}

func paramPart(v string) string {
	if i := strings.IndexByte(v, ';'); i >= 0 {
		return v[i:]
	}
	return ""
}

// uriParams are the parameters RFC 3261 §19.1.1 defines for the URI itself.
var uriParams = map[string]bool{"transport": true, "user": true, "method": true, "ttl": true, "maddr": true, "lr": true}

func checkURIParamDemoted(dm *dialog.Message, report reportFn) {
	names, values := addrValues(dm.Msg)
	for i, v := range values {
		if v == "*" || indexUnquoted(v, '<') >= 0 {
			continue
		}
		for _, p := range strings.Split(paramPart(v), ";") {
			k, _, _ := strings.Cut(p, "=")
			k = strings.ToLower(strings.TrimSpace(k))
			if uriParams[k] {
				report(line(names[i], v), "<"+uriPart(v)+";"+k+"...>, the URI parameter inside angle brackets",
					"the "+k+" parameter lands on the header, not the URI, so the next hop routes without it: the classic cause of calls reaching the wrong transport or trunk")
				return
			}
		}
	}
}

func checkMaxForwardsMissing(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if !m.IsRequest || has(m, sip.HdrMaxForwards) {
		return
	}
	report(m.StartLine+" (no Max-Forwards header)", "Max-Forwards: 70 (or another value) on every request",
		"without Max-Forwards a routing loop is not bounded by hop count")
}

func checkMaxForwardsRange(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if !m.IsRequest {
		return
	}
	h, ok := firstHeader(m, sip.HdrMaxForwards)
	if !ok {
		return
	}
	v := strings.TrimSpace(h.Value)
	n, err := strconv.Atoi(v)
	allDigits := v != "" && strings.Trim(v, "0123456789") == ""
	switch {
	case err != nil || !allDigits:
		report(line(h.Name, h.Value), "an integer from 0 to 255, initially 70", "an unreadable Max-Forwards is treated differently by every element")
	case n == 0:
		report(line(h.Name, h.Value), "a positive value (70 initially)", "zero forbids forwarding: the next proxy must answer 483 Too Many Hops")
	case n > 70:
		report(line(h.Name, h.Value), "at most 70, the recommended initial value", "a larger budget lets a routing loop run longer before it is stopped")
	}
}

func checkBranchCookie(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if !m.IsRequest || len(m.Vias) == 0 {
		return
	}
	if strings.HasPrefix(m.Vias[0].Branch, "z9hG4bK") {
		return
	}
	obs := "top Via without a branch"
	if h, ok := firstHeader(m, sip.HdrVia); ok {
		obs = line(h.Name, h.Value)
	}
	report(obs, "branch=z9hG4bK<unique>",
		"without the magic cookie, elements fall back to RFC 2543 transaction matching, which mismatches retransmissions, CANCELs and ACKs")
}

// rawMethod returns the method token of a request line as sent.
func rawMethod(m *sip.Message) string {
	f := strings.Fields(m.StartLine)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func checkCSeqMethod(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if !m.IsRequest {
		return
	}
	h, ok := firstHeader(m, sip.HdrCSeq)
	if !ok {
		return
	}
	f := strings.Fields(h.Value)
	if len(f) != 2 {
		return
	}
	if rm := rawMethod(m); f[1] != rm {
		report(line(h.Name, h.Value)+" on a "+rm+" request", "CSeq: "+f[0]+" "+rm,
			"responses are matched to the transaction by CSeq method: the answer to this request lands on the wrong transaction or none")
	}
}

func checkContactIn2xx(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if m.IsRequest || m.StatusCode < 200 || m.StatusCode > 299 || m.CSeq.Method != "INVITE" || has(m, sip.HdrContact) {
		return
	}
	report(m.StartLine+" to INVITE (no Contact header)", "a Contact header with the answerer's SIP URI",
		"the Contact of the 2xx is the caller's remote target: without it the ACK and every later in-dialog request have no destination")
}

// listHas reports whether any comma-separated element of the header's
// values equals token, case-insensitively.
func listHas(m *sip.Message, id sip.HeaderID, token string) bool {
	for _, v := range m.HeaderValues(id) {
		for _, e := range sip.SplitList(v) {
			if strings.EqualFold(strings.TrimSpace(e), token) {
				return true
			}
		}
	}
	return false
}

// parseRSeq reads a response number (1 .. 2^31-1).
func parseRSeq(v string) (uint32, bool) {
	v = strings.TrimSpace(v)
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n < 1 || n > 1<<31-1 {
		return 0, false
	}
	return uint32(n), true
}

func checkReliableRSeq(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if m.IsRequest || m.StatusCode <= 100 || m.StatusCode > 199 || !listHas(m, sip.HdrRequire, "100rel") {
		return
	}
	h, ok := firstHeader(m, sip.HdrRSeq)
	if ok {
		if _, valid := parseRSeq(h.Value); valid {
			return
		}
		report(line(h.Name, h.Value), "RSeq: <1 .. 2^31-1>",
			"the UAC copies RSeq into the RAck of its PRACK; an unreadable one cannot be acknowledged, so the UAS retransmits and finally fails the call")
		return
	}
	report(m.StartLine+" with Require: 100rel (no RSeq header)", "RSeq: <1 .. 2^31-1>",
		"the UAC copies RSeq into the RAck of its PRACK; without it the provisional cannot be acknowledged, so the UAS retransmits and finally fails the call")
}

// deltaSeconds reads the delta-seconds before any ';' parameter.
func deltaSeconds(v string) (int64, string, bool) {
	num, params, _ := strings.Cut(v, ";")
	num = strings.TrimSpace(num)
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, params, true
}

func checkSEBelowMinSE(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if !m.IsRequest {
		return
	}
	se, ok1 := firstHeader(m, sip.HdrSessionExpires)
	mn, ok2 := firstHeader(m, sip.HdrMinSE)
	if !ok1 || !ok2 {
		return
	}
	a, _, okA := deltaSeconds(se.Value)
	b, _, okB := deltaSeconds(mn.Value)
	if okA && okB && a < b {
		report(line(se.Name, se.Value)+" with "+line(mn.Name, mn.Value), fmt.Sprintf("Session-Expires of at least %d", b),
			"the request contradicts itself: every element that honours Min-SE rejects it with 422")
	}
}

func checkSETooSmall(dm *dialog.Message, report reportFn) {
	for _, h := range dm.Msg.Headers {
		if h.ID != sip.HdrSessionExpires {
			continue
		}
		if n, _, ok := deltaSeconds(h.Value); ok && n < 90 {
			report(line(h.Name, h.Value), "Session-Expires of at least 90 seconds",
				"below the RFC 4028 floor the session must be refreshed more often than any element is obliged to accept; expect 422 responses")
			return
		}
	}
}

func checkMinSETooSmall(dm *dialog.Message, report reportFn) {
	for _, h := range dm.Msg.Headers {
		if h.ID != sip.HdrMinSE {
			continue
		}
		if n, _, ok := deltaSeconds(h.Value); ok && n < 90 {
			report(line(h.Name, h.Value), "Min-SE of at least 90 seconds", "a Min-SE under 90 seconds is not a legal minimum; elements may reject or silently raise it")
			return
		}
	}
}

func checkRefresher(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if m.IsRequest || m.StatusCode < 200 || m.StatusCode > 299 || (m.CSeq.Method != "INVITE" && m.CSeq.Method != "UPDATE") {
		return
	}
	h, ok := firstHeader(m, sip.HdrSessionExpires)
	if !ok {
		return
	}
	_, params, valid := deltaSeconds(h.Value)
	if !valid {
		return
	}
	if _, ok := sip.ParamValue(params, "refresher"); ok {
		return
	}
	report(line(h.Name, h.Value), "Session-Expires: "+strings.TrimSpace(uriPart(h.Value))+";refresher=uac (or uas)",
		"with no refresher named, each side may wait for the other to refresh and the session expires mid-call, typically at half the interval")
}

// sessionID splits a Session-ID value into its local UUID and its remote
// parameter.
func sessionID(v string) (local, remote string, hasRemote bool) {
	local, params, _ := strings.Cut(strings.TrimSpace(v), ";")
	remote, hasRemote = sip.ParamValue(params, "remote")
	return strings.TrimSpace(local), strings.TrimSpace(remote), hasRemote
}

// hex32 reports whether s is 32 hexadecimal digits of either case.
func hex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < 32; i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func checkSessionIDMalformed(dm *dialog.Message, report reportFn) {
	h, ok := firstHeader(dm.Msg, sip.HdrSessionID)
	if !ok {
		return
	}
	local, remote, hasRemote := sessionID(h.Value)
	if hex32(local) && (!hasRemote || hex32(remote)) {
		return
	}
	report(line(h.Name, h.Value), "Session-ID: <32 hex digits>;remote=<32 hex digits>",
		"end-to-end session correlation across B2BUAs and SBCs fails on an identifier the next hop cannot read")
}

func checkSessionIDUppercase(dm *dialog.Message, report reportFn) {
	h, ok := firstHeader(dm.Msg, sip.HdrSessionID)
	if !ok {
		return
	}
	local, remote, hasRemote := sessionID(h.Value)
	if !hex32(local) || (hasRemote && !hex32(remote)) {
		return
	}
	if local != strings.ToLower(local) || remote != strings.ToLower(remote) {
		report(line(h.Name, h.Value), "Session-ID: "+strings.ToLower(strings.TrimSpace(h.Value)),
			"elements compare Session-IDs byte for byte; an uppercase UUID fails to match the same session elsewhere")
	}
}

func checkSessionIDLegacy(dm *dialog.Message, report reportFn) {
	h, ok := firstHeader(dm.Msg, sip.HdrSessionID)
	if !ok {
		return
	}
	local, _, hasRemote := sessionID(h.Value)
	if hex32(local) && !hasRemote {
		report(line(h.Name, h.Value), "Session-ID: <local>;remote=<remote or 32 zeros>",
			"the RFC 7329 form carries only one UUID; RFC 7989 devices treat its sender as legacy, and correlation uses only that half")
	}
}

func checkContentType(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if len(m.Body) == 0 || has(m, sip.HdrContentType) {
		return
	}
	report(fmt.Sprintf("%s with a %d-byte body and no Content-Type", m.StartLine, len(m.Body)),
		"Content-Type naming the body's media type (e.g. application/sdp)",
		"the receiver cannot tell what the body is: an SDP offer without Content-Type is not an offer, and the call fails or runs without media")
}

func checkToTagInResponse(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if m.IsRequest || m.StatusCode <= 100 || m.StatusCode > 699 {
		return
	}
	h, ok := firstHeader(m, sip.HdrTo)
	if !ok || m.To.Tag != "" {
		return
	}
	report(line(h.Name, h.Value)+" in "+m.StartLine, line(h.Name, strings.TrimSpace(h.Value)+";tag=<responder's tag>"),
		"the To tag is half of the dialog identifier: without it the UAC cannot tell forked answers apart or address the dialog")
}

func checkContactStar(dm *dialog.Message, report reportFn) {
	m := dm.Msg
	if !m.IsRequest {
		return
	}
	var elems []string
	for _, v := range m.HeaderValues(sip.HdrContact) {
		elems = append(elems, sip.SplitList(v)...)
	}
	star := false
	for _, e := range elems {
		if strings.TrimSpace(e) == "*" {
			star = true
		}
	}
	if !star {
		return
	}
	var problems []string
	if m.Method != "REGISTER" {
		problems = append(problems, "on a "+m.Method+" request")
	}
	exp, ok := m.Header(sip.HdrExpires)
	if n, err := strconv.Atoi(strings.TrimSpace(exp)); !ok || err != nil || n != 0 {
		if ok {
			problems = append(problems, "with Expires: "+strings.TrimSpace(exp))
		} else {
			problems = append(problems, "without an Expires header")
		}
	}
	if len(elems) > 1 {
		problems = append(problems, fmt.Sprintf("beside %d other Contact values", len(elems)-1))
	}
	if len(problems) == 0 {
		return
	}
	report("Contact: * "+strings.Join(problems, ", "), "Contact: * only in a REGISTER with Expires: 0 and no other Contact",
		"\"*\" means remove every binding of the address-of-record; a registrar refuses it with 400 in any other form, or a lenient one removes bindings nobody meant to drop")
}
