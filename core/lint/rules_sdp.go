package lint

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/sdp"
)

// sameFormat reports whether two formats name the same thing for
// offer/answer comparison: encoding name and clock rate when both are known
// (an answer may renumber a dynamic type), the payload type number when
// either side has no rtpmap for it, the format token for non-RTP formats.
func sameFormat(a, b sdp.Format) bool {
	switch {
	case a.Encoding != "" && b.Encoding != "":
		return strings.EqualFold(a.Encoding, b.Encoding) && a.ClockRate == b.ClockRate
	case a.PayloadType >= 0 || b.PayloadType >= 0:
		return a.PayloadType == b.PayloadType
	}
	return strings.EqualFold(a.Fmt, b.Fmt)
}

// offered reports whether the offered stream lists a format like f.
func offered(om *sdp.Media, f sdp.Format) bool {
	for _, o := range om.Formats {
		if sameFormat(o, f) {
			return true
		}
	}
	return false
}

// formatName renders a format for a reader: "0 PCMU/8000", "t38".
func formatName(f sdp.Format) string {
	if f.Encoding != "" {
		return fmt.Sprintf("%s %s/%d", f.Fmt, f.Encoding, f.ClockRate)
	}
	return f.Fmt
}

func formatNames(fs []sdp.Format) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = formatName(f)
	}
	return strings.Join(names, ", ")
}

// mLine renders an m= line from the parsed section.
func mLine(m *sdp.Media) string {
	toks := make([]string, len(m.Formats))
	for i, f := range m.Formats {
		toks[i] = f.Fmt
	}
	return fmt.Sprintf("m=%s %d %s %s", m.Type, m.Port, m.Proto, strings.Join(toks, " "))
}

// pairs calls fn for every offered and answered stream at the same index,
// both accepted (non-zero port).
func pairs(d *dctx, fn func(x exchange, i int, om, am *sdp.Media)) {
	for _, x := range d.exchanges() {
		o, a := x.offer.sess, x.answer.sess
		for i := 0; i < len(o.Media) && i < len(a.Media); i++ {
			om, am := &o.Media[i], &a.Media[i]
			if om.Port == 0 || am.Port == 0 {
				continue
			}
			fn(x, i, om, am)
		}
	}
}

func checkNoCommonFormat(d *dctx, report func(int, string, string, string)) {
	pairs(d, func(x exchange, i int, om, am *sdp.Media) {
		for _, f := range am.Formats {
			if offered(om, f) {
				return
			}
		}
		report(x.answer.pos, mLine(am)+" ("+formatNames(am.Formats)+")",
			"at least one of the offered formats: "+formatNames(om.Formats),
			"with no format in common the stream cannot carry media; the answer should have declined it with port 0 (or the request with 488)")
	})
}

func checkExtraFormat(d *dctx, report func(int, string, string, string)) {
	pairs(d, func(x exchange, i int, om, am *sdp.Media) {
		var extra []sdp.Format
		for _, f := range am.Formats {
			if !offered(om, f) {
				extra = append(extra, f)
			}
		}
		if len(extra) == 0 {
			return
		}
		report(x.answer.pos, mLine(am)+" lists "+formatNames(extra),
			"formats from among the offer's: "+formatNames(om.Formats),
			"legal, but the answerer cannot send with a format the offer lacked; equipment that takes the answer as the negotiated set may pick one and send media the far end drops")
	})
}

// admitted lists the answer directions an offered direction allows.
var admitted = map[sdp.Direction][]sdp.Direction{
	sdp.SendRecv: {sdp.SendRecv, sdp.SendOnly, sdp.RecvOnly, sdp.Inactive},
	sdp.SendOnly: {sdp.RecvOnly, sdp.Inactive},
	sdp.RecvOnly: {sdp.SendOnly, sdp.Inactive},
	sdp.Inactive: {sdp.Inactive},
}

func direction(m *sdp.Media) sdp.Direction {
	if m.Direction == "" {
		return sdp.SendRecv
	}
	return m.Direction
}

func checkDirectionIllegal(d *dctx, report func(int, string, string, string)) {
	pairs(d, func(x exchange, i int, om, am *sdp.Media) {
		od, ad := direction(om), direction(am)
		allowed, ok := admitted[od]
		if !ok {
			return
		}
		for _, a := range allowed {
			if a == ad {
				return
			}
		}
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		report(x.answer.pos, fmt.Sprintf("a=%s answering a=%s (%s)", ad, od, mLine(am)),
			"an answer direction of "+strings.Join(names, " or "),
			"the two ends now disagree about who sends: expect one-way or no audio, or media sent to a side that refused it")
	})
}

// originKey names who wrote an SDP: its o= identity, or the signaling
// source when there is none.
func originKey(b *sdpBody) string {
	if b.sess.HasOrigin {
		o := b.sess.Origin
		return o.Username + " " + o.SessionID + " " + o.NetType + " " + o.AddrType + " " + o.Address
	}
	return "src " + b.m.Src.Addr().String()
}

// normalized returns the SDP lines without the o= line (CR dropped, blank
// lines dropped), for comparing two versions of one description.
func normalized(raw []byte) string {
	var out []string
	for _, l := range bytes.Split(raw, []byte("\n")) {
		l = bytes.TrimRight(l, "\r \t")
		if len(l) == 0 || bytes.HasPrefix(l, []byte("o=")) {
			continue
		}
		out = append(out, string(l))
	}
	return strings.Join(out, "\n")
}

func checkHoldZero(d *dctx, report func(int, string, string, string)) {
	first := map[string]string{} // origin → normalized first SDP
	for _, b := range d.sdpBodies() {
		k := originKey(b)
		norm := normalized(b.raw)
		f, seen := first[k]
		if !seen {
			first[k] = norm
			continue
		}
		if b.role != roleOffer || norm == f {
			continue
		}
		for i := range b.sess.Media {
			m := &b.sess.Media[i]
			if m.Port != 0 && strings.TrimSpace(m.Conn) == "0.0.0.0" {
				report(b.pos, "c=IN IP4 0.0.0.0 on "+mLine(m)+" in a re-offer",
					"a=sendonly or a=inactive with the real connection address",
					"0.0.0.0 stops RTCP on the held stream, has no IPv6 form and breaks connection-oriented media; equipment may read it as a dead stream rather than hold")
				break
			}
		}
	}
}

// sdpLines scans an SDP body: the line types before the first m= line, and
// for each media section whether it has its own c= line.
func sdpLines(raw []byte) (session map[byte]bool, mediaConn []bool) {
	session = map[byte]bool{}
	for _, l := range bytes.Split(raw, []byte("\n")) {
		l = bytes.TrimLeft(bytes.TrimRight(l, "\r"), " \t")
		if len(l) < 2 || l[1] != '=' {
			continue
		}
		switch {
		case l[0] == 'm':
			mediaConn = append(mediaConn, false)
		case len(mediaConn) == 0:
			session[l[0]] = true
		case l[0] == 'c':
			mediaConn[len(mediaConn)-1] = true
		}
	}
	return session, mediaConn
}

func checkSDPMandatoryLines(d *dctx, report func(int, string, string, string)) {
	for _, b := range d.sdpBodies() {
		session, _ := sdpLines(b.raw)
		var missing []string
		for _, t := range []byte{'v', 'o', 's', 't'} {
			if !session[t] {
				missing = append(missing, string(t)+"=")
			}
		}
		if len(missing) > 0 {
			report(b.pos, "SDP session description without "+strings.Join(missing, ", "),
				"v=, o=, s= and t= lines at session level",
				"strict parsers refuse the whole description, so the offer or answer is lost; o= is also what identifies later versions of the session")
		}
	}
}

func checkSDPConnection(d *dctx, report func(int, string, string, string)) {
	for _, b := range d.sdpBodies() {
		session, mediaConn := sdpLines(b.raw)
		if session['c'] {
			continue
		}
		for i, has := range mediaConn {
			if !has {
				obs := fmt.Sprintf("media section %d without c= and no session-level c=", i+1)
				if i < len(b.sess.Media) {
					obs = mLine(&b.sess.Media[i]) + " without c= and no session-level c="
				}
				report(b.pos, obs, "a session-level c= line, or one in every media section",
					"the receiver has no address to send this stream to")
				break
			}
		}
	}
}

func checkMediaCount(d *dctx, report func(int, string, string, string)) {
	for _, x := range d.exchanges() {
		no, na := len(x.offer.sess.Media), len(x.answer.sess.Media)
		if no == na {
			continue
		}
		report(x.answer.pos, fmt.Sprintf("answer with %d m= lines to an offer with %d", na, no),
			fmt.Sprintf("%d m= lines, in the offer's order (port 0 for a declined stream)", no),
			"streams are matched by position; with a different count every stream after the first gap is paired with the wrong one, or the answer is rejected")
	}
}

func checkOriginVersion(d *dctx, report func(int, string, string, string)) {
	type prev struct {
		version uint64
		norm    string
	}
	last := map[string]prev{}
	for _, b := range d.sdpBodies() {
		if !b.sess.HasOrigin {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(b.sess.Origin.SessionVersion), 10, 64)
		if err != nil {
			continue
		}
		k := originKey(b) + " " + b.m.Src.String() + ">" + b.m.Dst.String()
		norm := normalized(b.raw)
		p, seen := last[k]
		last[k] = prev{v, norm}
		if !seen || norm == p.norm || v > p.version {
			continue
		}
		report(b.pos, fmt.Sprintf("o= version %d after version %d, with a different description", v, p.version),
			fmt.Sprintf("o= version %d or higher for a changed description (an unchanged version promises identical SDP)", p.version+1),
			"a receiver that sees an unchanged version may skip re-reading the SDP and keep sending to the old address or codec")
	}
}
