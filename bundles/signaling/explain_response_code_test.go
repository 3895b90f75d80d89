package signaling

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/sdk"
)

func TestExplainResponseCode(t *testing.T) {
	tool := explainResponseCodeTool(nil)
	tests := []struct {
		code       int
		class      string
		phrase     string
		registered bool
		reference  string
		mentions   string
	}{
		{100, "provisional", "Trying", true, "RFC 3261 §21.1.1", "hop by hop"},
		{183, "provisional", "Session Progress", true, "RFC 3261 §21.1.5", "early media"},
		{199, "provisional", "Early Dialog Terminated", true, "RFC 6228", "forked"},
		{200, "success", "OK", true, "RFC 3261 §21.2.1", "ACK"},
		{302, "redirect", "Moved Temporarily", true, "RFC 3261 §21.3.3", "Contact"},
		{401, "challenge", "Unauthorized", true, "RFC 3261 §21.4.2", "WWW-Authenticate"},
		{407, "challenge", "Proxy Authentication Required", true, "RFC 3261 §21.4.8", "Proxy-Authenticate"},
		{408, "failure", "Request Timeout", true, "RFC 3261 §21.4.9", "Not a delivery"},
		{486, "declined", "Busy Here", true, "RFC 3261 §21.4.24", "busy"},
		{487, "canceled", "Request Terminated", true, "RFC 3261 §21.4.25", "CANCEL"},
		{488, "failure", "Not Acceptable Here", true, "RFC 3261 §21.4.26", "check_codec_negotiation"},
		{603, "declined", "Decline", true, "RFC 3261 §21.6.2", "declined"},
		{607, "declined", "Unwanted", true, "RFC 8197", "unwanted"},
		{608, "declined", "Rejected", true, "RFC 8688", "intermediary"},
		{699, "failure", "Unknown failure", false, "", "600 Busy Everywhere"},
		{150, "provisional", "Unknown provisional", false, "", "never final"},
		{299, "success", "Unknown success", false, "", "200 OK"},
		{399, "redirect", "Unknown redirection", false, "", "300 Multiple Choices"},
		{499, "failure", "Unknown failure", false, "", "400 Bad Request"},
		{599, "failure", "Unknown failure", false, "", "500 Server Internal Error"},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSpace(tc.phrase), func(t *testing.T) {
			var got ResponseCodeExplanation
			r := sxCall(t, tool, `{"code":`+sxItoa(tc.code)+`}`, &got)
			if got.Code != tc.code || got.Class != tc.class || got.Phrase != tc.phrase || got.Registered != tc.registered || got.Reference != tc.reference {
				t.Errorf("got %d %q %q registered=%v ref=%q, want %d %q %q registered=%v ref=%q",
					got.Code, got.Class, got.Phrase, got.Registered, got.Reference, tc.code, tc.class, tc.phrase, tc.registered, tc.reference)
			}
			if !strings.Contains(got.Explanation, tc.mentions) {
				t.Errorf("got explanation %q, want it to mention %q", got.Explanation, tc.mentions)
			}
			if strings.Contains(r.Blocks[0], "source_exhausted") || r.Fenced {
				t.Errorf("got source flags or fencing in %s: the answer reads no capture", r.Blocks[0])
			}
		})
	}
}

// TestExplainResponseCodeCoversTheRegistry checks, for every code from 100
// to 699, that a registered code has its own explanation and reference and
// an unregistered one the class text, and that no explanation is kept for a
// code the registry does not list.
func TestExplainResponseCodeCoversTheRegistry(t *testing.T) {
	registered := 0
	for code := 100; code <= 699; code++ {
		got, err := ExplainResponseCode(code)
		if err != nil {
			t.Fatalf("%d: %v", code, err)
		}
		_, reg := sip.StatusText(code)
		_, own := responseCodeTexts[code]
		switch {
		case reg && (!own || got.Reference == "" || got.Explanation == classTexts[code/100]):
			t.Errorf("%d: registered but explained by class only", code)
		case !reg && got.Explanation != classTexts[code/100]:
			t.Errorf("%d: unregistered, got %q, want the class text", code, got.Explanation)
		case got.Explanation == "":
			t.Errorf("%d: empty explanation", code)
		}
		if reg {
			registered++
		}
	}
	if registered != 75 || len(responseCodeTexts) != 75 {
		t.Errorf("got %d registered codes and %d explanations, want 75 and 75", registered, len(responseCodeTexts))
	}
	for code := range responseCodeTexts {
		if _, reg := sip.StatusText(code); !reg {
			t.Errorf("%d: explained but not in the registry", code)
		}
	}
}

func TestExplainResponseCodeRefusals(t *testing.T) {
	tool := explainResponseCodeTool(nil)
	for _, tc := range []struct{ name, args, want string }{
		{"below range", `{"code":99}`, `argument "code": got 99; valid: 100 to 699`},
		{"above range", `{"code":700}`, `argument "code": got 700; valid: 100 to 699`},
		{"zero", `{"code":0}`, `argument "code": got 0; valid: 100 to 699`},
		{"negative", `{"code":-486}`, `argument "code": got -486; valid: 100 to 699`},
		{"missing", `{}`, "code"},
		{"string", `{"code":"486"}`, "code"},
		{"fraction", `{"code":486.5}`, "code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sxCallErr(t, tool, tc.args)
			if e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Errorf("got %d %q, want %d mentioning %q", e.Code, e.Message, sdk.CodeInvalidParams, tc.want)
			}
		})
	}
}
