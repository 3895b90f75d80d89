package dialog

// ICMP errors matched to dialogs (engine.md §2, §11).
//
// An ICMP or ICMPv6 error quotes the packet that caused it: its IP header,
// its transport header and as much of its payload as the reporter chose to
// send back (RFC 792: 8 bytes past the IP header; RFC 1812 §4.3.2.3: as
// much as fits in 576 bytes; RFC 4443 §2.4: as much as fits in 1280). When
// that packet was a SIP message, the error belongs to the message's dialog.
// MatchICMP finds it:
//
//   - The quote holds the SIP message's first lines (a kernel quotes 509
//     bytes of a UDP datagram over IPv4, all of it over IPv6 up to 1232):
//     its Call-ID names the dialog, and the quoted bytes, a prefix of the
//     message sent, name the message (the latest copy sent on the quoted
//     5-tuple before the error). matched_by "call_id".
//   - The quote holds no Call-ID (a router quoting 8 bytes, a Call-ID past
//     the quoted bytes): the quoted 5-tuple (source, destination,
//     transport) names the message, the latest sent on it in the
//     icmpWindow before the error among the icmpScanDialogs most recently
//     updated dialogs, its bytes agreeing with whatever SIP bytes the quote
//     holds. When another dialog also sent on that 5-tuple inside the
//     window (two proxies trunking every call over one 5-tuple), the error
//     is not attached to either: it is counted as ambiguous. matched_by
//     "tuple".
//
// Everything here is bounded: the errors kept per dialog (the count stays
// exact), the dialogs holding errors, the unmatched errors kept as
// examples, the bytes of a quote read and the dialogs scanned per error.
// The table lives beside the dialogs, not in them, so a dialog without an
// ICMP error costs nothing; it is dropped with its dialog.

import (
	"bytes"
	"net/netip"
	"strconv"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// Bounds of the ICMP evidence table.
const (
	// MaxICMPPerDialog is how many ICMP errors a dialog keeps (an INVITE
	// sent to a closed port draws seven over Timer B); past it they are
	// counted (ICMPErrorCount stays exact).
	MaxICMPPerDialog = 8
	// MaxICMPDialogs is how many dialogs hold ICMP errors; an error for
	// another dialog past it is counted as not kept. With rows of about
	// 350 bytes the table holds at most about 6 MB.
	MaxICMPDialogs = 2048
	// MaxICMPUnmatched is how many unmatched errors are kept as examples.
	MaxICMPUnmatched = 20
	// icmpScanDialogs is how many of the most recently updated dialogs a
	// 5-tuple match looks at.
	icmpScanDialogs = 256
	// icmpScanMessages is how many of a dialog's latest retained messages
	// a 5-tuple match looks at.
	icmpScanMessages = 32
	// icmpQuoteRead bounds the quoted SIP bytes scanned for a Call-ID.
	icmpQuoteRead = 4096
)

// ICMPWindow is how long before an error the message it quotes may have
// been sent for a 5-tuple match: an error comes back within a round trip
// (microseconds from a local kernel, a few hundred milliseconds across a
// continent).
const ICMPWindow = 4 * time.Second

// ICMPQuote is an ICMP or ICMPv6 error as the store matches it: who sent
// it, when, and the packet it quotes.
type ICMPQuote struct {
	TS    time.Time
	Frame packet.FrameRef
	// Reporter sent the error.
	Reporter netip.Addr
	V6       bool
	// Type and Code are the ICMP (or ICMPv6) type and code.
	Type, Code uint8
	// Transport, Src and Dst are the quoted packet's, as it was sent;
	// HasPorts is false when the quote ends before its ports.
	Transport packet.Transport
	Src, Dst  netip.AddrPort
	HasPorts  bool
	// Payload is the quoted transport payload (borrowed for the call).
	Payload []byte
	// Truncated: the error quotes less than the whole packet.
	Truncated bool
	// MTU is the next-hop MTU of a fragmentation-needed or packet-too-big
	// error; 0 when none.
	MTU uint32
}

// ICMP error kinds (ICMPError.Kind), from type and code: RFC 792 and RFC
// 1812 §5.2.7.1 for ICMP, RFC 4443 §3 for ICMPv6.
const (
	ICMPPortUnreachable     = "port_unreachable"
	ICMPHostUnreachable     = "host_unreachable"
	ICMPNetUnreachable      = "net_unreachable"
	ICMPAdminProhibited     = "admin_prohibited"
	ICMPFragmentationNeeded = "fragmentation_needed"
	ICMPTimeExceeded        = "time_exceeded"
	ICMPOther               = "other"
)

// ICMPKind names an error's kind from its type and code.
func ICMPKind(v6 bool, typ, code uint8) string {
	if v6 {
		switch {
		case typ == 1 && code == 4:
			return ICMPPortUnreachable
		case typ == 1 && code == 3:
			return ICMPHostUnreachable
		case typ == 1 && code == 0:
			return ICMPNetUnreachable
		case typ == 1 && (code == 1 || code == 5 || code == 6):
			return ICMPAdminProhibited
		case typ == 2:
			return ICMPFragmentationNeeded
		case typ == 3:
			return ICMPTimeExceeded
		}
		return ICMPOther
	}
	switch {
	case typ == 3 && code == 3:
		return ICMPPortUnreachable
	case typ == 3 && (code == 1 || code == 7 || code == 10 || code == 12):
		return ICMPHostUnreachable
	case typ == 3 && (code == 0 || code == 6 || code == 9 || code == 11):
		if code == 9 {
			return ICMPAdminProhibited // network administratively prohibited
		}
		return ICMPNetUnreachable
	case typ == 3 && (code == 13 || code == 14 || code == 15):
		return ICMPAdminProhibited
	case typ == 3 && code == 4:
		return ICMPFragmentationNeeded
	case typ == 11:
		return ICMPTimeExceeded
	}
	return ICMPOther
}

// ICMPError is one ICMP or ICMPv6 error quoting a message of the dialog.
type ICMPError struct {
	// At is the capture time of the error.
	At time.Time `json:"at"`
	// Kind names the error: port_unreachable, host_unreachable,
	// net_unreachable, admin_prohibited, fragmentation_needed,
	// time_exceeded or other.
	Kind string `json:"kind" desc:"port_unreachable, host_unreachable, net_unreachable, admin_prohibited, fragmentation_needed, time_exceeded or other"`
	// Protocol is icmp or icmpv6; Type and Code its type and code.
	Protocol string `json:"protocol"`
	Type     uint8  `json:"type"`
	Code     uint8  `json:"code"`
	// Reporter sent the error; Endpoint is where the quoted message was
	// going (the far end), Source where it came from.
	Reporter string `json:"reporter" desc:"who sent the error"`
	Endpoint string `json:"endpoint" desc:"where the quoted message went"`
	Source   string `json:"-"`
	// Transport is the quoted message's transport.
	Transport string `json:"-"`
	// Message is the index of the quoted message; absent when it was not
	// retained.
	Message *int `json:"message,omitempty" desc:"index of the quoted message"`
	// Quoted is the quoted message's method or status code (the sender's
	// text: diagnosis names it in its own words, and the wire shape leaves
	// it out; Message names the message).
	Quoted string `json:"-"`
	// MatchedBy says how the error was tied to the dialog: call_id (the
	// quote holds the Call-ID) or tuple (the quoted 5-tuple and time).
	MatchedBy string `json:"matched_by" desc:"call_id (quoted) or tuple"`
	// QuoteTruncated: the error quotes less than the whole message.
	QuoteTruncated bool `json:"quote_truncated,omitempty"`
	// MTU is the next-hop MTU a fragmentation-needed error names.
	MTU uint32 `json:"mtu,omitempty"`
	// Frame points at the frame carrying the error.
	Frame string `json:"frame,omitempty"`
}

// ICMPUnmatched is an ICMP error the store did not tie to a dialog.
type ICMPUnmatched struct {
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"`
	Protocol  string    `json:"protocol"`
	Type      uint8     `json:"type"`
	Code      uint8     `json:"code"`
	Reporter  string    `json:"reporter"`
	Source    string    `json:"source,omitempty"`
	Endpoint  string    `json:"endpoint,omitempty"`
	Transport string    `json:"transport,omitempty"`
	// Reason says why: no_ports (the quote ends before the ports),
	// call_id_not_held (the quoted Call-ID names no dialog held: never
	// seen, or evicted), no_message (no message was sent on the quoted
	// 5-tuple in the window), ambiguous (messages of several dialogs were).
	Reason string `json:"reason" enum:"no_ports|call_id_not_held|no_message|ambiguous"`
	Frame  string `json:"frame,omitempty"`
}

// ICMPStats counts the ICMP errors offered to the store.
type ICMPStats struct {
	// Offered counts the errors offered; MatchedByCallID and
	// MatchedByTuple those tied to a dialog; Unmatched the rest, by reason
	// in UnmatchedBy.
	Offered         uint64            `json:"offered"`
	MatchedByCallID uint64            `json:"matched_by_call_id"`
	MatchedByTuple  uint64            `json:"matched_by_tuple"`
	Unmatched       uint64            `json:"unmatched"`
	UnmatchedBy     map[string]uint64 `json:"unmatched_by,omitempty"`
	// Dialogs counts the dialogs holding errors now.
	Dialogs int `json:"dialogs"`
	// RowsNotKept counts errors tied to a dialog but not kept: past
	// MaxICMPPerDialog for it, or for a dialog past MaxICMPDialogs.
	RowsNotKept uint64 `json:"rows_not_kept,omitempty"`
	// UnmatchedExamples are the first MaxICMPUnmatched unmatched errors.
	UnmatchedExamples []ICMPUnmatched `json:"unmatched_examples,omitempty"`
}

type icmpRecord struct {
	rows  []ICMPError
	count int
}

// icmpTable is the store's ICMP evidence (guarded by the store's lock).
type icmpTable struct {
	byID      map[string]*icmpRecord
	st        ICMPStats
	unmatched []ICMPUnmatched
}

func (t *icmpTable) drop(callID string) {
	if t.byID != nil {
		delete(t.byID, callID)
	}
}

// into fills a Detail's ICMP errors.
func (t *icmpTable) into(det *Detail) {
	r := t.byID[det.CallID]
	if r == nil {
		return
	}
	det.ICMPErrors = append([]ICMPError(nil), r.rows...)
	for i := range det.ICMPErrors {
		if m := det.ICMPErrors[i].Message; m != nil {
			v := *m
			det.ICMPErrors[i].Message = &v
		}
	}
	det.ICMPErrorCount = r.count
}

// ICMPStats returns the ICMP counters.
func (s *Store) ICMPStats() ICMPStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.icmp.st
	st.Dialogs = len(s.icmp.byID)
	if len(st.UnmatchedBy) > 0 {
		m := make(map[string]uint64, len(st.UnmatchedBy))
		for k, v := range st.UnmatchedBy {
			m[k] = v
		}
		st.UnmatchedBy = m
	}
	st.UnmatchedExamples = append([]ICMPUnmatched(nil), s.icmp.unmatched...)
	return st
}

// ICMPMatch says what MatchICMP did with an error.
type ICMPMatch struct {
	// CallID is the dialog the error was tied to ("" when none).
	CallID string
	// By is call_id or tuple; Reason says why it was not tied.
	By, Reason string
}

// MatchICMP ties an ICMP error to the dialog of the message it quotes, and
// keeps it there (see the file comment). Called by the store's writer.
func (s *Store) MatchICMP(q *ICMPQuote) ICMPMatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.icmp
	t.st.Offered++
	s.rev.Add(1)
	if !q.HasPorts {
		return s.icmpUnmatched(q, "no_ports")
	}
	var d *dialog
	pos, by := -1, "tuple"
	if id := quotedCallID(q.Payload); id != nil {
		d = s.byID.get(keyOfBytes(id))
		if d == nil {
			return s.icmpUnmatched(q, "call_id_not_held")
		}
		by = "call_id"
		pos = d.icmpMessage(q, time.Time{})
	} else {
		var reason string
		d, pos, reason = s.icmpByTuple(q)
		if d == nil {
			return s.icmpUnmatched(q, reason)
		}
	}
	if by == "call_id" {
		t.st.MatchedByCallID++
	} else {
		t.st.MatchedByTuple++
	}
	// The error is evidence of d's diagnosis (icmp_unreachable): answers
	// kept per change (core/query's maintained state) recompute d.
	s.noteChange(d)
	if t.byID == nil {
		t.byID = map[string]*icmpRecord{}
	}
	r := t.byID[d.callID]
	if r == nil {
		if len(t.byID) >= MaxICMPDialogs {
			t.st.RowsNotKept++
			return ICMPMatch{CallID: d.callID, By: by}
		}
		r = &icmpRecord{}
		t.byID[d.callID] = r
	}
	r.count++
	if len(r.rows) >= MaxICMPPerDialog {
		t.st.RowsNotKept++
		return ICMPMatch{CallID: d.callID, By: by}
	}
	row := ICMPError{
		At: q.TS.UTC(), Kind: ICMPKind(q.V6, q.Type, q.Code), Protocol: icmpProtocol(q.V6),
		Type: q.Type, Code: q.Code, Reporter: q.Reporter.String(), Endpoint: q.Dst.String(),
		Source: q.Src.String(), Transport: q.Transport.String(), MatchedBy: by,
		QuoteTruncated: q.Truncated, MTU: q.MTU,
	}
	if !q.Frame.IsZero() {
		row.Frame = q.Frame.String()
	}
	if pos >= 0 {
		m := d.message(pos)
		idx := m.Index
		row.Message = &idx
		if m.Msg != nil {
			if m.Msg.IsRequest {
				row.Quoted = m.Msg.Method
			} else {
				row.Quoted = strconv.Itoa(m.Msg.StatusCode)
			}
		}
	}
	r.rows = append(r.rows, row)
	return ICMPMatch{CallID: d.callID, By: by}
}

func icmpProtocol(v6 bool) string {
	if v6 {
		return "icmpv6"
	}
	return "icmp"
}

func (s *Store) icmpUnmatched(q *ICMPQuote, reason string) ICMPMatch {
	t := &s.icmp
	t.st.Unmatched++
	if t.st.UnmatchedBy == nil {
		t.st.UnmatchedBy = map[string]uint64{}
	}
	t.st.UnmatchedBy[reason]++ // reasons are this file's four constants
	if len(t.unmatched) < MaxICMPUnmatched {
		u := ICMPUnmatched{
			At: q.TS.UTC(), Kind: ICMPKind(q.V6, q.Type, q.Code), Protocol: icmpProtocol(q.V6),
			Type: q.Type, Code: q.Code, Reporter: q.Reporter.String(), Reason: reason,
		}
		if q.Src.IsValid() {
			u.Source, u.Endpoint = q.Src.String(), q.Dst.String()
			if q.HasPorts {
				u.Transport = q.Transport.String()
			} else {
				u.Source, u.Endpoint = q.Src.Addr().String(), q.Dst.Addr().String()
			}
		}
		if !q.Frame.IsZero() {
			u.Frame = q.Frame.String()
		}
		t.unmatched = append(t.unmatched, u)
	}
	return ICMPMatch{Reason: reason}
}

// icmpByTuple finds the dialog whose message the error quotes by 5-tuple:
// the latest message sent on it in the window before the error, among the
// most recently updated dialogs; nil with a reason when none or several
// dialogs did.
func (s *Store) icmpByTuple(q *ICMPQuote) (*dialog, int, string) {
	var best *dialog
	bestPos := -1
	from := q.TS.Add(-ICMPWindow)
	n := 0
	for d := s.lru.front(); d != nil && n < icmpScanDialogs; d = s.lru.after(d) {
		n++
		pos := d.icmpMessage(q, from)
		if pos < 0 {
			continue
		}
		if best != nil {
			return nil, -1, "ambiguous"
		}
		best, bestPos = d, pos
	}
	if best == nil {
		return nil, -1, "no_message"
	}
	return best, bestPos, ""
}

// icmpMessage returns the position of the dialog's latest retained message
// the error quotes: sent on the quoted 5-tuple at or before the error (and
// not before from, when set), its bytes starting with the quoted ones; -1
// when none. It looks at the latest icmpScanMessages messages.
func (d *dialog) icmpMessage(q *ICMPQuote, from time.Time) int {
	stop := max(0, len(d.msgs)-icmpScanMessages)
	quote := q.Payload
	for i := len(d.msgs) - 1; i >= stop; i-- {
		r := &d.msgs[i]
		if r.transport != q.Transport {
			continue
		}
		at := time.Unix(r.sec, int64(r.nsec))
		if at.After(q.TS) {
			continue
		}
		if !from.IsZero() && at.Before(from) {
			return -1 // older messages are older still
		}
		src, dst := d.addrsOf(i)
		if src != q.Src || dst != q.Dst {
			continue
		}
		if len(quote) > 0 {
			var raw []byte
			if r.flags&retWhole != 0 {
				raw = d.rare.whole[i].Raw
			} else {
				raw = r.msg.Raw()
			}
			n := min(len(quote), len(raw))
			if !bytes.Equal(quote[:n], raw[:n]) {
				continue
			}
		}
		return i
	}
	return -1
}

// quotedCallID returns the Call-ID header value (RFC 3261 §20.8, compact
// form "i") of the SIP message whose first bytes q holds: only a header
// line the quote holds whole counts (a line cut by the quote's end may be
// a prefix of the value). Nil when q is not SIP or holds no whole Call-ID
// line. The value is a view into q.
func quotedCallID(q []byte) []byte {
	if len(q) > icmpQuoteRead {
		q = q[:icmpQuoteRead]
	}
	if !bytes.HasPrefix(q, []byte("SIP/2.0 ")) {
		sp := bytes.IndexByte(q, ' ')
		if sp <= 0 || sp > 32 {
			return nil
		}
	}
	first := true
	for len(q) > 0 {
		nl := bytes.IndexByte(q, '\n')
		if nl < 0 {
			return nil // the last line was cut by the quote's end
		}
		line := bytes.TrimRight(q[:nl], "\r")
		q = q[nl+1:]
		if first {
			if !bytes.Contains(line, []byte("SIP/2.0")) {
				return nil
			}
			first = false
			continue
		}
		if len(line) == 0 {
			return nil // end of the headers
		}
		c := bytes.IndexByte(line, ':')
		if c <= 0 {
			continue
		}
		name := bytes.TrimRight(line[:c], " \t")
		if !bytes.EqualFold(name, []byte("Call-ID")) && !bytes.EqualFold(name, []byte("i")) {
			continue
		}
		if len(q) > 0 && (q[0] == ' ' || q[0] == '\t') {
			return nil // folded onto the next line: not read
		}
		v := bytes.TrimSpace(line[c+1:])
		if len(v) == 0 {
			return nil
		}
		return v
	}
	return nil
}
