package callreport

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/sdptimeline"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// Ladder layout bounds.
const (
	minGap     = 22 // columns between two lifelines, at least
	maxGap     = 48 // and at most (a longer address label is cut)
	timeWidth  = 10 // the time column
	maxColumns = 16 // participants drawn; the rest share the last column
)

// ladderRow is one line of the drawing: a message or the start of an RTP
// stream.
type ladderRow struct {
	at       time.Time
	from, to int
	label    string
	rtp      bool
	notes    []string
	leg, idx int // ordering: leg, then message index
}

// column is one participant of the drawing.
type column struct {
	key   string
	label string
}

// ladder lays out the participants and rows of every leg.
type ladder struct {
	cols  []column
	byKey map[string]int
	rows  []ladderRow
	t0    time.Time
	// shared: more participants than maxColumns; the rest share the last
	// column.
	shared bool
}

func (l *ladder) col(key, label string) int {
	if i, ok := l.byKey[key]; ok {
		return i
	}
	if len(l.cols) >= maxColumns {
		l.shared = true
		return len(l.cols) - 1
	}
	l.cols = append(l.cols, column{key: key, label: label})
	l.byKey[key] = len(l.cols) - 1
	return len(l.cols) - 1
}

// build lays the call out: a participant per signaling address (by IP
// address when that address used one port, else by address and port), in
// order of first appearance; every retained message of every leg as an
// arrow; every RTP stream as a double arrow at its first packet, between
// the participants whose SDP announced its ends.
func (c *Call) buildLadder() *ladder {
	l := &ladder{byKey: map[string]int{}}
	ports := map[netip.Addr]map[uint16]bool{}
	var order []netip.AddrPort
	for li := range c.Legs {
		for i := range c.Legs[li].Streams {
			if s := &c.Legs[li].Streams[i]; l.t0.IsZero() || s.FirstSeen.Before(l.t0) {
				l.t0 = s.FirstSeen
			}
		}
		for i := range c.Legs[li].Detail.Messages {
			m := &c.Legs[li].Detail.Messages[i]
			if l.t0.IsZero() || m.TS.Before(l.t0) {
				l.t0 = m.TS
			}
			for _, ap := range []netip.AddrPort{m.Src, m.Dst} {
				a := ap.Addr().Unmap()
				if ports[a] == nil {
					ports[a] = map[uint16]bool{}
				}
				if !ports[a][ap.Port()] {
					ports[a][ap.Port()] = true
					order = append(order, ap)
				}
			}
		}
	}
	sigKey := func(ap netip.AddrPort) (string, string) {
		a := ap.Addr().Unmap()
		if !ap.IsValid() {
			return "?", "?"
		}
		full := netip.AddrPortFrom(a, ap.Port()).String()
		if len(ports[a]) == 1 {
			return a.String(), full
		}
		return full, full
	}
	for _, ap := range order {
		l.col(sigKey(ap))
	}

	for li := range c.Legs {
		leg := &c.Legs[li]
		sdps := map[int]*sdptimeline.Exchange{}
		tl := c.SDP
		if li > 0 {
			tl = sdpTimeline(leg.Detail.Messages)
		}
		for i := range tl {
			sdps[tl[i].MessageIndex] = &tl[i]
		}
		for i := range leg.Detail.Messages {
			m := &leg.Detail.Messages[i]
			r := ladderRow{at: m.TS, from: l.col(sigKey(m.Src)), to: l.col(sigKey(m.Dst)), leg: li, idx: m.Index}
			if msg := m.Msg; msg != nil {
				if msg.IsRequest {
					r.label = textsafe.Line(msg.Method, 40)
				} else {
					r.label = strings.TrimSpace(fmt.Sprintf("%d %s", msg.StatusCode, textsafe.Line(msg.Reason, 60)))
				}
			}
			if len(c.Legs) > 1 {
				r.notes = append(r.notes, "["+leg.Label+"]")
			}
			if x := sdps[m.Index]; x != nil {
				r.notes = append(r.notes, sdpNote(x))
			} else if msg := m.Msg; msg != nil && !m.Retransmission {
				if body, ok := msg.SDPBody(); ok && len(body) > 0 {
					r.notes = append(r.notes, "SDP (no new offer or answer)")
				}
			}
			if m.Retransmission {
				r.notes = append(r.notes, "(retransmission)")
			}
			l.rows = append(l.rows, r)
		}
	}
	// RTP streams: an end goes to the participant with its IP address
	// (where an address used several signaling ports, the one whose SDP
	// announced it), else to a participant of its own.
	signaler := map[string]string{}
	for li := range c.Legs {
		for _, ep := range c.Legs[li].Endpoints {
			if s, err := netip.ParseAddrPort(ep.Signaler); err == nil {
				k, _ := sigKey(s)
				signaler[ep.Address] = k
			}
		}
	}
	mediaCol := func(addr string) int {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return l.col("media "+addr, textsafe.Line(addr, maxGap))
		}
		a := ap.Addr().Unmap()
		if i, ok := l.byKey[a.String()]; ok {
			return i
		}
		if k, ok := signaler[addr]; ok {
			if p, err := netip.ParseAddrPort(k); err == nil && p.Addr().Unmap() == a {
				return l.byKey[k]
			}
		}
		for i, col := range l.cols {
			if p, err := netip.ParseAddrPort(col.key); err == nil && p.Addr().Unmap() == a {
				return i
			}
		}
		return l.col("media "+a.String(), a.String())
	}
	rel := func(t time.Time) string { return fmt.Sprintf("%.3fs", t.Sub(l.t0).Seconds()) }
	for li := range c.Legs {
		leg := &c.Legs[li]
		for i := range leg.Streams {
			s := &leg.Streams[i]
			codec := textsafe.Line(s.Codec, 24)
			if codec == "" {
				codec = fmt.Sprintf("PT %d", s.PayloadType)
			}
			r := ladderRow{at: s.FirstSeen, from: mediaCol(s.Src), to: mediaCol(s.Dst), label: "RTP " + codec, rtp: true, leg: li, idx: 1 << 30}
			if len(c.Legs) > 1 {
				r.notes = append(r.notes, "["+leg.Label+"]")
			}
			r.notes = append(r.notes, streamNote(s, rel))
			l.rows = append(l.rows, r)
		}
	}
	slices.SortStableFunc(l.rows, func(a, b ladderRow) int {
		if x := a.at.Compare(b.at); x != 0 {
			return x
		}
		if a.leg != b.leg {
			return a.leg - b.leg
		}
		return a.idx - b.idx
	})
	return l
}

// sdpNote summarizes an SDP offer or answer on one line.
func sdpNote(x *sdptimeline.Exchange) string {
	codecs := make([]string, 0, len(x.Codecs))
	for _, c := range x.Codecs {
		codecs = append(codecs, textsafe.Line(c, 24))
	}
	s := fmt.Sprintf("SDP %s %s:%d %s", x.Direction, textsafe.Line(x.MediaAddr, 46), x.MediaPort, cut(strings.Join(codecs, ","), 60))
	if x.Mode != "" {
		s += " " + x.Mode
	}
	if f := offerFate(x); f != "" {
		s += " - " + f
	}
	for _, e := range x.Events {
		if e != sdptimeline.EventT38Fallback {
			s += " " + e
		}
	}
	return s
}

// offerFate says what became of an offer when it is news (core/sdptimeline
// records it): refused by a final error and no answer, so the session did
// not change (RFC 3261 §14.1; a 401/407 challenge is not a refusal), the fate of a
// T.38 attempt, and an audio re-offer after a refused T.38 (the fallback).
// Empty for answers and for offers answered as usual.
func offerFate(x *sdptimeline.Exchange) string {
	var parts []string
	switch {
	case x.Outcome == sdptimeline.OutcomeRejected && (x.RejectedCode == 401 || x.RejectedCode == 407):
		// A challenge: the credentialed retry carries the offer again and
		// the 401/407 arrow is drawn already; nothing was refused.
	case x.Outcome == sdptimeline.OutcomeRejected:
		p := fmt.Sprintf("offer rejected %d", x.RejectedCode)
		if x.T38 == sdptimeline.T38Refused {
			p += " (T.38 refused)"
		}
		parts = append(parts, p)
	case x.T38 == sdptimeline.T38Refused:
		parts = append(parts, "T.38 refused")
	case x.T38 == sdptimeline.T38Accepted:
		parts = append(parts, "T.38 accepted")
	case x.T38 == sdptimeline.T38Offered:
		parts = append(parts, "T.38 offered, no answer captured")
	}
	if slices.Contains(x.Events, sdptimeline.EventT38Fallback) {
		parts = append(parts, "audio re-offer after refused T.38")
	}
	return strings.Join(parts, "; ")
}

// writeLadder writes the ladder section.
func (c *Call) writeLadder(b *strings.Builder, f Format) {
	l := c.buildLadder()
	gap := minGap
	for _, col := range l.cols {
		gap = max(gap, runeLen(col.label)+2)
	}
	gap = min(gap, maxGap)
	center := func(i int) int { return i*gap + gap/2 }
	width := center(len(l.cols)-1) + 2
	if n := len(l.cols); n > 0 {
		width = max(width, center(n-1)+runeLen(cut(l.cols[n-1].label, gap-1))/2+1)
	}

	var lines []string
	// Participant labels, centered on their lifelines.
	head := []rune(strings.Repeat(" ", width))
	for i, col := range l.cols {
		lab := []rune(cut(col.label, gap-1))
		start := max(center(i)-len(lab)/2, 0)
		for j, r := range lab {
			if start+j < width {
				head[start+j] = r
			}
		}
	}
	lifelines := func() []rune {
		row := []rune(strings.Repeat(" ", width))
		for i := range l.cols {
			row[center(i)] = '|'
		}
		return row
	}
	lines = append(lines, fmt.Sprintf("%*s %s", timeWidth, "", string(head)))
	lines = append(lines, fmt.Sprintf("%*s %s", timeWidth, "time (s)", string(lifelines())))
	for _, r := range l.rows {
		row := lifelines()
		drawArrow(row, center(r.from), center(r.to), r.label, r.rtp)
		line := fmt.Sprintf("%*.3f %s", timeWidth, r.at.Sub(l.t0).Seconds(), string(row))
		if len(r.notes) > 0 {
			line += "  " + strings.Join(r.notes, " ")
		}
		lines = append(lines, line)
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	drawing := strings.Join(lines, "\n") + "\n"

	// Legend lines are written escaped for Markdown when md; Call-IDs are
	// shown with showID (invisible characters escaped, never dropped).
	md := f == Markdown
	esc := func(s string) string {
		if md {
			return mdEscape(s)
		}
		return s
	}
	legend := []string{esc(c.Legs[0].Label+": ") + showID(c.Detail.CallID, 200, md) + esc(" (this call)")}
	for _, lg := range c.Legs[1:] {
		legend = append(legend, esc(lg.Label+": ")+showID(lg.Detail.CallID, 200, md)+
			esc(fmt.Sprintf(" (%s, score %d, from ", lg.Strategy, lg.Score))+showID(lg.Parent, 200, md)+esc(")"))
	}
	t0 := "no messages"
	if !l.t0.IsZero() {
		t0 = "times in seconds from " + stamp(l.t0)
	}
	if l.shared {
		legend = append(legend, esc(fmt.Sprintf("more than %d participants: the rest are drawn on the last column", maxColumns)))
	}
	if f == Markdown {
		fmt.Fprintf(b, "\n## Ladder\n\n%s; %s.\n\n", plural(len(c.Legs), "leg"), t0)
		for _, s := range legend {
			fmt.Fprintf(b, "- %s\n", s)
		}
		fence := strings.Repeat("`", max(3, longestRun(drawing, '`')+1))
		fmt.Fprintf(b, "\n%stext\n%s%s\n", fence, drawing, fence)
		return
	}
	fmt.Fprintf(b, "\nLADDER (%s; %s)\n", plural(len(c.Legs), "leg"), t0)
	for _, s := range legend {
		fmt.Fprintf(b, "  %s\n", s)
	}
	b.WriteString("\n" + drawing)
}

// drawArrow draws one arrow between two lifelines with its label centered
// on the shaft: "|---INVITE--->|", "|<==RTP PCMU===|", or a self arrow.
func drawArrow(row []rune, from, to int, label string, rtp bool) {
	shaft := '-'
	if rtp {
		shaft = '='
	}
	if from == to {
		// A message to itself: a short hook right of the lifeline.
		hook := []rune("<" + string(shaft) + " " + label)
		for j, r := range hook {
			if from+1+j < len(row) {
				row[from+1+j] = r
			}
		}
		return
	}
	lo, hi := min(from, to), max(from, to)
	for x := lo + 1; x < hi; x++ {
		row[x] = shaft
	}
	if to > from {
		row[hi-1] = '>'
	} else {
		row[lo+1] = '<'
	}
	room := hi - lo - 1 - 4 // a head and a shaft character on each side
	lab := []rune(cut(label, room))
	if len(lab) == 0 {
		return
	}
	start := lo + 1 + (hi-lo-1-len(lab))/2
	copy(row[start:], lab)
}
