package vcon

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/sipnab/sipnab/core/vcon"
	"github.com/sipnab/sipnab/sdk"
)

type validateOut struct {
	SchemaVersion int          `json:"schema_version"`
	Verdict       string       `json:"verdict"`
	SchemaPath    string       `json:"schema_path"`
	SchemaID      string       `json:"schema_id"`
	Errors        []vcon.Error `json:"errors"`
	ErrorsTotal   int          `json:"errors_total"`
	Digest        string       `json:"digest"`
}

func TestValidateExportedContainer(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	var out validateOut
	call(t, tools["validate_vcon"], `{"call_id":"1-1966@10.0.2.20"}`, &out)
	if out.SchemaVersion != 2 || out.Verdict != "valid" || len(out.Errors) != 0 || out.Digest == "" ||
		out.SchemaPath != "core/vcon/schema/vcon_json_schema.json" || out.SchemaID != "https://ietf.org/vcon/schemas/unsigned-vcon.json" {
		t.Errorf("%+v", out)
	}
	if _, err := os.Stat("../../" + out.SchemaPath); err != nil {
		t.Errorf("schema_path does not name the vendored file: %v", err)
	}
	// The digest is the one export_vcon gives for the same call.
	var exp struct {
		Containers []struct {
			Digest    string          `json:"digest"`
			Container json.RawMessage `json:"container"`
		} `json:"containers"`
	}
	call(t, tools["export_vcon"], `{"call_id":"1-1966@10.0.2.20"}`, &exp)
	if exp.Containers[0].Digest != out.Digest {
		t.Errorf("digest %s, export_vcon's %s", out.Digest, exp.Containers[0].Digest)
	}
	// The exported container handed back as container: valid too.
	var back validateOut
	call(t, tools["validate_vcon"], `{"container":`+string(exp.Containers[0].Container)+`}`, &back)
	if back.Verdict != "valid" {
		t.Errorf("the exported container handed back: %+v", back)
	}
}

// TestValidateBrokenContainers: the tool's example (no created_at) and
// broken copies of an exported container, each invalid at its path.
func TestValidateBrokenContainers(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	cases := []struct {
		name, container, path, keyword string
	}{
		{"missing created_at", `{"vcon":"0.4.0","uuid":"01928e10-193e-8231-b9a2-279e0d16bc46","parties":[{"tel":"+12345678901"}]}`, "", "required"},
		{"dialog type outside the enum", `{"uuid":"01928e10-193e-8231-b9a2-279e0d16bc46","created_at":"2026-01-01T00:00:00Z","dialog":[{"type":"video","start":"2026-01-01T00:00:00Z"}]}`, "/dialog/0/type", "enum"},
		{"party index a string", `{"uuid":"01928e10-193e-8231-b9a2-279e0d16bc46","created_at":"2026-01-01T00:00:00Z","attachments":[{"start":"2026-01-01T00:00:00Z","party":"0","dialog":0}]}`, "/attachments/0/party", "type"},
		{"uuid not a uuid", `{"uuid":"x","created_at":"2026-01-01T00:00:00Z"}`, "/uuid", "format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out validateOut
			call(t, tools["validate_vcon"], `{"container":`+tc.container+`}`, &out)
			if out.Verdict != "invalid" || out.ErrorsTotal != 1 || out.Errors[0].Path != tc.path || out.Errors[0].Keyword != tc.keyword {
				t.Errorf("%+v, want one %s error at %q", out, tc.keyword, tc.path)
			}
		})
	}
}

func TestValidateRefusals(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	for _, tc := range []struct{ name, args string }{
		{"neither", `{}`},
		{"both", `{"call_id":"1-1966@10.0.2.20","container":{}}`},
		{"unknown call_id", `{"call_id":"nope@nowhere"}`},
		{"container not an object", `{"container":[1]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e := callErr(t, tools["validate_vcon"], tc.args); e.Code != sdk.CodeInvalidParams {
				t.Errorf("code %d: %s", e.Code, e.Message)
			}
		})
	}
}
