package sip

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// crlf turns "\n" line ends of a readable literal into CRLF.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

const inviteText = `INVITE sip:bob@biloxi.example.com SIP/2.0
Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds;rport
Max-Forwards: 70
To: Bob <sip:bob@biloxi.example.com>
From: "Alice" <sip:alice@atlanta.example.com>;tag=1928301774
Call-ID: a84b4c76e66710@pc33.atlanta.example.com
CSeq: 314159 INVITE
Contact: <sip:alice@pc33.atlanta.example.com:5062;transport=udp>
User-Agent: softphone/1.0
Content-Type: application/sdp
Content-Length: 4

v=0
`

func mustParse(t *testing.T, s string) *Message {
	t.Helper()
	m, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checkRanges(t, m)
	return m
}

func TestParseRequest(t *testing.T) {
	m := mustParse(t, crlf(inviteText))
	checks := []struct {
		name      string
		got, want any
	}{
		{"IsRequest", m.IsRequest, true},
		{"Method", m.Method, "INVITE"},
		{"RequestURI", m.RequestURI, "sip:bob@biloxi.example.com"},
		{"StartLine", m.StartLine, "INVITE sip:bob@biloxi.example.com SIP/2.0"},
		{"CallID", m.CallID, "a84b4c76e66710@pc33.atlanta.example.com"},
		{"From.Display", m.From.Display, "Alice"},
		{"From.User", m.From.User, "alice"},
		{"From.Host", m.From.Host, "atlanta.example.com"},
		{"From.Tag", m.From.Tag, "1928301774"},
		{"To.Display", m.To.Display, "Bob"},
		{"To.Tag", m.To.Tag, ""},
		{"CSeq", m.CSeq, CSeq{Number: 314159, Method: "INVITE", Valid: true}},
		{"Vias", len(m.Vias), 1},
		{"Via.Transport", m.Vias[0].Transport, "UDP"},
		{"Via.Branch", m.TopBranch(), "z9hG4bK776asdhds"},
		{"Via.HasRPort", m.Vias[0].HasRPort, true},
		{"Contact.Port", contactOf(m).Port, 5062},
		{"UserAgent", m.UserAgent, "softphone/1.0"},
		{"ContentType", m.ContentType, "application/sdp"},
		{"MaxForwards", m.MaxForwards, 70},
		{"ContentLength", m.ContentLength, 4},
		{"Body", string(m.Body), "v=0\r"},
		{"TrailingBytes", m.TrailingBytes, 1},
		{"Raw ends with body", strings.HasSuffix(string(m.Raw), "\r\n\r\nv=0\r"), true},
		{"Malformed", len(m.Malformed), 0},
		{"Headers", len(m.Headers), 10},
		{"TxMethod", m.TxMethod(), "INVITE"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestParseResponse(t *testing.T) {
	m := mustParse(t, crlf(`SIP/2.0 180 Ringing
Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1;received=192.0.2.7;rport=5070
From: <sip:a@x>;tag=a1
To: <sip:b@y>;tag=b1
Call-ID: c1
CSeq: 1 INVITE
Server: pbx/2.0
Content-Length: 0

`))
	checks := []struct {
		name      string
		got, want any
	}{
		{"IsRequest", m.IsRequest, false},
		{"StatusCode", m.StatusCode, 180},
		{"Reason", m.Reason, "Ringing"},
		{"UserAgent from Server", m.UserAgent, "pbx/2.0"},
		{"Via.Received", m.Vias[0].Received, "192.0.2.7"},
		{"Via.RPort", m.Vias[0].RPort, "5070"},
		{"Via.Port", m.Vias[0].Port, 5060},
		{"TxMethod", m.TxMethod(), "INVITE"},
		{"MaxForwards absent", m.MaxForwards, -1},
		{"Body", m.Body, []byte(nil)},
		{"ContentLength", m.ContentLength, 0},
		{"Malformed", m.Malformed, []string(nil)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

// minimal is a well-formed request whose headers tests replace.
func minimal(extra string) string {
	if extra != "" {
		extra += "\n"
	}
	return crlf("OPTIONS sip:x@y SIP/2.0\nVia: SIP/2.0/UDP h;branch=z9hG4bKa\nFrom: <sip:a@x>;tag=1\nTo: <sip:b@y>\nCall-ID: id1\nCSeq: 1 OPTIONS\n" + extra + "\n")
}

func TestCompactForms(t *testing.T) {
	cases := []struct {
		name string
		want HeaderID
	}{
		{"a", HdrAcceptContact}, {"b", HdrReferredBy}, {"c", HdrContentType},
		{"d", HdrRequestDisposition}, {"e", HdrContentEncoding}, {"f", HdrFrom},
		{"i", HdrCallID}, {"j", HdrRejectContact}, {"k", HdrSupported},
		{"l", HdrContentLength}, {"m", HdrContact}, {"o", HdrEvent},
		{"r", HdrReferTo}, {"s", HdrSubject}, {"t", HdrTo}, {"u", HdrAllowEvents},
		{"v", HdrVia}, {"x", HdrSessionExpires}, {"y", HdrIdentity},
		{"n", HdrExtension}, {"z", HdrExtension}, {"1", HdrExtension},
	}
	if got := 0; true {
		for _, c := range cases {
			if c.want != HdrExtension {
				got++
			}
		}
		if got != 19 {
			t.Fatalf("table lists %d compact forms, want 19", got)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range []string{c.name, strings.ToUpper(c.name)} {
				if got := LookupHeader(name); got != c.want {
					t.Errorf("LookupHeader(%q): got %v, want %v", name, got, c.want)
				}
				m := mustParse(t, minimal(name+": value"))
				h := m.Headers[len(m.Headers)-1]
				if h.ID != c.want || h.Name != name {
					t.Errorf("parsed %q: got id %v name %q, want id %v name %q", name, h.ID, h.Name, c.want, name)
				}
			}
		})
	}
}

func TestCompactMessage(t *testing.T) {
	m := mustParse(t, crlf(`INVITE sip:b@y SIP/2.0
v: SIP/2.0/UDP h1;branch=z9hG4bK1
V: SIP/2.0/TCP h2;branch=z9hG4bK2
f: <sip:a@x>;tag=1
T: sip:b@y
I: cid
CSeq: 7 INVITE
m: <sip:a@10.0.0.1>
C: Application/SDP; charset=utf-8
L: 3

v=0`))
	if m.CallID != "cid" || m.From.Tag != "1" || m.To.User != "b" || len(m.Vias) != 2 ||
		m.Vias[1].Host != "h2" || contactOf(m).Host != "10.0.0.1" ||
		m.ContentType != "application/sdp" || string(m.Body) != "v=0" || len(m.Malformed) != 0 {
		t.Errorf("compact message parsed as %+v", m)
	}
}

func TestHeaderNameCase(t *testing.T) {
	for _, name := range []string{"Call-ID", "call-id", "CALL-ID", "cAlL-iD"} {
		if got := LookupHeader(name); got != HdrCallID {
			t.Errorf("LookupHeader(%q): got %v, want Call-ID", name, got)
		}
	}
	if got := LookupHeader("X-Custom"); got != HdrExtension {
		t.Errorf("LookupHeader(X-Custom): got %v, want extension", got)
	}
	for id := HeaderID(1); id < hdrCount; id++ {
		if got := LookupHeader(id.String()); got != id {
			t.Errorf("LookupHeader(%q): got %v, want %v", id.String(), got, id)
		}
	}
	if n := testing.AllocsPerRun(100, func() { LookupHeader("Session-Expires") }); n != 0 {
		t.Errorf("LookupHeader allocates %v times, want 0", n)
	}
}

func TestFolding(t *testing.T) {
	msg := crlf("OPTIONS sip:x@y SIP/2.0\nVia: SIP/2.0/UDP h;branch=z9hG4bKa\nSubject: I know  you're\n there,\n\t  pick up!\nFrom: <sip:a@x>;tag=1\nTo:\n <sip:b@y>\nCall-ID: id1\nCSeq: 1 OPTIONS\n\n")
	m := mustParse(t, msg)
	subj, _ := m.Header(HdrSubject)
	if want := "I know  you're there, pick up!"; subj != want {
		t.Errorf("Subject: got %q, want %q", subj, want)
	}
	var h Header
	for _, x := range m.Headers {
		if x.ID == HdrSubject {
			h = x
		}
	}
	if got, want := string(m.Raw[h.Start:h.End]), "Subject: I know  you're\r\n there,\r\n\t  pick up!"; got != want {
		t.Errorf("Subject range: got %q, want %q", got, want)
	}
	if m.To.User != "b" {
		t.Errorf("To folded after colon: got user %q, want b", m.To.User)
	}
	if len(m.Malformed) != 0 {
		t.Errorf("Malformed: %v", m.Malformed)
	}
}

func TestLFOnly(t *testing.T) {
	m := mustParse(t, strings.ReplaceAll(minimal("Content-Length: 2"), "\r\n", "\n")+"ab")
	if m.CallID != "id1" || string(m.Body) != "ab" || len(m.Malformed) != 0 {
		t.Errorf("LF-only message: Call-ID %q body %q malformed %v", m.CallID, m.Body, m.Malformed)
	}
}

func TestRepeatedAndListHeaders(t *testing.T) {
	m := mustParse(t, crlf(`SIP/2.0 200 OK
Via: SIP/2.0/UDP p1.example.com;branch=z9hG4bKp1, SIP/2.0/UDP p2.example.com:5070;branch=z9hG4bKp2
Via: SIP/2.0 / TCP [2001:db8::1]:5061 ;branch=z9hG4bKua
From: "Smith, John" <sip:js@x>;tag=1
To: <sip:b@y>;tag=2
Call-ID: id1
CSeq: 1 REGISTER
Contact: "Bob, at home" <sip:bob@home;x="a,b">;expires=60, <sip:bob@work>
Contact: sip:bob@third

`))
	wantVias := []struct {
		host, branch, transport string
		port                    int
	}{
		{"p1.example.com", "z9hG4bKp1", "UDP", 0},
		{"p2.example.com", "z9hG4bKp2", "UDP", 5070},
		{"2001:db8::1", "z9hG4bKua", "TCP", 5061},
	}
	if len(m.Vias) != len(wantVias) {
		t.Fatalf("Vias: got %d, want %d", len(m.Vias), len(wantVias))
	}
	for i, w := range wantVias {
		v := m.Vias[i]
		if v.Host != w.host || v.Branch != w.branch || v.Transport != w.transport || v.Port != w.port {
			t.Errorf("Via %d: got %+v, want %+v", i, v, w)
		}
	}
	if m.Vias[2].Protocol != "SIP/2.0/TCP" {
		t.Errorf("Via protocol with spaces: got %q", m.Vias[2].Protocol)
	}
	if m.From.Display != "Smith, John" {
		t.Errorf("From display: got %q", m.From.Display)
	}
	contacts := SplitList(m.HeaderValues(HdrContact)[0])
	if len(contacts) != 2 || contacts[0] != `"Bob, at home" <sip:bob@home;x="a,b">;expires=60` {
		t.Errorf("Contact list: got %q", contacts)
	}
	if c, ok := m.Contact(); !ok || c.Display != "Bob, at home" || c.User != "bob" {
		t.Errorf("Contact: got %+v, %v", c, ok)
	}
	if got := len(m.HeaderValues(HdrContact)); got != 2 {
		t.Errorf("Contact headers: got %d, want 2", got)
	}
}

func TestJunkPrefix(t *testing.T) {
	body := minimal("Content-Length: 0")
	// RFC 3261 §7.5: CRLF before the start line is ignored; any other
	// junk is read past but flagged.
	cases := []struct {
		name    string
		prefix  string
		flagged bool
	}{
		{"none", "", false},
		{"crlf keepalive", "\r\n\r\n", false},
		{"bare lf", "\n", false},
		{"nul padding", "\x00\x00\x00", true},
		{"garbage line", "garbage\r\n", true},
		{"binary on same line", "\x01\x02\xff", true},
		{"spaces", "   ", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustParse(t, c.prefix+body)
			if m.JunkPrefixBytes != len(c.prefix) {
				t.Errorf("JunkPrefixBytes: got %d, want %d", m.JunkPrefixBytes, len(c.prefix))
			}
			var want []string
			if c.flagged {
				want = []string{MalJunkBeforeStartLine}
			}
			if m.Method != "OPTIONS" || m.CallID != "id1" || !reflect.DeepEqual(m.Malformed, want) {
				t.Errorf("got method %q Call-ID %q malformed %v, want %v", m.Method, m.CallID, m.Malformed, want)
			}
			r, ok := m.Retain()
			if !ok {
				t.Fatal("not retained")
			}
			if again := r.Message(); again.JunkPrefixBytes != len(c.prefix) || !reflect.DeepEqual(again.Malformed, want) {
				t.Errorf("retained: got junk %d malformed %v, want %d %v", again.JunkPrefixBytes, again.Malformed, len(c.prefix), want)
			}
			if !strings.HasPrefix(string(m.Raw), "OPTIONS ") {
				t.Errorf("Raw starts with %q", m.Raw[:10])
			}
		})
	}
	// Junk past MaxJunkBytes: not found.
	if _, err := Parse([]byte(strings.Repeat("z", MaxJunkBytes+1) + "\r\n" + body)); err != ErrNotSIP {
		t.Errorf("junk beyond MaxJunkBytes: got %v, want ErrNotSIP", err)
	}
}

func TestContentLength(t *testing.T) {
	cases := []struct {
		name      string
		cl        string
		body      string
		wantBody  string
		truncated bool
		trailing  int
		malformed []string
		wantCL    int
	}{
		{"exact", "Content-Length: 5", "hello", "hello", false, 0, nil, 5},
		{"lying larger", "Content-Length: 50", "hello", "hello", true, 0, []string{MalBodyTruncated}, 50},
		{"lying smaller", "Content-Length: 2", "hello", "he", false, 3, nil, 2},
		{"absent", "", "hello", "hello", false, 0, nil, -1},
		{"unparseable", "Content-Length: five", "hello", "hello", false, 0, []string{MalBadContentLength}, -1},
		{"huge", "Content-Length: 99999999999999999999", "hello", "hello", false, 0, []string{MalBadContentLength}, -1},
		{"compact", "l: 4", "hello", "hell", false, 1, nil, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			extra := c.cl
			msg := crlf("OPTIONS sip:x@y SIP/2.0\nVia: SIP/2.0/UDP h;branch=z9hG4bKa\nFrom: <sip:a@x>;tag=1\nTo: <sip:b@y>\nCall-ID: id1\nCSeq: 1 OPTIONS\n")
			if extra != "" {
				msg += extra + "\r\n"
			}
			msg += "\r\n" + c.body
			m := mustParse(t, msg)
			if string(m.Body) != c.wantBody || m.BodyTruncated != c.truncated || m.TrailingBytes != c.trailing ||
				!reflect.DeepEqual(m.Malformed, c.malformed) || m.ContentLength != c.wantCL {
				t.Errorf("got body %q truncated %v trailing %d malformed %v CL %d; want %q %v %d %v %d",
					m.Body, m.BodyTruncated, m.TrailingBytes, m.Malformed, m.ContentLength,
					c.wantBody, c.truncated, c.trailing, c.malformed, c.wantCL)
			}
			if got := len(m.Raw); got != len(msg)-c.trailing {
				t.Errorf("Raw: got %d bytes, want %d", got, len(msg)-c.trailing)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	cases := []struct {
		name string
		msg  string
		want []string
	}{
		{"well formed", minimal(""), nil},
		{"missing all", crlf("BYE sip:x@y SIP/2.0\nMax-Forwards: 70\n\n"),
			[]string{MalMissingCallID, MalMissingCSeq, MalMissingFrom, MalMissingTo, MalMissingVia}},
		{"bare status line", "SIP/2.0 200 OK\r\n\r\n",
			[]string{MalMissingCallID, MalMissingCSeq, MalMissingFrom, MalMissingTo, MalMissingVia}},
		{"bad cseq", strings.Replace(minimal(""), "CSeq: 1 OPTIONS", "CSeq: OPTIONS one", 1), []string{MalBadCSeq}},
		{"cseq overflow", strings.Replace(minimal(""), "CSeq: 1 OPTIONS", "CSeq: 4294967296 OPTIONS", 1), []string{MalBadCSeq}},
		{"empty call-id", strings.Replace(minimal(""), "Call-ID: id1", "Call-ID:", 1), []string{MalMissingCallID}},
		{"nul in header", minimal("X-Foo: a\x00b"), []string{MalControlByte}},
		{"control in header", minimal("X-Foo: a\x07b"), []string{MalControlByte}},
		{"bare CR in header", minimal("X-Foo: a\rb"), []string{MalControlByte}},
		{"del in header", minimal("X-Foo: a\x7fb"), []string{MalControlByte}},
		{"tab is fine", minimal("X-Foo: a\tb"), nil},
		{"no colon", minimal("NotAHeader"), []string{MalNoColon}},
		{"no name", minimal(": value"), []string{MalEmptyName}},
		{"bad via", strings.Replace(minimal(""), "Via: SIP/2.0/UDP h;branch=z9hG4bKa", "Via: garbage", 1), []string{MalBadVia}},
		{"bad from", strings.Replace(minimal(""), "From: <sip:a@x>;tag=1", "From: <sip:a@x;tag=1", 1), []string{MalBadFrom}},
		{"bad max-forwards", minimal("Max-Forwards: many"), []string{MalBadMaxForwards}},
		{"no end of headers", strings.TrimSuffix(minimal(""), "\r\n"), []string{MalNoEndOfHeaders}},
		{"no end of headers, no line end", strings.TrimSuffix(minimal(""), "\r\n\r\n"), []string{MalNoEndOfHeaders}},
		{"status code out of range", crlf("SIP/2.0 999 Odd\nVia: SIP/2.0/UDP h;branch=z9hG4bKa\nFrom: <sip:a@x>;tag=1\nTo: <sip:b@y>\nCall-ID: id1\nCSeq: 1 OPTIONS\n\n"), []string{MalBadStatusCode}},
		{"orphan continuation", crlf("OPTIONS sip:x@y SIP/2.0\n  stray\nVia: SIP/2.0/UDP h;branch=z9hG4bKa\nFrom: <sip:a@x>;tag=1\nTo: <sip:b@y>\nCall-ID: id1\nCSeq: 1 OPTIONS\n\n"), []string{MalOrphanContinuation}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustParse(t, c.msg)
			if !reflect.DeepEqual(m.Malformed, c.want) {
				t.Errorf("Malformed: got %q, want %q", m.Malformed, c.want)
			}
			if m.IsWellFormed() != (len(c.want) == 0) {
				t.Errorf("IsWellFormed: got %v", m.IsWellFormed())
			}
		})
	}
}

func TestHeaderLimit(t *testing.T) {
	var b strings.Builder
	for i := 0; i < MaxHeaders+50; i++ {
		fmt.Fprintf(&b, "X-H%d: %d\n", i, i)
	}
	m := mustParse(t, minimal(strings.TrimSuffix(b.String(), "\n")))
	if !m.HeaderLimitHit || len(m.Headers) != MaxHeaders {
		t.Errorf("got HeaderLimitHit %v and %d headers, want true and %d", m.HeaderLimitHit, len(m.Headers), MaxHeaders)
	}
	if !reflect.DeepEqual(m.Malformed, []string{MalHeaderLimit}) {
		t.Errorf("Malformed: got %q", m.Malformed)
	}
	// Exactly MaxHeaders is fine.
	b.Reset()
	for i := 0; i < MaxHeaders-5; i++ {
		fmt.Fprintf(&b, "X-H%d: %d\n", i, i)
	}
	m = mustParse(t, minimal(strings.TrimSuffix(b.String(), "\n")))
	if m.HeaderLimitHit || len(m.Headers) != MaxHeaders {
		t.Errorf("at the limit: got HeaderLimitHit %v and %d headers", m.HeaderLimitHit, len(m.Headers))
	}
}

func TestLineLimit(t *testing.T) {
	long := strings.Repeat("a", MaxLineBytes+100)
	m := mustParse(t, minimal("X-Long: "+long))
	v, _ := m.Header(HdrExtension)
	if !m.LineLimitHit {
		t.Error("LineLimitHit: got false")
	}
	if got, want := len("X-Long")+2+len(v), MaxLineBytes; got != want {
		t.Errorf("truncated logical line: got %d bytes, want %d", got, want)
	}
	if !reflect.DeepEqual(m.Malformed, []string{MalLineLimit}) {
		t.Errorf("Malformed: got %q", m.Malformed)
	}
	// Folded: the unfolded length counts.
	folded := "X-Long: " + strings.Repeat("b", MaxLineBytes/2) + "\r\n " + strings.Repeat("c", MaxLineBytes/2)
	m = mustParse(t, minimal(folded))
	if !m.LineLimitHit {
		t.Error("folded line over the limit: LineLimitHit false")
	}
	// Just under the limit is fine.
	m = mustParse(t, minimal("X-Long: "+strings.Repeat("a", MaxLineBytes-len("X-Long: "))))
	if m.LineLimitHit {
		t.Error("line at the limit: LineLimitHit true")
	}
}

func TestConfigurableLimits(t *testing.T) {
	msg := []byte(minimal("X-A: 1\nX-B: " + strings.Repeat("b", 100)))
	m, err := ParseLimits(msg, Limits{MaxHeaders: 6, MaxLineBytes: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !m.HeaderLimitHit || len(m.Headers) != 6 || m.LineLimitHit {
		t.Errorf("MaxHeaders 6: got hit %v, %d headers, line hit %v", m.HeaderLimitHit, len(m.Headers), m.LineLimitHit)
	}
	m, _ = ParseLimits(msg, Limits{MaxLineBytes: 50})
	v, _ := m.HeaderNamed("X-B")
	if !m.LineLimitHit || len("X-B")+2+len(v) != 50 || m.HeaderLimitHit {
		t.Errorf("MaxLineBytes 50: got hit %v, value of %d bytes", m.LineLimitHit, len(v))
	}
	checkRanges(t, m)
}

func TestMethodCase(t *testing.T) {
	cases := []struct{ line, method string }{
		{"invite sip:a@b SIP/2.0", "INVITE"},
		{"FOO sip:a@b SIP/2.0", "FOO"},
		{"INVITE  sip:a@b  sip/2.0", "INVITE"},
	}
	for _, c := range cases {
		m := mustParse(t, c.line+"\r\n\r\n")
		if m.Method != c.method || m.RequestURI != "sip:a@b" {
			t.Errorf("%q: got method %q uri %q", c.line, m.Method, m.RequestURI)
		}
	}
}

func TestLooks(t *testing.T) {
	rtp := []byte{0x80, 0x00, 0x12, 0x34, 0, 0, 0, 160, 0xde, 0xad, 0xbe, 0xef}
	rtp = append(rtp, []byte(strings.Repeat("\xff\x7f", 80))...)
	cases := []struct {
		name string
		in   string
		want bool
	}{
		{"invite", crlf(inviteText), true},
		{"status", "SIP/2.0 200 OK\r\n", true},
		{"status no reason", "SIP/2.0 200\r\n", true},
		{"status lower version", "sip/2.0 180 Ringing\r\n", true},
		{"custom method", "FOO sip:a@b SIP/2.0\r\n", true},
		{"tel uri", "INVITE tel:+15551234 SIP/2.0\r\n", true},
		{"leading crlf", "\r\n\r\nOPTIONS sip:a@b SIP/2.0\r\n", true},
		{"leading nul", "\x00\x00OPTIONS sip:a@b SIP/2.0\r\n", true},
		{"junk line", "xyz\r\nBYE sip:a@b SIP/2.0\r\n", true},
		{"no line end", "OPTIONS sip:a@b SIP/2.0", true},
		{"http request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"http response", "HTTP/1.1 200 OK\r\n", false},
		{"http post to 5060", "POST /sip HTTP/1.0\r\n\r\n", false},
		{"http carrying sip", "POST /x HTTP/1.1\r\nContent-Type: message/sip\r\n\r\nINVITE sip:a@b SIP/2.0\r\n", false},
		{"http response carrying sip", "HTTP/1.1 200 OK\r\n\r\nSIP/2.0 200 OK\r\n", false},
		{"rtsp carrying sip", "ANNOUNCE rtsp://x RTSP/1.0\r\n\r\nSIP/2.0 200 OK\r\n", false},
		{"keepalive crlfcrlf", "\r\n\r\n", false},
		{"keepalive 5 bytes crlf", "\r\n\r\n\n", false},
		{"keepalive 5 bytes text", "hello", false},
		{"keepalive jaK", "jaK\r\n", false},
		{"keepalive nul", "\x00\x00\x00\x00\x00", false},
		{"empty", "", false},
		{"version only", "SIP/2.0", false},
		{"two digit code", "SIP/2.0 20 OK\r\n", false},
		{"four digit code", "SIP/2.0 2000 OK\r\n", false},
		{"wrong version", "INVITE sip:a@b SIP/3.0\r\n", false},
		{"no uri", "INVITE SIP/2.0\r\n", false},
		{"rtsp", "OPTIONS rtsp://x RTSP/1.0\r\n", false},
		{"rtp", string(rtp), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Looks([]byte(c.in)); got != c.want {
				t.Errorf("Looks(%q): got %v, want %v", c.in, got, c.want)
			}
			_, err := Parse([]byte(c.in))
			if (err == nil) != c.want {
				t.Errorf("Parse(%q): got error %v, Looks says %v", c.in, err, c.want)
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() { Looks(rtp) }); n != 0 {
		t.Errorf("Looks allocates %v times, want 0", n)
	}
}

func TestParseAllocations(t *testing.T) {
	b := []byte(crlf(inviteText))
	// Raw, Message, Headers, Vias, Contact: a handful, never one per header.
	n := testing.AllocsPerRun(100, func() { _, _ = Parse(b) })
	if n > 6 {
		t.Errorf("Parse: %v allocations per message, want at most 6", n)
	}
}

// TestMethodTokenCap: RFC 3261 bounds no token, but every registered method
// is short (the longest, SUBSCRIBE and the like, are 9 bytes). A method
// token longer than MaxMethodBytes, in the request line or the CSeq, is cut
// to MaxMethodBytes and the message flagged MalMethodLimit, never dropped;
// request line and CSeq are cut alike, so they still agree.
func TestMethodTokenCap(t *testing.T) {
	long := strings.Repeat("X", 2048)
	cases := []struct {
		name       string
		reqMethod  string
		cseqMethod string
		wantMethod string
		wantCSeq   string
		wantFlag   bool
	}{
		{"registered method", "SUBSCRIBE", "SUBSCRIBE", "SUBSCRIBE", "SUBSCRIBE", false},
		{"at the cap", strings.Repeat("A", MaxMethodBytes), strings.Repeat("A", MaxMethodBytes),
			strings.Repeat("A", MaxMethodBytes), strings.Repeat("A", MaxMethodBytes), false},
		{"one past the cap", strings.Repeat("A", MaxMethodBytes+1), strings.Repeat("A", MaxMethodBytes+1),
			strings.Repeat("A", MaxMethodBytes), strings.Repeat("A", MaxMethodBytes), true},
		{"2 KB extension method", long, long, long[:MaxMethodBytes], long[:MaxMethodBytes], true},
		{"long CSeq method only", "INVITE", long, "INVITE", long[:MaxMethodBytes], true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, crlf(tc.reqMethod+" sip:x@y SIP/2.0\nVia: SIP/2.0/UDP h;branch=z9hG4bKa\nFrom: <sip:a@x>;tag=1\nTo: <sip:b@y>\nCall-ID: id1\nCSeq: 7 "+tc.cseqMethod+"\n\n"))
			if m.Method != tc.wantMethod {
				t.Errorf("method: got %d bytes %.40q, want %d bytes %.40q", len(m.Method), m.Method, len(tc.wantMethod), tc.wantMethod)
			}
			if !m.CSeq.Valid || m.CSeq.Number != 7 || m.CSeq.Method != tc.wantCSeq {
				t.Errorf("CSeq: got %d %.40q (valid %v), want 7 %.40q", m.CSeq.Number, m.CSeq.Method, m.CSeq.Valid, tc.wantCSeq)
			}
			if got := slices.Contains(m.Malformed, MalMethodLimit); got != tc.wantFlag {
				t.Errorf("flagged %q: got %v, want %v (malformed %v)", MalMethodLimit, got, tc.wantFlag, m.Malformed)
			}
			if !strings.HasPrefix(m.StartLine, tc.reqMethod+" ") {
				t.Errorf("start line no longer holds the method as sent: %.60q", m.StartLine)
			}
		})
	}
}

// TestControlByteWordScanMissesNone checks the eight-byte scan against the
// byte table for every byte value in every position of a word.
func TestControlByteWordScanMissesNone(t *testing.T) {
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			var b [8]byte
			for i := range b {
				b[i] = 'a'
			}
			b[pos] = byte(c)
			if isCtl[c] && !mayHoldCtl(binary.LittleEndian.Uint64(b[:])) {
				t.Fatalf("byte %#x at %d: the word scan misses it", c, pos)
			}
		}
	}
}

// TestCanonicalMethodIsToUpperWithoutTheMessageBytes: CanonicalMethod
// answers strings.ToUpper for any token, and for a registered method in any
// case the constant spelling, which shares no byte with its input.
func TestCanonicalMethodIsToUpperWithoutTheMessageBytes(t *testing.T) {
	for _, c := range []struct {
		in         string
		registered bool
	}{
		{"INVITE", true}, {"invite", true}, {"Bye", true}, {"ack", true}, {"PUBLISH", true},
		{"x-custom", false}, {"INVITé", false}, {"", false}, {"REGISTERX", false},
	} {
		buf := []byte(c.in) // a message's bytes
		got := CanonicalMethod(unsafe.String(unsafe.SliceData(buf), len(buf)))
		if want := strings.ToUpper(c.in); got != want {
			t.Errorf("CanonicalMethod(%q) = %q, want %q", c.in, got, want)
		}
		if c.registered && unsafe.StringData(got) == unsafe.SliceData(buf) {
			t.Errorf("CanonicalMethod(%q) points into the message's bytes", c.in)
		}
	}
}

// contactOf is m.Contact() for a test that expects a Contact.
func contactOf(m *Message) NameAddr {
	c, _ := m.Contact()
	return c
}

// TestContactIsTheFirstNonEmptyContactElement: Contact() parses, on demand,
// the first element of the first Contact header that has one, as
// ParseNameAddr does (fields read before an error included), and reports
// false when there is none; it raises no Malformed reason.
func TestContactIsTheFirstNonEmptyContactElement(t *testing.T) {
	const head = "OPTIONS sip:b@h SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\nFrom: <sip:a@h>;tag=1\r\nTo: <sip:b@h>\r\nCall-ID: c\r\nCSeq: 1 OPTIONS\r\n"
	for _, tc := range []struct {
		name, headers string
		ok            bool
		uri, host     string
		port          int
		params        string
	}{
		{"none", "", false, "", "", 0, ""},
		{"one", "Contact: <sip:a@10.0.0.1:5062>;expires=60\r\n", true, "sip:a@10.0.0.1:5062", "10.0.0.1", 5062, ";expires=60"},
		{"compact form", "m: <sip:a@10.0.0.2>\r\n", true, "sip:a@10.0.0.2", "10.0.0.2", 0, ""},
		{"first element of a list", "Contact: <sip:a@h1>, <sip:a@h2>\r\n", true, "sip:a@h1", "h1", 0, ""},
		{"an empty header is skipped", "Contact:\r\nContact: <sip:a@h3>\r\n", true, "sip:a@h3", "h3", 0, ""},
		{"a list of nothing is skipped", "Contact: ,\r\nm: sip:a@h4;expires=0\r\n", true, "sip:a@h4", "h4", 0, ";expires=0"},
		{"the star", "Contact: *\r\n", true, "*", "", 0, ""},
		{"a bad port keeps what was read", "Contact: <sip:a@h5:99999>\r\n", true, "sip:a@h5:99999", "h5", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, head+tc.headers+"Content-Length: 0\r\n\r\n")
			c, ok := m.Contact()
			if ok != tc.ok || c.URI != tc.uri || c.Host != tc.host || c.Port != tc.port || c.Params != tc.params {
				t.Errorf("Contact() = %+v, %v; want ok %v uri %q host %q port %d params %q", c, ok, tc.ok, tc.uri, tc.host, tc.port, tc.params)
			}
			if len(m.Malformed) != 0 {
				t.Errorf("Malformed = %q, want none", m.Malformed)
			}
		})
	}
}

// TestParserLooksThenParseEqualsParse: a Parse from the start line
// Parser.Looks found makes the Message Parse makes, and what Looks
// remembered of other bytes (another slice of the same length, a longer
// view of the same bytes, bytes that were no SIP, a Parse in between) is
// not trusted.
func TestParserLooksThenParseEqualsParse(t *testing.T) {
	request := []byte(crlf(inviteText))
	// A response as long as the request: what Looks found in one must not
	// be used for the other.
	response := []byte("SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\nFrom: <sip:a@h>;tag=1\r\nTo: <sip:b@h>;tag=2\r\nContent-Length: 0\r\n\r\n")
	response = append(response, bytes.Repeat([]byte{'x'}, len(request)-len(response))...)
	looks := func(b []byte) func(*Parser, []byte) {
		return func(ps *Parser, _ []byte) { ps.Looks(b) }
	}
	itself := func(ps *Parser, b []byte) { ps.Looks(b) }
	reused := slices.Clone(request)
	for _, tc := range []struct {
		name  string
		b     []byte
		first func(ps *Parser, b []byte) // what the Parser does before Parse(b)
	}{
		{"request", request, itself},
		{"response", response, itself},
		{"CRLF keepalive before the start line", []byte("\r\n\r\nSIP/2.0 180 Ringing\r\nCall-ID: c\r\n\r\n"), itself},
		{"junk before the start line", []byte("\x00\x00xx INVITE sip:a SIP/2.0\r\nCall-ID: c\r\n\r\n"), itself},
		{"two messages in one datagram", []byte("SIP/2.0 200 OK\r\nl: 0\r\n\r\nSIP/2.0 180 Ringing\r\n\r\n"), itself},
		{"not SIP", []byte("GET / HTTP/1.1\r\n\r\n"), itself},
		{"nothing looked at", request, func(*Parser, []byte) {}},
		{"another slice of the same length", request, looks(response)},
		{"a longer view of the same bytes", request[:20], looks(request)},
		{"a Parse in between", request, func(ps *Parser, b []byte) {
			ps.Looks(response)
			_, _ = ps.Parse(request)
			ps.Looks(b[:0])
		}},
		{"the same slice changed after its Parse", reused, func(ps *Parser, b []byte) {
			ps.Looks(b)
			_, _ = ps.Parse(b)
			copy(b, response) // a reader's buffer, reused for the next packet
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := NewParser(Limits{})
			tc.first(ps, tc.b)
			want, werr := Parse(tc.b)
			got, err := ps.Parse(tc.b)
			if err != werr {
				t.Fatalf("Parse after Looks: error %v, Parse error %v", err, werr)
			}
			if d := messageDiff(got, want); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestParserLooksAgreesWithLooks: Parser.Looks says what Looks says.
func TestParserLooksAgreesWithLooks(t *testing.T) {
	ps := NewParser(Limits{})
	for _, b := range [][]byte{
		[]byte(crlf(inviteText)),
		[]byte("SIP/2.0 200 OK\r\n\r\n"),
		[]byte("\r\n\r\nSIP/2.0 200 OK\r\n\r\n"),
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		[]byte("\r\n\r\n"),
		{0x80, 0x08, 0x12, 0x34},
		nil,
	} {
		if got, want := ps.Looks(b), Looks(b); got != want {
			t.Errorf("%q: Parser.Looks %v, Looks %v", b, got, want)
		}
	}
}
