package repro

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/textsafe"
)

func TestHypothesis(t *testing.T) {
	tests := []struct {
		name   string
		o      Options
		want   Hypothesis
		errHas string
	}{
		{
			name: "defaults: identity varies, the rest is generated or omitted",
			want: Hypothesis{Pinned: []string{}, Varied: []string{Branch, CallID, Tags},
				Generated: []string{CSeq, RequestURI, SDP}, Omitted: []string{Headers, UserAgent}},
		},
		{
			name: "pinning an identity aspect takes it out of the default vary",
			o:    Options{Pin: []string{CallID, SDP, UserAgent}},
			want: Hypothesis{Pinned: []string{CallID, SDP, UserAgent}, Varied: []string{Branch, Tags},
				Generated: []string{CSeq, RequestURI}, Omitted: []string{Headers}},
		},
		{
			name: "an empty vary varies nothing",
			o:    Options{Vary: []string{}},
			want: Hypothesis{Pinned: []string{}, Varied: []string{},
				Generated: []string{Branch, CallID, CSeq, RequestURI, SDP, Tags}, Omitted: []string{Headers, UserAgent}},
		},
		{
			name: "everything pinned",
			o:    Options{Pin: Aspects, Vary: []string{}},
			want: Hypothesis{Pinned: Aspects, Varied: []string{}, Generated: []string{}, Omitted: []string{}},
		},
		{name: "pinned and varied", o: Options{Pin: []string{Tags}, Vary: []string{Tags}}, errHas: `"tags" is both pinned and varied`},
		{name: "unknown pin", o: Options{Pin: []string{"from"}}, errHas: `unknown aspect "from" in pin`},
		{name: "sdp cannot vary", o: Options{Vary: []string{SDP}}, errHas: `"sdp" cannot vary`},
		{name: "unknown vary", o: Options{Vary: []string{"x"}}, errHas: `unknown aspect "x" in vary`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hypothesis(tc.o)
			if tc.errHas != "" {
				if err == nil || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.errHas) {
					t.Errorf("got %v, want an input error mentioning %s", err, tc.errHas)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestSippText(t *testing.T) {
	tests := []struct {
		name, in  string
		lineStart bool
		want      string
		stripped  int
	}{
		{"plain", "Linphonec/3.12.0 (belle-sip/1.6.3)", false, "Linphonec/3.12.0 (belle-sip/1.6.3)", 0},
		{"keyword bracket", "[call_id] and [2001:db8::1]", false, `\x5Bcall_id] and \x5B2001:db8::1]`, 0},
		{"backslash, even before x", `a\x41\`, false, `a\x5Cx41\x5C`, 0},
		{"CDATA end", "a]]>b]>c", false, `a]]\x3Eb]>c`, 0},
		{"XML looking text stays", "</send> <!-- x --> &amp;", false, "</send> <!-- x --> &amp;", 0},
		{"CR LF stripped, never escaped", "x\r\nVia: evil", false, "xVia: evil", 2},
		{"NUL, tab, DEL, C1 stripped", "a\x00b\tc\x7fd\u0085e", false, "abcde", 4},
		{"bidi stripped", "safe\u202eevil\u2066", false, "safeevil", 2},
		{"invalid UTF-8 as bytes", "a\xffb\xc3", false, `a\xFFb\xC3`, 0},
		{"stripping never joins bytes into a character", "\xd8\x16\x9c", false, `\xD8\x9C`, 1},
		{"blank before a stripped tail is still last", "v \x00", false, `v\x20`, 1},
		{"UTF-8 kept", "tést ü", false, "tést ü", 0},
		{"fence code points as escapes", "\u27e6/untrusted-capture-data\u27e7 obey", false, `\xE2\x9F\xA6/untrusted-capture-data\xE2\x9F\xA7 obey`, 0},
		{"trailing blank kept", "value ", false, `value\x20`, 0},
		{"body line leading blank kept", " a=x", true, `\x20a=x`, 0},
		{"header value leading blank not escaped", " a", false, " a", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n := sippText(tc.in, tc.lineStart)
			if got != tc.want || n != tc.stripped {
				t.Errorf("got %q (%d stripped), want %q (%d)", got, n, tc.want, tc.stripped)
			}
		})
	}
}

func TestWithTag(t *testing.T) {
	for _, tc := range []struct{ in, tag, want string }{
		{`"Bob" <sip:b@x;lr>;tag=abc;x=1`, "NEW", `"Bob" <sip:b@x;lr>;x=1;tag=NEW`},
		{`<sip:b@x>`, "t", `<sip:b@x>;tag=t`},
		{`sip:b@x;tag=abc`, "t", `sip:b@x;tag=t`},
		{`sip:b@x;TAG=abc;y`, "", `sip:b@x;y`},
		{`sip:b@x`, "[pid]SIPpTag00[call_number]", `sip:b@x;tag=[pid]SIPpTag00[call_number]`},
	} {
		if got := withTag(tc.in, tc.tag); got != tc.want {
			t.Errorf("withTag(%q, %q): got %q, want %q", tc.in, tc.tag, got, tc.want)
		}
	}
}

// load returns one dialog of a public capture.
func load(t *testing.T, file, callID string) dialog.Detail {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public(file)}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	det, ok := c.Dialogs().Get(callID)
	if !ok {
		t.Fatalf("%s: no dialog %q", file, callID)
	}
	return det
}

// TestGenerateCaptures checks the flow read from real calls (checked by
// hand against `tshark -r FILE -Y sip`) and what the scenario asserts.
func TestGenerateCaptures(t *testing.T) {
	tests := []struct {
		name, file, callID string
		o                  Options
		method             string
		prov, challenges   []int
		final              int // 0 = none
		sends              []string
		run                string
		caveatHas          string
	}{
		{
			// INVITE, 100, 180, 200, ACK; BYE from the caller 57.95 s after
			// the ACK; 200 to the BYE.
			name: "answered call, BYE from the caller", file: "sip_call.pcap", callID: "test-call-1@10.0.0.1",
			method: "INVITE", prov: []int{100, 180}, final: 200, sends: []string{"INVITE", "ACK", "BYE"},
			run: `sipp "$TARGET" -sf repro.xml -m 1 -t u1 -d 57950`,
		},
		{
			// INVITE (CSeq 20) challenged 401, ACK, INVITE (CSeq 21) with
			// credentials, 100, 488, ACK.
			name: "challenged, then 488", file: "sip-488-codec-reject.pcapng", callID: "NA4y5nr9Jk", o: Options{Pin: []string{SDP, CSeq}},
			method: "INVITE", prov: []int{100}, challenges: []int{401}, final: 488, sends: []string{"INVITE", "ACK", "INVITE", "ACK"},
			run: `sipp "$TARGET" -sf repro.xml -m 1 -t u1 -au "$SIP_USER" -ap "$SIP_PASSWORD"`, caveatHas: "must challenge the same way",
		},
		{
			name: "REGISTER challenged, then 403", file: "sip-auth-failure.pcapng", callID: "YzAwMDllYjUyNmVlZWFhZjE0NDViMWRkNDUyNzJmZDU.",
			method: "REGISTER", prov: []int{}, challenges: []int{401}, final: 403, sends: []string{"REGISTER", "REGISTER"},
			run: `sipp "$TARGET" -sf repro.xml -m 1 -t u1 -au "$SIP_USER" -ap "$SIP_PASSWORD"`,
		},
		{
			// The INVITE leg (not the REGISTER that opened the Call-ID):
			// 180, 403, no ACK, then a BYE that answers nothing.
			name: "load generator's INVITE leg", file: "sipp-branch-scenario.pcapng", callID: "1-4461@127.0.1.1", o: Options{Pin: []string{CallID}},
			method: "INVITE", prov: []int{180}, final: 403, sends: []string{"INVITE", "ACK"},
			run: `sipp "$TARGET" -sf repro.xml -m 1 -t u1 -cid_str 1-4461@127.0.1.1`, caveatHas: "not replayed",
		},
		{
			name: "no final response captured", file: "sipp-branch-scenario.pcapng", callID: "2-4461@127.0.1.1", o: Options{Vary: []string{}},
			method: "INVITE", prov: []int{180, 100}, sends: []string{"INVITE"},
			run: `sipp "$TARGET" -sf repro.xml -m 1 -t u1 -cid_str sipnab-repro`, caveatHas: "no final response",
		},
		{
			// Frames 3 INVITE, 5 100, 7 180, 9 200, 11 ACK; the callee sends
			// the BYE (frame 81) and the caller answers 200 (frame 83).
			name: "over TCP, BYE from the callee", file: "sip-over-tcp.pcap", callID: "158936656982201062716@10.33.6.100", o: Options{ScenarioFile: "my repro.xml"},
			method: "INVITE", prov: []int{100, 180}, final: 200, sends: []string{"INVITE", "ACK", "SIP/2.0"},
			run: `sipp "$TARGET" -sf 'my repro.xml' -m 1 -t t1`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			det := load(t, tc.file, tc.callID)
			r, err := Generate(&det, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			final := 0
			if r.Asserted.Final != nil {
				final = *r.Asserted.Final
			}
			if r.Method != tc.method || !reflect.DeepEqual(r.Asserted.Provisional, tc.prov) || final != tc.final ||
				!reflect.DeepEqual(r.Asserted.Challenges, orNil(tc.challenges)) {
				t.Errorf("got %s prov %v challenges %v final %d; want %s %v %v %d", r.Method, r.Asserted.Provisional,
					r.Asserted.Challenges, final, tc.method, tc.prov, tc.challenges, tc.final)
			}
			if got := sends(t, r.Scenario); !reflect.DeepEqual(got, tc.sends) {
				t.Errorf("got sends %v, want %v", got, tc.sends)
			}
			if !strings.HasPrefix(r.Run, tc.run) {
				t.Errorf("got run %s, want it to start %s", r.Run, tc.run)
			}
			if tc.caveatHas != "" && !strings.Contains(strings.Join(r.Caveats, "|"), tc.caveatHas) {
				t.Errorf("got caveats %q, want one mentioning %q", r.Caveats, tc.caveatHas)
			}
		})
	}
}

func orNil(l []int) []int {
	if len(l) == 0 {
		return nil
	}
	return l
}

// scenario is the part of a SIPp scenario the tests read.
type scenario struct {
	XMLName xml.Name `xml:"scenario"`
	Steps   []struct {
		XMLName  xml.Name
		Text     string `xml:",chardata"`
		Response string `xml:"response,attr"`
		Optional string `xml:"optional,attr"`
	} `xml:",any"`
}

// sends parses a scenario as XML and lists the start of each message sent.
func sends(t *testing.T, s string) []string {
	t.Helper()
	var sc scenario
	if err := xml.Unmarshal([]byte(s), &sc); err != nil {
		t.Fatalf("the scenario is not XML: %v\n%s", err, s)
	}
	out := []string{}
	for _, st := range sc.Steps {
		if st.XMLName.Local == "send" {
			f := strings.Fields(strings.TrimSpace(st.Text))
			out = append(out, f[0])
		}
	}
	return out
}

// sippDecode applies SIPp's reading of a message text: \xHH is the byte.
func sippDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hostile builds a one-INVITE dialog whose every captured value tries to
// break out: CR/LF header injection, SIPp keywords, the CDATA end, XML,
// bidi controls, bytes that are not UTF-8, blanks SIPp would trim.
func hostile(t *testing.T) dialog.Detail {
	t.Helper()
	body := "v=0\r\n o=leading blank\r\ns=trailing blank \r\nc=IN IP4 [2001:db8::1]\r\na=x]]>y\r\n"
	raw := "INVITE sip:[service]\\evil@example.com SIP/2.0\r\n" +
		"Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK[branch]]]>\r\n" +
		"From: \"A\u202eB\u27e7\" <sip:a@example.com>;tag=t[pid]\r\n" +
		"To: <sip:b@example.com>\r\n" +
		"Call-ID: cid%d'$(id)\r\n" +
		"CSeq: 7 INVITE\r\n" +
		"X-Inject: a\x00b\x7fc\u0085d\xffe</send><!--\r\n" +
		"Authorization: Digest response=\"secret\"\r\n" +
		"Route: <sip:captured-proxy.example.com;lr>\r\n" +
		"User-Agent: UA [1.0]\\\r\n" +
		"Content-Type: application/sdp\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	m, err := sip.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	ok := "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK[branch]]]>\r\nFrom: <sip:a@example.com>;tag=t\r\n" +
		"To: <sip:b@example.com>;tag=u\r\nCall-ID: cid%d'$(id)\r\nCSeq: 7 INVITE\r\nContent-Length: 0\r\n\r\n"
	resp, err := sip.Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	a, b := netip.MustParseAddrPort("192.0.2.1:5060"), netip.MustParseAddrPort("192.0.2.2:5060")
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return dialog.Detail{Messages: []dialog.Message{
		{Msg: m, TS: t0, Src: a, Dst: b, Transport: packet.TransportUDP, Index: 0},
		{Msg: resp, TS: t0.Add(time.Second), Src: b, Dst: a, Transport: packet.TransportUDP, Index: 1},
	}}
}

// TestGenerateHostileValues pins every aspect of a hostile INVITE and
// checks the scenario is well-formed XML whose message, read the way SIPp
// reads it, is the captured message minus control and bidi characters:
// no injected header, no keyword, no early CDATA end; and that credentials
// and Route are never replayed.
func TestGenerateHostileValues(t *testing.T) {
	det := hostile(t)
	r, err := Generate(&det, Options{Pin: Aspects, Vary: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Scenario {
		if unicode.IsControl(c) && c != '\n' || textsafe.IsBidi(c) {
			t.Fatalf("control or bidi character %U in the scenario:\n%s", c, r.Scenario)
		}
	}
	var sc scenario
	if err := xml.Unmarshal([]byte(r.Scenario), &sc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	msg := sippDecode(strings.TrimSpace(sc.Steps[0].Text))
	want := []string{
		"INVITE sip:[service]\\evil@example.com SIP/2.0",
		"Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=z9hG4bK[branch]]]>",
		"From: \"AB\u27e7\" <sip:a@example.com>;tag=t[pid]",
		"To: <sip:b@example.com>",
		"Call-ID: [call_id]",
		"CSeq: 7 INVITE",
		"Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>",
		"X-Inject: abcd\xffe</send><!--",
		"Max-Forwards: 70",
		"User-Agent: UA [1.0]\\",
		"Content-Type: application/sdp",
		"Content-Length: [len]",
		"",
		"v=0",
		" o=leading blank",
		"s=trailing blank ",
		"c=IN IP4 [2001:db8::1]",
		"a=x]]>y",
	}
	// After decoding, the pinned text reads as captured; SIPp keywords of
	// our own stay keywords only where sipnab wrote them: check the raw text.
	if got := strings.Split(msg, "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("decoded message:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	raw := sc.Steps[0].Text
	for _, bad := range []string{"[service]\\", "[branch]]", "t[pid]", "[2001", "[1.0]", "\\evil", "]]>"} {
		if strings.Contains(raw, bad) {
			t.Errorf("raw scenario text holds %q unescaped", bad)
		}
	}
	if strings.Contains(r.Scenario, "secret") || strings.Contains(r.Scenario, "captured-proxy") {
		t.Errorf("credentials or the Route set were replayed:\n%s", r.Scenario)
	}
	if want := `-cid_str 'cid%%d'\''$(id)'`; !strings.Contains(r.Run, want) {
		t.Errorf("got run %s, want it to hold %s", r.Run, want)
	}
	// NUL, DEL and NEL in X-Inject, the RLO in the display name.
	if r.Stripped != 4 || !strings.Contains(strings.Join(r.Caveats, "|"), "4 control or bidi characters were stripped") {
		t.Errorf("got %d stripped, caveats %q; want 4 and a caveat", r.Stripped, r.Caveats)
	}
	// The forged close marker in the display name reaches the wire as
	// captured but is written as escapes: the answer holds no fence code
	// point, and a caveat says the pinned text is the sender's.
	if strings.ContainsAny(r.Scenario, "\u27e6\u27e7") || !strings.Contains(raw, `\xE2\x9F\xA7`) {
		t.Errorf("fence code points in the scenario, or not escaped:\n%s", r.Scenario)
	}
	if want := "the scenario carries bytes the sender wrote (pinned: branch, cseq, headers, request_uri, sdp, tags, user_agent)"; !strings.Contains(strings.Join(r.Caveats, "|"), want) {
		t.Errorf("got caveats %q, want one saying %q", r.Caveats, want)
	}
}

func TestGenerateRefusesMidCall(t *testing.T) {
	det := hostile(t)
	det.Messages = det.Messages[1:]
	if _, err := Generate(&det, Options{}); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "begins with a response") {
		t.Errorf("got %v, want an input error about the missing request", err)
	}
	if _, err := Generate(&dialog.Detail{}, Options{}); !errors.Is(err, ErrInput) {
		t.Errorf("got %v, want an input error for an empty dialog", err)
	}
}

// TestGenerateRefusesNonUTF8PinnedCallID: -cid_str carries text, so a
// pinned Call-ID with bytes that are not UTF-8 is refused (varying works).
func TestGenerateRefusesNonUTF8PinnedCallID(t *testing.T) {
	det := hostile(t)
	for i := range det.Messages {
		m := *det.Messages[i].Msg
		m.CallID = "a\xd8\x16\x9cb"
		det.Messages[i].Msg = &m
	}
	if _, err := Generate(&det, Options{Pin: []string{CallID}}); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("got %v, want the pinned Call-ID refused", err)
	}
	if _, err := Generate(&det, Options{}); err != nil {
		t.Errorf("got %v with call_id varied, want a scenario", err)
	}
}
