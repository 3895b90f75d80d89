package analysis

// Evidence of a verdict: every conclusion names the
// clause that fired, the rule (a stable id), the values it measured, the
// threshold it compared them with and the messages and frames that prove
// it. A dialog's verdict is derived from its clauses (VerdictOf), and a
// clause is built only by NewClause, which refuses a rule it does not know
// and a clause that measured nothing: a verdict other than none without
// evidence cannot be built. A rule whose inputs were not measured does not
// fire; Diagnose says so in not_judged instead.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/packet"
)

// Rule families: which half of a verdict a rule's clause counts toward.
const (
	FamilySignaling = "signaling"
	FamilyMedia     = "media"
	// FamilyCapture rules judge the capture as a whole (what was not read,
	// orphaned media): they make capture findings, never a dialog verdict.
	FamilyCapture = "capture"
)

// RuleInfo describes one rule.
type RuleInfo struct {
	// ID is the rule's stable id, the clause's rule.
	ID string
	// Family is signaling, media or capture.
	Family string
	// Problem: a clause of this rule makes its family's half of the
	// verdict a problem. False for an observation (a weak signal kept
	// apart, never a problem).
	Problem bool
	// Inputs are the values the rule must have measured to fire: a clause
	// lacking one of them is refused.
	Inputs []string
	// Doc says in one line what the rule concludes and on what test.
	Doc string
	// Requires, when set, says why measured values cannot support the
	// rule ("" when they can): a count of zero that means the capture
	// could not see what the rule judges.
	Requires func(v map[string]float64) string
}

// rules is the registry of every rule a clause may name. A helper adding a
// finding adds its rule here, with the inputs it must measure.
var rules = map[string]RuleInfo{}

func init() {
	for _, r := range []RuleInfo{
		// signaling (engine.md §11)
		{"final_failure", FamilySignaling, true, []string{"code"}, "the dialog ended on a 4xx/5xx/6xx final response", nil},
		{"auth_loop", FamilySignaling, true, []string{"challenges"}, "at least 3 401/407 and no 2xx", nil},
		{"retransmissions", FamilySignaling, true, []string{"copies"}, "a request re-sent (RFC 3261 §17) with no response at all", nil},
		{"ack_missing", FamilySignaling, true, []string{"waited_ms"}, "a 2xx to INVITE with no ACK within Timer H (32 s)", nil},
		{"abandoned_cancelled", FamilySignaling, true, []string{"cseq"}, "the caller sent CANCEL", nil},
		{"abandoned_no_final_response", FamilySignaling, true, []string{"waited_ms"}, "no final response to the INVITE within Timer C (180 s)", nil},
		{"post_dial_delay", FamilySignaling, true, []string{"pdd_ms"}, "INVITE to the first 18x over the PDD threshold", nil},
		{"registration_failure", FamilySignaling, true, []string{"code"}, "a REGISTER refused, only challenged, or challenged in a loop", nil},
		{"icmp_unreachable", FamilySignaling, true, []string{"errors"}, "ICMP/ICMPv6 errors (port or host unreachable, prohibited, too big, time exceeded) quote the dialog's messages", nil},
		{"registration_shortened_expiry", FamilySignaling, true, []string{"requested_expiry_sec", "granted_expiry_sec"}, "a REGISTER granted a shorter expiry than asked", nil},
		// media (engine.md §10)
		{"one_way_audio", FamilyMedia, true, []string{"loud_packets", "quiet_packets"}, "an answered call's media flowed one way only", nil},
		{"no_media", FamilyMedia, true, []string{"rtp_streams", "capture_rtp_packets"}, "SDP negotiated, call answered, no RTP while the capture point saw RTP", requireCaptureRTP},
		{"nat_mismatch", FamilyMedia, true, []string{"streams"}, "RTP sent from an address:port the SDP did not announce", nil},
		{"private_media_address", FamilyMedia, true, []string{"private_addresses"}, "an SDP announces a private address to a public peer", nil},
		{"codec_asymmetry", FamilyMedia, true, []string{"forward_streams", "reverse_streams"}, "the two directions use different codecs", nil},
		{"ptime_asymmetry", FamilyMedia, true, []string{"forward_ptime_ms", "reverse_ptime_ms"}, "the two directions' ptimes differ by more than 5 ms", nil},
		{"payload_asymmetry", FamilyMedia, true, []string{"forward_streams", "reverse_streams"}, "same codec, different RTP payload types", nil},
		{"duration_asymmetry", FamilyMedia, true, []string{"forward_ms", "reverse_ms"}, "one direction's media lasted ≥5% and ≥2 s longer", nil},
		{"late_media", FamilyMedia, true, []string{"late_ms"}, "first RTP more than 500 ms after the answer", nil},
		{"high_loss", FamilyMedia, true, []string{"loss_pct", "expected"}, "a stream's RFC 3550 loss over the loss threshold", nil},
		{"high_jitter", FamilyMedia, true, []string{"jitter_ms", "packets"}, "a stream's RFC 3550 jitter over the jitter threshold", nil},
		// capture: what the whole capture shows, and what was not read
		{"orphaned_media", FamilyCapture, false, []string{"packets"}, "an RTP stream no dialog's SDP announced", nil},
		{"streams_evicted", FamilyCapture, true, []string{"evicted"}, "streams dropped at the --max-streams cap", nil},
		{"dialogs_evicted", FamilyCapture, true, []string{"evicted"}, "dialogs dropped or refused at the dialog cap", nil},
		{"messages_dropped", FamilyCapture, true, []string{"evicted"}, "SIP messages past the per-dialog retention cap", nil},
		{"media_endpoints_evicted", FamilyCapture, true, []string{"evicted"}, "SDP media endpoints forgotten at the cap", nil},
		{"rtp_candidates_evicted", FamilyCapture, true, []string{"evicted"}, "unsignaled flows dropped before they proved to be RTP", nil},
		{"undecodable", FamilyCapture, true, []string{"frames"}, "frames that could not be decoded", nil},
		{"port_gated_sip", FamilyCapture, true, []string{"messages"}, "SIP seen on ports not analysed", nil},
		{"icmp_quoting_media", FamilyCapture, true, []string{"errors"}, "ICMP errors quote an RTP stream's datagrams (media sent to a closed port or an unreachable host)", nil},
		{"icmp_unmatched", FamilyCapture, false, []string{"errors"}, "ICMP errors quoting SIP that no dialog could be tied to (an observation)", nil},
		{"rtcp_malformed", FamilyCapture, false, []string{"packets"}, "RTCP datagrams that did not parse whole", nil},
		{"malformed_sip", FamilyCapture, true, []string{"messages"}, "SIP the parser flagged as malformed (RFC 3261 §7.5 junk before the start line, §20.14 Content-Length, missing mandatory headers)", nil},
		{"media_not_captured", FamilyCapture, false, []string{"answered_calls_with_sdp", "rtp_streams"}, "no RTP anywhere in the capture: calls' media not judged (an observation)", nil},
	} {
		RegisterRule(r)
	}
}

// RegisterRule adds a rule to the registry (at init time; not safe to call
// concurrently with diagnosis). It panics on a duplicate id, an unknown
// family or a rule without inputs: a programming error caught by the first
// test.
func RegisterRule(r RuleInfo) {
	switch {
	case r.ID == "":
		panic("analysis: rule without an id")
	case r.Family != FamilySignaling && r.Family != FamilyMedia && r.Family != FamilyCapture:
		panic(fmt.Sprintf("analysis: rule %q: unknown family %q", r.ID, r.Family))
	case len(r.Inputs) == 0:
		panic(fmt.Sprintf("analysis: rule %q declares no inputs", r.ID))
	}
	if _, dup := rules[r.ID]; dup {
		panic(fmt.Sprintf("analysis: rule %q registered twice", r.ID))
	}
	rules[r.ID] = r
}

// Rules returns every registered rule, sorted by id.
func Rules() []RuleInfo {
	out := make([]RuleInfo, 0, len(rules))
	for _, r := range rules {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LookupRule returns a registered rule.
func LookupRule(id string) (RuleInfo, bool) {
	r, ok := rules[id]
	return r, ok
}

// Clause is one rule that fired, with its evidence. Build it with
// NewClause.
type Clause struct {
	// Rule is the rule's stable id (explain_rule, docs/bundles/core.md).
	Rule string `json:"rule" desc:"rule id"`
	// Values are the measured values the rule judged, by name (the name
	// carries the unit: _ms, _pct, _sec; counts bare).
	Values map[string]float64 `json:"values" nonnull:"true" desc:"measured values"`
	// Threshold are the limits the values were compared with; absent for
	// a rule without one (a final failure, a missing direction).
	Threshold map[string]float64 `json:"threshold,omitempty" desc:"limits compared with"`
	// Observed are measured facts that are not numbers (a codec per
	// direction, a stream's SSRC); absent when none.
	Observed map[string]string `json:"observed,omitempty" desc:"measured non-numeric facts"`
	// Messages are the indexes (get_dialog's) of the messages that prove
	// it; absent when none was retained or the rule rests on RTP.
	Messages []int `json:"messages,omitempty" desc:"proving message indexes"`
	// Frames are the evidence pointers (<source>#<ordinal>@<digest>,
	// show_evidence) of those messages, or of a stream's first packet;
	// absent when the source kept none (a live source).
	Frames []string `json:"frames,omitempty" desc:"proving frame pointers"`
}

// NewClause builds the clause of a rule that fired on measured values. It
// refuses an unknown rule and a clause lacking one of the rule's inputs
// (a rule whose inputs were not measured does not fire); the error names
// what is missing.
func NewClause(rule string, values map[string]float64) (Clause, error) {
	r, ok := rules[rule]
	if !ok {
		return Clause{}, fmt.Errorf("unknown rule %q", rule)
	}
	var missing []string
	for _, in := range r.Inputs {
		if _, ok := values[in]; !ok {
			missing = append(missing, in)
		}
	}
	if len(missing) > 0 {
		return Clause{}, fmt.Errorf("rule %s: %s not measured", rule, strings.Join(missing, ", "))
	}
	if r.Requires != nil {
		if why := r.Requires(values); why != "" {
			return Clause{}, fmt.Errorf("rule %s: %s", rule, why)
		}
	}
	v := make(map[string]float64, len(values))
	for k, x := range values {
		v[k] = x
	}
	return Clause{Rule: rule, Values: v}, nil
}

// WithThreshold sets the limit a value was compared with.
func (c Clause) WithThreshold(name string, v float64) Clause {
	t := make(map[string]float64, len(c.Threshold)+1)
	for k, x := range c.Threshold {
		t[k] = x
	}
	t[name] = v
	c.Threshold = t
	return c
}

// WithObserved adds a measured fact that is not a number.
func (c Clause) WithObserved(name, v string) Clause {
	o := make(map[string]string, len(c.Observed)+1)
	for k, x := range c.Observed {
		o[k] = x
	}
	o[name] = v
	c.Observed = o
	return c
}

// WithMessages adds message indexes (sorted, deduplicated) and, when the
// frame pointers of the dialog's messages are known, their frames.
func (c Clause) WithMessages(frames []packet.FrameRef, idx ...int) Clause {
	if len(idx) == 0 {
		return c
	}
	c.Messages = sortedIndexes(c.Messages, idx)
	c.Frames = nil
	for _, i := range c.Messages {
		if i >= 0 && i < len(frames) && !frames[i].IsZero() {
			c.Frames = append(c.Frames, frames[i].String())
		}
	}
	return c
}

// WithFrames adds evidence pointers (empty ones skipped).
func (c Clause) WithFrames(refs ...string) Clause {
	for _, r := range refs {
		if r != "" && !containsString(c.Frames, r) {
			c.Frames = append(c.Frames, r)
		}
	}
	return c
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Valid reports why a clause cannot stand as evidence: an unknown rule, or
// a registered input missing from its values. Nil for a sound clause.
func (c *Clause) Valid() error {
	r, ok := rules[c.Rule]
	if !ok {
		return fmt.Errorf("unknown rule %q", c.Rule)
	}
	for _, in := range r.Inputs {
		if _, ok := c.Values[in]; !ok {
			return fmt.Errorf("rule %s: %s not measured", c.Rule, in)
		}
	}
	if r.Requires != nil {
		if why := r.Requires(c.Values); why != "" {
			return fmt.Errorf("rule %s: %s", c.Rule, why)
		}
	}
	return nil
}

// requireCaptureRTP: a call without RTP says nothing about its media when
// the capture holds no RTP at all (the capture point does not see media).
func requireCaptureRTP(v map[string]float64) string {
	if v["capture_rtp_packets"] < 1 {
		return "the capture holds no RTP at all: media was not captured at this point"
	}
	return ""
}

// Family returns the family of the clause's rule ("" when unknown).
func (c *Clause) Family() string { return rules[c.Rule].Family }

// Problem reports whether the clause makes its half of a verdict a
// problem: its rule is a registered problem rule and the clause is valid.
func (c *Clause) Problem() bool { return rules[c.Rule].Problem && c.Valid() == nil }

// ProblemIn reports whether any sound clause of family makes a problem.
func ProblemIn(cs []Clause, family string) bool {
	for i := range cs {
		if cs[i].Family() == family && cs[i].Problem() {
			return true
		}
	}
	return false
}

// VerdictOf derives a dialog's verdict from the clauses that fired:
// signaling, media or both when a sound problem clause of that family is
// among them, none otherwise. It is the only way a verdict is made.
func VerdictOf(cs []Clause) string {
	sig, med := ProblemIn(cs, FamilySignaling), ProblemIn(cs, FamilyMedia)
	switch {
	case sig && med:
		return "both"
	case sig:
		return "signaling"
	case med:
		return "media"
	}
	return "none"
}

// evidenceOf collects clauses, turning a refused one into a not-judged
// entry rather than dropping it.
type evidenceOf struct {
	clauses []Clause
	refused []NotJudged
}

// add keeps c when err is nil; a clause NewClause refused is reported as a
// detection not judged, with the reason.
func (e *evidenceOf) add(c Clause, err error) {
	if err != nil {
		e.refused = append(e.refused, NotJudged{Detection: ruleOfErr(err), Reason: err.Error()})
		return
	}
	e.clauses = append(e.clauses, c)
}

func ruleOfErr(err error) string {
	s := err.Error()
	if r, ok := strings.CutPrefix(s, "rule "); ok {
		if i := strings.IndexByte(r, ':'); i > 0 {
			return r[:i]
		}
	}
	return "unknown"
}

// String renders a clause on one line for a person: the rule, the
// measured values and facts, the threshold, the messages and frames
// ("high_loss: expected=42 loss_pct=64.286; threshold loss_pct=5; ssrc=0x…;
// frames f#28@…"). Observed facts may be sender text: a renderer cleans
// the line as it cleans any capture text.
func (c Clause) String() string {
	var b strings.Builder
	b.WriteString(c.Rule)
	b.WriteString(":")
	for _, k := range sortedKeys(c.Values) {
		fmt.Fprintf(&b, " %s=%s", k, strconv.FormatFloat(c.Values[k], 'f', -1, 64))
	}
	if len(c.Threshold) > 0 {
		b.WriteString("; threshold")
		for _, k := range sortedKeys(c.Threshold) {
			fmt.Fprintf(&b, " %s=%s", k, strconv.FormatFloat(c.Threshold[k], 'f', -1, 64))
		}
	}
	if len(c.Observed) > 0 {
		b.WriteString(";")
		for _, k := range sortedKeys(c.Observed) {
			fmt.Fprintf(&b, " %s=%s", k, c.Observed[k])
		}
	}
	if len(c.Messages) > 0 {
		b.WriteString("; messages")
		for _, i := range c.Messages {
			fmt.Fprintf(&b, " %d", i)
		}
	}
	if len(c.Frames) > 0 {
		b.WriteString("; frames " + strings.Join(c.Frames, " "))
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
