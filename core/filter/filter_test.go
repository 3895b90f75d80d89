package filter

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

var defTh = DefaultThresholds()

func mustCompile(t testing.TB, expr string) *Filter {
	t.Helper()
	f, err := Compile(expr, defTh)
	if err != nil {
		if len(expr) > 200 {
			expr = expr[:200] + "..."
		}
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	return f
}

// flags builds a record with the given boolean fields true and every other
// boolean field false.
func flags(on ...Field) *MemRecord {
	m := &MemRecord{}
	for f := Field(1); f < fieldEnd; f++ {
		if f.Type() == TypeBool {
			m.SetBool(f, slices.Contains(on, f))
		}
	}
	return m
}

func TestFieldTable(t *testing.T) {
	// The spec's 31 fields (mcp-surface.md §7), in its order, with types,
	// and final_status_code among the numbers.
	want := []struct {
		name string
		typ  Type
	}{
		{"from.user", TypeString}, {"to.user", TypeString}, {"method", TypeString}, {"ua", TypeString},
		{"call_id", TypeString}, {"payload", TypeString}, {"src.ip", TypeString}, {"dst.ip", TypeString},
		{"state", TypeString}, {"rtp.codec", TypeString}, {"rtp.ssrc", TypeString},
		{"src.port", TypeNumber}, {"dst.port", TypeNumber}, {"duration", TypeNumber}, {"msg_count", TypeNumber},
		{"pdd", TypeNumber}, {"setup_time", TypeNumber}, {"retransmits", TypeNumber},
		{"final_status_code", TypeNumber}, {"rtp.mos", TypeNumber},
		{"rtp.jitter", TypeNumber}, {"rtp.loss", TypeNumber}, {"rtp.packets", TypeNumber},
		{"rtp.orphaned", TypeBool}, {"one_way", TypeBool}, {"nat_mismatch", TypeBool}, {"no_media", TypeBool},
		{"codec_asymmetry", TypeBool}, {"ptime_asymmetry", TypeBool}, {"payload_asymmetry", TypeBool},
		{"duration_asymmetry", TypeBool}, {"late_media", TypeBool},
	}
	got := Fields()
	if len(got) != 32 || NumFields != 32 {
		t.Fatalf("got %d fields (NumFields %d), want 32", len(got), NumFields)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Type != w.typ {
			t.Errorf("field %d: got %s %s, want %s %s", i, g.Name, g.Type, w.name, w.typ)
		}
		if g.Doc == "" {
			t.Errorf("%s: no doc", g.Name)
		}
		if f, ok := FieldByName(w.name); !ok || f != g.Field || f.String() != w.name {
			t.Errorf("FieldByName(%q) = %v, %v", w.name, f, ok)
		}
		multi := w.name == "payload" || w.name == "rtp.codec" || w.name == "rtp.ssrc"
		if g.Multi != multi {
			t.Errorf("%s: got Multi %v, want %v", g.Name, g.Multi, multi)
		}
	}
	units := map[string]string{"duration": "s", "pdd": "s", "setup_time": "s", "rtp.jitter": "ms", "rtp.loss": "%"}
	for _, g := range got {
		if g.Unit != units[g.Name] {
			t.Errorf("%s: got unit %q, want %q", g.Name, g.Unit, units[g.Name])
		}
	}
	if len(States()) != 13 {
		t.Errorf("got %d states, want 13", len(States()))
	}
	var names []string
	for _, a := range Aliases() {
		names = append(names, a.Name)
		if a.Doc == "" {
			t.Errorf("alias %s: no doc", a.Name)
		}
	}
	wantAliases := []string{"problems", "slow-setup", "short-calls", "one-way", "nat-issues", "codec-asym", "ptime-asym", "payload-asym", "duration-asym", "late-media"}
	if !slices.Equal(names, wantAliases) {
		t.Errorf("got aliases %v, want %v", names, wantAliases)
	}
	if Field(0).Valid() || Field(33).Valid() || Field(0).String() != "Field(0)" || Field(200).Type() != 0 {
		t.Error("invalid fields must report invalid")
	}
}

func TestPrecedence(t *testing.T) {
	ow, nm, nomed := FieldOneWay, FieldNATMismatch, FieldNoMedia
	records := map[string]*MemRecord{
		"none": flags(), "a": flags(ow), "b": flags(nm), "c": flags(nomed),
		"ab": flags(ow, nm), "ac": flags(ow, nomed), "bc": flags(nm, nomed), "abc": flags(ow, nm, nomed),
	}
	// a = one_way, b = nat_mismatch, c = no_media
	const a, b, c = "one_way == true", "nat_mismatch == true", "no_media == true"
	tests := []struct {
		name, expr, canon string
		match             []string // records that match
	}{
		{"and binds tighter than or", a + " or " + b + " and " + c, a + " or " + b + " and " + c, []string{"a", "ab", "ac", "bc", "abc"}},
		{"and before or on the left", a + " and " + b + " or " + c, a + " and " + b + " or " + c, []string{"c", "ab", "ac", "bc", "abc"}},
		{"parentheses override", "(" + a + " or " + b + ") and " + c, "(" + a + " or " + b + ") and " + c, []string{"ac", "bc", "abc"}},
		{"not binds tighter than and", "not " + a + " and " + b, "not " + a + " and " + b, []string{"b", "bc"}},
		{"not of a group", "not (" + a + " and " + b + ")", "not (" + a + " and " + b + ")", []string{"none", "a", "b", "c", "ac", "bc"}},
		{"not binds tighter than or", "not " + a + " or " + b, "not " + a + " or " + b, []string{"none", "b", "c", "ab", "bc", "abc"}},
		{"double not cancels", "not not " + a, a, []string{"a", "ab", "ac", "abc"}},
		{"triple not", "NOT Not nOT " + a, "not " + a, []string{"none", "b", "c", "bc"}},
		{"not not of a group", "not (not (" + a + "))", a, []string{"a", "ab", "ac", "abc"}},
		{"keywords any case", a + " AND " + b + " Or " + c, a + " and " + b + " or " + c, []string{"c", "ab", "ac", "bc", "abc"}},
		{"redundant parentheses dropped", "((" + a + ")) and ((" + b + "))", a + " and " + b, []string{"ab", "abc"}},
		{"nested or flattened", a + " or (" + b + " or " + c + ")", a + " or " + b + " or " + c, []string{"a", "b", "c", "ab", "ac", "bc", "abc"}},
		{"nested and flattened", "(" + a + " and " + b + ") and " + c, a + " and " + b + " and " + c, []string{"abc"}},
		{"or inside and keeps parentheses", a + " and (" + b + " or " + c + ")", a + " and (" + b + " or " + c + ")", []string{"ab", "ac", "abc"}},
		{"no spaces around parentheses", "(" + a + ")and(" + b + ")", a + " and " + b, []string{"ab", "abc"}},
		{"not without space before (", "not(" + a + ")", "not " + a, []string{"none", "b", "c", "bc"}},
		{"no spaces around operator", "one_way==true and nat_mismatch!=false", a + " and nat_mismatch != false", []string{"ab", "abc"}},
		{"newlines and tabs are spaces", a + "\n\tand\r\n" + b, a + " and " + b, []string{"ab", "abc"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustCompile(t, tc.expr)
			if got := f.String(); got != tc.canon {
				t.Errorf("String() got %q, want %q", got, tc.canon)
			}
			var got []string
			for _, name := range []string{"none", "a", "b", "c", "ab", "ac", "bc", "abc"} {
				if f.Match(records[name]) {
					got = append(got, name)
				}
			}
			if !slices.Equal(got, tc.match) {
				t.Errorf("matches got %v, want %v", got, tc.match)
			}
		})
	}
}

func TestQuoting(t *testing.T) {
	tests := []struct {
		name, expr string
		want       string // the value the comparison holds
		canon      string
	}{
		{"bare", `from.user == alice`, `alice`, `from.user == alice`},
		{"double quoted", `from.user == "alice"`, `alice`, `from.user == alice`},
		{"single quoted", `from.user == 'alice'`, `alice`, `from.user == alice`},
		{"space needs quotes", `from.user == "John Smith"`, `John Smith`, `from.user == "John Smith"`},
		{"escaped double quote", `ua == "say \"hi\""`, `say "hi"`, `ua == 'say "hi"'`},
		{"escaped single quote", `ua == 'it\'s'`, `it's`, `ua == "it's"`},
		{"other quote kept as is", `ua == 'say "hi"'`, `say "hi"`, `ua == 'say "hi"'`},
		{"backslash before other quote kept", `ua == "it\'s"`, `it\'s`, `ua == "it\'s"`},
		{"backslash before letter kept", `ua == "a\d"`, `a\d`, `ua == a\d`},
		{"double backslash kept", `ua == "a\\b"`, `a\\b`, `ua == a\\b`},
		{"both quotes", `ua == "it's \"x\""`, `it's "x"`, `ua == "it's \"x\""`},
		{"bare backslash", `call_id == a\b`, `a\b`, `call_id == a\b`},
		{"bare ip", `call_id == 10.0.0.1`, `10.0.0.1`, `call_id == 10.0.0.1`},
		{"bare at sign", `call_id == abc@host`, `abc@host`, `call_id == abc@host`},
		{"bare punctuation", `call_id == a-b_c.d+e:f/g*h?i[j]{k}^$|#%&,;~` + "`", `a-b_c.d+e:f/g*h?i[j]{k}^$|#%&,;~` + "`", `call_id == a-b_c.d+e:f/g*h?i[j]{k}^$|#%&,;~` + "`"},
		{"bare utf-8", `from.user == müller`, `müller`, `from.user == müller`},
		{"number as string", `from.user == 1001`, `1001`, `from.user == 1001`},
		{"true as string", `from.user == true`, `true`, `from.user == true`},
		{"empty quoted", `ua == ""`, ``, `ua == ""`},
		{"quoted parentheses", `ua == "PBX (v1)"`, `PBX (v1)`, `ua == "PBX (v1)"`},
		{"quoted operators", `call_id == "a==b"`, `a==b`, `call_id == "a==b"`},
		{"quoted keyword", `method == "and"`, `and`, `method == "and"`},
		{"quoted keyword any case", `method == 'NOT'`, `NOT`, `method == "NOT"`},
		{"quoted tab kept", "ua == \"a\tb\"", "a\tb", "ua == \"a\tb\""},
		{"keyword inside a word", `method == android`, `android`, `method == android`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustCompile(t, tc.expr)
			if got := f.root.str; got != tc.want {
				t.Errorf("value got %q, want %q", got, tc.want)
			}
			if got := f.String(); got != tc.canon {
				t.Errorf("String() got %q, want %q", got, tc.canon)
			}
			fd := f.root.field
			r := (&MemRecord{}).SetStr(fd, tc.want)
			if !f.Match(r) {
				t.Errorf("does not match a record holding %q", tc.want)
			}
			if f.Match((&MemRecord{}).SetStr(fd, tc.want+"x")) {
				t.Errorf("matches a record holding %q", tc.want+"x")
			}
		})
	}
}

// opCase is one comparison evaluated against one record value.
type opCase struct {
	expr string
	want bool
}

func runOps(t *testing.T, rec *MemRecord, cases []opCase) {
	t.Helper()
	for _, c := range cases {
		f, err := Compile(c.expr, defTh)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.expr, err)
			continue
		}
		if got := f.Match(rec); got != c.want {
			t.Errorf("%q: got %v, want %v", c.expr, got, c.want)
		}
	}
}

func TestOperatorsString(t *testing.T) {
	rec := (&MemRecord{}).SetStr(FieldFromUser, "bob").SetStr(FieldMethod, "INVITE").SetStr(FieldState, "InCall")
	runOps(t, rec, []opCase{
		{"from.user == bob", true}, {"from.user == Bob", false}, {"from.user == bo", false},
		{"from.user != bob", false}, {"from.user != alice", true},
		{"from.user < bob", false}, {"from.user < bobby", true}, {"from.user < alice", false}, {"from.user < carol", true},
		{"from.user > alice", true}, {"from.user > bob", false}, {"from.user > carol", false},
		{"from.user <= bob", true}, {"from.user <= alice", false}, {"from.user <= carol", true},
		{"from.user >= bob", true}, {"from.user >= carol", false}, {"from.user >= alice", true},
		{"from.user =~ ^b", true}, {"from.user =~ o", true}, {"from.user =~ ^o", false}, {"from.user =~ '(?i)^BOB$'", true},
		{"from.user =~ ^BOB$", false}, {"method == INVITE", true}, {"method == invite", false},
		{"state == InCall", true}, {"state != InCall", false}, {"state == Failed", false}, {"state =~ ^In", true},
		{"state < Ringing", true}, {"state > Failed", true},
	})
}

func TestOperatorsNumber(t *testing.T) {
	rec := (&MemRecord{}).SetNum(FieldPDD, 2.5).SetNum(FieldSrcPort, 5060).SetNum(FieldRTPLoss, 0.1+0.2)
	runOps(t, rec, []opCase{
		{"pdd == 2.5", true}, {"pdd == 2.50", true}, {"pdd == '2.5'", true}, {"pdd == 2.4", false},
		{"pdd != 2.5", false}, {"pdd != 3", true},
		{"pdd < 3", true}, {"pdd < 2.5", false}, {"pdd < 2", false},
		{"pdd > 2", true}, {"pdd > 2.5", false}, {"pdd > 3", false},
		{"pdd <= 2.5", true}, {"pdd <= 2", false}, {"pdd <= 3", true},
		{"pdd >= 2.5", true}, {"pdd >= 3", false}, {"pdd >= -1", true},
		{"pdd > 25e-1", false}, {"pdd >= 25e-1", true}, {"pdd < .3e1", true}, {"pdd > +2", true},
		{"src.port == 5060", true}, {"src.port == 5060.0", true}, {"src.port != 5061", true},
		// 0.1 + 0.2 is 0.30000000000000004: equal to 0.3 within Epsilon,
		// and therefore neither < nor > it.
		{"rtp.loss == 0.3", true}, {"rtp.loss > 0.3", false}, {"rtp.loss < 0.3", false},
		{"rtp.loss >= 0.3", true}, {"rtp.loss <= 0.3", true}, {"rtp.loss != 0.3", false},
		{"rtp.loss == 0.3000001", false},
	})
	big := (&MemRecord{}).SetNum(FieldRTPPackets, 1e12+0.5)
	runOps(t, big, []opCase{
		// The tolerance is relative above 1: 1e12 and 1e12+0.5 are equal.
		{"rtp.packets == 1000000000000", true}, {"rtp.packets == 1000000010000", false},
	})
}

// TestFinalStatusCode: "which calls got 503" is one comparison on the row's
// final code, ranges select classes, status is the same field, and a row
// with no final response (0 in the row: absent) is never a 4xx, a 2xx nor
// a zero.
func TestFinalStatusCode(t *testing.T) {
	got503 := (&MemRecord{}).SetNum(FieldFinalStatusCode, 503)
	runOps(t, got503, []opCase{
		{"final_status_code == 503", true}, {"final_status_code == 500", false},
		{"final_status_code >= 500", true}, {"final_status_code >= 500 and final_status_code < 600", true},
		{"final_status_code >= 400 and final_status_code < 500", false},
		{"final_status_code != 503", false}, {"final_status_code != 200", true},
		{"status == 503", true}, {"status >= 500", true}, {"status < 300", false},
		{"not status == 503", false},
	})
	answered := (&MemRecord{}).SetNum(FieldFinalStatusCode, 200).SetStr(FieldState, "Completed")
	runOps(t, answered, []opCase{
		{"final_status_code == 200", true}, {"status < 300", true}, {"final_status_code >= 400", false},
		{"state == Completed and status == 200", true},
	})
	none := (&MemRecord{}).SetStr(FieldMethod, "REGISTER")
	runOps(t, none, []opCase{
		{"final_status_code == 0", false}, {"final_status_code >= 0", false}, {"final_status_code < 700", false},
		{"final_status_code >= 400", false}, {"final_status_code == 200", false},
		{"final_status_code != 503", true}, {"not final_status_code >= 400", true},
		{"status == 0", false}, {"status != 200", true},
	})
	// status is written back under the field's own name.
	for expr, want := range map[string]string{
		"status == 503":                      "final_status_code == 503",
		"status >= 500 and method == INVITE": "final_status_code >= 500 and method == INVITE",
	} {
		if got := mustCompile(t, expr).String(); got != want {
			t.Errorf("Compile(%q).String() = %q, want %q", expr, got, want)
		}
	}
	if f, ok := FieldByName("status"); !ok || f != FieldFinalStatusCode || f.String() != "final_status_code" {
		t.Errorf("FieldByName(status) = %v, %v", f, ok)
	}
	if !mustCompile(t, "status >= 500").Uses(FieldFinalStatusCode) {
		t.Error("status >= 500 does not use final_status_code")
	}
	// a number field: a reason phrase or a state is refused with a hint
	for _, bad := range []string{"final_status_code == Busy", "status =~ 5..", "status == Failed"} {
		if _, err := Compile(bad, defTh); err == nil {
			t.Errorf("Compile(%q): no error", bad)
		}
	}
}

func TestOperatorsBool(t *testing.T) {
	rec := (&MemRecord{}).SetBool(FieldOneWay, true).SetBool(FieldNATMismatch, false)
	runOps(t, rec, []opCase{
		{"one_way == true", true}, {"one_way == TRUE", true}, {"one_way == 'true'", true}, {"one_way == false", false},
		{"one_way != true", false}, {"one_way != false", true},
		{"nat_mismatch == false", true}, {"nat_mismatch == true", false}, {"nat_mismatch != true", true},
	})
}

func TestOperatorsMultiValued(t *testing.T) {
	rec := (&MemRecord{}).
		Add(FieldRTPCodec, "PCMU", "G722").
		Add(FieldRTPSSRC, "0x1a2b3c4d", "0x00000010").
		Add(FieldPayload, "INVITE sip:bob@example.com SIP/2.0\r\nCall-ID: x\r\n", "SIP/2.0 486 Busy Here\r\nReason: Q.850;cause=17\r\n")
	runOps(t, rec, []opCase{
		{"rtp.codec == PCMU", true}, {"rtp.codec == G722", true}, {"rtp.codec == opus", false},
		{"rtp.codec != PCMU", false}, {"rtp.codec != opus", true},
		{"rtp.codec < H", true}, {"rtp.codec > Z", false}, {"rtp.codec >= PCMU", true}, {"rtp.codec <= A", false},
		{"rtp.codec =~ ^G7", true}, {"rtp.codec =~ ^G729", false},
		{"rtp.ssrc == 0x1a2b3c4d", true}, {"rtp.ssrc == 0x1A2B3C4D", true}, {"rtp.ssrc == 439041101", true},
		{"rtp.ssrc == 0x10", true}, {"rtp.ssrc == 16", true}, {"rtp.ssrc == 0x11", false},
		{"rtp.ssrc != 0x10", false}, {"rtp.ssrc != 0x11", true},
		{"rtp.ssrc < 0x11", true}, {"rtp.ssrc > 0x1a2b3c4d", false}, {"rtp.ssrc >= 0x1a2b3c4d", true}, {"rtp.ssrc <= 0xf", false},
		{"rtp.ssrc =~ ^0x1a2b", true}, {"rtp.ssrc =~ 0x00000010$", true}, {"rtp.ssrc =~ 0x10$", false}, {"rtp.ssrc =~ ^0X", false},
		{"payload =~ 'Reason: Q\\.850;cause=17'", true}, {"payload =~ '^SIP/2.0 486'", true}, {"payload =~ 'cause=16'", false},
		{"payload =~ '(?i)busy'", true}, {"payload == x", false}, {"payload != x", true},
		{"not payload =~ BYE", true},
	})
	// One stream decides for a != only when no stream equals the value.
	one := (&MemRecord{}).Add(FieldRTPCodec, "PCMU")
	runOps(t, one, []opCase{{"rtp.codec != PCMU", false}, {"rtp.codec != PCMA", true}})
}

func TestOperatorsIP(t *testing.T) {
	rec := (&MemRecord{}).SetStr(FieldSrcIP, "10.0.0.5").SetStr(FieldDstIP, "2001:db8::1")
	runOps(t, rec, []opCase{
		{"src.ip == 10.0.0.5", true}, {"src.ip == '10.0.0.5'", true}, {"src.ip == 10.0.0.50", false},
		{"src.ip == ::ffff:10.0.0.5", true}, {"src.ip != 10.0.0.5", false}, {"src.ip != 10.0.0.6", true},
		{"src.ip >= 10.0.0.0 and src.ip <= 10.255.255.255", true},
		// Addresses compare as numbers, not as text ("10.0.0.5" > "10.0.0.10" as text).
		{"src.ip < 10.0.0.10", true}, {"src.ip > 10.0.0.10", false}, {"src.ip > 9.255.255.255", true},
		{"src.ip =~ ^10\\.", true}, {"src.ip =~ ^192", false},
		{"dst.ip == 2001:DB8::1", true}, {"dst.ip == 2001:db8:0:0:0:0:0:1", true}, {"dst.ip == 2001:db8::2", false},
		{"dst.ip > 10.0.0.5", true}, // every IPv6 address orders after every IPv4 address
	})
	// A zone may hold any text; the canonical form quotes it.
	zf := mustCompile(t, `dst.ip == "fe80::1%eth 0"`)
	if got, want := zf.String(), `dst.ip == "fe80::1%eth 0"`; got != want {
		t.Errorf("String() got %q, want %q", got, want)
	}
	if !zf.Match((&MemRecord{}).SetStr(FieldDstIP, "fe80::1%eth 0")) || zf.Match((&MemRecord{}).SetStr(FieldDstIP, "fe80::1")) {
		t.Error("zoned address compares wrongly")
	}
	junk := (&MemRecord{}).SetStr(FieldSrcIP, "not-an-address")
	runOps(t, junk, []opCase{{"src.ip == 10.0.0.5", false}, {"src.ip != 10.0.0.5", true}, {"src.ip =~ address", true}})
	mapped := (&MemRecord{}).SetStr(FieldSrcIP, "::ffff:10.0.0.5")
	runOps(t, mapped, []opCase{{"src.ip == 10.0.0.5", true}})
}

func TestAbsentValues(t *testing.T) {
	empty := &MemRecord{}
	var cases []opCase
	for _, f := range Fields() {
		var vals []string
		switch {
		case f.Field == FieldState:
			vals = []string{"Failed"}
		case f.Field == FieldSrcIP || f.Field == FieldDstIP:
			vals = []string{"10.0.0.1"}
		case f.Field == FieldRTPSSRC:
			vals = []string{"0x1"}
		case f.Type == TypeString:
			vals = []string{"x", `""`}
		case f.Type == TypeNumber:
			vals = []string{"0", "5", "-1"}
		case f.Type == TypeBool:
			vals = []string{"true", "false"}
		}
		ops := []string{"==", "!=", "<", ">", "<=", ">=", "=~"}
		if f.Type == TypeBool {
			ops = []string{"==", "!="}
		} else if f.Type == TypeNumber {
			ops = ops[:6]
		}
		for _, o := range ops {
			for _, v := range vals {
				if o == "=~" {
					v = "'.*'" // matches any present text, even empty
				}
				e := f.Name + " " + o + " " + v
				cases = append(cases, opCase{e, o == "!="}, opCase{"not " + e, o != "!="})
			}
		}
	}
	runOps(t, empty, cases)
	// Match with a nil Record treats every field as absent.
	if mustCompile(t, "pdd < 5").Match(nil) || !mustCompile(t, "pdd != 5").Match(nil) {
		t.Error("nil record: absent rule not applied")
	}
	// A NaN from an adapter is absent, not a number.
	nan := (&MemRecord{}).SetNum(FieldPDD, math.NaN())
	runOps(t, nan, []opCase{{"pdd < 5", false}, {"pdd >= 0", false}, {"pdd != 5", true}})
	// Absent is not zero: a dialog without PDD is not slow and not fast.
	zero := (&MemRecord{}).SetNum(FieldPDD, 0)
	runOps(t, zero, []opCase{{"pdd < 5", true}, {"pdd == 0", true}})
	// Absent is not false either.
	f := (&MemRecord{}).SetBool(FieldOneWay, false)
	runOps(t, f, []opCase{{"one_way == false", true}})
	runOps(t, empty, []opCase{{"one_way == false", false}, {"one_way != true", true}})
}

func TestAliases(t *testing.T) {
	th := Thresholds{PDDSeconds: 7.5, ShortCallSeconds: 10, LossPct: 2.25, JitterMs: 30, Retransmits: 6}
	want := map[string]string{
		"problems": "state == Failed or one_way == true or rtp.loss > 2.25 or rtp.jitter > 30 or nat_mismatch == true or retransmits > 6 or pdd > 7.5 or " +
			"codec_asymmetry == true or ptime_asymmetry == true or payload_asymmetry == true or duration_asymmetry == true or late_media == true",
		"slow-setup":    "pdd > 7.5",
		"short-calls":   "state == Completed and duration < 10",
		"one-way":       "one_way == true",
		"nat-issues":    "nat_mismatch == true",
		"codec-asym":    "codec_asymmetry == true",
		"ptime-asym":    "ptime_asymmetry == true",
		"payload-asym":  "payload_asymmetry == true",
		"duration-asym": "duration_asymmetry == true",
		"late-media":    "late_media == true",
	}
	for _, a := range Aliases() {
		t.Run(a.Name, func(t *testing.T) {
			got, ok := ExpandAlias(a.Name, th)
			if !ok || got != want[a.Name] {
				t.Fatalf("ExpandAlias got %q, %v; want %q", got, ok, want[a.Name])
			}
			// The expansion compiles with the same compiler and is canonical.
			exp, err := Compile(got, th)
			if err != nil {
				t.Fatalf("expansion does not compile: %v", err)
			}
			if exp.String() != got {
				t.Errorf("expansion not canonical: %q becomes %q", got, exp.String())
			}
			// The alias and its expansion select the same records.
			al, err := Compile(a.Name, th)
			if err != nil {
				t.Fatal(err)
			}
			if al.String() != a.Name {
				t.Errorf("alias String() got %q, want %q", al.String(), a.Name)
			}
			for i, r := range aliasRecords() {
				if al.Match(r) != exp.Match(r) {
					t.Errorf("record %d: alias %v, expansion %v", i, al.Match(r), exp.Match(r))
				}
			}
		})
	}
	if _, ok := ExpandAlias("nope", th); ok {
		t.Error("ExpandAlias accepted an unknown alias")
	}
	// Thresholds follow the run: the same record is slow under one run and
	// not under another; the boundary itself is not over the threshold.
	rec := (&MemRecord{}).SetNum(FieldPDD, 9)
	runAlias := func(expr string, th Thresholds, r Record) bool {
		f, err := Compile(expr, th)
		if err != nil {
			t.Fatal(err)
		}
		return f.Match(r)
	}
	for _, c := range []struct {
		expr string
		th   Thresholds
		r    Record
		want bool
	}{
		{"slow-setup", th, rec, true},
		{"slow-setup", defTh, rec, false},
		{"slow-setup", Thresholds{PDDSeconds: 9}, rec, false},
		{"problems", th, rec, true},
		{"problems", defTh, rec, false},
		{"short-calls", th, (&MemRecord{}).SetStr(FieldState, "Completed").SetNum(FieldDuration, 5), true},
		{"short-calls", defTh, (&MemRecord{}).SetStr(FieldState, "Completed").SetNum(FieldDuration, 5), false},
		{"short-calls", defTh, (&MemRecord{}).SetStr(FieldState, "Completed").SetNum(FieldDuration, 2.9), true},
		{"short-calls", defTh, (&MemRecord{}).SetStr(FieldState, "Failed").SetNum(FieldDuration, 1), false},
		{"short-calls", defTh, (&MemRecord{}).SetStr(FieldState, "Completed"), false}, // no duration measured
		{"problems", defTh, (&MemRecord{}).SetNum(FieldRetransmits, 3), false},
		{"problems", defTh, (&MemRecord{}).SetNum(FieldRetransmits, 4), true},
		{"problems", defTh, (&MemRecord{}).SetNum(FieldRTPLoss, 5.01), true},
		{"problems", defTh, (&MemRecord{}).SetNum(FieldRTPJitter, 50), false},
		{"problems", defTh, (&MemRecord{}).SetStr(FieldState, "Failed"), true},
		{"problems", defTh, (&MemRecord{}).SetBool(FieldLateMedia, true), true},
		// Orphaned RTP cannot select a dialog: not part of problems.
		{"problems", defTh, (&MemRecord{}).SetBool(FieldRTPOrphaned, true), false},
		// No measurement at all is no problem.
		{"problems", defTh, &MemRecord{}, false},
		{"problems and method == INVITE", defTh, (&MemRecord{}).SetStr(FieldState, "Failed").SetStr(FieldMethod, "OPTIONS"), false},
		{"not one-way", defTh, flags(FieldOneWay), false},
		{"(one-way or nat-issues) and not codec-asym", defTh, flags(FieldNATMismatch), true},
	} {
		if got := runAlias(c.expr, c.th, c.r); got != c.want {
			t.Errorf("%q with %+v: got %v, want %v", c.expr, c.th, got, c.want)
		}
	}
}

// aliasRecords is a spread of records around every alias's thresholds.
func aliasRecords() []Record {
	var out []Record
	for _, st := range []string{"Failed", "Completed", "InCall"} {
		for _, pdd := range []float64{-1, 3, 7.5, 8, 11, 12} {
			for _, dur := range []float64{-1, 2, 3, 10, 11} {
				m := (&MemRecord{}).SetStr(FieldState, st)
				if pdd >= 0 {
					m.SetNum(FieldPDD, pdd)
				}
				if dur >= 0 {
					m.SetNum(FieldDuration, dur)
				}
				out = append(out, m)
			}
		}
	}
	for f := Field(1); f < fieldEnd; f++ {
		switch f.Type() {
		case TypeBool:
			out = append(out, flags(f))
		case TypeNumber:
			for _, v := range []float64{0, 2.25, 3, 4, 5, 6, 7, 30, 50, 51} {
				out = append(out, (&MemRecord{}).SetNum(f, v))
			}
		}
	}
	return out
}

func TestCompileKinds(t *testing.T) {
	f, err := CompileKinds(nil, defTh)
	if err != nil || f.String() != "problems" {
		t.Fatalf("default kinds: got %v, %v; want problems", f, err)
	}
	f, err = CompileKinds([]string{"one-way", "late-media", "one-way"}, defTh)
	if err != nil || f.String() != "one-way or late-media" {
		t.Fatalf("got %v, %v", f, err)
	}
	if !f.Match(flags(FieldLateMedia)) || f.Match(flags(FieldNATMismatch)) {
		t.Error("kinds are not OR-ed")
	}
	// find_problems ANDs its filter with the kinds.
	user := mustCompile(t, "method == INVITE")
	both := And(f, user)
	if both.String() != "(one-way or late-media) and method == INVITE" {
		t.Errorf("And String() got %q", both.String())
	}
	if both.Match(flags(FieldOneWay)) || !both.Match(flags(FieldOneWay).SetStr(FieldMethod, "INVITE")) {
		t.Error("And does not AND")
	}
	if _, err := Compile(both.String(), defTh); err != nil {
		t.Errorf("And String() does not compile: %v", err)
	}
	_, err = CompileKinds([]string{"one_way", "bogus"}, defTh)
	if !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("got %v, want ErrUnknownKind", err)
	}
	for _, s := range []string{`"one_way" (did you mean one-way?)`, `"bogus"`, "kinds are problems, slow-setup"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

func TestCombineAndNil(t *testing.T) {
	var none *Filter
	if !none.Match(&MemRecord{}) || none.String() != "" || none.Uses(FieldPDD) {
		t.Error("nil filter must match everything")
	}
	a := mustCompile(t, "one_way == true")
	b := mustCompile(t, "nat_mismatch == true or no_media == true")
	if And(nil, nil) != nil || And(nil, a) == nil || And(nil, a).String() != a.String() {
		t.Error("And must skip nil filters")
	}
	if Or(a, nil) != nil {
		t.Error("Or with a match-everything filter matches everything")
	}
	if got := Or(a, b).String(); got != "one_way == true or nat_mismatch == true or no_media == true" {
		t.Errorf("Or String() got %q", got)
	}
	if got := And(a, b).String(); got != "one_way == true and (nat_mismatch == true or no_media == true)" {
		t.Errorf("And String() got %q", got)
	}
	if !And(a, b).Uses(FieldNoMedia) || And(a, b).Uses(FieldPDD) {
		t.Error("And must union Uses")
	}
}

func TestUses(t *testing.T) {
	f := mustCompile(t, "slow-setup and rtp.codec == PCMU")
	for fd := Field(1); fd < fieldEnd; fd++ {
		want := fd == FieldPDD || fd == FieldRTPCodec
		if f.Uses(fd) != want {
			t.Errorf("Uses(%s) got %v, want %v", fd, f.Uses(fd), want)
		}
	}
	p := mustCompile(t, "problems or problems")
	if !p.Uses(FieldLateMedia) || !p.Uses(FieldState) || p.Uses(FieldRTPOrphaned) {
		t.Error("Uses must see through aliases")
	}
}

func TestThresholdsValidate(t *testing.T) {
	for _, th := range []Thresholds{
		{PDDSeconds: math.NaN()}, {LossPct: -1}, {JitterMs: math.Inf(1)}, {Retransmits: -2}, {ShortCallSeconds: math.Inf(-1)},
	} {
		if _, err := Compile("pdd > 1", th); err == nil {
			t.Errorf("%+v: got no error", th)
		}
		var pe *Error
		if _, err := Compile("problems", th); errors.As(err, &pe) {
			t.Errorf("%+v: a threshold error is not a parse error: %v", th, err)
		}
	}
	if err := (Thresholds{}).Validate(); err != nil {
		t.Errorf("zero thresholds are valid: %v", err)
	}
	if err := DefaultThresholds().Validate(); err != nil {
		t.Error(err)
	}
}

func TestMemRecordIgnoresWrongType(t *testing.T) {
	m := (&MemRecord{}).SetStr(FieldPDD, "x").SetNum(FieldState, 1).SetBool(FieldMethod, true).Add(FieldMethod, "x").SetStr(FieldPayload, "x")
	for f := Field(0); f <= fieldEnd; f++ {
		if _, ok := m.Str(f); ok {
			t.Errorf("Str(%s) present", f)
		}
		if _, ok := m.Num(f); ok {
			t.Errorf("Num(%s) present", f)
		}
		if _, ok := m.Bool(f); ok {
			t.Errorf("Bool(%s) present", f)
		}
		if m.Each(f, func(string) bool { return true }) {
			t.Errorf("Each(%s) present", f)
		}
	}
	m.SetNum(FieldPDD, 1).Unset(FieldPDD)
	if _, ok := m.Num(FieldPDD); ok {
		t.Error("Unset left the field present")
	}
}
