// Package detect holds the security detectors of engine.md §13: a SIP
// scanner detector (User-Agent signatures and behaviour), a registration
// flood detector and a digest-authentication weakness detector, each off
// until armed, and the bounded ring of findings they record.
//
// The capture engine feeds every SIP message it applies (retransmissions
// and capture duplicates excluded) to Observe on its single writer's
// goroutine, in capture order; readers (the MCP tools security_findings
// and generate_fail2ban_rule) call Findings, Gaps and Stats from any
// goroutine. Every table is keyed by what a sender chose (its address,
// its transactions, its nonces): each is capped in entries and each key in
// bytes, and every entry shed at a cap is counted (Stats) so an answer can
// say evidence was lost.
//
// Time is capture time throughout (the timestamps of the messages), never
// the wall clock, so a file read twice gives the same findings.
package detect

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// Kinds is the vocabulary of detector kinds (mcp-surface.md §3.4): the
// names security_findings filters by and the alert grammar spells (reg-flood there).
var Kinds = []string{"scanner", "fraud", "digest", "reg_flood"}

// Rule names. A finding's rule names what fired; its kind (KindOf) is the
// detector that holds the rule. Each is a bare identifier, safe to place
// in a regular expression (generate_fail2ban_rule checks it again).
const (
	RuleScannerUA          = "scanner_detected"    // a scanner's User-Agent signature
	RuleScannerRate        = "scanner_rate"        // more than 10 probes in a 5 s window, gated on evidence
	RuleScannerEnumeration = "scanner_enumeration" // more than 5 distinct targets in a 5 s window, gated on evidence
	RuleRegFlood           = "reg_flood"           // more than 50 credentialed REGISTERs answered 401/407 in a second
	RuleDigestWeak         = "digest_weak_algorithm"
	RuleDigestNoQop        = "digest_no_qop"
	RuleDigestNonceReuse   = "digest_nonce_reuse"
	RuleDigestNoCnonce     = "digest_no_cnonce"
)

// KindOf is the detector kind a rule belongs to ("" for an unknown rule).
func KindOf(rule string) string {
	switch {
	case strings.HasPrefix(rule, "scanner_"):
		return "scanner"
	case rule == RuleRegFlood:
		return "reg_flood"
	case strings.HasPrefix(rule, "digest_"):
		return "digest"
	case strings.HasPrefix(rule, "fraud_"):
		return "fraud"
	}
	return ""
}

// Defaults of engine.md §13 and §17.
const (
	DefaultHistory       = 1000
	DefaultScanWindow    = 5 * time.Second
	DefaultScanProbes    = 10 // probes > this in a window: rate
	DefaultScanTargets   = 5  // distinct targets > this in a window: enumeration
	DefaultScanEvidence  = 5  // rejected or unanswered probes needed
	DefaultEstablishedX  = 4  // evidence multiplier for a source that completed a registration or call
	DefaultAnswerWait    = 500 * time.Millisecond
	DefaultMaxTargets    = 1024 // per source
	DefaultMaxSources    = 10000
	DefaultRegFloodCount = 50 // > this within DefaultRegFloodWindow
	DefaultRegFloodWin   = time.Second
	// DefaultCooldown is how long, in capture time, one rule stays quiet
	// for one source after it fired (the alert engine's dedup per source
	// and rule, engine.md §13): a scanner sending ten thousand probes is
	// one finding a minute, not ten thousand.
	DefaultCooldown = 60 * time.Second
	// MaxPendingPerSource bounds the transactions a source has awaiting an
	// answer (scanner and reg_flood alike); older ones are shed, counted.
	MaxPendingPerSource = 256
	// MaxNonces bounds the digest nonces remembered for reuse.
	MaxNonces = 10000
	// MaxKeyBytes cuts every sender-chosen key (a target's user part, a
	// branch, a nonce) so a table's bytes are bounded by its count.
	MaxKeyBytes = 128
	// MaxDetailBytes cuts a finding's detail.
	MaxDetailBytes = 512
)

// ScannerSignatures are the User-Agent substrings of engine.md §13
// (case-insensitive; the list is marked unconfirmed there).
var ScannerSignatures = []string{"friendly-scanner", "sipvicious", "sipcli", "sipsak", "sundayddr", "vaxsipuseragent", "sip-scan"}

// Config arms the detectors. The zero value arms none.
type Config struct {
	Scanner  bool // --detect-scanner
	RegFlood bool // --reg-flood
	Digest   bool // --digest-leak
	Fraud    bool // --fraud-detect: sequential scanning and wangiri
	// History is the findings ring (--findings-history); 0 means 1000.
	History int
	// MaxSources bounds each per-source table; 0 means 10000.
	MaxSources int
	// Cooldown overrides DefaultCooldown when > 0.
	Cooldown time.Duration
	// Disabled names why the armed detectors do not run (the --cores
	// path, engine.md §13): they are reported armed-but-not-running.
	Disabled string
}

// Finding is one detection.
type Finding struct {
	Rule string `json:"rule_name"`
	// Src is the address the finding is about (the scanner, the flooding
	// registrar client, the server issuing a weak challenge).
	Src netip.Addr `json:"src_ip"`
	// Detail is the measured evidence, as text; it may quote a
	// sender-written value (a User-Agent), so readers fence it.
	Detail string `json:"detail"`
	// TS is the capture time of the message that completed the evidence.
	TS time.Time `json:"timestamp"`
}

// ID is the finding's derived id, <rule_name>@<src_ip>@<timestamp>
// (RFC 3339 with nanoseconds, UTC): engine.md §13.
func (f Finding) ID() string {
	return f.Rule + "@" + f.Src.String() + "@" + f.TS.UTC().Format(time.RFC3339Nano)
}

// AlertLine is the finding as one alert line, "[ALERT] <rule_name>
// src=<ip> <detail>" (engine.md §13): the detail made one line (control
// characters, CR and LF stripped: internal/textsafe), the rule name and the
// address first, so nothing a sender wrote stands where a filter reads the
// address.
func (f Finding) AlertLine() string {
	return "[ALERT] " + f.Rule + " src=" + f.Src.String() + " " + textsafe.Line(f.Detail, MaxDetailBytes+16)
}

// Stats are what the detectors saw and shed.
type Stats struct {
	Armed []string `json:"armed_kinds"`
	// FindingsRecorded counts findings ever recorded; FindingsEvicted
	// those the ring (--findings-history) overwrote.
	FindingsRecorded uint64 `json:"findings_recorded"`
	FindingsEvicted  uint64 `json:"findings_evicted"`
	// Suppressed counts repeats of a rule for a source inside its
	// cooldown (not recorded, not evidence lost).
	Suppressed uint64 `json:"findings_suppressed"`
	// SourcesEvicted counts per-source state shed at the source cap;
	// TargetsDropped targets not remembered past a source's 1024;
	// PendingEvicted transactions shed while awaiting an answer;
	// NoncesEvicted nonces forgotten at the nonce cap.
	SourcesEvicted uint64 `json:"sources_evicted"`
	TargetsDropped uint64 `json:"targets_dropped"`
	PendingEvicted uint64 `json:"pending_evicted"`
	NoncesEvicted  uint64 `json:"nonces_evicted"`
	// CallsEvicted counts INVITE dialogs the fraud detector stopped
	// following at its cap; PrefixesDropped short calls to a destination
	// prefix past a source's 64.
	CallsEvicted    uint64 `json:"calls_evicted"`
	PrefixesDropped uint64 `json:"prefixes_dropped"`
}

// EvidenceLost reports whether a table shed something a rule could have
// used (the run is then not complete).
func (s Stats) EvidenceLost() bool {
	return s.FindingsEvicted+s.SourcesEvicted+s.TargetsDropped+s.PendingEvicted+s.NoncesEvicted+s.CallsEvicted+s.PrefixesDropped > 0
}

// Gap is a blind spot of one rule: requests it examined whose answers the
// capture never held (mcp-surface.md §3.4 observation_gaps).
type Gap struct {
	Rule string `json:"rule_name"`
	// Reason is no_answers (the capture held no SIP response at all: a
	// one-way capture cannot tell rejected from unanswered) or unanswered.
	Reason string `json:"reason"`
	// Seen counts the requests without an answer.
	Seen uint64 `json:"seen"`
	// Unestablished counts the sources sending them never seen completing
	// a registration or a call.
	Unestablished uint64 `json:"unestablished"`
	Detail        string `json:"detail"`
}

// Detector runs the armed detectors and holds their findings.
type Detector struct {
	cfg Config

	mu    sync.Mutex
	ring  []Finding // circular, cap cfg.History
	head  int       // next slot
	stats Stats
	last  map[string]time.Time // rule|src → last time it fired (cooldown), capped like sources
	clock time.Time            // latest capture time seen
	// responses counts SIP responses seen at all (no_answers gaps).
	responses uint64

	sources *lru[*source] // per source address: scanner, reg_flood and fraud state
	nonces  *lru[nonceUse]
	calls   *lru[*call] // INVITE dialogs the fraud detector follows

	// onFinding is called (under mu) for every recorded finding: the
	// alert channel (--fail2ban-log).
	onFinding func(Finding)
}

// New returns a detector armed as cfg says.
func New(cfg Config) *Detector {
	if cfg.History <= 0 {
		cfg.History = DefaultHistory
	}
	if cfg.MaxSources <= 0 {
		cfg.MaxSources = DefaultMaxSources
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = DefaultCooldown
	}
	d := &Detector{cfg: cfg, last: map[string]time.Time{}}
	d.sources = newLRU[*source](cfg.MaxSources)
	d.nonces = newLRU[nonceUse](MaxNonces)
	d.calls = newLRU[*call](MaxCalls)
	return d
}

// OnFinding sets the function every recorded finding is handed to (the
// alert channel). It runs on the engine's goroutine with the detector's
// lock held: it must not call back into the detector.
func (d *Detector) OnFinding(fn func(Finding)) {
	d.mu.Lock()
	d.onFinding = fn
	d.mu.Unlock()
}

// Armed lists the armed kinds, in vocabulary order.
func (d *Detector) Armed() []string {
	var out []string
	if d == nil {
		return out
	}
	for _, k := range Kinds {
		if (k == "scanner" && d.cfg.Scanner) || (k == "reg_flood" && d.cfg.RegFlood) || (k == "digest" && d.cfg.Digest) || (k == "fraud" && d.cfg.Fraud) {
			out = append(out, k)
		}
	}
	return out
}

// Disabled says why the armed detectors do not run ("" when they do).
func (d *Detector) Disabled() string {
	if d == nil {
		return ""
	}
	return d.cfg.Disabled
}

// running reports whether any detector observes messages.
func (d *Detector) running() bool {
	return d != nil && d.cfg.Disabled == "" && (d.cfg.Scanner || d.cfg.RegFlood || d.cfg.Digest || d.cfg.Fraud)
}

// Observe feeds one applied SIP message (never a retransmission or a
// capture duplicate) seen at ts from src to dst.
func (d *Detector) Observe(ts time.Time, src, dst netip.AddrPort, m *sip.Message) {
	if !d.running() || m == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ts.After(d.clock) {
		d.clock = ts
	}
	if !m.IsRequest {
		d.responses++
	}
	if d.cfg.Scanner || d.cfg.RegFlood {
		d.observeSource(ts, src, dst, m)
	}
	if d.cfg.Digest {
		d.observeDigest(ts, src, m)
	}
	if d.cfg.Fraud {
		d.observeFraud(ts, src, m)
	}
}

// record files a finding unless the rule fired for the source within the
// cooldown.
func (d *Detector) record(rule string, src netip.Addr, ts time.Time, detail string) {
	key := rule + "|" + src.String()
	if t, ok := d.last[key]; ok && ts.Sub(t) < d.cfg.Cooldown && !ts.Before(t) {
		d.stats.Suppressed++
		return
	}
	if len(d.last) >= 2*d.cfg.MaxSources {
		// The cooldown map is attacker-keyed too: forget it wholesale
		// (a repeat may then be recorded again; never evidence lost).
		clear(d.last)
	}
	d.last[key] = ts
	if len(detail) > MaxDetailBytes {
		detail = detail[:MaxDetailBytes] + "…[truncated]"
	}
	f := Finding{Rule: rule, Src: src, Detail: detail, TS: ts}
	if d.ring == nil {
		d.ring = make([]Finding, 0, min(d.cfg.History, 64))
	}
	if len(d.ring) < d.cfg.History {
		d.ring = append(d.ring, f)
	} else {
		d.ring[d.head] = f
		d.head = (d.head + 1) % d.cfg.History
		d.stats.FindingsEvicted++
	}
	d.stats.FindingsRecorded++
	if d.onFinding != nil {
		d.onFinding(f)
	}
}

// Findings returns every held finding, newest first (by timestamp, then
// rule and source for a stable order). It first settles the scanner's
// open windows against the latest capture time, so probes that waited
// past the answer wait count as unanswered.
func (d *Detector) Findings() []Finding {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.settle()
	out := slices.Clone(d.ring)
	slices.SortStableFunc(out, func(a, b Finding) int {
		if c := b.TS.Compare(a.TS); c != 0 {
			return c
		}
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return a.Src.Compare(b.Src)
	})
	return out
}

// Stats returns the counters.
func (d *Detector) Stats() Stats {
	if d == nil {
		return Stats{Armed: []string{}}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.Armed = d.Armed()
	if s.Armed == nil {
		s.Armed = []string{}
	}
	s.SourcesEvicted = d.sources.evicted
	s.NoncesEvicted = d.nonces.evicted
	s.CallsEvicted = d.calls.evicted
	return s
}

// Settle evaluates open windows now (the tools call Findings, which does
// it; a batch run's end does it too).
func (d *Detector) Settle() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.settle()
	d.mu.Unlock()
}
