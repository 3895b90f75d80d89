// Package wsfilter writes Wireshark display filters (and the tshark command
// lines that apply them) selecting one call: its SIP messages by Call-ID and,
// optionally, its RTP by SSRC and 5-tuple and the RTCP its senders emitted.
// It exists to hand a call off to an engineer's own tools (engine.md §16).
//
// # Quoting
//
// A display-filter string literal is double-quoted; inside it `\` and `"`
// are escaped with a backslash. A Call-ID holding a control character (or a
// bidi control) is refused rather than escaped: the filter would otherwise
// quietly select other packets than the call's, which is worse than no
// filter, and a bidi control would make the printed command read differently
// from what it runs. Bytes that are not UTF-8 are written as \xhh escapes so
// the filter survives JSON unchanged. The shell command line single-quotes
// every argument.
package wsfilter

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sipnab/sipnab/internal/textsafe"
)

// ErrControl is returned for a Call-ID holding a control character or a
// bidi control.
var ErrControl = errors.New("the Call-ID holds a control character, which a display filter cannot match safely")

// MaxStreams bounds the streams one filter names; past it the rest are
// counted in Filter.StreamsOmitted.
const MaxStreams = 64

// Stream is one media stream of the call.
type Stream struct {
	// SSRC of the RTP stream (0 for a UDPTL fax flow).
	SSRC uint32
	// Src and Dst are its addresses.
	Src, Dst netip.AddrPort
	// Fax marks a T.38 UDPTL flow (no SSRC): selected by 5-tuple.
	Fax bool
	// RTCP: the stream's sender emitted RTCP the capture holds; its sender
	// reports are selected by sender SSRC between the same hosts.
	RTCP bool
}

// Filter is the display filter of one call.
type Filter struct {
	// Display is the whole filter: SIP, then each stream's clauses, OR-ed.
	Display string
	// SIP selects the call's SIP messages.
	SIP string
	// RTP selects the call's RTP (and UDPTL) packets; "" without streams.
	RTP string
	// RTCP selects the RTCP of the call's senders; "" when none.
	RTCP string
	// Streams are the streams named, in order.
	Streams []Stream
	// StreamsOmitted counts streams past MaxStreams.
	StreamsOmitted int
}

// Quote renders s as a display-filter string literal.
func Quote(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || textsafe.IsBidi(r):
			return "", ErrControl
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
	return b.String(), nil
}

// ForCall builds the filter of one call. streams may be empty (SIP only).
func ForCall(callID string, streams []Stream) (Filter, error) {
	q, err := Quote(callID)
	if err != nil {
		return Filter{}, err
	}
	f := Filter{SIP: "sip.Call-ID == " + q}
	if len(streams) > MaxStreams {
		f.StreamsOmitted = len(streams) - MaxStreams
		streams = streams[:MaxStreams]
	}
	f.Streams = append([]Stream(nil), streams...)
	var rtp, rtcp []string
	seenRTCP := map[string]bool{}
	for _, s := range streams {
		// Media is selected by 5-tuple as well as SSRC: after an SDP change
		// (a T.38 offer, even one refused) tshark re-dissects the port as
		// another protocol, and those frames carry no rtp.ssrc. A frame on
		// the stream's 5-tuple is the stream's unless tshark reads it as RTP
		// of another SSRC (which another clause names when it is the call's).
		if s.Fax {
			rtp = append(rtp, "("+tuple(s.Src, s.Dst)+" && !rtp)")
			continue
		}
		rtp = append(rtp, fmt.Sprintf("(%s && (rtp.ssrc == 0x%08x || !rtp))", tuple(s.Src, s.Dst), s.SSRC))
		if s.RTCP {
			c := fmt.Sprintf("(rtcp.senderssrc == 0x%08x && %s)", s.SSRC, hosts(s.Src.Addr(), s.Dst.Addr()))
			if !seenRTCP[c] {
				seenRTCP[c] = true
				rtcp = append(rtcp, c)
			}
		}
	}
	f.RTP = strings.Join(rtp, " || ")
	f.RTCP = strings.Join(rtcp, " || ")
	parts := []string{f.SIP}
	parts = append(parts, rtp...)
	parts = append(parts, rtcp...)
	f.Display = strings.Join(parts, " || ")
	return f, nil
}

// tuple matches a UDP 5-tuple in one direction.
func tuple(src, dst netip.AddrPort) string {
	return fmt.Sprintf("%s && udp.srcport == %d && %s && udp.dstport == %d",
		addr("src", src.Addr()), src.Port(), addr("dst", dst.Addr()), dst.Port())
}

// hosts matches the source and destination hosts.
func hosts(src, dst netip.Addr) string {
	return addr("src", src) + " && " + addr("dst", dst)
}

func addr(dir string, a netip.Addr) string {
	a = a.Unmap()
	if a.Is4() {
		return "ip." + dir + " == " + a.String()
	}
	return "ipv6." + dir + " == " + a.WithZone("").String()
}

// Options tune the tshark command line.
type Options struct {
	// Heuristics adds -o rtp.heuristic_rtp:TRUE and
	// -o rtcp.heuristic_rtcp:TRUE, so tshark decodes RTP it cannot tie to
	// SDP it saw (the SSRC and 5-tuple clauses keep the match exact).
	Heuristics bool
	// DecodeAs are tshark -d arguments ("tcp.port==6060,sip"): SIP on a
	// port tshark's SIP dissector does not register (UDP and TCP 5060)
	// is otherwise read as whatever owns that port (X11 on 6000-6063).
	DecodeAs []string
}

// Command renders `tshark -r <capture> [-o ...] -Y '<filter>'` with every
// argument shell-quoted. An empty capture writes "$CAPTURE", a shell
// variable for the caller to set.
func Command(capture, filter string, o Options) string {
	capArg := `"$CAPTURE"`
	if capture != "" {
		capArg = ShellQuote(capture)
	}
	args := []string{"tshark", "-r", capArg}
	for _, d := range o.DecodeAs {
		args = append(args, "-d", ShellQuote(d))
	}
	if o.Heuristics {
		args = append(args, "-o", "rtp.heuristic_rtp:TRUE", "-o", "rtcp.heuristic_rtcp:TRUE")
	}
	args = append(args, "-Y", ShellQuote(filter))
	return strings.Join(args, " ")
}

// ShellQuote quotes one argument for a POSIX shell: bare when it holds only
// characters no shell treats specially, else single-quoted with every ' as
// '\”.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
