package security

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// loadArmed runs a capture made here (testdata/made) through an engine
// whose detectors cfg arms.
func loadArmed(t *testing.T, cfg detect.Config, name string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, engine.Config{Node: "test", Detect: detect.New(cfg)}, filepath.Join(testcap.Root(), "testdata", "made", name))
}

var armedAll = detect.Config{Scanner: true, RegFlood: true, Digest: true}

type findingsAnswer struct {
	Findings []struct {
		FindingID string    `json:"finding_id"`
		RuleName  string    `json:"rule_name"`
		Kind      string    `json:"kind"`
		SrcIP     string    `json:"src_ip"`
		Detail    string    `json:"detail"`
		Timestamp time.Time `json:"timestamp"`
	} `json:"findings"`
	Returned        int      `json:"returned"`
	TotalMatched    int      `json:"total_matched"`
	Truncated       *bool    `json:"truncated"`
	ArmedKinds      []string `json:"armed_kinds"`
	DetectionArmed  bool     `json:"detection_armed"`
	Note            string   `json:"note"`
	ObservationGaps []struct {
		RuleName string `json:"rule_name"`
		Reason   string `json:"reason"`
		Seen     int    `json:"seen"`
	} `json:"observation_gaps"`
	SourceExhausted bool `json:"source_exhausted"`
	SchemaVersion   int  `json:"schema_version"`
}

func (a findingsAnswer) ids() string {
	var out []string
	for _, f := range a.Findings {
		out = append(out, f.FindingID)
	}
	return strings.Join(out, " ")
}

// TestSecurityFindingsOnSipvicious reads testdata/made/sipvicious-scan.pcap
// (SIPVicious svmap and svwar against kamailio): the four findings of
// core/detect's TestFindingsOnRealTraffic, checked there against tshark.
func TestSecurityFindingsOnSipvicious(t *testing.T) {
	const (
		rate   = "scanner_rate@10.98.0.1@2026-12-02T16:39:29.90547Z"
		digest = "digest_weak_algorithm@10.98.0.2@2026-12-02T16:39:29.900165Z"
		enum   = "scanner_enumeration@10.98.0.1@2026-12-02T16:39:26.304799Z"
		ua     = "scanner_detected@10.98.0.1@2026-12-02T16:39:25.765538Z"
	)
	c := loadArmed(t, armedAll, "sipvicious-scan.pcap")
	tests := []struct {
		name      string
		args      string
		ids       string
		total     int
		truncated bool
		note      string
		gaps      int
	}{
		{"every finding, newest first", `{}`, rate + " " + digest + " " + enum + " " + ua, 4, false, "", 2},
		{"digest only", `{"kinds":["digest"]}`, digest, 1, false, "", 0},
		{"scanner kinds, twice named", `{"kinds":["scanner","scanner"]}`, rate + " " + enum + " " + ua, 3, false, "", 2},
		{"strictly after the enumeration finding", `{"since":"2026-12-02T16:39:26.304799Z"}`, rate + " " + digest, 2, false, "", 2},
		{"limit 1 of 4: truncated", `{"limit":1}`, rate, 4, true, "", 2},
		{"fraud: in the vocabulary, not armed here", `{"kinds":["fraud"]}`, "", 0, false, "fraud is not armed", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got findingsAnswer
			call(t, c, "security_findings", tt.args, &got)
			if got.ids() != tt.ids || got.TotalMatched != tt.total || got.Returned != len(got.Findings) || got.Truncated == nil || *got.Truncated != tt.truncated {
				t.Errorf("ids %q total %d truncated %v; want %q total %d truncated %v", got.ids(), got.TotalMatched, got.Truncated, tt.ids, tt.total, tt.truncated)
			}
			if !got.DetectionArmed || strings.Join(got.ArmedKinds, ",") != "scanner,digest,reg_flood" || !got.SourceExhausted || got.SchemaVersion != 1 {
				t.Errorf("envelope %+v", got)
			}
			if !strings.Contains(got.Note, tt.note) || (tt.note == "" && got.Note != "") {
				t.Errorf("note %q, want %q", got.Note, tt.note)
			}
			if len(got.ObservationGaps) != tt.gaps {
				t.Errorf("gaps %+v, want %d", got.ObservationGaps, tt.gaps)
			}
		})
	}
	var all findingsAnswer
	call(t, c, "security_findings", `{}`, &all)
	if d := all.Findings[3].Detail; !strings.HasPrefix(d, sdk.FenceOpen) || unfence(d) != `ua="friendly-scanner" method="OPTIONS" signature=friendly-scanner` {
		t.Errorf("detail %q: want the User-Agent, fenced", d)
	}
	// svmap's seven OPTIONS to addresses nothing listens on (tshark:
	// frames 3-9, never answered).
	if g := all.ObservationGaps[0]; g.RuleName != "scanner_rate" || g.Reason != "unanswered" || g.Seen != 7 {
		t.Errorf("gap %+v", g)
	}
}

// TestSecurityFindingsFraud reads testdata/made/fraud.pcap (SIPp): the
// two fraud findings core/detect's TestFindingsOnRealTraffic checks
// against tshark.
func TestSecurityFindingsFraud(t *testing.T) {
	var got findingsAnswer
	call(t, loadArmed(t, detect.Config{Fraud: true}, "fraud.pcap"), "security_findings", `{"kinds":["fraud"]}`, &got)
	if got.ids() != "fraud_wangiri@10.96.0.3@2026-12-02T16:56:27.595522Z fraud_sequential_scanning@10.96.0.1@2026-12-02T16:56:24.68005Z" ||
		got.Findings[0].Kind != "fraud" || strings.Join(got.ArmedKinds, ",") != "fraud" || got.Note != "" {
		t.Errorf("%+v", got)
	}
}

// TestSecurityFindingsSaysWhatWasNotWatching: nothing armed, or armed on
// the --cores path, answers an empty list that says so.
func TestSecurityFindingsSaysWhatWasNotWatching(t *testing.T) {
	tests := []struct {
		name    string
		cfg     detect.Config
		armed   string
		running bool
		note    string
	}{
		{"nothing armed", detect.Config{}, "", false, "nothing was watching"},
		{"armed on the --cores path", detect.Config{Scanner: true, Disabled: "the detectors run only on the single-core path (engine.md §13) and this run has --cores 2: nothing was observed"}, "scanner", false, "--cores 2"},
		{"digest asked, scanner armed", detect.Config{Scanner: true}, "scanner", true, "digest is not armed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got findingsAnswer
			call(t, loadArmed(t, tt.cfg, "reg-flood.pcap"), "security_findings", `{"kinds":["digest"]}`, &got)
			if len(got.Findings) != 0 || got.DetectionArmed != tt.running || strings.Join(got.ArmedKinds, ",") != tt.armed {
				t.Errorf("%+v", got)
			}
			if !strings.Contains(got.Note, tt.note) {
				t.Errorf("note %q, want %q", got.Note, tt.note)
			}
		})
	}
}

func TestSecurityFindingsRefusals(t *testing.T) {
	c := loadArmed(t, armedAll, "reg-flood.pcap")
	tests := []struct {
		name, args, says string
	}{
		{"reg-flood: the alert grammar spelling", `{"kinds":["reg-flood"]}`, "did you mean reg_flood"},
		{"unknown kind lists the vocabulary", `{"kinds":["scanners"]}`, "the kinds are: scanner, fraud, digest, reg_flood"},
		{"since not RFC 3339", `{"since":"yesterday"}`, "not an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := callErr(t, c, "security_findings", tt.args)
			if e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tt.says) {
				t.Errorf("%d %q, want -32602 saying %q", e.Code, e.Message, tt.says)
			}
		})
	}
}

// TestDescribeEndpointShowsTheAddressFindings: describe_endpoint's
// findings block holds the findings about the address (the scanner's
// three on testdata/made/sipvicious-scan.pcap), none for a user.
func TestDescribeEndpointShowsTheAddressFindings(t *testing.T) {
	c := loadArmed(t, armedAll, "sipvicious-scan.pcap")
	var got struct {
		Findings findingsAnswer `json:"findings"`
	}
	call(t, c, "describe_endpoint", `{"ip":"10.98.0.1","limit":2}`, &got)
	if f := got.Findings; f.ids() != "scanner_rate@10.98.0.1@2026-12-02T16:39:29.90547Z scanner_enumeration@10.98.0.1@2026-12-02T16:39:26.304799Z" ||
		f.TotalMatched != 3 || !f.DetectionArmed || f.Note != "" {
		t.Errorf("findings %+v", f)
	}
	call(t, c, "describe_endpoint", `{"user":"100"}`, &got)
	if f := got.Findings; len(f.Findings) != 0 || !strings.Contains(f.Note, "describe the endpoint by ip") {
		t.Errorf("by user: %+v", f)
	}
}
