package filter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Thresholds are the run's settings the aliases expand with. They follow
// the run (flags and config), so the same alias can mean different numbers
// on two servers: sipnab://filter/<alias> shows this run's expansion.
type Thresholds struct {
	// PDDSeconds: slow-setup and problems match pdd > PDDSeconds
	// (--pdd-threshold; default 11, the E.721 figure).
	PDDSeconds float64
	// ShortCallSeconds: short-calls match completed calls with
	// duration < ShortCallSeconds (the fraud short-call threshold; default 3).
	ShortCallSeconds float64
	// LossPct: problems match rtp.loss > LossPct (percent; default 5).
	LossPct float64
	// JitterMs: problems match rtp.jitter > JitterMs (milliseconds; default 50).
	JitterMs float64
	// Retransmits: problems match retransmits > Retransmits (default 3).
	Retransmits int
}

// DefaultThresholds returns the defaults: PDD 11 s, short call 3 s, loss
// 5 %, jitter 50 ms, 3 retransmits. The zero Thresholds is not the
// defaults: it means thresholds of zero.
func DefaultThresholds() Thresholds {
	return Thresholds{PDDSeconds: 11, ShortCallSeconds: 3, LossPct: 5, JitterMs: 50, Retransmits: 3}
}

// Validate reports a threshold that is negative, NaN or infinite.
func (t Thresholds) Validate() error {
	var errs []error
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"pdd seconds", t.PDDSeconds},
		{"short-call seconds", t.ShortCallSeconds},
		{"loss percent", t.LossPct},
		{"jitter milliseconds", t.JitterMs},
		{"retransmits", float64(t.Retransmits)},
	} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0 {
			errs = append(errs, fmt.Errorf("%s threshold %v is not a finite number >= 0", c.name, c.v))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("checking filter thresholds: %w", errors.Join(errs...))
	}
	return nil
}

// AliasInfo describes one alias.
type AliasInfo struct {
	Name string // as written in an expression or in find_problems kinds
	Doc  string // what it selects, naming the threshold it follows
}

var aliasTable = []AliasInfo{
	{"problems", "Dialogs with any problem: failed, one-way audio, loss or jitter over the run's thresholds, NAT mismatch, retransmits over the threshold, slow setup, any asymmetry, or late media (orphaned RTP cannot select a dialog)."},
	{"slow-setup", "Dialogs whose post-dial delay is over the run's PDD threshold (--pdd-threshold)."},
	{"short-calls", "Completed calls shorter than the run's short-call threshold."},
	{"one-way", "Calls whose media flowed in one direction only."},
	{"nat-issues", "Calls whose media came from an address other than the one signalled."},
	{"codec-asym", "Calls whose two media legs used different codecs."},
	{"ptime-asym", "Calls whose two media legs used different packetization times."},
	{"payload-asym", "Calls whose two media legs used different RTP payload types."},
	{"duration-asym", "Calls whose two media legs lasted markedly different times."},
	{"late-media", "Calls whose first RTP came markedly after the answer."},
}

// Aliases returns the 10 aliases in documentation order (a fresh copy).
func Aliases() []AliasInfo { return append([]AliasInfo(nil), aliasTable...) }

// IsAlias reports whether name is one of the 10 aliases (lowercase, exact).
func IsAlias(name string) bool {
	_, ok := aliasByName(name)
	return ok
}

func aliasByName(name string) (int, bool) {
	for i, a := range aliasTable {
		if a.Name == name {
			return i, true
		}
	}
	return 0, false
}

func aliasNames() []string {
	out := make([]string, len(aliasTable))
	for i, a := range aliasTable {
		out[i] = a.Name
	}
	return out
}

// boolAlias maps the single-flag aliases to their boolean field.
var boolAlias = map[string]string{
	"one-way":       "one_way",
	"nat-issues":    "nat_mismatch",
	"codec-asym":    "codec_asymmetry",
	"ptime-asym":    "ptime_asymmetry",
	"payload-asym":  "payload_asymmetry",
	"duration-asym": "duration_asymmetry",
	"late-media":    "late_media",
}

// ExpandAlias renders alias name as the expression it stands for, with the
// run's thresholds, in canonical form (the String of its compiled filter).
// It is the single definition of every alias: Compile compiles this text
// for an alias in an expression, find_problems compiles it for its kinds,
// and sipnab://filter/<alias> shows it. ok is false for an unknown name.
func ExpandAlias(name string, th Thresholds) (expr string, ok bool) {
	if f, ok := boolAlias[name]; ok {
		return f + " == true", true
	}
	switch name {
	case "slow-setup":
		return "pdd > " + formatNum(th.PDDSeconds), true
	case "short-calls":
		return "state == Completed and duration < " + formatNum(th.ShortCallSeconds), true
	case "problems":
		return strings.Join([]string{
			"state == Failed",
			"one_way == true",
			"rtp.loss > " + formatNum(th.LossPct),
			"rtp.jitter > " + formatNum(th.JitterMs),
			"nat_mismatch == true",
			"retransmits > " + strconv.Itoa(th.Retransmits),
			"pdd > " + formatNum(th.PDDSeconds),
			"codec_asymmetry == true",
			"ptime_asymmetry == true",
			"payload_asymmetry == true",
			"duration_asymmetry == true",
			"late_media == true",
		}, " or "), true
	}
	return "", false
}

// ErrUnknownKind is wrapped by CompileKinds for a name that is not an alias.
var ErrUnknownKind = errors.New("unknown problem kind")

// CompileKinds compiles find_problems' kinds: the named aliases OR-ed
// together. An empty list means the default, ["problems"]. A name that is
// not an alias returns an error wrapping ErrUnknownKind that lists the
// valid names (and suggests the nearest one).
func CompileKinds(kinds []string, th Thresholds) (*Filter, error) {
	if len(kinds) == 0 {
		kinds = []string{"problems"}
	}
	var bad []string
	for _, k := range kinds {
		if !IsAlias(k) {
			msg := strconv.Quote(k)
			if s := suggest(k, aliasNames()); s != "" {
				msg += " (did you mean " + s + "?)"
			}
			bad = append(bad, msg)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w %s; kinds are %s", ErrUnknownKind, strings.Join(bad, ", "), strings.Join(aliasNames(), ", "))
	}
	return Compile(strings.Join(dedupe(kinds), " or "), th)
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		dup := false
		for _, o := range out {
			if o == s {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}
