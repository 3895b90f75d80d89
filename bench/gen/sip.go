package gen

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

const (
	uacAgent  = "sipnab-benchgen UAC/1.0"
	uasAgent  = "sipnab-benchgen UAS/1.0"
	regAgent  = "sipnab-benchgen UA/1.0"
	registrar = "sipnab-benchgen registrar/1.0"
	domain    = "example.net"
	password  = "bench-secret"
)

var reasons = map[int]string{
	100: "Trying", 180: "Ringing", 200: "OK", 401: "Unauthorized",
	486: "Busy Here", 487: "Request Terminated", 503: "Service Unavailable",
}

// message assembles a SIP message: start line, headers, Content-Length and
// body, CRLF line endings.
func message(start string, headers []string, contentType, body string) []byte {
	var b strings.Builder
	b.WriteString(start)
	b.WriteString("\r\n")
	for _, h := range headers {
		b.WriteString(h)
		b.WriteString("\r\n")
	}
	if body != "" {
		b.WriteString("Content-Type: ")
		b.WriteString(contentType)
		b.WriteString("\r\n")
	}
	b.WriteString("Content-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.WriteString(body)
	return []byte(b.String())
}

func sdpBody(sess uint64, ip netip.Addr, port uint16, pts []uint8) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=- %d %d IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\nm=audio %d RTP/AVP", sess, sess, ip, ip, port)
	for _, pt := range pts {
		fmt.Fprintf(&b, " %d", pt)
	}
	b.WriteString(" 101\r\n")
	for _, pt := range pts {
		switch pt {
		case pcmu.pt:
			b.WriteString("a=rtpmap:0 PCMU/8000\r\n")
		case pcma.pt:
			b.WriteString("a=rtpmap:8 PCMA/8000\r\n")
		}
	}
	b.WriteString("a=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\na=ptime:20\r\na=sendrecv\r\n")
	return b.String()
}

// messages returns the call's SIP messages in time order.
func (c *callPlan) messages() []sipMsg {
	callerURI := fmt.Sprintf("sip:%s@%s", c.fromNum, c.caller.Addr())
	calleeURI := fmt.Sprintf("sip:%s@%s", c.toNum, c.callee.Addr())
	from := fmt.Sprintf("From: \"Line %04d\" <%s>;tag=%s", c.idx%10000, callerURI, c.fromTag)
	toNoTag := fmt.Sprintf("To: <%s>", calleeURI)
	to := toNoTag + ";tag=" + c.toTag
	callID := "Call-ID: " + c.callID
	callerContact := fmt.Sprintf("Contact: <sip:%s@%s>", c.fromNum, c.caller)
	calleeContact := fmt.Sprintf("Contact: <sip:%s@%s>", c.toNum, c.callee)
	viaInvite := fmt.Sprintf("Via: SIP/2.0/UDP %s;branch=%s;rport", c.caller, c.brInvite)

	var out []sipMsg
	req := func(at usec, src, dst netip.AddrPort, method, ruri string, hdrs []string, ctype, body string) {
		out = append(out, sipMsg{at: at, src: src, dst: dst, request: true, method: method,
			text: message(method+" "+ruri+" SIP/2.0", hdrs, ctype, body)})
	}
	resp := func(at usec, code int, method string, hdrs []string, ctype, body string) {
		out = append(out, sipMsg{at: at, src: c.callee, dst: c.caller, method: method, status: code, reason: reasons[code],
			text: message(fmt.Sprintf("SIP/2.0 %d %s", code, reasons[code]), hdrs, ctype, body)})
	}

	offerPTs := []uint8{pcmu.pt, pcma.pt}
	if c.codec == pcma {
		offerPTs = []uint8{pcma.pt, pcmu.pt}
	}
	req(c.t0, c.caller, c.callee, "INVITE", fmt.Sprintf("sip:%s@%s", c.toNum, c.callee),
		[]string{viaInvite, "Max-Forwards: 70", from, toNoTag, callID, "CSeq: 1 INVITE", callerContact,
			"Allow: INVITE, ACK, CANCEL, BYE, OPTIONS", "Supported: timer", "User-Agent: " + uacAgent},
		"application/sdp", sdpBody(c.sessA, c.callerRT.Addr(), c.callerRT.Port(), offerPTs))
	resp(c.t100, 100, "INVITE", []string{viaInvite, from, toNoTag, callID, "CSeq: 1 INVITE", "User-Agent: " + uasAgent}, "", "")
	if c.t180 != 0 {
		resp(c.t180, 180, "INVITE", []string{viaInvite, from, to, callID, "CSeq: 1 INVITE", calleeContact, "User-Agent: " + uasAgent}, "", "")
	}
	// ACK for a non-2xx final response: same branch as the INVITE.
	ackFailure := func() {
		req(c.tAck, c.caller, c.callee, "ACK", fmt.Sprintf("sip:%s@%s", c.toNum, c.callee),
			[]string{viaInvite, "Max-Forwards: 70", from, to, callID, "CSeq: 1 ACK", "User-Agent: " + uacAgent}, "", "")
	}
	switch c.kind {
	case KindBusy:
		resp(c.tFinal, 486, "INVITE", []string{viaInvite, from, to, callID, "CSeq: 1 INVITE", "User-Agent: " + uasAgent}, "", "")
		ackFailure()
		return out
	case KindUnavailable:
		resp(c.tFinal, 503, "INVITE", []string{viaInvite, from, to, callID, "CSeq: 1 INVITE", "Retry-After: 30", "User-Agent: " + uasAgent}, "", "")
		ackFailure()
		return out
	case KindCancelled:
		req(c.tCancel, c.caller, c.callee, "CANCEL", fmt.Sprintf("sip:%s@%s", c.toNum, c.callee),
			[]string{viaInvite, "Max-Forwards: 70", from, toNoTag, callID, "CSeq: 1 CANCEL", "Reason: SIP;cause=487;text=\"Caller hung up\"", "User-Agent: " + uacAgent}, "", "")
		resp(c.tCanc200, 200, "CANCEL", []string{viaInvite, from, to, callID, "CSeq: 1 CANCEL", "User-Agent: " + uasAgent}, "", "")
		resp(c.tFinal, 487, "INVITE", []string{viaInvite, from, to, callID, "CSeq: 1 INVITE", "User-Agent: " + uasAgent}, "", "")
		ackFailure()
		return out
	}
	resp(c.tFinal, 200, "INVITE", []string{viaInvite, from, to, callID, "CSeq: 1 INVITE", calleeContact,
		"Allow: INVITE, ACK, CANCEL, BYE, OPTIONS", "Supported: timer", "User-Agent: " + uasAgent},
		"application/sdp", sdpBody(c.sessB, c.calleeRT.Addr(), c.calleeRT.Port(), []uint8{c.codec.pt}))
	req(c.tAck, c.caller, c.callee, "ACK", fmt.Sprintf("sip:%s@%s", c.toNum, c.callee),
		[]string{fmt.Sprintf("Via: SIP/2.0/UDP %s;branch=%s;rport", c.caller, c.brAck), "Max-Forwards: 70", from, to, callID, "CSeq: 1 ACK", "User-Agent: " + uacAgent}, "", "")
	if c.tBye == 0 {
		return out
	}
	if !c.byCallee {
		via := fmt.Sprintf("Via: SIP/2.0/UDP %s;branch=%s;rport", c.caller, c.brBye)
		req(c.tBye, c.caller, c.callee, "BYE", fmt.Sprintf("sip:%s@%s", c.toNum, c.callee),
			[]string{via, "Max-Forwards: 70", from, to, callID, "CSeq: 2 BYE", "User-Agent: " + uacAgent}, "", "")
		resp(c.tBye200, 200, "BYE", []string{via, from, to, callID, "CSeq: 2 BYE", "User-Agent: " + uasAgent}, "", "")
		return out
	}
	// BYE from the callee: its own From/To view and CSeq space.
	via := fmt.Sprintf("Via: SIP/2.0/UDP %s;branch=%s;rport", c.callee, c.brBye)
	bFrom := fmt.Sprintf("From: <%s>;tag=%s", calleeURI, c.toTag)
	bTo := fmt.Sprintf("To: \"Line %04d\" <%s>;tag=%s", c.idx%10000, callerURI, c.fromTag)
	out = append(out, sipMsg{at: c.tBye, src: c.callee, dst: c.caller, request: true, method: "BYE",
		text: message(fmt.Sprintf("BYE sip:%s@%s SIP/2.0", c.fromNum, c.caller),
			[]string{via, "Max-Forwards: 70", bFrom, bTo, callID, "CSeq: 101 BYE", "User-Agent: " + uasAgent}, "", "")})
	out = append(out, sipMsg{at: c.tBye200, src: c.caller, dst: c.callee, method: "BYE", status: 200, reason: "OK",
		text: message("SIP/2.0 200 OK", []string{via, bFrom, bTo, callID, "CSeq: 101 BYE", "User-Agent: " + uacAgent}, "", "")})
	return out
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// messages returns the registration's SIP messages in time order.
func (g *regPlan) messages() []sipMsg {
	aor := fmt.Sprintf("sip:%s@%s", g.user, domain)
	ruri := "sip:" + domain
	from := fmt.Sprintf("From: <%s>;tag=%s", aor, g.fromTag)
	toNoTag := fmt.Sprintf("To: <%s>", aor)
	to := toNoTag + ";tag=" + g.nonce[:10]
	callID := "Call-ID: " + g.callID
	contact := fmt.Sprintf("Contact: <sip:%s@%s>;expires=3600", g.user, g.ua)
	via1 := fmt.Sprintf("Via: SIP/2.0/UDP %s;branch=%s;rport", g.ua, g.br1)
	via2 := fmt.Sprintf("Via: SIP/2.0/UDP %s;branch=%s;rport", g.ua, g.br2)

	var out []sipMsg
	req := func(at usec, hdrs []string) {
		out = append(out, sipMsg{at: at, src: g.ua, dst: g.registrar, request: true, method: "REGISTER",
			text: message("REGISTER "+ruri+" SIP/2.0", hdrs, "", "")})
	}
	resp := func(at usec, code int, hdrs []string) {
		out = append(out, sipMsg{at: at, src: g.registrar, dst: g.ua, method: "REGISTER", status: code, reason: reasons[code],
			text: message(fmt.Sprintf("SIP/2.0 %d %s", code, reasons[code]), hdrs, "", "")})
	}
	req(g.t0, []string{via1, "Max-Forwards: 70", from, toNoTag, callID, "CSeq: 1 REGISTER", contact, "Expires: 3600", "User-Agent: " + regAgent})
	if g.kind == KindRegister {
		resp(g.t3, 200, []string{via1, from, to, callID, "CSeq: 1 REGISTER", contact, "Server: " + registrar})
		return out
	}
	resp(g.t1, 401, []string{via1, from, to, callID, "CSeq: 1 REGISTER",
		fmt.Sprintf("WWW-Authenticate: Digest realm=\"%s\", nonce=\"%s\", algorithm=MD5, qop=\"auth\"", domain, g.nonce),
		"Server: " + registrar})
	ha1 := md5hex(g.user + ":" + domain + ":" + password)
	ha2 := md5hex("REGISTER:" + ruri)
	response := md5hex(ha1 + ":" + g.nonce + ":00000001:" + g.cnonce + ":auth:" + ha2)
	req(g.t2, []string{via2, "Max-Forwards: 70", from, toNoTag, callID, "CSeq: 2 REGISTER", contact, "Expires: 3600",
		fmt.Sprintf("Authorization: Digest username=\"%s\", realm=\"%s\", nonce=\"%s\", uri=\"%s\", response=\"%s\", algorithm=MD5, cnonce=\"%s\", qop=auth, nc=00000001",
			g.user, domain, g.nonce, ruri, response, g.cnonce),
		"User-Agent: " + regAgent})
	resp(g.t3, 200, []string{via2, from, to, callID, "CSeq: 2 REGISTER", contact, "Server: " + registrar})
	return out
}

func sortMsgs(m []sipMsg) {
	sort.SliceStable(m, func(i, j int) bool { return m[i].at < m[j].at })
}
