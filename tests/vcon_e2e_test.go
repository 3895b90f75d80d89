package tests

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/sipnab/sipnab/internal/testcap"
)

// vconTools are the vcon bundle's registered tools (mcp-surface §3.8).
var vconTools = []string{"export_vcon", "validate_vcon", "analyze_vcon", "siprec_metadata"}

// independentVConSchema resolves the vendored vCon schema with
// google/jsonschema-go, a validator sipnab's own (core/vcon) does not share
// code with: every exported container must pass both.
func independentVConSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testcap.Root(), "core", "vcon", "schema", "vcon_json_schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestVConBundleE2E drives export_vcon and validate_vcon over stdio on the
// sample capture (testdata/sip-rtp-g711.pcap: two INVITE dialogs, both
// answered 200 per tshark; 1-1966@10.0.2.20 has six SIP messages).
func TestVConBundleE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "-I", sampleCapture())
	needTools(t, s.tools(), vconTools...)
	s.waitLoaded()
	indep := independentVConSchema(t)

	// Every dialog: two containers, each valid for both validators, each
	// digest the SHA-256 of the container's bytes as the answer wrote them.
	r := s.call("export_vcon", nil)
	if r.Err != nil || r.IsError {
		t.Fatalf("export_vcon: %s", r.Response)
	}
	var page struct {
		Returned     int `json:"returned"`
		TotalMatched int `json:"total_matched"`
		Containers   []struct {
			CallID       string          `json:"call_id"`
			Digest       string          `json:"digest"`
			Container    json.RawMessage `json:"container"`
			Completeness struct {
				Complete bool   `json:"complete"`
				Media    string `json:"media"`
				Capture  struct {
					BlindSpots []string `json:"blind_spots"`
				} `json:"capture"`
			} `json:"completeness"`
		} `json:"containers"`
	}
	if err := json.Unmarshal([]byte(r.Content[0].Text), &page); err != nil {
		t.Fatal(err)
	}
	if page.Returned != 2 || page.TotalMatched != 2 {
		t.Fatalf("returned %d of %d, want 2 of 2", page.Returned, page.TotalMatched)
	}
	if last := r.Content[len(r.Content)-1].Text; !strings.HasPrefix(last, "Provenance:") {
		t.Errorf("no provenance note after capture text: %q", last)
	}
	for _, c := range page.Containers {
		sum := sha256.Sum256(c.Container)
		if hex.EncodeToString(sum[:]) != c.Digest {
			t.Errorf("%s: digest %s is not the sha256 of the container as written", c.CallID, c.Digest)
		}
		if !c.Completeness.Complete || c.Completeness.Media != "not-considered" || c.Completeness.Capture.BlindSpots == nil {
			t.Errorf("%s: completeness %+v", c.CallID, c.Completeness)
		}
		var doc any
		if err := json.Unmarshal(c.Container, &doc); err != nil {
			t.Fatal(err)
		}
		if err := indep.Validate(doc); err != nil {
			t.Errorf("%s: the independent validator rejects the container: %v", c.CallID, err)
		}
		// Analysed apart, the container gives its dialog back.
		a, _ := s.ok("analyze_vcon", map[string]any{"container_base64": base64.StdEncoding.EncodeToString(c.Container)})
		rows, _ := a["dialogs"].([]any)
		if len(rows) != 1 || rows[0].(map[string]any)["call_id"] != c.CallID || rows[0].(map[string]any)["final_status_code"] != float64(200) {
			t.Errorf("%s: analyze_vcon %v", c.CallID, a)
		}
		v, _ := s.ok("validate_vcon", map[string]any{"container": doc})
		if v["verdict"] != "valid" || v["schema_version"] != float64(2) {
			t.Errorf("%s: validate_vcon %v", c.CallID, v)
		}
		// The same container with a dialog type outside the enum.
		broken := strings.Replace(string(c.Container), `"type":"recording"`, `"type":"video"`, 1)
		var bad any
		if err := json.Unmarshal([]byte(broken), &bad); err != nil {
			t.Fatal(err)
		}
		if indep.Validate(bad) == nil {
			t.Errorf("%s: the independent validator accepts a dialog type outside the enum", c.CallID)
		}
		v, _ = s.ok("validate_vcon", map[string]any{"container": bad})
		errs, _ := v["errors"].([]any)
		if v["verdict"] != "invalid" || len(errs) != 1 || errs[0].(map[string]any)["path"] != "/dialog/0/type" {
			t.Errorf("%s: broken container: %v", c.CallID, v)
		}
	}

	// call_id with filter is refused; a filter matching nothing is an
	// empty set.
	if ref := s.call("export_vcon", map[string]any{"call_id": "1-1966@10.0.2.20", "filter": "method == INVITE"}).refused(t); ref == nil || ref.Code != "invalid_argument" {
		t.Errorf("call_id with filter: %+v", ref)
	}
	none, _ := s.ok("export_vcon", map[string]any{"filter": "final_status_code >= 400"})
	if none["returned"] != float64(0) || none["total_matched"] != float64(0) {
		t.Errorf("a filter matching nothing: %v", none)
	}
}

// TestSIPRECMetadataE2E reads the SIPp-made recording session
// (testdata/made/siprec-metadata.pcap) over stdio: the values tshark
// decodes from its INVITE (testdata/made/siprec-metadata.pcap.tshark.txt),
// the names fenced; its container validates too.
func TestSIPRECMetadataE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "-I", filepath.Join(testcap.Root(), "testdata", "made", "siprec-metadata.pcap"))
	needTools(t, s.tools(), vconTools...)
	s.waitLoaded()
	m, r := s.ok("siprec_metadata", map[string]any{"call_id": "1-30771@127.0.0.1"})
	rec, _ := m["siprec"].(map[string]any)
	if m["recorded"] != true || rec["session_id"] != "hVpd7YQgRW2nD22h7q60JQ==" || rec["mode"] != "complete" {
		t.Fatalf("%v", m)
	}
	parts, _ := rec["participants"].([]any)
	streams, _ := rec["streams"].([]any)
	if len(parts) != 2 || len(streams) != 2 {
		t.Fatalf("participants %v streams %v", parts, streams)
	}
	bob := parts[0].(map[string]any)
	if name, _ := bob["name"].(string); !strings.Contains(name, "Bob Biloxi") || name == "Bob Biloxi" {
		t.Errorf("name %q: want Bob Biloxi inside the fence", name)
	}
	if st := streams[1].(map[string]any); st["label"] != "97" || st["participant_id"] != bob["participant_id"] {
		t.Errorf("stream 97 %v", st)
	}
	if last := r.Content[len(r.Content)-1].Text; !strings.HasPrefix(last, "Provenance:") {
		t.Errorf("no provenance note: %q", last)
	}
	v, _ := s.ok("validate_vcon", map[string]any{"call_id": "1-30771@127.0.0.1"})
	if v["verdict"] != "valid" {
		t.Errorf("the recording session's container: %v", v)
	}
}

// TestVConInlineMediaE2E: with --retain-audio the sample's answered call
// 1-1966@10.0.2.20 carries its 272044-byte WAV (tshark: 425 PCMU packets
// of 160 samples, stereo 16-bit, 44-byte header), its content_hash the
// SHA-512 of the decoded bytes; --vcon-max-inline-media 1000 refuses it
// whole and says so.
func TestVConInlineMediaE2E(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		media string
		size  int
	}{
		{"default budget", nil, "carried", 272044},
		{"--vcon-max-inline-media 1000", []string{"--vcon-max-inline-media", "1000"}, "refused-over-budget", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, append([]string{"-N", "--mcp", "--retain-audio", "-I", sampleCapture()}, tc.args...)...)
			needTools(t, s.tools(), vconTools...)
			s.waitLoaded()
			m, _ := s.ok("export_vcon", map[string]any{"call_id": "1-1966@10.0.2.20"})
			row := m["containers"].([]any)[0].(map[string]any)
			comp := row["completeness"].(map[string]any)
			dlg := row["container"].(map[string]any)["dialog"].([]any)[0].(map[string]any)
			body, _ := dlg["body"].(string)
			wav, err := base64.RawURLEncoding.DecodeString(body)
			if err != nil || comp["media"] != tc.media || len(wav) != tc.size {
				t.Fatalf("media %v, %d bytes (%v): %v", comp["media"], len(wav), err, comp)
			}
			if tc.size > 0 {
				sum := sha512.Sum512(wav)
				if dlg["content_hash"] != "sha512-"+base64.RawURLEncoding.EncodeToString(sum[:]) {
					t.Errorf("content_hash %v", dlg["content_hash"])
				}
			} else if note, _ := comp["media_note"].(string); !strings.Contains(note, "--vcon-max-inline-media 1000") {
				t.Errorf("media_note %q", note)
			}
		})
	}
}
