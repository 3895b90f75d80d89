package detect

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// source is what the scanner and reg_flood detectors hold about one
// sender address.
type source struct {
	addr netip.Addr
	// established: the source completed a registration or a call (a 2xx
	// to a REGISTER or INVITE it sent, or a 2xx it sent to an INVITE).
	established bool

	// The scanner's current window (engine.md §13: 5 s per source).
	win       time.Time
	winSeq    uint64
	probes    int
	targets   map[string]struct{}
	answered  int // probes answered with a final status below 400
	rejected  int // probes answered 400 or above
	unans     int // probes that waited past the answer wait
	rateFired bool
	enumFired bool

	// pending are the source's transactions awaiting an answer, oldest
	// first (capped at MaxPendingPerSource).
	pending []pendingTx

	// reg_flood: times of credentialed REGISTERs answered 401/407 within
	// the last second (at most the threshold plus one).
	regTimes []time.Time

	// fraud is the fraud detector's evidence (nil until it has some).
	fraud *fraudState

	// For the observation gaps: requests of each rule never answered.
	scanUnanswered uint64
	regUnanswered  uint64
}

type pendingTx struct {
	key    uint64
	ts     time.Time
	winSeq uint64
	probe  bool // a scanner probe
	reg    bool // a credentialed REGISTER (reg_flood)
}

// txKey identifies a transaction by what its request and its responses
// share (RFC 3261 §17.1.3: the top Via branch and the CSeq method; the
// Call-ID and CSeq number added for senders whose branches are not
// unique), hashed so the key's bytes are fixed whatever the sender wrote.
func txKey(m *sip.Message) uint64 {
	h := fnv.New64a()
	h.Write([]byte(m.CallID))
	h.Write([]byte{0})
	h.Write([]byte(m.TopBranch()))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatUint(uint64(m.CSeq.Number), 10)))
	h.Write([]byte(m.TxMethod()))
	return h.Sum64()
}

// isProbe: an out-of-dialog request (no To tag) that opens a transaction
// of its own (not ACK or CANCEL).
func isProbe(m *sip.Message) bool {
	return m.IsRequest && m.To.Tag == "" && m.Method != "ACK" && m.Method != "CANCEL"
}

// credentialed: the request carries credentials (RFC 3261 §22.2, §22.3).
func credentialed(m *sip.Message) bool {
	_, a := m.Header(sip.HdrAuthorization)
	_, p := m.Header(sip.HdrProxyAuthorization)
	return a || p
}

// ScannerUA reports the signature a User-Agent matches ("" for none).
func ScannerUA(ua string) string {
	l := strings.ToLower(ua)
	for _, s := range ScannerSignatures {
		if strings.Contains(l, s) {
			return s
		}
	}
	return ""
}

// quoteValue makes a sender-written value safe inside a quoted field of
// the finding's detail and the alert line: control characters stripped,
// double quotes turned to single, cut to 128 bytes.
func quoteValue(s string) string {
	return `"` + strings.ReplaceAll(textsafe.Line(s, 128), `"`, `'`) + `"`
}

func (d *Detector) src(a netip.Addr) *source {
	k := string(a.AsSlice())
	s, ok := d.sources.get(k)
	if !ok {
		s = &source{addr: a}
		d.sources.put(k, s)
	}
	return s
}

// observeSource runs the scanner and reg_flood detectors on one message.
func (d *Detector) observeSource(ts time.Time, src, dst netip.AddrPort, m *sip.Message) {
	if m.IsRequest {
		s := d.src(src.Addr().Unmap())
		d.expire(s, ts)
		if d.cfg.Scanner {
			if sig := ScannerUA(m.UserAgent); sig != "" {
				d.record(RuleScannerUA, s.addr, ts, fmt.Sprintf("ua=%s method=%s signature=%s", quoteValue(m.UserAgent), quoteValue(m.Method), sig))
			}
		}
		probe := d.cfg.Scanner && isProbe(m)
		reg := d.cfg.RegFlood && m.Method == "REGISTER" && credentialed(m)
		if probe {
			if s.win.IsZero() || ts.Sub(s.win) >= DefaultScanWindow || ts.Before(s.win) {
				d.evaluate(s, ts)
				s.win, s.winSeq = ts, s.winSeq+1
				s.probes, s.answered, s.rejected, s.unans = 0, 0, 0, 0
				s.rateFired, s.enumFired = false, false
				clear(s.targets)
			}
			s.probes++
			user := m.To.User
			if u, err := sip.ParseURI(m.RequestURI); err == nil && u.User != "" {
				user = u.User
			}
			t := cut(dst.Addr().Unmap().String() + "|" + user)
			if s.targets == nil {
				s.targets = map[string]struct{}{}
			}
			if _, ok := s.targets[t]; !ok {
				if len(s.targets) < DefaultMaxTargets {
					s.targets[t] = struct{}{}
				} else {
					d.stats.TargetsDropped++
				}
			}
		}
		if probe || reg {
			if len(s.pending) >= MaxPendingPerSource {
				s.pending = s.pending[1:]
				d.stats.PendingEvicted++
			}
			s.pending = append(s.pending, pendingTx{key: txKey(m), ts: ts, winSeq: s.winSeq, probe: probe, reg: reg})
		}
		if probe {
			d.evaluate(s, ts)
		}
		return
	}
	// A response: it travels to the request's sender.
	code, method := m.StatusCode, m.TxMethod()
	if code >= 200 && code < 300 && (method == "INVITE" || method == "REGISTER") {
		// The request's sender completed a registration or a call; so
		// did the callee answering an INVITE.
		if s, ok := d.sources.get(string(dst.Addr().Unmap().AsSlice())); ok {
			s.established = true
			if method == "REGISTER" {
				s.regTimes = s.regTimes[:0] // any 2xx to REGISTER clears
			}
		}
		if method == "INVITE" {
			d.src(src.Addr().Unmap()).established = true
		}
	}
	if code < 200 {
		return // provisional: the transaction goes on
	}
	s, ok := d.sources.get(string(dst.Addr().Unmap().AsSlice()))
	if !ok {
		return
	}
	d.expire(s, ts)
	key := txKey(m)
	for i := range s.pending {
		p := s.pending[i]
		if p.key != key {
			continue
		}
		s.pending = append(s.pending[:i], s.pending[i+1:]...)
		if p.probe && p.winSeq == s.winSeq {
			if code >= 400 {
				s.rejected++
			} else {
				s.answered++
			}
			d.evaluate(s, ts)
		}
		if p.reg && (code == 401 || code == 407) {
			d.regAnswered(s, ts)
		}
		break
	}
}

// expire turns the source's transactions that waited past the answer
// wait (500 ms, RFC 3261 T1) into unanswered ones and, when a probe of
// the current window did, evaluates the window at the moment the last of
// them ran out (the capture time the evidence was complete, not the time
// of the next message that revealed it).
func (d *Detector) expire(s *source, now time.Time) {
	n := 0
	var at time.Time
	for _, p := range s.pending {
		if now.Sub(p.ts) <= DefaultAnswerWait {
			break
		}
		n++
		if p.probe {
			s.scanUnanswered++
			if p.winSeq == s.winSeq {
				s.unans++
				at = p.ts.Add(DefaultAnswerWait)
			}
		}
		if p.reg {
			s.regUnanswered++
		}
	}
	if n > 0 {
		s.pending = s.pending[n:]
	}
	if !at.IsZero() {
		d.evaluate(s, at)
	}
}

// evaluate fires the behavioural scanner rules of the source's current
// window once each, when the evidence gate holds: at least 5 rejected or
// 5 unanswered probes (4× for an established source) outnumbering the
// probes answered below 400 (engine.md §13).
func (d *Detector) evaluate(s *source, ts time.Time) {
	if s.win.IsZero() || s.probes == 0 {
		return
	}
	need := DefaultScanEvidence
	if s.established {
		need *= DefaultEstablishedX
	}
	evidence := s.rejected + s.unans
	if !(s.rejected >= need || s.unans >= need) || evidence <= s.answered {
		return
	}
	detail := func(what string) string {
		return fmt.Sprintf("%s probes=%d targets=%d rejected=%d unanswered=%d answered=%d window_start=%s window=5s established=%t",
			what, s.probes, len(s.targets), s.rejected, s.unans, s.answered, s.win.UTC().Format(time.RFC3339Nano), s.established)
	}
	if s.probes > DefaultScanProbes && !s.rateFired {
		s.rateFired = true
		d.record(RuleScannerRate, s.addr, ts, detail("rate"))
	}
	if len(s.targets) > DefaultScanTargets && !s.enumFired {
		s.enumFired = true
		d.record(RuleScannerEnumeration, s.addr, ts, detail("enumeration"))
	}
}

// regAnswered counts one credentialed REGISTER answered 401/407 and fires
// reg_flood past 50 within one second of capture time.
func (d *Detector) regAnswered(s *source, ts time.Time) {
	cut := 0
	for cut < len(s.regTimes) && ts.Sub(s.regTimes[cut]) >= DefaultRegFloodWin {
		cut++
	}
	s.regTimes = append(s.regTimes[:0], s.regTimes[cut:]...)
	s.regTimes = append(s.regTimes, ts)
	if len(s.regTimes) > DefaultRegFloodCount {
		d.record(RuleRegFlood, s.addr, ts, fmt.Sprintf("count=%d credentialed REGISTERs answered 401/407 within 1s (since %s)",
			len(s.regTimes), s.regTimes[0].UTC().Format(time.RFC3339Nano)))
		s.regTimes = s.regTimes[1:] // never more than the threshold plus one held
	}
}

// settle matures every source's pending probes against the latest
// capture time and evaluates its open window.
func (d *Detector) settle() {
	if d.clock.IsZero() {
		return
	}
	d.sources.each(func(_ string, s *source) { d.expire(s, d.clock) })
}

// Gaps lists the rules' blind spots: requests they examined that the
// capture never answered (probes and credentialed REGISTERs still waiting
// at the capture's end count too).
func (d *Detector) Gaps() []Gap {
	var out []Gap
	if !d.running() {
		return out
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.settle()
	reason := "unanswered"
	if d.responses == 0 {
		reason = "no_answers"
	}
	type acc struct{ seen, unest uint64 }
	var scan, reg acc
	d.sources.each(func(_ string, s *source) {
		sc, rg := s.scanUnanswered, s.regUnanswered
		for _, p := range s.pending {
			if p.probe {
				sc++
			}
			if p.reg {
				rg++
			}
		}
		if sc > 0 {
			scan.seen += sc
			if !s.established {
				scan.unest++
			}
		}
		if rg > 0 {
			reg.seen += rg
			if !s.established {
				reg.unest++
			}
		}
	})
	why := "requests the capture holds no answer to: a dropped or one-way capture cannot tell an unanswered probe from an unseen answer"
	if reason == "no_answers" {
		why = "the capture holds no SIP response at all (one direction only?): every probe reads as unanswered and no 401/407 is seen"
	}
	if d.cfg.Scanner && scan.seen > 0 {
		// Both behavioural rules rest on the same answers.
		for _, r := range []string{RuleScannerRate, RuleScannerEnumeration} {
			out = append(out, Gap{Rule: r, Reason: reason, Seen: scan.seen, Unestablished: scan.unest, Detail: "scanner probes: " + why})
		}
	}
	if d.cfg.RegFlood && reg.seen > 0 {
		out = append(out, Gap{Rule: RuleRegFlood, Reason: reason, Seen: reg.seen, Unestablished: reg.unest, Detail: "credentialed REGISTERs: " + why})
	}
	return out
}
