package security

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/sdk"
)

// FindingRow is one finding as the tools show it.
type FindingRow struct {
	// FindingID is <rule_name>@<src_ip>@<timestamp>, derived from the
	// finding (generate_fail2ban_rule takes it).
	FindingID string `json:"finding_id" desc:"<rule_name>@<src_ip>@<timestamp>: generate_fail2ban_rule's argument"`
	RuleName  string `json:"rule_name" desc:"rule that fired"`
	Kind      string `json:"kind" desc:"detector: scanner, fraud, digest, reg_flood"`
	SrcIP     string `json:"src_ip" desc:"address the finding is about"`
	// Detail is the measured evidence; it may quote a sender-written
	// value (a User-Agent), so it is fenced.
	Detail    string    `json:"detail" desc:"measured evidence (fenced: may quote sender text)"`
	Timestamp time.Time `json:"timestamp" desc:"capture time the evidence was complete"`
}

// ObservationGap is a rule's blind spot (core/detect.Gap).
type ObservationGap struct {
	RuleName      string `json:"rule_name" desc:"rule"`
	Reason        string `json:"reason" desc:"no_answers (capture holds no SIP response) or unanswered"`
	Seen          uint64 `json:"seen" desc:"requests the rule examined that were never answered"`
	Unestablished uint64 `json:"unestablished" desc:"their sources never seen completing a registration or call"`
	Detail        string `json:"detail" desc:"what the gap hides"`
}

// detectorKinds parses security_findings' kinds: unknown names are
// refused with the vocabulary (design notes: security_findings.kinds
// refusal), reg-flood with a suggestion of reg_flood.
func detectorKinds(kinds []string) ([]string, error) {
	var out []string
	for _, k := range kinds {
		if !slices.Contains(detect.Kinds, k) {
			hint := ""
			if strings.EqualFold(strings.ReplaceAll(k, "-", "_"), "reg_flood") {
				hint = " (did you mean reg_flood? the alert grammar spells it reg-flood, this tool reg_flood)"
			}
			return nil, sdk.Refuse(sdk.KindInvalidArgument, "kinds", "unknown kind %q%s; the kinds are: %s",
				clipArg(k), hint, strings.Join(detect.Kinds, ", ")).Accepting(detect.Kinds)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func clipArg(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// selectFindings filters the held findings (newest first) by kind (none:
// every kind), strictly after since (zero: any) and source address
// (invalid: any).
func selectFindings(all []detect.Finding, kinds []string, since time.Time, ip netip.Addr) []detect.Finding {
	var out []detect.Finding
	for _, f := range all {
		if len(kinds) > 0 && !slices.Contains(kinds, detect.KindOf(f.Rule)) {
			continue
		}
		if !since.IsZero() && !f.TS.After(since) {
			continue
		}
		if ip.IsValid() && f.Src != ip {
			continue
		}
		out = append(out, f)
	}
	return out
}

func findingRow(c *sdk.Call, f detect.Finding) FindingRow {
	return FindingRow{
		FindingID: f.ID(), RuleName: f.Rule, Kind: detect.KindOf(f.Rule), SrcIP: f.Src.String(),
		Detail: c.Fence(f.Detail), Timestamp: f.TS,
	}
}

// armedNote says why a list may be empty or partial: nothing armed, the
// detectors not running, a requested kind not armed (fraud is not in
// this build), evidence shed at a cap. "" when nothing needs saying.
func armedNote(det *detect.Detector, kinds []string) string {
	armed := det.Armed()
	var parts []string
	switch {
	case len(armed) == 0:
		parts = append(parts, "no detector is armed (--detect-scanner, --reg-flood, --digest-leak, --fraud-detect): nothing was watching, so an empty list is not a clean bill")
	case det.Disabled() != "":
		parts = append(parts, "armed but not running: "+det.Disabled())
	}
	for _, k := range kinds {
		if len(armed) > 0 && !slices.Contains(armed, k) {
			parts = append(parts, k+" is not armed: no "+k+" finding could be recorded")
		}
	}
	s := det.Stats()
	if s.FindingsEvicted > 0 {
		parts = append(parts, fmt.Sprintf("the findings ring (--findings-history) overwrote %d older findings", s.FindingsEvicted))
	}
	if n := s.SourcesEvicted + s.TargetsDropped + s.PendingEvicted + s.NoncesEvicted; n > 0 {
		parts = append(parts, fmt.Sprintf("the detectors' tables shed evidence at their caps (sources %d, targets %d, pending %d, nonces %d): findings may be missing",
			s.SourcesEvicted, s.TargetsDropped, s.PendingEvicted, s.NoncesEvicted))
	}
	return strings.Join(parts, "; ")
}
