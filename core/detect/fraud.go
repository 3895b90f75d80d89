package detect

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// Fraud rules of this build (--fraud-detect, engine.md §13). The volume
// spike, off-hours and destination-country watchlist rules are not built.
const (
	RuleFraudSequential = "fraud_sequential_scanning" // >= 3 consecutive numbers refused in a row
	RuleFraudWangiri    = "fraud_wangiri"             // >= 3 completed calls under 3 s to one prefix in 60 s
)

// Fraud defaults (engine.md §13).
const (
	DefaultSequentialRun = 3
	DefaultWangiriCalls  = 3
	DefaultWangiriShort  = 3 * time.Second
	DefaultWangiriWindow = 60 * time.Second
	DefaultWangiriPrefix = 4 // leading digits naming a destination prefix (top_talkers' default)
	MaxCalls             = 10000
	MaxPrefixesPerSource = 64
	maxDialedDigits      = 18 // fits a uint64
)

// call is one INVITE dialog the fraud detector follows.
type call struct {
	src      netip.Addr
	number   string // the dialed number's digits ("" when not numeric)
	answered time.Time
	done     bool
}

// fraudState is a source's fraud evidence.
type fraudState struct {
	// The run of refused numbers, each one more than the last.
	seqLast  uint64
	seqFirst string
	seqRun   int
	// Short completed calls per destination prefix: their times within
	// the window (at most the threshold kept).
	short map[string][]time.Time
}

// dialed is the digits of the number a request dials: the Request-URI's
// user (To's when it has none), a leading + dropped and visual separators
// (RFC 3966 §5.1.1: - . ( )) removed; "" when anything else is in it.
func dialed(m *sip.Message) string {
	user := m.To.User
	if u, err := sip.ParseURI(m.RequestURI); err == nil && u.User != "" {
		user = u.User
	}
	user, _, _ = strings.Cut(user, ";")
	user = strings.TrimPrefix(user, "+")
	var b strings.Builder
	for _, r := range user {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '.' || r == '(' || r == ')':
		default:
			return ""
		}
	}
	if b.Len() == 0 || b.Len() > maxDialedDigits {
		return ""
	}
	return b.String()
}

func callKey(m *sip.Message) string {
	h := fnv.New64a()
	h.Write([]byte(m.CallID))
	return strconv.FormatUint(h.Sum64(), 16)
}

func (d *Detector) fraudOf(a netip.Addr) *fraudState {
	s := d.src(a)
	if s.fraud == nil {
		s.fraud = &fraudState{}
	}
	return s.fraud
}

// observeFraud runs the fraud rules on one message.
func (d *Detector) observeFraud(ts time.Time, src netip.AddrPort, m *sip.Message) {
	if m.IsRequest {
		switch {
		case m.Method == "INVITE" && m.To.Tag == "":
			d.calls.put(callKey(m), &call{src: src.Addr().Unmap(), number: dialed(m)})
		case m.Method == "BYE":
			c, ok := d.calls.get(callKey(m))
			if !ok || c.answered.IsZero() || c.done {
				return
			}
			c.done = true
			if dur := ts.Sub(c.answered); dur >= 0 && dur < DefaultWangiriShort && len(c.number) >= DefaultWangiriPrefix {
				d.shortCall(ts, c, dur)
			}
		}
		return
	}
	if m.CSeq.Method != "INVITE" || m.StatusCode < 200 {
		return
	}
	c, ok := d.calls.get(callKey(m))
	if !ok || c.done || !c.answered.IsZero() {
		return
	}
	if m.StatusCode < 300 {
		c.answered = ts
		return
	}
	c.done = true
	if m.StatusCode >= 400 && c.number != "" {
		d.refusedNumber(ts, c)
	}
}

// refusedNumber extends the source's run of refused numbers: each one
// more than the last (441700001, 441700002, 441700003...).
func (d *Detector) refusedNumber(ts time.Time, c *call) {
	f := d.fraudOf(c.src)
	n, err := strconv.ParseUint(c.number, 10, 64)
	if err != nil {
		return
	}
	if f.seqRun > 0 && n == f.seqLast+1 {
		f.seqRun++
	} else {
		f.seqRun, f.seqFirst = 1, c.number
	}
	f.seqLast = n
	if f.seqRun == DefaultSequentialRun {
		d.record(RuleFraudSequential, c.src, ts, fmt.Sprintf("%d consecutive numbers refused in a row: %s to %s", f.seqRun, f.seqFirst, c.number))
	}
}

// shortCall counts a completed call shorter than 3 s to its destination
// prefix and fires wangiri at the third within 60 s.
func (d *Detector) shortCall(ts time.Time, c *call, dur time.Duration) {
	f := d.fraudOf(c.src)
	p := c.number[:DefaultWangiriPrefix]
	if f.short == nil {
		f.short = map[string][]time.Time{}
	}
	times, ok := f.short[p]
	if !ok && len(f.short) >= MaxPrefixesPerSource {
		d.stats.PrefixesDropped++
		return
	}
	k := 0
	for k < len(times) && ts.Sub(times[k]) >= DefaultWangiriWindow {
		k++
	}
	times = append(times[k:], ts)
	if len(times) >= DefaultWangiriCalls {
		d.record(RuleFraudWangiri, c.src, ts, fmt.Sprintf("%d completed calls under 3s to prefix %s within 60s (last to %s lasted %.3fs)",
			len(times), p, c.number, dur.Seconds()))
		times = times[1:]
	}
	f.short[p] = times
}
