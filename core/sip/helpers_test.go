package sip

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseNameAddr(t *testing.T) {
	cases := []struct {
		in      string
		want    NameAddr
		wantErr bool
	}{
		{`"Alice Liddell" <sip:alice@atlanta.example.com>;tag=9fxced76sl`,
			NameAddr{Display: "Alice Liddell", URI: "sip:alice@atlanta.example.com", Scheme: "sip", User: "alice", Host: "atlanta.example.com", Tag: "9fxced76sl", Params: ";tag=9fxced76sl"}, false},
		{`Bob <sips:bob@biloxi.example.com:5061;transport=tls>`,
			NameAddr{Display: "Bob", URI: "sips:bob@biloxi.example.com:5061;transport=tls", Scheme: "sips", User: "bob", Host: "biloxi.example.com", Port: 5061}, false},
		// Without angle brackets every parameter belongs to the header.
		{`sip:carol@chicago.example.com;tag=887s`,
			NameAddr{URI: "sip:carol@chicago.example.com", Scheme: "sip", User: "carol", Host: "chicago.example.com", Tag: "887s", Params: ";tag=887s"}, false},
		{`<sip:+12125551212@server.phone2net.com;user=phone>;tag=887s`,
			NameAddr{URI: "sip:+12125551212@server.phone2net.com;user=phone", Scheme: "sip", User: "+12125551212", Host: "server.phone2net.com", Tag: "887s", Params: ";tag=887s"}, false},
		{`"Quoted \"name\" <x>" <sip:q@h>`,
			NameAddr{Display: `Quoted "name" <x>`, URI: "sip:q@h", Scheme: "sip", User: "q", Host: "h"}, false},
		{`<tel:+1-201-555-0123;phone-context=example.com>`,
			NameAddr{URI: "tel:+1-201-555-0123;phone-context=example.com", Scheme: "tel", User: "+1-201-555-0123"}, false},
		{`<sip:[2001:db8::10]:5070>`,
			NameAddr{URI: "sip:[2001:db8::10]:5070", Scheme: "sip", Host: "2001:db8::10", Port: 5070}, false},
		{`Anonymous <sip:anonymous@anonymous.invalid>;TAG=x`,
			NameAddr{Display: "Anonymous", URI: "sip:anonymous@anonymous.invalid", Scheme: "sip", User: "anonymous", Host: "anonymous.invalid", Tag: "x", Params: ";TAG=x"}, false},
		{`*`, NameAddr{URI: "*"}, false},
		{``, NameAddr{}, true},
		{`<sip:a@b`, NameAddr{URI: "sip:a@b", Scheme: "sip", User: "a", Host: "b"}, true},
		{`<>`, NameAddr{}, true},
		{`<nonsense>`, NameAddr{URI: "nonsense"}, true},
		{`<sip:a@b:99999>`, NameAddr{URI: "sip:a@b:99999", Scheme: "sip", User: "a", Host: "b"}, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseNameAddr(c.in)
			if (err != nil) != c.wantErr {
				t.Errorf("error: got %v, want error %v", err, c.wantErr)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseURI(t *testing.T) {
	cases := []struct {
		in   string
		want URI
		err  bool
	}{
		{"sip:alice:secret@atlanta.example.com;transport=tcp?subject=project",
			URI{Raw: "sip:alice:secret@atlanta.example.com;transport=tcp?subject=project", Scheme: "sip", User: "alice", Host: "atlanta.example.com", Params: ";transport=tcp", Headers: "subject=project"}, false},
		{"SIP:Bob@Host:5060", URI{Raw: "SIP:Bob@Host:5060", Scheme: "sip", User: "Bob", Host: "Host", Port: 5060}, false},
		{"sip:alice;day=tuesday@atlanta.example.com", URI{Raw: "sip:alice;day=tuesday@atlanta.example.com", Scheme: "sip", User: "alice;day=tuesday", Host: "atlanta.example.com"}, false},
		{"sip:10.0.0.1", URI{Raw: "sip:10.0.0.1", Scheme: "sip", Host: "10.0.0.1"}, false},
		{"tel:+358-555-1234567;postd=pp22", URI{Raw: "tel:+358-555-1234567;postd=pp22", Scheme: "tel", User: "+358-555-1234567", Params: ";postd=pp22"}, false},
		{"urn:service:sos", URI{Raw: "urn:service:sos", Scheme: "urn"}, false},
		{"sip:a@b:0", URI{Raw: "sip:a@b:0", Scheme: "sip", User: "a", Host: "b"}, true},
		{"sip:", URI{Raw: "sip:", Scheme: "sip"}, true},
		{"nocolon", URI{Raw: "nocolon"}, true},
		{"1sip:x", URI{Raw: "1sip:x"}, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseURI(c.in)
			if (err != nil) != c.err {
				t.Errorf("error: got %v, want error %v", err, c.err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	u, _ := ParseURI("sip:a@b;lr;transport=UDP")
	if v, ok := u.Param("lr"); !ok || v != "" {
		t.Errorf("flag param lr: got %q %v", v, ok)
	}
	if v, ok := u.Param("TRANSPORT"); !ok || v != "UDP" {
		t.Errorf("param transport: got %q %v", v, ok)
	}
}

func TestParseVia(t *testing.T) {
	cases := []struct {
		in   string
		want Via
		err  bool
	}{
		{"SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK77ef4c2312983.1;rport=5061;received=198.51.100.3",
			Via{Protocol: "SIP/2.0/UDP", Transport: "UDP", Host: "192.0.2.1", Port: 5060, Branch: "z9hG4bK77ef4c2312983.1", Received: "198.51.100.3", RPort: "5061", HasRPort: true}, false},
		{"SIP/2.0/ws df7jal23ls0d.invalid;branch=z9hG4bKasudf;rport",
			Via{Protocol: "SIP/2.0/ws", Transport: "WS", Host: "df7jal23ls0d.invalid", Branch: "z9hG4bKasudf", HasRPort: true}, false},
		{"SIP / 2.0 / TLS [2001:db8::9]:5061 ; branch = z9hG4bKx",
			Via{Protocol: "SIP/2.0/TLS", Transport: "TLS", Host: "2001:db8::9", Port: 5061, Branch: "z9hG4bKx"}, false},
		{"SIP/2.0/UDP", Via{Protocol: "SIP/2.0/UDP", Transport: "UDP"}, true},
		{"garbage", Via{}, true},
		{"SIP/2.0/UDP host:notaport;branch=x", Via{Protocol: "SIP/2.0/UDP", Transport: "UDP", Host: "host", Branch: "x"}, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseVia(c.in)
			if (err != nil) != c.err {
				t.Errorf("error: got %v, want error %v", err, c.err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseCSeq(t *testing.T) {
	cases := []struct {
		in   string
		want CSeq
	}{
		{"314159 INVITE", CSeq{314159, "INVITE", true}},
		{"  1   bye ", CSeq{1, "BYE", true}},
		{"4294967295 REGISTER", CSeq{4294967295, "REGISTER", true}},
		{"4294967296 REGISTER", CSeq{}},
		{"INVITE", CSeq{}},
		{"12", CSeq{}},
		{"-1 INVITE", CSeq{}},
		{"1 INV/ITE", CSeq{}},
	}
	for _, c := range cases {
		got, _ := ParseCSeq(c.in)
		if got != c.want {
			t.Errorf("ParseCSeq(%q): got %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestSplitList(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"a, b,c", []string{"a", "b", "c"}},
		{`"x, y" <sip:a@b>, <sip:c@d;p="1,2">;q=0.5`, []string{`"x, y" <sip:a@b>`, `<sip:c@d;p="1,2">;q=0.5`}},
		{`"esc \", still" <sip:a@b>, c`, []string{`"esc \", still" <sip:a@b>`, "c"}},
		{"<sip:a@b?x=1,2>, c", []string{"<sip:a@b?x=1,2>", "c"}},
		{" , ,", nil},
		{"", nil},
		{"single", []string{"single"}},
	}
	for _, c := range cases {
		if got := SplitList(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitList(%q): got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseReason(t *testing.T) {
	long := strings.Repeat("é", MaxCauseChars+10)
	cases := []struct {
		in   string
		want []Reason
	}{
		{`SIP ;cause=200 ;text="Call completed elsewhere"`,
			[]Reason{{Protocol: "SIP", Cause: 200, HasCause: true, Text: "Call completed elsewhere"}}},
		{`Q.850;cause=16;text="Normal call clearing", SIP;cause=480`,
			[]Reason{{Protocol: "Q.850", Cause: 16, HasCause: true, Text: "Normal call clearing"}, {Protocol: "SIP", Cause: 480, HasCause: true}}},
		{`q.850;cause=0`, []Reason{{Protocol: "Q.850", Cause: 0, HasCause: true}}},
		{`sip;text="no cause; really"`, []Reason{{Protocol: "SIP", Text: "no cause; really"}}},
		{`RELEASE_CAUSE;cause=1`, []Reason{{Protocol: "RELEASE_CAUSE", Cause: 1, HasCause: true}}},
		{`SIP;cause=abc`, []Reason{{Protocol: "SIP"}}},
		{`SIP;text="` + long + `"`, []Reason{{Protocol: "SIP", Text: strings.Repeat("é", MaxCauseChars)}}},
		{``, nil},
	}
	for _, c := range cases {
		if got := ParseReason(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseReason(%q): got %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestParseSessionID(t *testing.T) {
	const a, b = "ab30317f1a784dc48ff824d0d3715d86", "47755a9de7794ba387653f2099600ef2"
	cases := []struct {
		in     string
		want   SessionID
		ok     bool
		uuids  []string
		locNil bool
		remNil bool
	}{
		{a + ";remote=" + b, SessionID{Local: a, Remote: b, HasRemote: true}, true, []string{a, b}, false, false},
		{strings.ToUpper(a) + " ; remote=" + NilUUID, SessionID{Local: a, Remote: NilUUID, HasRemote: true}, true, []string{a}, false, true},
		{a, SessionID{Local: a, Legacy: true}, true, []string{a}, false, true},
		{NilUUID + ";remote=" + b, SessionID{Local: NilUUID, Remote: b, HasRemote: true}, true, []string{b}, true, false},
		{"notauuid;remote=" + b, SessionID{Local: "notauuid", Remote: b, HasRemote: true}, false, []string{"notauuid", b}, false, false},
		{a + ";remote=short", SessionID{Local: a, Remote: "short", HasRemote: true}, false, []string{a, "short"}, false, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, ok := ParseSessionID(c.in)
			if got != c.want || ok != c.ok {
				t.Errorf("got %+v %v, want %+v %v", got, ok, c.want, c.ok)
			}
			if u := got.UUIDs(); !reflect.DeepEqual(u, c.uuids) {
				t.Errorf("UUIDs: got %q, want %q", u, c.uuids)
			}
			if got.LocalIsNil() != c.locNil || got.RemoteIsNil() != c.remNil {
				t.Errorf("nil: got local %v remote %v", got.LocalIsNil(), got.RemoteIsNil())
			}
		})
	}
	// Halves swap across a B2BUA.
	x, _ := ParseSessionID(a + ";remote=" + b)
	y, _ := ParseSessionID(b + ";remote=" + a)
	n1, _ := ParseSessionID(NilUUID + ";remote=" + NilUUID)
	n2, _ := ParseSessionID(NilUUID + ";remote=" + NilUUID)
	if !x.Shares(y) {
		t.Error("swapped halves: Shares false")
	}
	if n1.Shares(n2) {
		t.Error("nil UUIDs: Shares true")
	}
}

func TestParsePChargingVector(t *testing.T) {
	got, ok := ParsePChargingVector(`icid-value="AyretyU0dm+6O2IrT5tAFrbHLso=023551024"; icid-generated-at=192.0.6.8; orig-ioi=home1.net; term-ioi=home2.net; related-icid=abc; related-icid-generated-at=192.0.6.9; transit-ioi=t1`)
	want := PChargingVector{ICID: "AyretyU0dm+6O2IrT5tAFrbHLso=023551024", ICIDGeneratedAt: "192.0.6.8", OrigIOI: "home1.net", TermIOI: "home2.net",
		TransitIOI: "t1", RelatedICID: "abc", RelatedICIDGeneratedAt: "192.0.6.9"}
	if !ok || got != want {
		t.Errorf("got %+v %v, want %+v", got, ok, want)
	}
	if _, ok := ParsePChargingVector("orig-ioi=x"); ok {
		t.Error("no icid-value: ok true")
	}
	if got, _ := ParsePChargingVector("ICID-VALUE=1234bc9876e"); got.ICID != "1234bc9876e" {
		t.Errorf("upper-case name: got %+v", got)
	}
}

func TestMethods(t *testing.T) {
	if len(Methods) != 14 {
		t.Fatalf("Methods: got %d, want 14", len(Methods))
	}
	for _, m := range Methods {
		if !IsStandardMethod(m) {
			t.Errorf("IsStandardMethod(%q): false", m)
		}
	}
	for _, m := range []string{"invite", "FOO", "", "GET"} {
		if IsStandardMethod(m) {
			t.Errorf("IsStandardMethod(%q): true", m)
		}
	}
}

func TestStatusTable(t *testing.T) {
	registered := 0
	for code := 0; code < 1000; code++ {
		if _, ok := StatusText(code); ok {
			registered++
		}
	}
	if registered != 75 {
		t.Errorf("registered codes: got %d, want 75 (IANA registry)", registered)
	}
	cases := []struct {
		code   int
		phrase string
		reg    bool
		class  string
	}{
		{100, "Trying", true, ClassProvisional},
		{199, "Early Dialog Terminated", true, ClassProvisional},
		{200, "OK", true, ClassSuccess},
		{202, "Accepted (Deprecated)", true, ClassSuccess},
		{302, "Moved Temporarily", true, ClassRedirect},
		{401, "Unauthorized", true, ClassChallenge},
		{407, "Proxy Authentication Required", true, ClassChallenge},
		{403, "Forbidden", true, ClassFailure},
		{437, "Unsupported Credential", true, ClassFailure},
		{486, "Busy Here", true, ClassDeclined},
		{487, "Request Terminated", true, ClassCanceled},
		{488, "Not Acceptable Here", true, ClassFailure},
		{500, "Server Internal Error", true, ClassFailure},
		{555, "Push Notification Service Not Supported", true, ClassFailure},
		{600, "Busy Everywhere", true, ClassDeclined},
		{603, "Decline", true, ClassDeclined},
		{607, "Unwanted", true, ClassDeclined},
		{608, "Rejected", true, ClassDeclined},
		{409, "Unknown failure", false, ClassFailure}, // RFC 2543 only
		{411, "Unknown failure", false, ClassFailure},
		{299, "Unknown success", false, ClassSuccess},
		{150, "Unknown provisional", false, ClassProvisional},
		{99, "", false, ClassInvalid},
		{700, "", false, ClassInvalid},
		{-1, "", false, ClassInvalid},
	}
	for _, c := range cases {
		p, reg := StatusText(c.code)
		if p != c.phrase || reg != c.reg || StatusClass(c.code) != c.class {
			t.Errorf("%d: got %q %v %q, want %q %v %q", c.code, p, reg, StatusClass(c.code), c.phrase, c.reg, c.class)
		}
	}
}

const multipartBody = "--unique-boundary-1\r\n" +
	"Content-Type: application/sdp\r\n" +
	"\r\n" +
	"v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n" +
	"\r\n--unique-boundary-1\r\n" +
	"Content-Type: application/rs-metadata+xml\r\n" +
	"Content-Disposition: recording-session\r\n" +
	"\r\n" +
	"<recording xmlns='urn:ietf:params:xml:ns:recording:1'/>\r\n" +
	"--unique-boundary-1--\r\n"

func TestMultipart(t *testing.T) {
	ct := `multipart/mixed;boundary="unique-boundary-1"`
	parts, err := SplitMultipart(ct, []byte(multipartBody))
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		t.Fatalf("parts: got %d, want 2", len(parts))
	}
	if parts[0].MediaType != "application/sdp" || !strings.HasPrefix(string(parts[0].Body), "v=0\r\n") ||
		!strings.HasSuffix(string(parts[0].Body), "RTP/AVP 0\r\n") {
		t.Errorf("part 0: %q %q", parts[0].MediaType, parts[0].Body)
	}
	if parts[1].MediaType != "application/rs-metadata+xml" || len(parts[1].Headers) != 2 ||
		string(parts[1].Body) != "<recording xmlns='urn:ietf:params:xml:ns:recording:1'/>" {
		t.Errorf("part 1: %q %d %q", parts[1].MediaType, len(parts[1].Headers), parts[1].Body)
	}
	b, _, ok := FindBodyPart(ct, []byte(multipartBody), "application/sdp")
	if !ok || !strings.HasPrefix(string(b), "v=0") {
		t.Errorf("FindBodyPart: %v %q", ok, b)
	}
	// Nested multipart.
	outer := "--o\r\nContent-Type: multipart/mixed; boundary=unique-boundary-1\r\n\r\n" + multipartBody + "\r\n--o--\r\n"
	if b, _, ok := FindBodyPart("multipart/alternative; boundary=o", []byte(outer), "application/sdp"); !ok || !strings.HasPrefix(string(b), "v=0") {
		t.Errorf("nested: %v %q", ok, b)
	}
	// Missing close delimiter: last part runs to the end.
	open := strings.TrimSuffix(multipartBody, "--unique-boundary-1--\r\n")
	if parts, err := SplitMultipart(ct, []byte(open)); err != nil || len(parts) != 2 {
		t.Errorf("no close delimiter: %d parts, %v", len(parts), err)
	}
	if _, err := SplitMultipart("multipart/mixed", []byte(multipartBody)); err == nil {
		t.Error("no boundary: no error")
	}
	if _, err := SplitMultipart("multipart/mixed;boundary=zzz", []byte(multipartBody)); err == nil {
		t.Error("boundary absent from body: no error")
	}
	// Many parts are capped.
	many := strings.Repeat("--b\r\n\r\nx\r\n", MaxParts+10) + "--b--"
	if parts, _ := SplitMultipart("multipart/mixed;boundary=b", []byte(many)); len(parts) != MaxParts {
		t.Errorf("part cap: got %d, want %d", len(parts), MaxParts)
	}

	msg := "INVITE sip:srs@example.com SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:srs@example.com>\r\nCall-ID: rec1\r\nCSeq: 1 INVITE\r\n" +
		"Content-Type: " + ct + "\r\nContent-Length: " + itoa(len(multipartBody)) + "\r\n\r\n" + multipartBody
	m := mustParse(t, msg)
	if m.ContentType != "multipart/mixed" {
		t.Errorf("ContentType: %q", m.ContentType)
	}
	if sdp, ok := m.SDPBody(); !ok || !strings.HasPrefix(string(sdp), "v=0") {
		t.Errorf("SDPBody: %v %q", ok, sdp)
	}
	if x, ok := m.BodyPart("application/rs-metadata+xml"); !ok || !strings.HasPrefix(string(x), "<recording") {
		t.Errorf("metadata part: %v %q", ok, x)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func TestMessageLen(t *testing.T) {
	a := minimal("Content-Length: 5") + "hello"
	b := crlf("SIP/2.0 200 OK\nVia: SIP/2.0/TCP h;branch=z9hG4bKa\nFrom: <sip:a@x>;tag=1\nTo: <sip:b@y>;tag=2\nCall-ID: id1\nCSeq: 1 OPTIONS\nl: 0\n\n")
	stream := "\r\n\r\n" + a + b
	cases := []struct {
		name string
		in   string
		n    int
		err  error
	}{
		{"first of two", stream, 4 + len(a), nil},
		{"second", b, len(b), nil},
		{"partial start line", "INVITE sip:a@", 0, ErrIncomplete},
		{"partial headers", a[:40], 0, ErrIncomplete},
		{"partial body", a[:len(a)-2], 0, ErrIncomplete},
		{"keepalive only", "\r\n\r\n", 0, ErrIncomplete},
		{"not sip", "GET / HTTP/1.1\r\n" + strings.Repeat("x: y\r\n", 60), 0, ErrNotSIP},
		{"no content-length", minimal(""), len(minimal("")), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := MessageLen([]byte(c.in))
			if n != c.n || !errors.Is(err, c.err) {
				t.Errorf("got %d %v, want %d %v", n, err, c.n, c.err)
			}
		})
	}
	// Walking a stream yields each message once.
	rest := []byte(stream + stream)
	count := 0
	for len(rest) > 0 {
		n, err := MessageLen(rest)
		if err != nil {
			t.Fatalf("after %d messages: %v", count, err)
		}
		if _, err := Parse(rest[:n]); err != nil {
			t.Fatalf("framed message does not parse: %v", err)
		}
		rest = rest[n:]
		count++
	}
	if count != 4 {
		t.Errorf("messages in stream: got %d, want 4", count)
	}
}

func TestParseWarning(t *testing.T) {
	cases := []struct {
		in   string
		want []Warning
	}{
		{`307 isi.edu "Session parameter 'foo' not understood"`, []Warning{{307, "isi.edu", "Session parameter 'foo' not understood"}}},
		{`301 isi.edu "Incompatible network address type 'E.164'", 399 10.0.0.1:5060 "a, b"`,
			[]Warning{{301, "isi.edu", "Incompatible network address type 'E.164'"}, {399, "10.0.0.1:5060", "a, b"}}},
		{`abc host "x"`, nil},
		{`392 213.192.59.75:5060 "Noisy feedback tells:  pid=30990"`, []Warning{{392, "213.192.59.75:5060", "Noisy feedback tells:  pid=30990"}}},
	}
	for _, c := range cases {
		if got := ParseWarning(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseWarning(%q): got %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestHeaderNamed(t *testing.T) {
	m := mustParse(t, minimal("X-Call-ID: other-leg@pbx\nx-call-id: second\nX-Other: z"))
	if v, ok := m.HeaderNamed("x-CALL-id"); !ok || v != "other-leg@pbx" {
		t.Errorf("HeaderNamed: got %q %v", v, ok)
	}
	if got := m.HeaderValuesNamed("X-Call-ID"); !reflect.DeepEqual(got, []string{"other-leg@pbx", "second"}) {
		t.Errorf("HeaderValuesNamed: got %q", got)
	}
	if v, ok := m.HeaderNamed("i"); !ok || v != "id1" {
		t.Errorf("HeaderNamed(i): got %q %v", v, ok)
	}
	if _, ok := m.HeaderNamed("X-Missing"); ok {
		t.Error("HeaderNamed(X-Missing): present")
	}
}
