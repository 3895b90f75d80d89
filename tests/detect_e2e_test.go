package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/testcap"
)

// madeCopy copies a capture made here (testdata/made) into a directory
// the server can read.
func madeCopy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testcap.Root(), "testdata", "made", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sharedDir(t), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDetectorsE2E arms the detectors on the two captures made with real
// peers (testdata/made/sipvicious-scan.sh: SIPVicious svmap and svwar
// against kamailio; testdata/made/reg-flood.sh: a SIPp REGISTER flood
// answered 401), reads security_findings and generate_fail2ban_rule over
// stdio through the built binary, and proves each generated filter
// against the real peer: fail2ban-regex over the log the binary wrote
// with --fail2ban-log matches exactly as many lines as the rule has
// findings, each for the finding's address.
func TestDetectorsE2E(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logPath := filepath.Join(t.TempDir(), "sipnab-fail2ban.log")
	s := sigSession(t, ctx, "--mcp-tools", "core,security", "--detect-scanner", "--reg-flood", "--digest-leak", "--fraud-detect",
		"--fail2ban-log", logPath, "-I", madeCopy(t, "sipvicious-scan.pcap"), "-I", madeCopy(t, "reg-flood.pcap"), "-I", madeCopy(t, "fraud.pcap"))
	defer s.close()
	waitLoaded(t, ctx, s)

	type row struct {
		FindingID string `json:"finding_id"`
		RuleName  string `json:"rule_name"`
		SrcIP     string `json:"src_ip"`
		Detail    string `json:"detail"`
	}
	var sf struct {
		Findings        []row    `json:"findings"`
		Returned        int      `json:"returned"`
		TotalMatched    int      `json:"total_matched"`
		ArmedKinds      []string `json:"armed_kinds"`
		DetectionArmed  bool     `json:"detection_armed"`
		ObservationGaps []struct {
			RuleName string `json:"rule_name"`
			Reason   string `json:"reason"`
			Seen     int    `json:"seen"`
		} `json:"observation_gaps"`
	}
	sigCall(t, ctx, s, "security_findings", map[string]any{}, &sf)
	// The findings core/detect's TestFindingsOnRealTraffic checks against
	// tshark: 4 on sipvicious-scan.pcap (scanner_detected, _enumeration
	// and _rate for 10.98.0.1, MD5 challenges from kamailio at
	// 10.98.0.2); on reg-flood.pcap reg_flood for 10.97.0.1, scanner_rate
	// for both SIPp clients (more than 10 REGISTERs rejected 401 within
	// 5 s) and MD5 challenges from the SIPp UAS at 10.97.0.2; on
	// fraud.pcap wangiri for 10.96.0.3 and sequential scanning for
	// 10.96.0.1.
	want := []string{
		"fraud_wangiri@10.96.0.3@2026-12-02T16:56:27.595522Z",
		"fraud_sequential_scanning@10.96.0.1@2026-12-02T16:56:24.68005Z",
		"scanner_rate@10.97.0.3@2026-12-02T16:44:24.212041Z",
		"reg_flood@10.97.0.1@2026-12-02T16:44:23.308283Z",
		"scanner_rate@10.97.0.1@2026-12-02T16:44:23.107971Z",
		"digest_weak_algorithm@10.97.0.2@2026-12-02T16:44:23.059745Z",
		"scanner_rate@10.98.0.1@2026-12-02T16:39:29.90547Z",
		"digest_weak_algorithm@10.98.0.2@2026-12-02T16:39:29.900165Z",
		"scanner_enumeration@10.98.0.1@2026-12-02T16:39:26.304799Z",
		"scanner_detected@10.98.0.1@2026-12-02T16:39:25.765538Z",
	}
	var got []string
	for _, f := range sf.Findings {
		got = append(got, f.FindingID)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || sf.TotalMatched != 10 || sf.Returned != 10 || !sf.DetectionArmed ||
		strings.Join(sf.ArmedKinds, ",") != "scanner,fraud,digest,reg_flood" {
		t.Fatalf("security_findings: %v (total %d, armed %v %v), want %v", got, sf.TotalMatched, sf.ArmedKinds, sf.DetectionArmed, want)
	}
	if d := sf.Findings[9].Detail; !strings.Contains(d, "⟦untrusted-capture-data⟧") || !strings.Contains(d, `ua="friendly-scanner"`) {
		t.Errorf("scanner_detected detail %q: want the User-Agent, fenced", d)
	}
	if len(sf.ObservationGaps) != 2 || sf.ObservationGaps[0].Reason != "unanswered" || sf.ObservationGaps[0].Seen != 7 {
		t.Errorf("observation_gaps %+v: want svmap's 7 unanswered OPTIONS under both behavioural rules", sf.ObservationGaps)
	}

	var since struct {
		Findings []row `json:"findings"`
	}
	sigCall(t, ctx, s, "security_findings", map[string]any{"kinds": []string{"reg_flood", "scanner"}, "since": "2026-12-02T16:44:23.107971Z"}, &since)
	if len(since.Findings) != 2 || since.Findings[0].RuleName != "scanner_rate" || since.Findings[1].RuleName != "reg_flood" {
		t.Errorf("kinds reg_flood,scanner strictly after 16:44:23.107971: %+v", since.Findings)
	}

	r, err := s.result(ctx, "generate_fail2ban_rule", map[string]any{"finding_id": "scanner_rate@10.0.0.9@2026-12-02T16:44:24Z"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.isError || !strings.Contains(r.texts[0], "This server holds: "+want[0]+", ") || !strings.Contains(r.texts[0], want[9]) {
		t.Errorf("unknown finding: %v, want every held id listed", r.texts)
	}
	r, err = s.result(ctx, "generate_fail2ban_rule", map[string]any{"finding_id": "scanner.*@10.98.0.1@2026-12-02T16:39:25.765538Z"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.isError || !strings.Contains(r.texts[0], "bare identifier") {
		t.Errorf("rule_name with regex metacharacters: %v", r.texts)
	}

	regexBin, err := exec.LookPath("fail2ban-regex")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("fail2ban-regex is not installed (Debian package fail2ban; .ci/run installs it)")
		}
		t.Skip("fail2ban-regex is not installed (Debian package fail2ban): the generated filters cannot be proved")
	}
	perRule := map[string][]row{}
	for _, f := range sf.Findings {
		perRule[f.RuleName] = append(perRule[f.RuleName], f)
	}
	dir := t.TempDir()
	matched := regexp.MustCompile(`Lines: (\d+) lines, 0 ignored, (\d+) matched, (\d+) missed`)
	for rule, fs := range perRule {
		var fr struct {
			FilterName string `json:"filter_name"`
			FilterConf string `json:"filter_conf"`
			JailConf   string `json:"jail_conf"`
			Caveats    []string
		}
		sigCall(t, ctx, s, "generate_fail2ban_rule", map[string]any{"finding_id": fs[0].FindingID}, &fr)
		if fr.FilterName != "sipnab-"+rule || !strings.Contains(fr.JailConf, "maxretry = 3") || !strings.Contains(fr.JailConf, "port     = 5060,5061") ||
			len(fr.Caveats) != 3 {
			t.Errorf("%s: %+v", rule, fr)
		}
		filter := filepath.Join(dir, fr.FilterName+".conf")
		if err := os.WriteFile(filter, []byte(fr.FilterConf), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, regexBin, "-v", logPath, filter).CombinedOutput()
		if err != nil {
			t.Fatalf("fail2ban-regex %s: %v\n%s", rule, err, out)
		}
		m := matched.FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("fail2ban-regex %s: no summary line\n%s", rule, out)
		}
		// The log holds one line per finding (10); the filter matches the
		// rule's own, for the findings' addresses.
		if n, _ := strconv.Atoi(m[2]); m[1] != "10" || n != len(fs) {
			t.Errorf("fail2ban-regex %s: %s lines, %s matched; want 10 lines, %d matched\n%s", rule, m[1], m[2], len(fs), out)
		}
		for _, f := range fs {
			if !strings.Contains(string(out), "|      "+f.SrcIP+"  ") {
				t.Errorf("fail2ban-regex %s: %s not among the matched hosts\n%s", rule, f.SrcIP, out)
			}
		}
	}
}

// TestDetectorsOffTheSingleCorePath: engine.md §13 runs the detectors on
// the single-core path only. A batch run with --cores 2 warns and records
// nothing; the same run on one core records the scanner's three findings
// (checked against tshark in core/detect's tests) and writes them to the
// --fail2ban-log file.
func TestDetectorsOffTheSingleCorePath(t *testing.T) {
	in := madeCopy(t, "sipvicious-scan.pcap")
	for _, tc := range []struct {
		cores    string
		recorded float64
		warns    bool
	}{{"2", 0, true}, {"1", 3, false}} {
		logPath := filepath.Join(t.TempDir(), "f2b.log")
		cmd := exec.Command(bin, "-N", "--json-run", "--cores", tc.cores, "--detect-scanner", "--fail2ban-log", logPath, "-I", in)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("--cores %s: %v\n%s", tc.cores, err, stderr.String())
		}
		var doc struct {
			Run struct {
				Detectors struct {
					Armed    []string `json:"armed_kinds"`
					Recorded float64  `json:"findings_recorded"`
				} `json:"detectors"`
			} `json:"run"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if d := doc.Run.Detectors; strings.Join(d.Armed, ",") != "scanner" || d.Recorded != tc.recorded {
			t.Errorf("--cores %s: detectors %+v, want scanner armed, %v recorded", tc.cores, d, tc.recorded)
		}
		if warned := strings.Contains(stderr.String(), "security detectors not running"); warned != tc.warns {
			t.Errorf("--cores %s: warned %v, want %v:\n%s", tc.cores, warned, tc.warns, stderr.String())
		}
		logged, _ := os.ReadFile(logPath)
		if n := strings.Count(string(logged), "[ALERT] scanner_"); float64(n) != tc.recorded {
			t.Errorf("--cores %s: %d alert lines, want %v:\n%s", tc.cores, n, tc.recorded, logged)
		}
	}
}
