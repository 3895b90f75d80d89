package security

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/sdk"
)

// generateFail2banRuleSchemaVersion is generate_fail2ban_rule's response
// schema version.
const generateFail2banRuleSchemaVersion = 1

// The jail's settings (mcp-surface.md §3.4, engine.md §13).
const (
	f2bMaxRetry = 3
	f2bFindTime = 600
	f2bBanTime  = 3600
	f2bPorts    = "5060,5061"
	f2bProtocol = "udp"
)

// LogLineFormat is the line sipnab's --fail2ban-log channel writes per
// finding (host/detect.go), which the generated filter matches.
const LogLineFormat = "<time> sipnab[<pid>]: [ALERT] <rule_name> src=<ip> <detail>"

// bareIdentifier is what a rule name must be before it is written into a
// regular expression: no metacharacter, no space, nothing a finding id
// crafted by a caller could smuggle into the filter.
var bareIdentifier = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

type generateFail2banRuleIn struct {
	FindingID string `json:"finding_id" desc:"<rule_name>@<src_ip>@<timestamp>, a finding_id from security_findings"`
}

// Fail2banRule is generate_fail2ban_rule's answer.
type Fail2banRule struct {
	Evidence      FindingRow `json:"evidence" desc:"the finding the rule comes from"`
	FilterName    string     `json:"filter_name" desc:"sipnab-<rule_name>"`
	FilterPath    string     `json:"filter_path" desc:"where fail2ban reads the filter"`
	FilterConf    string     `json:"filter_conf" desc:"the filter file's text"`
	JailPath      string     `json:"jail_path" desc:"where fail2ban reads the jail"`
	JailConf      string     `json:"jail_conf" desc:"the jail file's text (maxretry 3, findtime 600, bantime 3600, ports 5060,5061 udp)"`
	LogLineFormat string     `json:"log_line_format" desc:"the --fail2ban-log line the filter matches"`
	Caveats       []string   `json:"caveats" nonnull:"true" desc:"read before enabling"`
	SchemaVersion int        `json:"schema_version" desc:"response schema version"`
}

func generateFail2banRuleTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "generate_fail2ban_rule",
		Title: "Generate a fail2ban rule",
		Description: "fail2ban filter and jail for one security finding (finding_id from security_findings), matching the lines " +
			"--fail2ban-log writes. Text to review; nothing is applied.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "A rule from the SIPVicious finding of testdata/made/sipvicious-scan.pcap (--detect-scanner)", Args: map[string]any{"finding_id": "scanner_detected@10.98.0.1@2026-12-02T16:39:25.765538Z"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a finding_id not of the form <rule_name>@<src_ip>@<timestamp>, or whose rule_name is not a bare identifier"},
			{Code: sdk.CodeInvalidParams, When: "a finding this server does not hold (the message lists every held id, or says This server holds: none)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in generateFail2banRuleIn) (Fail2banRule, error) {
		return generateFail2banRule(d, c, in)
	})
}

// heldList names every held id, newest first ("none" without one). A
// list longer than budget bytes (half of --mcp-max-response-bytes: the
// refusal must reach the caller) names the newest that fit and counts the
// rest, so the scan stays whole and the cut is said.
func heldList(ids []string, budget int) string {
	if len(ids) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, id := range ids {
		if budget > 0 && b.Len()+len(id)+2 > budget {
			fmt.Fprintf(&b, " … and %d more (newest first; the list is cut to fit --mcp-max-response-bytes: list them with security_findings)", len(ids)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(id)
	}
	return b.String()
}

func generateFail2banRule(d *deps, c *sdk.Call, in generateFail2banRuleIn) (Fail2banRule, error) {
	rule, rest, ok := strings.Cut(in.FindingID, "@")
	at := strings.LastIndexByte(rest, '@')
	if !ok || at <= 0 || at == len(rest)-1 {
		return Fail2banRule{}, sdk.Refuse(sdk.KindInvalidArgument, "finding_id", "finding_id %q is not <rule_name>@<src_ip>@<timestamp>", clipArg(in.FindingID))
	}
	if !bareIdentifier.MatchString(rule) {
		return Fail2banRule{}, sdk.Refuse(sdk.KindInvalidArgument, "finding_id", "rule_name %q is not a bare identifier ([a-z][a-z0-9_]*): it would enter a regular expression", clipArg(rule))
	}
	// The whole ring, so the refusal can list every id held (design
	// notes: a truncated scan cannot report what it truncated).
	held := d.capture.Detector().Findings()
	var f detect.Finding
	found := false
	ids := make([]string, 0, len(held))
	for _, h := range held {
		id := h.ID()
		ids = append(ids, id)
		if id == in.FindingID {
			f, found = h, true
		}
	}
	if !found {
		return Fail2banRule{}, sdk.UnknownID("finding_id", "no finding %q. This server holds: %s", clipArg(in.FindingID), heldList(ids, c.Limits().MaxResponseBytes/2))
	}
	name := "sipnab-" + f.Rule
	filter := fmt.Sprintf(`# fail2ban filter %s, written by sipnab's generate_fail2ban_rule from finding
# %s
# It matches the lines sipnab --fail2ban-log <file> writes, one per finding:
#   %s
# The address is read right after the rule name, before the detail, so
# nothing a sender wrote (a User-Agent in the detail) stands where <HOST> is.

[Definition]
failregex = ^ sipnab\[\d+\]: \[ALERT\] %s src=<HOST>(?: |$)
ignoreregex =
datepattern = ^%%%%Y-%%%%m-%%%%dT%%%%H:%%%%M:%%%%SZ
`, name, f.ID(), LogLineFormat, f.Rule)
	jail := fmt.Sprintf(`# fail2ban jail %s, written by sipnab's generate_fail2ban_rule from finding
# %s
# Set logpath to the file sipnab writes with --fail2ban-log.

[%s]
enabled  = true
filter   = %s
logpath  = /var/log/sipnab/fail2ban.log
port     = %s
protocol = %s
maxretry = %d
findtime = %d
bantime  = %d
`, name, f.ID(), name, name, f2bPorts, f2bProtocol, f2bMaxRetry, f2bFindTime, f2bBanTime)
	caveats := []string{
		"Generated from one finding for a person to review: sipnab applies nothing. A source that also completed calls or registrations may be a legitimate peer behind the same address (NAT, an SBC, a carrier trunk): put it in ignoreip rather than ban it.",
		"The filter matches only the lines sipnab writes with --fail2ban-log <file> while the detector behind this rule is armed; set logpath to that file. sipnab writes at most one line per rule and source per 60 s of capture time, so maxretry 3 within findtime 600 bans a source that keeps triggering for about three minutes.",
		"Source addresses come from packet headers and UDP sources can be forged: a forged scan can get a victim's address banned. The jail blocks ports 5060,5061 over udp only; SIP over TCP, TLS or WebSocket from the same source is not blocked.",
	}
	if f.Src.IsLoopback() {
		caveats = append(caveats, fmt.Sprintf("The source %s is a loopback address: banning it cuts this host off from itself (fail2ban's default ignoreself and ignoreip 127.0.0.1/8 ::1 skip it, so this jail would never ban it); a loopback finding usually means a test or a local tool.", f.Src))
	}
	return Fail2banRule{
		Evidence: findingRow(c, f), FilterName: name,
		FilterPath: "/etc/fail2ban/filter.d/" + name + ".conf", FilterConf: filter,
		JailPath: "/etc/fail2ban/jail.d/" + name + ".local", JailConf: jail,
		LogLineFormat: LogLineFormat, Caveats: caveats, SchemaVersion: generateFail2banRuleSchemaVersion,
	}, nil
}
