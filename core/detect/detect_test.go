package detect_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/detect"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
)

func made(name string) string { return filepath.Join(testcap.Root(), "testdata", "made", name) }

var all = detect.Config{Scanner: true, RegFlood: true, Digest: true}

func load(t *testing.T, cfg detect.Config, name string) *detect.Detector {
	t.Helper()
	d := detect.New(cfg)
	testengine.Load(t, engine.Config{Detect: d}, made(name))
	return d
}

// ids lists the findings' ids and details, newest first.
func ids(fs []detect.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID()+" "+f.Detail)
	}
	return out
}

// TestFindingsOnRealTraffic reads the two captures made with real peers
// (testdata/made/*.sh) and checks every finding against tshark's reading
// of them (testdata/made/*.pcap.tshark.txt).
func TestFindingsOnRealTraffic(t *testing.T) {
	tests := []struct {
		name, file string
		cfg        detect.Config
		want       []string
		gaps       []string
	}{
		{
			// tshark: 10.98.0.1 sends 8 OPTIONS (frames 1-9, User-Agent
			// friendly-scanner) to 10.98.0.2-10.98.0.9, only 10.98.0.2
			// answers (200, frame 2); 4.1 s later 41 REGISTERs for
			// extensions 100-139 to 10.98.0.2, answered 404 (36) and 401
			// (5). The enumeration rule fires 500 ms after the last
			// unanswered OPTIONS (frame 9, 16:39:25.804799): 8 probes, 8
			// targets, 7 unanswered, 1 answered. The rate rule at the 11th
			// probe, the third REGISTER (frame 14), with the first two
			// REGISTERs answered 404 and 401. kamailio challenges with MD5
			// and no SHA-256 (frame 13).
			name: "sipvicious svmap and svwar against kamailio", file: "sipvicious-scan.pcap", cfg: all,
			want: []string{
				"scanner_rate@10.98.0.1@2026-12-02T16:39:29.90547Z rate probes=11 targets=10 rejected=2 unanswered=7 answered=1 window_start=2026-12-02T16:39:25.765538Z window=5s established=false",
				"digest_weak_algorithm@10.98.0.2@2026-12-02T16:39:29.900165Z 401 challenge algorithm=\"MD5\" and no SHA-256 offered (RFC 8760)",
				"scanner_enumeration@10.98.0.1@2026-12-02T16:39:26.304799Z enumeration probes=8 targets=8 rejected=0 unanswered=7 answered=1 window_start=2026-12-02T16:39:25.765538Z window=5s established=false",
				"scanner_detected@10.98.0.1@2026-12-02T16:39:25.765538Z ua=\"friendly-scanner\" method=\"OPTIONS\" signature=friendly-scanner",
			},
			// the seven OPTIONS to addresses nothing listens on
			gaps: []string{"scanner_rate unanswered 7 1", "scanner_enumeration unanswered 7 1"},
		},
		{
			name: "scanner detector alone: no digest finding", file: "sipvicious-scan.pcap", cfg: detect.Config{Scanner: true},
			want: []string{
				"scanner_rate@10.98.0.1@2026-12-02T16:39:29.90547Z rate probes=11 targets=10 rejected=2 unanswered=7 answered=1 window_start=2026-12-02T16:39:25.765538Z window=5s established=false",
				"scanner_enumeration@10.98.0.1@2026-12-02T16:39:26.304799Z enumeration probes=8 targets=8 rejected=0 unanswered=7 answered=1 window_start=2026-12-02T16:39:25.765538Z window=5s established=false",
				"scanner_detected@10.98.0.1@2026-12-02T16:39:25.765538Z ua=\"friendly-scanner\" method=\"OPTIONS\" signature=friendly-scanner",
			},
			gaps: []string{"scanner_rate unanswered 7 1", "scanner_enumeration unanswered 7 1"},
		},
		{
			// tshark: 120 credentialed REGISTERs from 10.97.0.1 in 0.6 s,
			// each answered 401 on its own transaction; the 51st 401 (at
			// 16:44:23.308283) is the 51st within one second of the first
			// (16:44:23.059745). 10.97.0.3's 30 at 20/s never reach 21 in
			// a second: no reg_flood for it.
			// tshark (testdata/made/fraud.pcap.tshark.txt): 10.96.0.1
			// dials 441700001-441700005, each refused 404; the third 404
			// (frame 8, 16:56:24.680050) completes a run of three. 10.96.0.3
			// places 4 calls to 882300001, each answered 200 and hung up
			// about 1 s later; the third BYE (frame 36, 16:56:27.595522,
			// 1.006 s after its 200, frame 26) is the third short call to
			// prefix 8823 within 60 s (the fourth falls in the cooldown).
			name: "SIPp sequential refused numbers and short completed calls", file: "fraud.pcap", cfg: detect.Config{Fraud: true, Scanner: true},
			want: []string{
				"fraud_wangiri@10.96.0.3@2026-12-02T16:56:27.595522Z 3 completed calls under 3s to prefix 8823 within 60s (last to 882300001 lasted 1.006s)",
				"fraud_sequential_scanning@10.96.0.1@2026-12-02T16:56:24.68005Z 3 consecutive numbers refused in a row: 441700001 to 441700003",
			},
		},
		{
			name: "SIPp credentialed REGISTER flood answered 401", file: "reg-flood.pcap", cfg: detect.Config{RegFlood: true},
			want: []string{
				"reg_flood@10.97.0.1@2026-12-02T16:44:23.308283Z count=51 credentialed REGISTERs answered 401/407 within 1s (since 2026-12-02T16:44:23.059745Z)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := load(t, tt.cfg, tt.file)
			got := ids(d.Findings())
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			var gaps []string
			for _, g := range d.Gaps() {
				gaps = append(gaps, fmt.Sprintf("%s %s %d %d", g.Rule, g.Reason, g.Seen, g.Unestablished))
			}
			if strings.Join(gaps, ";") != strings.Join(tt.gaps, ";") {
				t.Errorf("gaps %q, want %q", gaps, tt.gaps)
			}
			if s := d.Stats(); s.EvidenceLost() {
				t.Errorf("evidence lost on a small capture: %+v", s)
			}
		})
	}
}

// TestNothingArmedObservesNothing: the detectors are off by default.
func TestNothingArmedObservesNothing(t *testing.T) {
	d := load(t, detect.Config{}, "sipvicious-scan.pcap")
	if f := d.Findings(); len(f) != 0 || len(d.Armed()) != 0 || len(d.Gaps()) != 0 {
		t.Errorf("unarmed detector: findings %v, armed %v", ids(f), d.Armed())
	}
	d = load(t, detect.Config{Scanner: true, Disabled: "the --cores path"}, "sipvicious-scan.pcap")
	if f := d.Findings(); len(f) != 0 || d.Disabled() == "" || len(d.Armed()) != 1 {
		t.Errorf("disabled detector: findings %v, armed %v", ids(f), d.Armed())
	}
}

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// feed routes hand-written messages through an engine holding d.
func feed(d *detect.Detector, msgs ...struct {
	at       time.Time
	src, dst string
	msg      string
}) {
	c := engine.New(engine.Config{Detect: d}, nil)
	for _, m := range msgs {
		c.HandlePacket(testengine.SIP(m.at, m.src, m.dst, m.msg))
	}
}

type msg = struct {
	at       time.Time
	src, dst string
	msg      string
}

func request(method, user string, n int, extra string) string {
	return fmt.Sprintf("%s sip:%s@10.0.0.2 SIP/2.0\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-%d\nFrom: <sip:a@10.0.0.1>;tag=f%d\nTo: <sip:%s@10.0.0.2>\nCall-ID: c%d@10.0.0.1\nCSeq: 1 %s\n%sContent-Length: 0\n\n",
		method, user, n, n, user, n, method, extra)
}

func response(code int, reason, method string, n int, extra string) string {
	return fmt.Sprintf("SIP/2.0 %d %s\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-%d\nFrom: <sip:a@10.0.0.1>;tag=f%d\nTo: <sip:x@10.0.0.2>;tag=t%d\nCall-ID: c%d@10.0.0.1\nCSeq: 1 %s\n%sContent-Length: 0\n\n",
		code, reason, n, n, n, n, method, extra)
}

// wantRules feeds msgs to a detector armed as cfg and wants the rules of
// its findings, newest first.
func wantRules(t *testing.T, cfg detect.Config, msgs []msg, want []string) {
	t.Helper()
	d := detect.New(cfg)
	feed(d, msgs...)
	var got []string
	for _, f := range d.Findings() {
		got = append(got, f.Rule)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("rules %v, want %v (%s)", got, want, ids(d.Findings()))
	}
}

// TestScannerGate: the behavioural rules need the evidence gate; a source
// that completed a call needs four times the evidence.
func TestScannerGate(t *testing.T) {
	const a, b = "10.0.0.1:5060", "10.0.0.2:5060"
	probes := func(n, code int, first int) []msg {
		var out []msg
		for i := range n {
			out = append(out, msg{ms(first + 10*i), a, b, request("OPTIONS", fmt.Sprintf("u%d", i), first+i, "")})
			if code > 0 {
				out = append(out, msg{ms(first + 10*i + 1), b, a, response(code, "X", "OPTIONS", first+i, "")})
			}
		}
		return out
	}
	established := []msg{
		{ms(0), a, b, request("INVITE", "bob", 9000, "")},
		{ms(1), b, a, response(200, "OK", "INVITE", 9000, "")},
	}
	tests := []struct {
		name string
		msgs []msg
		want []string // rule names, newest first
	}{
		{"12 probes answered 404: rate and enumeration", probes(12, 404, 100), []string{"scanner_rate", "scanner_enumeration"}},
		{"12 probes answered 200: gate closed", probes(12, 200, 100), nil},
		{"12 probes never answered: unanswered after 500 ms", append(probes(12, 0, 100), msg{ms(2000), b, a, response(200, "OK", "OPTIONS", 1, "")}), []string{"scanner_enumeration", "scanner_rate"}},
		{"established source, 12 rejected: below 4x", append(established, probes(12, 404, 100)...), nil},
		// both fire at the 20th rejection (same timestamp: by rule name)
		{"established source, 25 rejected: 4x met", append(established, probes(25, 404, 100)...), []string{"scanner_enumeration", "scanner_rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantRules(t, detect.Config{Scanner: true}, tt.msgs, tt.want) })
	}
}

// TestRegFloodRules: uncredentialed REGISTERs are never evidence; a 2xx
// to REGISTER clears the count.
func TestRegFloodRules(t *testing.T) {
	const a, b = "10.0.0.1:5060", "10.0.0.2:5060"
	regs := func(n, first int, cred bool) []msg {
		extra := ""
		if cred {
			extra = "Authorization: Digest username=\"1000\", realm=\"r\", nonce=\"n\", uri=\"sip:10.0.0.2\", response=\"00\"\n"
		}
		var out []msg
		for i := range n {
			out = append(out, msg{ms(first + 5*i), a, b, request("REGISTER", "1000", first+i, extra)},
				msg{ms(first + 5*i + 1), b, a, response(401, "Unauthorized", "REGISTER", first+i, "")})
		}
		return out
	}
	tests := []struct {
		name string
		msgs []msg
		want int
	}{
		{"51 credentialed 401s in a second", regs(51, 0, true), 1},
		{"50 credentialed 401s in a second: not more than 50", regs(50, 0, true), 0},
		{"60 uncredentialed 401s: never evidence", regs(60, 0, false), 0},
		{"a 2xx after 30 clears: 30 more do not reach 51", append(append(regs(30, 0, true), msg{ms(160), a, b, request("REGISTER", "1000", 5000, "")}, msg{ms(161), b, a, response(200, "OK", "REGISTER", 5000, "")}), regs(30, 170, true)...), 0},
		{"the same 60 without the 2xx", append(regs(30, 0, true), regs(30, 170, true)...), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := detect.New(detect.Config{RegFlood: true})
			feed(d, tt.msgs...)
			if got := len(d.Findings()); got != tt.want {
				t.Errorf("%d findings, want %d: %s", got, tt.want, ids(d.Findings()))
			}
		})
	}
}

// TestDigestRules: each digest weakness, with the RFC text it rests on.
func TestDigestRules(t *testing.T) {
	const a, b = "10.0.0.1:5060", "10.0.0.2:5060"
	ch := func(n int, hdr string) msg {
		return msg{ms(n), b, a, response(401, "Unauthorized", "REGISTER", n, "WWW-Authenticate: "+hdr+"\n")}
	}
	tests := []struct {
		name string
		msgs []msg
		want []string
	}{
		{"SHA-256 with qop, fresh nonces", []msg{ch(1, `Digest realm="r", nonce="n1", algorithm=SHA-256, qop="auth"`), ch(2, `Digest realm="r", nonce="n2", algorithm=SHA-256, qop="auth"`)}, nil},
		{"algorithm absent means MD5", []msg{ch(1, `Digest realm="r", nonce="n1", qop="auth"`)}, []string{"digest_weak_algorithm"}},
		{"MD5 beside SHA-256 is not weak", []msg{{ms(1), b, a, response(401, "Unauthorized", "REGISTER", 1, "WWW-Authenticate: Digest realm=\"r\", nonce=\"n1\", algorithm=SHA-256, qop=\"auth\"\nWWW-Authenticate: Digest realm=\"r\", nonce=\"n1\", algorithm=MD5, qop=\"auth\"\n")}}, nil},
		{"no qop", []msg{ch(1, `Digest realm="r", nonce="n1", algorithm=SHA-256`)}, []string{"digest_no_qop"}},
		{"nonce reused across transactions", []msg{ch(1, `Digest realm="r", nonce="same", algorithm=SHA-256, qop="auth"`), ch(2, `Digest realm="r", nonce="same", algorithm=SHA-256, qop="auth"`)}, []string{"digest_nonce_reuse"}},
		{"credentials with qop and no cnonce", []msg{{ms(1), a, b, request("REGISTER", "1000", 1, "Authorization: Digest username=\"1000\", realm=\"r\", nonce=\"n\", uri=\"sip:x\", response=\"00\", qop=auth, nc=00000001\n")}}, []string{"digest_no_cnonce"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantRules(t, detect.Config{Digest: true}, tt.msgs, tt.want) })
	}
}

// TestFraudRules: a run needs each number one more than the last; a
// wangiri call must be answered and last under 3 s.
func TestFraudRules(t *testing.T) {
	const a, b = "10.0.0.1:5060", "10.0.0.2:5060"
	refused := func(n int, user string) []msg {
		return []msg{{ms(10 * n), a, b, request("INVITE", user, n, "")}, {ms(10*n + 1), b, a, response(404, "Not Found", "INVITE", n, "")}}
	}
	short := func(n int, user string, holdMs int) []msg {
		bye := strings.Replace(strings.Replace(request("BYE", user, n, ""), "CSeq: 1 BYE", "CSeq: 2 BYE", 1), "To: <sip:"+user+"@10.0.0.2>", "To: <sip:"+user+"@10.0.0.2>;tag=t"+fmt.Sprint(n), 1)
		return []msg{{ms(1000 * n), a, b, request("INVITE", user, n, "")}, {ms(1000*n + 1), b, a, response(200, "OK", "INVITE", n, "")}, {ms(1000*n + 1 + holdMs), a, b, bye}}
	}
	join := func(parts ...[]msg) []msg {
		var out []msg
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name string
		msgs []msg
		want []string
	}{
		{"1001, 1002, 1003 refused", join(refused(1, "1001"), refused(2, "1002"), refused(3, "+1-003")), []string{"fraud_sequential_scanning"}},
		{"1001, 1003, 1004: the run breaks", join(refused(1, "1001"), refused(2, "1003"), refused(3, "1005")), nil},
		{"names, not numbers", join(refused(1, "alice"), refused(2, "bob"), refused(3, "carol")), nil},
		{"three 1 s calls to 4420...", join(short(1, "442071", 1000), short(2, "442072", 1000), short(3, "442073", 1000)), []string{"fraud_wangiri"}},
		{"three 3 s calls: not under 3 s", join(short(1, "442071", 3000), short(5, "442072", 3000), short(9, "442073", 3000)), nil},
		{"three short calls to three prefixes", join(short(1, "442071", 1000), short(2, "332072", 1000), short(3, "222073", 1000)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantRules(t, detect.Config{Fraud: true}, tt.msgs, tt.want) })
	}
}

// TestTablesAreCappedAndCounted: the ring and the source table shed at
// their caps and say so; a one-way capture's gap reads no_answers.
func TestTablesAreCappedAndCounted(t *testing.T) {
	d := detect.New(detect.Config{Scanner: true, History: 3, MaxSources: 4})
	var msgs []msg
	for i := range 10 {
		src := fmt.Sprintf("10.0.1.%d:5060", i+1)
		msgs = append(msgs, msg{ms(i), src, "10.0.0.2:5060", strings.Replace(request("OPTIONS", "u", i, ""), "Content-Length", "User-Agent: sipvicious\nContent-Length", 1)})
	}
	feed(d, msgs...)
	s := d.Stats()
	if got := len(d.Findings()); got != 3 || s.FindingsRecorded != 10 || s.FindingsEvicted != 7 || s.SourcesEvicted != 6 || !s.EvidenceLost() {
		t.Errorf("held %d, stats %+v; want 3 held of 10 recorded, 7 evicted from the ring, 6 sources evicted", got, s)
	}
	if f := d.Findings(); f[0].Src.String() != "10.0.1.10" {
		t.Errorf("newest finding %s, want the last source's", f[0].ID())
	}
	gaps := d.Gaps()
	if len(gaps) != 2 || gaps[0].Reason != "no_answers" || gaps[0].Seen != 4 || gaps[0].Unestablished != 4 {
		t.Errorf("gaps %+v: want no_answers over the 4 sources still held", gaps)
	}
}

func TestKindOfEveryRule(t *testing.T) {
	for rule, kind := range map[string]string{
		detect.RuleScannerUA: "scanner", detect.RuleScannerRate: "scanner", detect.RuleScannerEnumeration: "scanner",
		detect.RuleRegFlood: "reg_flood", detect.RuleDigestWeak: "digest", detect.RuleDigestNoQop: "digest",
		detect.RuleDigestNonceReuse: "digest", detect.RuleDigestNoCnonce: "digest", "nope": "",
		detect.RuleFraudSequential: "fraud", detect.RuleFraudWangiri: "fraud",
	} {
		if got := detect.KindOf(rule); got != kind {
			t.Errorf("KindOf(%s) = %q, want %q", rule, got, kind)
		}
	}
}

// TestEvictedFindingsMakeTheRunIncomplete: a findings ring too small for
// what the detectors recorded sheds the oldest, and the capture's status
// says the run lost evidence (capture_status and the batch document's run
// carry the counters).
func TestEvictedFindingsMakeTheRunIncomplete(t *testing.T) {
	d := detect.New(detect.Config{Scanner: true, Digest: true, History: 1})
	c := testengine.Load(t, engine.Config{Detect: d}, made("sipvicious-scan.pcap"))
	d.Settle()
	st := c.Status()
	if st.Detectors == nil || st.Detectors.FindingsRecorded != 4 || st.Detectors.FindingsEvicted != 3 {
		t.Fatalf("detectors %+v, want 4 recorded, 3 evicted from a ring of 1", st.Detectors)
	}
	if st.Complete || strings.Join(st.IncompleteReasons, ",") != "detector_evidence_evicted" {
		t.Errorf("complete %v, reasons %v; want only detector_evidence_evicted", st.Complete, st.IncompleteReasons)
	}
	whole := testengine.Load(t, engine.Config{Detect: detect.New(detect.Config{Scanner: true})}, made("sipvicious-scan.pcap")).Status()
	if !whole.Complete || whole.Detectors == nil || whole.Detectors.FindingsRecorded != 3 {
		t.Errorf("a ring of 1000: complete %v %v, detectors %+v", whole.Complete, whole.IncompleteReasons, whole.Detectors)
	}
}
