package security

import (
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

type fail2banAnswer struct {
	Evidence struct {
		FindingID string `json:"finding_id"`
		RuleName  string `json:"rule_name"`
		SrcIP     string `json:"src_ip"`
		Detail    string `json:"detail"`
	} `json:"evidence"`
	FilterName    string   `json:"filter_name"`
	FilterPath    string   `json:"filter_path"`
	FilterConf    string   `json:"filter_conf"`
	JailPath      string   `json:"jail_path"`
	JailConf      string   `json:"jail_conf"`
	LogLineFormat string   `json:"log_line_format"`
	Caveats       []string `json:"caveats"`
}

// TestGenerateFail2banRuleFromAScanner: the filter and jail of the
// SIPVicious User-Agent finding on testdata/made/sipvicious-scan.pcap.
// tests/detect_e2e_test.go proves the filter with fail2ban-regex over the
// log the binary writes.
func TestGenerateFail2banRuleFromAScanner(t *testing.T) {
	c := loadArmed(t, armedAll, "sipvicious-scan.pcap")
	const id = "scanner_detected@10.98.0.1@2026-12-02T16:39:25.765538Z"
	var got fail2banAnswer
	call(t, c, "generate_fail2ban_rule", `{"finding_id":"`+id+`"}`, &got)
	if got.Evidence.FindingID != id || got.Evidence.SrcIP != "10.98.0.1" || !strings.HasPrefix(got.Evidence.Detail, sdk.FenceOpen) {
		t.Errorf("evidence %+v", got.Evidence)
	}
	if got.FilterName != "sipnab-scanner_detected" || got.FilterPath != "/etc/fail2ban/filter.d/sipnab-scanner_detected.conf" ||
		got.JailPath != "/etc/fail2ban/jail.d/sipnab-scanner_detected.local" || got.LogLineFormat != "<time> sipnab[<pid>]: [ALERT] <rule_name> src=<ip> <detail>" {
		t.Errorf("names %+v", got)
	}
	for _, want := range []string{`failregex = ^ sipnab\[\d+\]: \[ALERT\] scanner_detected src=<HOST>(?: |$)`, "datepattern = ^%%Y-%%m-%%dT%%H:%%M:%%SZ", id} {
		if !strings.Contains(got.FilterConf, want) {
			t.Errorf("filter lacks %q:\n%s", want, got.FilterConf)
		}
	}
	for _, want := range []string{"[sipnab-scanner_detected]", "filter   = sipnab-scanner_detected", "port     = 5060,5061", "protocol = udp", "maxretry = 3", "findtime = 600", "bantime  = 3600"} {
		if !strings.Contains(got.JailConf, want) {
			t.Errorf("jail lacks %q:\n%s", want, got.JailConf)
		}
	}
	if len(got.Caveats) != 3 {
		t.Errorf("caveats %q: want the three standard ones", got.Caveats)
	}
}

// TestGenerateFail2banRuleLoopbackCaveat: a finding about a loopback
// address gets the fourth caveat.
func TestGenerateFail2banRuleLoopbackCaveat(t *testing.T) {
	c := engine.New(engine.Config{Node: "test", Detect: detect.New(detect.Config{Scanner: true})}, nil)
	ts := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	c.HandlePacket(sipPacket(ts, "127.0.0.1:5070", "127.0.0.1:5060",
		"OPTIONS sip:100@127.0.0.1 SIP/2.0\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK-1\nFrom: <sip:100@127.0.0.1>;tag=1\nTo: <sip:100@127.0.0.1>\nCall-ID: 1@127.0.0.1\nCSeq: 1 OPTIONS\nUser-Agent: sipsak 0.9.8\nContent-Length: 0\n\n"))
	var got fail2banAnswer
	call(t, c, "generate_fail2ban_rule", `{"finding_id":"scanner_detected@127.0.0.1@2026-12-02T10:00:00Z"}`, &got)
	if len(got.Caveats) != 4 || !strings.Contains(got.Caveats[3], "127.0.0.1 is a loopback address") {
		t.Errorf("caveats %q: want a fourth about loopback", got.Caveats)
	}
}

func TestGenerateFail2banRuleRefusals(t *testing.T) {
	armed := loadArmed(t, armedAll, "sipvicious-scan.pcap")
	quiet := loadArmed(t, detect.Config{}, "sipvicious-scan.pcap")
	tests := []struct {
		name string
		c    *engine.Capture
		id   string
		kind sdk.Kind
		says string
	}{
		{"nothing armed: holds none", quiet, "scanner_detected@10.98.0.1@2026-12-02T16:39:25.765538Z", sdk.KindUnknownID, "This server holds: none"},
		{"an id not held lists every held id", armed, "scanner_detected@10.98.0.9@2026-12-02T16:39:25.765538Z", sdk.KindUnknownID,
			"This server holds: scanner_rate@10.98.0.1@2026-12-02T16:39:29.90547Z, digest_weak_algorithm@10.98.0.2@2026-12-02T16:39:29.900165Z, scanner_enumeration@10.98.0.1@2026-12-02T16:39:26.304799Z, scanner_detected@10.98.0.1@2026-12-02T16:39:25.765538Z"},
		{"a rule name that is a regular expression", armed, `scanner_detected|.*@10.98.0.1@2026-12-02T16:39:25.765538Z`, sdk.KindInvalidArgument, "not a bare identifier"},
		{"a rule name with a space", armed, `scanner detected@10.98.0.1@2026-12-02T16:39:25.765538Z`, sdk.KindInvalidArgument, "not a bare identifier"},
		{"not three parts", armed, "scanner_detected", sdk.KindInvalidArgument, "is not <rule_name>@<src_ip>@<timestamp>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := callErr(t, tt.c, "generate_fail2ban_rule", `{"finding_id":"`+strings.ReplaceAll(tt.id, `\`, `\\`)+`"}`)
			if e.Code != sdk.CodeInvalidParams || e.Kind != tt.kind || !strings.Contains(e.Message, tt.says) {
				t.Errorf("%d %s %q, want -32602 %s saying %q", e.Code, e.Kind, e.Message, tt.kind, tt.says)
			}
		})
	}
}

func TestHeldListIsWholeOrSaysWhereItWasCut(t *testing.T) {
	ids := []string{"a@1.1.1.1@t1", "b@1.1.1.1@t2", "c@1.1.1.1@t3"}
	tests := []struct {
		budget int
		want   string
	}{
		{0, "a@1.1.1.1@t1, b@1.1.1.1@t2, c@1.1.1.1@t3"},
		{1000, "a@1.1.1.1@t1, b@1.1.1.1@t2, c@1.1.1.1@t3"},
		{30, "a@1.1.1.1@t1, b@1.1.1.1@t2 … and 1 more (newest first; the list is cut to fit --mcp-max-response-bytes: list them with security_findings)"},
	}
	for _, tt := range tests {
		if got := heldList(ids, tt.budget); got != tt.want {
			t.Errorf("budget %d: %q, want %q", tt.budget, got, tt.want)
		}
	}
	if got := heldList(nil, 10); got != "none" {
		t.Errorf("empty: %q", got)
	}
}
