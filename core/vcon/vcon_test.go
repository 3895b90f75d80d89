package vcon

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/internal/testcap"
)

// examplesDir holds the vCon working group's example containers
// (testdata/examples/SOURCE.md).
const examplesDir = "testdata/examples"

func vendored(t *testing.T) *Schema {
	t.Helper()
	s, err := Vendored()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVendoredSchemaIsWalkedWhole(t *testing.T) {
	s := vendored(t)
	if u := s.Unsupported(); len(u) != 0 {
		t.Fatalf("the vendored schema uses keywords outside the walked subset: %+v", u)
	}
	if s.ID() != "https://ietf.org/vcon/schemas/unsigned-vcon.json" {
		t.Errorf("$id = %q", s.ID())
	}
}

// TestExamplesAgreeWithAnIndependentValidator: none of the working group's
// 17 examples validates against its own schema (the examples lag it). The
// expected errors are Python jsonschema 4.26's (Draft7Validator with its
// format checker) on the same files: the examples without created_at (and
// uuid) fail "required" at the root; the email threads carry a "redacted"
// object without its required "type".
func TestExamplesAgreeWithAnIndependentValidator(t *testing.T) {
	want := map[string][]string{ // file -> "path keyword" of every error
		"ab.vcon":                                 {" required", " required"},
		"ab_call_ext_rec.vcon":                    {" required"},
		"ab_call_ext_rec_amended.vcon":            {" required"},
		"ab_call_ext_rec_analysis.vcon":           {" required"},
		"ab_call_ext_rec_decrypted.vcon":          {" required", " required"},
		"ab_call_ext_rec_decrypted_verified.vcon": {" required"},
		"ab_call_ext_rec_encrypted.vcon":          {" required", " required"},
		"ab_call_ext_rec_redacted.vcon":           {" required"},
		"ab_call_ext_rec_signed.vcon":             {" required", " required"},
		"ab_call_ext_rec_with_redact.vcon":        {" required"},
		"ab_call_int_rec.vcon":                    {" required"},
		"ab_email_acct_prob_thread.vcon":          {"/redacted required"},
		"ab_email_prob_followup_alice.vcon":       {"/redacted required"},
		"ab_email_prob_followup_bob_reply.vcon":   {"/redacted required"},
		"ab_email_prob_followup_text_thread.vcon": {"/redacted required"},
		"b_email_acct_prob_image.vcon":            {"/redacted required"},
		"simple-vcon.vcon":                        {" required", " required"},
	}
	files, _ := filepath.Glob(filepath.Join(examplesDir, "*.vcon"))
	if len(files) != len(want) {
		t.Fatalf("%d examples, want %d", len(files), len(want))
	}
	s := vendored(t)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.ValidateJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range r.Errors {
				got = append(got, e.Path+" "+e.Keyword)
			}
			if r.Valid || strings.Join(got, ",") != strings.Join(want[name], ",") {
				t.Errorf("valid=%v errors %q, want invalid with %q (%+v)", r.Valid, got, want[name], r.Errors)
			}
		})
	}
}

// loadCapture reads a public capture whole.
func loadCapture(t *testing.T, name string) *engine.Capture {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	return c
}

func build(t *testing.T, c *engine.Capture, callID string) Built {
	t.Helper()
	det, ok := c.Dialogs().Get(callID)
	if !ok {
		t.Fatalf("no dialog %s", callID)
	}
	b, err := Build(Input{Detail: det, Status: c.Status(), MediaStore: c.Media() != nil, StreamsOfCall: len(c.Media().StreamsFor(callID))})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestContainerOfAnAnsweredCall checks the container of the answered call
// 1-1966@10.0.2.20 in sip-rtp-g711.pcap against tshark: From
// sip:sipp@10.0.2.20:5060, To sip:test@10.0.2.15:5060, six SIP messages
// (INVITE, 100, 200, ACK, BYE, 200), one RTP stream (SSRC 0x343da99b,
// 10.0.2.20:27942 to port 6000 from 14:52:59.689 to 14:53:08.169; the
// capture's other SSRC, 0x343ffa34, starts after 1-1968's INVITE).
func TestContainerOfAnAnsweredCall(t *testing.T) {
	c := loadCapture(t, "sip-rtp-g711.pcap")
	b := build(t, c, "1-1966@10.0.2.20")
	ct := b.Container
	if ct.Vcon != "0.4.0" || len(ct.Parties) != 3 {
		t.Fatalf("vcon %q parties %d", ct.Vcon, len(ct.Parties))
	}
	if ct.Parties[0].SIP != "sip:sipp@10.0.2.20:5060" || ct.Parties[1].SIP != "sip:test@10.0.2.15:5060" {
		t.Errorf("parties %+v", ct.Parties)
	}
	for i, p := range ct.Parties[:2] {
		if p.Name != "" || p.Validation != "none" {
			t.Errorf("party %d: name %q validation %q, want no name and none", i, p.Name, p.Validation)
		}
	}
	if ct.Parties[2].Type != "observer" {
		t.Errorf("last party %+v, want the observer", ct.Parties[2])
	}
	if ct.Dialog[0].Type != "recording" || ct.Dialog[0].Start != "2016-11-26T14:52:59.666393Z" {
		t.Errorf("dialog %+v", ct.Dialog[0])
	}
	tr := ct.Attachments[0].Body.(Trace)
	if ct.Attachments[0].Purpose != PurposeTrace || len(tr.Messages) != 6 || tr.MessagesTotal != 6 {
		t.Fatalf("trace %s: %d messages of %d", ct.Attachments[0].Purpose, len(tr.Messages), tr.MessagesTotal)
	}
	if raw, _ := base64.RawURLEncoding.DecodeString(tr.Messages[0].Base64URL); !strings.HasPrefix(string(raw), "INVITE sip:") || tr.Messages[0].Text != "" || tr.Messages[0].Src != "10.0.2.20:5060" {
		t.Errorf("first trace message %+v", tr.Messages[0])
	}
	comp := b.Completeness
	if !comp.Complete || comp.Media != MediaNotConsidered {
		t.Errorf("completeness %+v", comp)
	}
	if len(comp.Omissions) != 1 || comp.Omissions[0] != (Omission{Kind: "rtp_streams_not_carried", Count: 1, Unit: "streams"}) {
		t.Errorf("omissions %+v", comp.Omissions)
	}
	if comp.Capture.BlindSpots == nil || comp.Capture.FramesRead == 0 {
		t.Errorf("capture account %+v", comp.Capture)
	}
	// The one value: the analysis body and the attachment are the same.
	if ct.Analysis[0].Body.(Completeness).Note != comp.Note || ct.Attachments[1].Body.(Completeness).Note != comp.Note {
		t.Error("the caveat differs between analysis and attachment")
	}
	r, err := vendored(t).ValidateJSON(b.Canonical)
	if err != nil || !r.Valid {
		t.Fatalf("container invalid: %v %+v", err, r.Errors)
	}
}

func TestUUIDIsVersion8AndStable(t *testing.T) {
	a := UUID("node", "inst", "1-1966@10.0.2.20")
	if a != UUID("node", "inst", "1-1966@10.0.2.20") {
		t.Fatal("not stable")
	}
	if a == UUID("node", "inst", "1-1968@10.0.2.20") || a == UUID("node", "other", "1-1966@10.0.2.20") {
		t.Fatal("not distinct")
	}
	if !isUUID(a) || a[14] != '8' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Errorf("%s: want version 8 (RFC 9562 §5.8) and variant 10", a)
	}
}

// TestFailedCallIsIncomplete: NA4y5nr9Jk in sip-488-codec-reject.pcapng
// ends 488 (tshark): an incomplete dialog, disposition failed.
func TestFailedCallIsIncomplete(t *testing.T) {
	c := loadCapture(t, "sip-488-codec-reject.pcapng")
	b := build(t, c, "NA4y5nr9Jk")
	d := b.Container.Dialog[0]
	if d.Type != "incomplete" || d.Disposition != "failed" {
		t.Errorf("dialog %+v", d)
	}
	if r, _ := vendored(t).ValidateJSON(b.Canonical); !r.Valid {
		t.Errorf("invalid: %+v", r.Errors)
	}
}

// TestMutatedContainersFailAtTheirPath breaks a real container one way at
// a time; each must be invalid with the error at the broken value.
func TestMutatedContainersFailAtTheirPath(t *testing.T) {
	c := loadCapture(t, "sip-rtp-g711.pcap")
	b := build(t, c, "1-1966@10.0.2.20")
	cases := []struct {
		name             string
		mutate           func(m map[string]any)
		path, keyword    string
		schemaPathSuffix string
	}{
		{"missing uuid", func(m map[string]any) { delete(m, "uuid") }, "", "required", "#/required"},
		{"uuid not a uuid", func(m map[string]any) { m["uuid"] = "not-a-uuid" }, "/uuid", "format", "#/properties/uuid/format"},
		{"created_at not a date", func(m map[string]any) { m["created_at"] = "yesterday" }, "/created_at", "format", "#/properties/created_at/format"},
		{"wrong syntax version", func(m map[string]any) { m["vcon"] = "0.3.0" }, "/vcon", "const", "#/properties/vcon/const"},
		{"dialog type not in the enum", func(m map[string]any) { dlg(m)["type"] = "video" }, "/dialog/0/type", "enum", "#/definitions/Dialog/properties/type/enum"},
		{"dialog start missing", func(m map[string]any) { delete(dlg(m), "start") }, "/dialog/0", "required", "#/definitions/Dialog/required"},
		{"party index of the wrong type", func(m map[string]any) { att(m)["party"] = "two" }, "/attachments/0/party", "type", "#/definitions/Attachment/properties/party/type"},
		{"negative duration", func(m map[string]any) { dlg(m)["duration"] = json.Number("-1") }, "/dialog/0/duration", "anyOf", "#/definitions/Dialog/properties/duration/anyOf"},
		{"parties not an array", func(m map[string]any) { m["parties"] = "x" }, "/parties", "type", "#/properties/parties/type"},
	}
	s := vendored(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decoded(b.Canonical)
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(m)
			r := s.Validate(m)
			if r.Valid || len(r.Errors) != 1 {
				t.Fatalf("valid=%v errors %+v, want one error", r.Valid, r.Errors)
			}
			e := r.Errors[0]
			if e.Path != tc.path || e.Keyword != tc.keyword || e.SchemaPath != tc.schemaPathSuffix {
				t.Errorf("error %+v, want path %q keyword %q schema_path %q", e, tc.path, tc.keyword, tc.schemaPathSuffix)
			}
		})
	}
}

func dlg(m map[string]any) map[string]any { return m["dialog"].([]any)[0].(map[string]any) }
func att(m map[string]any) map[string]any { return m["attachments"].([]any)[0].(map[string]any) }

// TestKeywordsTheVendoredSchemaLacks: additionalProperties false, an
// unsupported keyword and an unknown format, on small schemas.
func TestKeywordsTheVendoredSchemaLacks(t *testing.T) {
	closed, err := Compile([]byte(`{"type":"object","properties":{"a":{"type":"integer","minimum":1}},"additionalProperties":false,"required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := closed.Validate(map[string]any{"a": json.Number("2"), "extra": true})
	if r.Valid || r.Errors[0].Path != "/extra" || r.Errors[0].Keyword != "additionalProperties" {
		t.Errorf("extra member: %+v", r)
	}
	if r := closed.Validate(map[string]any{"a": json.Number("2.0")}); !r.Valid {
		t.Errorf("2.0 is an integer (draft-07): %+v", r.Errors)
	}
	if r := closed.Validate(map[string]any{"a": json.Number("2.5")}); r.Valid {
		t.Error("2.5 passed as an integer")
	}
	rich, err := Compile([]byte(`{"type":"object","propertyNames":{"pattern":"^a"},"properties":{"d":{"format":"email"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	r = rich.Validate(map[string]any{})
	if r.Valid || r.ErrorsTotal != 2 {
		t.Fatalf("a schema outside the subset passed: %+v", r)
	}
	if r.Errors[0].Keyword != "format" || r.Errors[1].Keyword != "propertyNames" {
		t.Errorf("errors %+v, want format then propertyNames named", r.Errors)
	}
}

func TestHostileDocumentsErrorNeverPanic(t *testing.T) {
	s := vendored(t)
	for _, in := range []string{``, `{`, `[]`, `null`, `{"uuid":1}{}`, strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		`{"dialog":[` + strings.Repeat(`{"type":1},`, 500) + `{}]}`} {
		r, err := s.ValidateJSON([]byte(in))
		if err == nil && r.Valid {
			t.Errorf("%.40q valid", in)
		}
		if len(r.Errors) > MaxErrors {
			t.Errorf("%d errors listed, cap %d", len(r.Errors), MaxErrors)
		}
	}
}

// TestInlineMedia: with --retain-audio, the answered call 1-1966@10.0.2.20
// of sip-rtp-g711.pcap carries its audio as a WAV. tshark counts 425 RTP
// packets of its one stream (SSRC 0x343da99b, PCMU, 160 samples each), so
// the WAV holds 425 × 160 = 68000 stereo frames: 44 + 68000 × 4 = 272044
// bytes, 8500 ms. Over the budget (one byte less) the audio is refused
// whole; so it is when the answer's ceiling cannot hold it.
func TestInlineMedia(t *testing.T) {
	c := engine.New(engine.Config{Media: media.Config{RetainAudio: true}}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public("sip-rtp-g711.pcap")}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	det, _ := c.Dialogs().Get("1-1966@10.0.2.20")
	in := Input{Detail: det, Status: c.Status(), MediaStore: true, RetainAudio: true, StreamsOfCall: 1,
		Audio: c.Media().AudioFor("1-1966@10.0.2.20"), MaxInlineMedia: DefaultMaxInlineMedia}
	b, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	d := b.Container.Dialog[0]
	wav, err := base64.RawURLEncoding.DecodeString(d.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(wav)
	if len(wav) != 272044 || string(wav[:4]) != "RIFF" || d.Encoding != "base64url" || d.Mediatype != "audio/x-wav" ||
		d.ContentHash != "sha512-"+base64.RawURLEncoding.EncodeToString(sum[:]) || d.Filename != b.Container.UUID+".wav" {
		t.Fatalf("dialog %s %s %s, %d bytes", d.Mediatype, d.Encoding, d.ContentHash, len(wav))
	}
	comp := b.Completeness
	if comp.Media != MediaCarried || len(comp.Omissions) != 0 || slices.Contains(comp.Capture.BlindSpots, "media_not_carried") ||
		!strings.Contains(comp.MediaNote, "272044 bytes") || !strings.Contains(comp.MediaNote, "8500 ms") {
		t.Errorf("completeness %+v", comp)
	}
	if r, _ := vendored(t).ValidateJSON(b.Canonical); !r.Valid {
		t.Errorf("container with media invalid: %+v", r.Errors)
	}

	for _, tc := range []struct {
		name           string
		max, response  int64
		noteContaining string
	}{
		{"one byte over --vcon-max-inline-media", 272043, 0, "over --vcon-max-inline-media 272043"},
		{"no room in the answer", DefaultMaxInlineMedia, 300000, "would not fit --mcp-max-response-bytes 300000"},
		{"inline none", 0, 0, "over --vcon-max-inline-media 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := in
			in.MaxInlineMedia, in.ResponseBudget = tc.max, tc.response
			b, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			c := b.Completeness
			if c.Media != MediaOverBudget || b.Container.Dialog[0].Body != "" || !strings.Contains(c.MediaNote, tc.noteContaining) ||
				len(c.Omissions) != 1 || c.Omissions[0].Kind != "rtp_streams_not_carried" {
				t.Errorf("%+v", c)
			}
		})
	}
}

// FuzzValidateAndRebuild: any JSON a caller hands validate_vcon or
// analyze_vcon is judged or counted, never a panic, the error list capped.
func FuzzValidateAndRebuild(f *testing.F) {
	f.Add([]byte(`{"uuid":"01928e10-193e-8231-b9a2-279e0d16bc46","created_at":"2026-01-01T00:00:00Z","dialog":[{"type":"recording","start":"2026-01-01T00:00:00Z","duration":1.5,"parties":[0,[1,null]]}]}`))
	f.Add([]byte(`{"attachments":[{"purpose":"sip-message-trace","body":{"messages":[{"time":"2026-01-01T00:00:00Z","src":"[::1]:5060","dst":"[::1]:5062","base64url":"SU5WSVRF"}]}}]}`))
	f.Add([]byte(`{"redacted":{"url":"https://x","type":"t"},"analysis":[{"type":"x","vendor":"v","dialog":[0,1.0]}]}`))
	s, err := Vendored()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decode(data)
		if err != nil {
			return
		}
		if r := s.Validate(v); len(r.Errors) > MaxErrors || r.Valid != (r.ErrorsTotal == 0) {
			t.Fatalf("result %+v", r)
		}
		if m, ok := v.(map[string]any); ok {
			if rb := Rebuild(m); len(rb.Skipped) > MaxSkipListed || rb.Frames > MaxTraceMessages {
				t.Fatalf("rebuild %d skipped listed, %d frames", len(rb.Skipped), rb.Frames)
			}
		}
	})
}
