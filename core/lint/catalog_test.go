package lint

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCatalogHoldsTheFixedRules pins the 32 rules engine.md §14 names, with
// their severities and bases.
func TestCatalogHoldsTheFixedRules(t *testing.T) {
	fixed := []struct {
		id    string
		sev   Severity
		basis Basis
	}{
		{"SIP-3261-8.1.1-MANDATORY-HEADER-MISSING", Error, Must},
		{"SIP-3261-20.16-CSEQ-MALFORMED", Error, Must},
		{"SIP-3261-20.14-CONTENT-LENGTH-MISMATCH", Error, Must},
		{"SIP-3261-25.1-HEADER-CONTROL-BYTE", Error, Must},
		{"SIP-3261-20-URI-BRACKETS", Error, Must},
		{"SIP-3261-19.1.1-URI-PARAM-DEMOTED", Warning, Interop},
		{"SIP-3261-8.1.1.6-MAX-FORWARDS-MISSING", Warning, Must},
		{"SIP-3261-20.22-MAX-FORWARDS-RANGE", Notice, Should},
		{"SIP-3261-8.1.1.7-BRANCH-COOKIE", Warning, Must},
		{"SIP-3261-8.1.1.5-CSEQ-METHOD-MISMATCH", Error, Must},
		{"SIP-3261-12.1.1-CONTACT-MISSING-IN-2XX", Error, Must},
		{"SIP-3262-3-RELIABLE-PROVISIONAL-WITHOUT-RSEQ", Error, Must},
		{"SIP-4028-7.1-SESSION-EXPIRES-BELOW-MIN-SE", Error, Must},
		{"SIP-4028-4-SESSION-EXPIRES-TOO-SMALL", Warning, Must},
		{"SIP-4028-5-MIN-SE-TOO-SMALL", Warning, Must},
		{"SIP-4028-9-REFRESHER-MISSING", Warning, Must},
		{"SIP-7989-5-SESSION-ID-MALFORMED", Error, Must},
		{"SIP-7989-5-SESSION-ID-UPPERCASE", Warning, Must},
		{"SIP-7989-11-SESSION-ID-LEGACY-FORM", Notice, Interop},
		{"SIP-3261-8.1.1.2-TO-TAG-IN-INITIAL-REQUEST", Warning, Must},
		{"SIP-3261-17.1.1.3-ACK-CSEQ-MISMATCH", Error, Must},
		{"SIP-3262-4-PRACK-MISSING", Warning, Must},
		{"SDP-3264-6.1-ANSWER-NO-COMMON-FORMAT", Error, Must},
		{"SDP-3264-6.1-ANSWER-EXTRA-FORMAT", Info, Interop},
		{"SDP-3264-6.1-ANSWER-DIRECTION-ILLEGAL", Error, Must},
		{"SDP-3264-8.4-HOLD-CONNECTION-ZERO", Warning, Should},
		{"OBS-3264-6.1-PT-UNDECLARED", Error, Observation},
		{"OBS-4566-5.14-MEDIA-PORT-MISMATCH", Warning, Observation},
		{"OBS-3264-6.1-DIRECTION-UNMET", Warning, Observation},
		{"OBS-4566-6-PTIME-MISMATCH", Notice, Observation},
		{"OBS-5761-5.1.1-RTCP-MUX-UNANSWERED", Error, Observation},
		{"OBS-3551-4.2-FRAME-SIZE-IMPOSSIBLE", Warning, Observation},
	}
	for _, tc := range fixed {
		t.Run(tc.id, func(t *testing.T) {
			r, ok := Lookup(tc.id)
			if !ok {
				t.Fatalf("got no rule %s, want it in the catalogue", tc.id)
			}
			if r.Severity != tc.sev || r.Basis != tc.basis {
				t.Errorf("got %s/%s, want %s/%s", r.Severity, r.Basis, tc.sev, tc.basis)
			}
		})
	}
	if got := len(Catalog()); got != 43 || RuleCount != 43 {
		t.Errorf("got %d rules (RuleCount %d), want 43", got, RuleCount)
	}
}

var idShape = regexp.MustCompile(`^(SIP|SDP|OBS)-([0-9]+)-([0-9]+(\.[0-9]+)*)-([A-Z0-9]+(-[A-Z0-9]+)*)$`)

// TestEveryRuleIsWellFormed holds each rule's fields to its id: the RFC and
// section spliced into the id are the ones it carries, the URL points at
// that section, the scope follows the id, observation rules are media rules.
func TestEveryRuleIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Catalog() {
		t.Run(r.ID, func(t *testing.T) {
			if seen[r.ID] {
				t.Fatalf("duplicate id")
			}
			seen[r.ID] = true
			m := idShape.FindStringSubmatch(r.ID)
			if m == nil {
				t.Fatalf("id does not read FAMILY-RFC-SECTION-SLUG")
			}
			if got := strconv.Itoa(r.RFC); got != m[2] || r.Section != m[3] {
				t.Errorf("got rfc %d section %q, want %s and %s from the id", r.RFC, r.Section, m[2], m[3])
			}
			if want := "https://www.rfc-editor.org/rfc/rfc" + m[2] + "#section-" + m[3]; r.URL != want {
				t.Errorf("got url %q, want %q", r.URL, want)
			}
			wantScope := ScopeMessage
			switch {
			case m[1] == "OBS":
				wantScope = ScopeMedia
			case m[1] == "SDP", strings.HasSuffix(r.ID, "-TO-TAG-IN-INITIAL-REQUEST"),
				strings.HasSuffix(r.ID, "-ACK-CSEQ-MISMATCH"), strings.HasSuffix(r.ID, "-PRACK-MISSING"):
				wantScope = ScopeDialog
			}
			if r.Scope != wantScope {
				t.Errorf("got scope %s, want %s", r.Scope, wantScope)
			}
			if (r.Basis == Observation) != (r.Scope == ScopeMedia) {
				t.Errorf("basis %s with scope %s: observation rules and media rules must coincide", r.Basis, r.Scope)
			}
			if r.Title == "" || r.Citation == "" || r.FiresWhen == "" {
				t.Errorf("title, citation and fires_when must be set")
			}
			if len(r.Citation) > 400 {
				t.Errorf("citation is %d bytes: a few words of our own, at most a short quote", len(r.Citation))
			}
			if _, ok := checks[r.ID]; !ok && r.ID != rtcpMuxRule {
				t.Errorf("rule has no evaluation")
			}
			if r.Rulesets[0] != "all" || !contains(r.Rulesets, "rfc"+m[2]) {
				t.Errorf("got rulesets %v, want all and rfc%s among them", r.Rulesets, m[2])
			}
		})
	}
	if len(checks) != RuleCount-1 {
		t.Errorf("got %d evaluations, want %d (every rule but the RTCP-mux one)", len(checks), RuleCount-1)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestRulesets checks each of the 15 selectors against the catalogue.
func TestRulesets(t *testing.T) {
	count := func(pred func(Rule) bool) int {
		n := 0
		for _, r := range Catalog() {
			if pred(r) {
				n++
			}
		}
		return n
	}
	cases := []struct {
		sel  string
		want int
	}{
		{"all", 43},
		{"must", count(func(r Rule) bool { return r.Basis == Must })},
		{"rfc", count(func(r Rule) bool { return r.Basis == Must || r.Basis == Should })},
		{"interop", 3},
		{"observation", 8},
		{"observed", 8},
		{"syntax", 24},
		{"rfc3261", count(func(r Rule) bool { return r.RFC == 3261 })},
		{"rfc3262", 2},
		{"rfc3264", count(func(r Rule) bool { return r.RFC == 3264 })},
		{"rfc3551", 1},
		{"rfc4028", 4},
		{"rfc4566", count(func(r Rule) bool { return r.RFC == 4566 })},
		{"rfc5761", 1},
		{"rfc7989", 3},
	}
	if len(cases) != 15 {
		t.Fatalf("got %d selectors under test, want 15", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.sel, func(t *testing.T) {
			s, err := Select([]string{tc.sel})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, id := range IDs() {
				if s.Includes(id) {
					n++
				}
			}
			if n != tc.want {
				t.Errorf("got %d rules, want %d", n, tc.want)
			}
		})
	}
	t.Run("union", func(t *testing.T) {
		s, err := Select([]string{"rfc3262", "rfc5761", "rfc3262"})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(s.Names, ","); got != "rfc3262,rfc5761" {
			t.Errorf("got names %s, want rfc3262,rfc5761", got)
		}
		if !s.Includes("SIP-3262-4-PRACK-MISSING") || !s.Includes("OBS-5761-5.1.1-RTCP-MUX-UNANSWERED") || s.Includes("SIP-3261-20-URI-BRACKETS") {
			t.Errorf("union selects the wrong rules")
		}
	})
	t.Run("unknown", func(t *testing.T) {
		_, err := Select([]string{"all", "rfc9999"})
		if err == nil || !strings.Contains(err.Error(), "rfc9999") || !strings.Contains(err.Error(), "rfc7989") {
			t.Errorf("got %v, want an error naming the selector and the valid ones", err)
		}
	})
	t.Run("none means all", func(t *testing.T) {
		s, err := Select(nil)
		if err != nil || !s.Includes("OBS-3264-6.1-PT-UNDECLARED") || strings.Join(s.Names, ",") != "all" {
			t.Errorf("got %v %v, want all", s, err)
		}
	})
}

func TestSeverityNames(t *testing.T) {
	for i, n := range SeverityNames() {
		s, ok := ParseSeverity(n)
		if !ok || int(s) != i || s.String() != n {
			t.Errorf("got %v %v for %q, want severity %d", s, ok, n, i)
		}
	}
	if _, ok := ParseSeverity("WARN"); ok {
		t.Errorf("got WARN accepted, want names exact")
	}
	if !(Error > Warning && Warning > Notice && Notice > Info) {
		t.Errorf("severities must order quietest first")
	}
}

func TestDigestIsStable(t *testing.T) {
	if d := Digest(); len(d) != 16 || d != Digest() {
		t.Errorf("got digest %q, want 16 stable hex digits", d)
	}
}
