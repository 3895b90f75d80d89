package analysis

// icmp_unreachable (engine.md §11): the ICMP/ICMPv6 errors the dialog
// store tied to a dialog's messages (core/dialog/icmp.go), grouped by what
// they say, where the message was going and who answered, and the
// explanation they give a request retransmitted without a response
// (retransmissions' icmp_cause).

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
)

// maxICMPFrames bounds the frames one icmp_unreachable names.
const maxICMPFrames = 16

// ICMPUnreachable is one kind of ICMP error from one reporter about one
// far end, quoting the dialog's messages.
type ICMPUnreachable struct {
	// Kind is port_unreachable, host_unreachable, net_unreachable,
	// admin_prohibited, fragmentation_needed, time_exceeded or other.
	Kind string `json:"kind" enum:"port_unreachable|host_unreachable|net_unreachable|admin_prohibited|fragmentation_needed|time_exceeded|other"`
	// Protocol (icmp or icmpv6), Type and Code of the errors.
	Protocol string `json:"protocol" enum:"icmp|icmpv6"`
	Type     uint8  `json:"type"`
	Code     uint8  `json:"code"`
	// Endpoint is where the quoted messages were going; Reporter who sent
	// the errors. ReporterIsEndpoint: the far end's own host answered
	// (its port was closed), not a router or firewall on the way.
	Endpoint           string `json:"endpoint"`
	Reporter           string `json:"reporter"`
	ReporterIsEndpoint bool   `json:"reporter_is_endpoint"`
	// Errors counts the errors of this group (exact among the errors the
	// dialog kept; ErrorsNotKept counts the dialog's errors past its cap,
	// in no group).
	Errors        int `json:"errors"`
	ErrorsNotKept int `json:"errors_not_kept,omitempty"`
	// Quoted are the methods or status codes of the quoted messages.
	Quoted []string `json:"quoted,omitempty"`
	// MatchedBy: call_id when every error quoted the Call-ID, tuple when
	// any was matched by its 5-tuple alone.
	MatchedBy string `json:"matched_by" enum:"call_id|tuple"`
	// QuoteTruncated: an error quoted part of its message only.
	QuoteTruncated bool `json:"quote_truncated,omitempty"`
	// MTU is the smallest next-hop MTU the errors named.
	MTU uint32 `json:"mtu,omitempty"`
	// Messages are the indexes of the quoted messages; Frames the errors'
	// own frames (up to 16).
	Messages []int    `json:"messages,omitempty"`
	Frames   []string `json:"frames,omitempty"`
}

// ICMPCause is the ICMP error that explains a request retransmitted
// without a response: its copies were answered by ICMP, not SIP.
type ICMPCause struct {
	Kind     string `json:"kind"`
	Type     uint8  `json:"type"`
	Code     uint8  `json:"code"`
	Reporter string `json:"reporter"`
	// Errors counts the copies answered by this error.
	Errors int `json:"errors"`
}

func icmpEndpointIs(reporter, endpoint string) bool {
	r, err1 := netip.ParseAddr(reporter)
	e, err2 := netip.ParseAddrPort(endpoint)
	return err1 == nil && err2 == nil && r.Unmap() == e.Addr().Unmap()
}

// icmpUnreachable groups the dialog's ICMP errors.
func (c *sigCtx) icmpUnreachable() {
	if len(c.d.ICMP) == 0 {
		return
	}
	idx := map[string]int{}
	var out []ICMPUnreachable
	for i := range c.d.ICMP {
		e := &c.d.ICMP[i]
		key := e.Kind + "\x00" + e.Endpoint + "\x00" + e.Reporter + "\x00" + e.Protocol
		j, ok := idx[key]
		if !ok {
			j = len(out)
			idx[key] = j
			out = append(out, ICMPUnreachable{
				Kind: e.Kind, Protocol: e.Protocol, Type: e.Type, Code: e.Code,
				Endpoint: e.Endpoint, Reporter: e.Reporter, ReporterIsEndpoint: icmpEndpointIs(e.Reporter, e.Endpoint),
				MatchedBy: "call_id",
			})
		}
		u := &out[j]
		u.Errors++
		if e.MatchedBy == "tuple" {
			u.MatchedBy = "tuple"
		}
		if e.QuoteTruncated {
			u.QuoteTruncated = true
		}
		if e.MTU > 0 && (u.MTU == 0 || e.MTU < u.MTU) {
			u.MTU = e.MTU
		}
		if e.Quoted != "" && !containsString(u.Quoted, e.Quoted) {
			u.Quoted = append(u.Quoted, e.Quoted)
		}
		if e.Message != nil {
			u.Messages = sortedIndexes(u.Messages, []int{*e.Message})
		}
		if e.Frame != "" && len(u.Frames) < maxICMPFrames {
			u.Frames = append(u.Frames, e.Frame)
		}
	}
	if n := c.d.ICMPCount - len(c.d.ICMP); n > 0 && len(out) > 0 {
		out[0].ErrorsNotKept = n
	}
	c.s.ICMPUnreachable = out
	for i := range out {
		c.hint("%s", icmpHint(&out[i]))
	}
}

// icmpHint says what one group of errors means.
func icmpHint(u *ICMPUnreachable) string {
	what := "messages"
	if len(u.Quoted) == 1 {
		what = hintQuoted(u.Quoted[0])
	}
	frames := ""
	if len(u.Frames) > 0 {
		frames = " (frames " + strings.Join(u.Frames[:min(len(u.Frames), 3)], ", ")
		if len(u.Frames) > 3 {
			frames += ", …"
		}
		frames += ")"
	}
	n := u.Errors + u.ErrorsNotKept
	switch u.Kind {
	case dialog.ICMPPortUnreachable:
		if u.ReporterIsEndpoint {
			return fmt.Sprintf("the far end's port was closed: %s answered %d %s with ICMP port unreachable%s; nothing listened for SIP there (wrong port or transport, or the service was down)", u.Endpoint, n, what, frames)
		}
		return fmt.Sprintf("%s reported %s's port unreachable for %d %s%s: nothing listened for SIP there", u.Reporter, u.Endpoint, n, what, frames)
	case dialog.ICMPHostUnreachable, dialog.ICMPNetUnreachable:
		return fmt.Sprintf("%s could not reach %s (ICMP %s, %d %s%s): the host or the route to it was down", u.Reporter, u.Endpoint, strings.ReplaceAll(u.Kind, "_", " "), n, what, frames)
	case dialog.ICMPAdminProhibited:
		return fmt.Sprintf("%s refused the %s to %s (ICMP administratively prohibited, %d%s): a firewall or ACL blocks SIP there", u.Reporter, what, u.Endpoint, n, frames)
	case dialog.ICMPFragmentationNeeded:
		mtu := ""
		if u.MTU > 0 {
			mtu = fmt.Sprintf(" (next-hop MTU %d)", u.MTU)
		}
		return fmt.Sprintf("the %s to %s were too large for the path%s, reported by %s%s: send large requests over TCP (RFC 3261 §18.1.1) or shrink them", what, u.Endpoint, mtu, u.Reporter, frames)
	case dialog.ICMPTimeExceeded:
		return fmt.Sprintf("the %s to %s expired in transit (ICMP time exceeded from %s%s): a routing loop or a TTL too small", what, u.Endpoint, u.Reporter, frames)
	}
	return fmt.Sprintf("%s answered the %s to %s with ICMP type %d code %d%s", u.Reporter, what, u.Endpoint, u.Type, u.Code, frames)
}

// hintQuoted names a quoted method or status code in a hint (sipnab's own
// words: a method outside the registered set is "a request").
func hintQuoted(q string) string {
	if len(q) == 3 && q[0] >= '1' && q[0] <= '6' {
		return q + " responses"
	}
	return hintMethod(q) + " requests"
}

// icmpCause is the ICMP error answering the copies of a request
// retransmitted without a response (their message indexes): the error
// answering most of them; nil when none.
func (c *sigCtx) icmpCause(copies []int) *ICMPCause {
	if len(c.d.ICMP) == 0 || len(copies) == 0 {
		return nil
	}
	var best *ICMPCause
	counts := map[string]*ICMPCause{}
	for i := range c.d.ICMP {
		e := &c.d.ICMP[i]
		if e.Message == nil || !containsInt(copies, *e.Message) {
			continue
		}
		key := e.Kind + "\x00" + e.Reporter
		x := counts[key]
		if x == nil {
			x = &ICMPCause{Kind: e.Kind, Type: e.Type, Code: e.Code, Reporter: e.Reporter}
			counts[key] = x
		}
		x.Errors++
		if best == nil || x.Errors > best.Errors {
			best = x
		}
	}
	return best
}

func containsInt(l []int, v int) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// icmpUnmatched adds the capture findings of the ICMP errors tied to no
// dialog, from the examples the dialog store kept: icmp_quoting_media when
// the quoted datagram is one of an RTP stream's (media sent to a closed
// port, an unreachable host), icmp_unmatched when it went to or from a SIP
// port (5060, 5061) or the store could not tell which dialog it quoted
// (ambiguous, a Call-ID no longer held). Errors about anything else (DNS,
// NTP...) stay counted in run.icmp only. Occurrences count the examples
// of each kind: the store keeps the first dialog.MaxICMPUnmatched, and the
// rest are counted as omitted in icmp_unmatched.
func icmpUnmatched(get func(kind, sev, unit, summary string) *Finding, streams []media.StreamInfo, cf CaptureFacts) {
	if cf.ICMPUnmatched == 0 {
		return
	}
	byFlow := map[string]*media.StreamInfo{}
	for i := range streams {
		byFlow[streams[i].Src+">"+streams[i].Dst] = &streams[i]
	}
	sipPort := func(ap string) bool {
		a, err := netip.ParseAddrPort(ap)
		return err == nil && (a.Port() == 5060 || a.Port() == 5061)
	}
	var sipRows int64
	for i := range cf.ICMPUnmatchedExamples {
		u := &cf.ICMPUnmatchedExamples[i]
		at := u.At
		e := Evidence{Endpoints: []string{u.Source, u.Endpoint}, At: &at, Counts: map[string]int64{"errors": 1}}
		if u.Frame != "" {
			e.Frames = []string{u.Frame}
		}
		if s := byFlow[u.Source+">"+u.Endpoint]; s != nil && u.Transport == "UDP" {
			e.CallID, e.Note = s.AssociatedDialog, fmt.Sprintf("%s from %s quoting RTP stream %s", u.Kind, u.Reporter, s.SSRC)
			get("icmp_quoting_media", SeverityMedium, "errors", "ICMP errors answering RTP: media sent to a closed port or an unreachable host").add(e)
			continue
		}
		if u.Reason == "ambiguous" || u.Reason == "call_id_not_held" || sipPort(u.Source) || sipPort(u.Endpoint) {
			e.Note = fmt.Sprintf("%s from %s (%s)", u.Kind, u.Reporter, strings.ReplaceAll(u.Reason, "_", " "))
			get("icmp_unmatched", SeverityInfo, "errors", "ICMP errors quoting SIP that no dialog could be tied to (ambiguous 5-tuple, dialog not held, no message in the window)").add(e)
			sipRows++
		}
	}
	if sipRows > 0 {
		if n := int64(cf.ICMPUnmatched) - int64(len(cf.ICMPUnmatchedExamples)); n > 0 {
			f := get("icmp_unmatched", SeverityInfo, "errors", "")
			f.Occurrences += n
			f.EvidenceOmitted += n
		}
	}
}
