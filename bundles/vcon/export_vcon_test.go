package vcon

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/vcon"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// TestExportOneCall: the answered call 1-1966@10.0.2.20 of
// sip-rtp-g711.pcap (tshark: six SIP messages, From
// sip:sipp@10.0.2.20:5060, To sip:test@10.0.2.15:5060, one RTP stream).
func TestExportOneCall(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	var out struct {
		Returned     int  `json:"returned"`
		TotalMatched int  `json:"total_matched"`
		Truncated    bool `json:"truncated"`
		Containers   []struct {
			CallID       string            `json:"call_id"`
			Digest       string            `json:"digest"`
			Completeness vcon.Completeness `json:"completeness"`
			Container    json.RawMessage   `json:"container"`
		} `json:"containers"`
		CaptureIdentity struct {
			Instance string `json:"instance"`
		} `json:"capture_identity"`
	}
	r := call(t, tools["export_vcon"], `{"call_id":"1-1966@10.0.2.20"}`, &out)
	if !r.Fenced {
		t.Error("no provenance note: the container carries capture text")
	}
	if out.Returned != 1 || out.TotalMatched != 1 || out.Truncated || len(out.Containers) != 1 {
		t.Fatalf("page %+v", out)
	}
	got := out.Containers[0]
	sum := sha256.Sum256(got.Container)
	if hex.EncodeToString(sum[:]) != got.Digest {
		t.Errorf("digest %s is not the sha256 of the container's bytes as written (%x)", got.Digest, sum)
	}
	var ct struct {
		Vcon    string `json:"vcon"`
		UUID    string `json:"uuid"`
		Parties []struct {
			SIP        string `json:"sip"`
			Name       string `json:"name"`
			Type       string `json:"type"`
			Validation string `json:"validation"`
		} `json:"parties"`
		Dialog []struct {
			Type string `json:"type"`
		} `json:"dialog"`
		Attachments []struct {
			Purpose string `json:"purpose"`
			Body    struct {
				Messages []struct {
					Text      string `json:"text"`
					Base64URL string `json:"base64url"`
				} `json:"messages"`
			} `json:"body"`
		} `json:"attachments"`
		Analysis []struct {
			Body vcon.Completeness `json:"body"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(got.Container, &ct); err != nil {
		t.Fatal(err)
	}
	// The UUID's anchor is the INVITE's frame pointer (frame 1 of the
	// capture; show_evidence verifies it).
	if ct.Vcon != "0.4.0" || ct.UUID != vcon.UUID("", "sip-rtp-g711.pcap#1@436e86580983e304", "1-1966@10.0.2.20") {
		t.Errorf("vcon %q uuid %q", ct.Vcon, ct.UUID)
	}
	if len(ct.Parties) != 3 || ct.Parties[0].SIP != "sip:sipp@10.0.2.20:5060" || ct.Parties[1].SIP != "sip:test@10.0.2.15:5060" ||
		ct.Parties[0].Name != "" || ct.Parties[0].Validation != "none" || ct.Parties[2].Type != "observer" {
		t.Errorf("parties %+v", ct.Parties)
	}
	if ct.Dialog[0].Type != "recording" {
		t.Errorf("dialog %+v", ct.Dialog)
	}
	if ct.Attachments[0].Purpose != "sip-message-trace" || len(ct.Attachments[0].Body.Messages) != 6 ||
		ct.Attachments[1].Purpose != "sipnab-capture-completeness" {
		t.Fatalf("attachments %+v", ct.Attachments)
	}
	// Every byte kept, none in the clear: base64url of the message as
	// captured (its first line as tshark shows frame 1).
	first := ct.Attachments[0].Body.Messages[0]
	if raw, err := base64.RawURLEncoding.DecodeString(first.Base64URL); err != nil || first.Text != "" ||
		!strings.HasPrefix(string(raw), "INVITE sip:test@10.0.2.15:5060 SIP/2.0\r\n") || strings.Contains(string(raw), sdk.FenceOpen) {
		t.Errorf("first message %+v (%v)", first, err)
	}
	c := got.Completeness
	if !c.Complete || c.Media != "not-considered" || c.Capture.BlindSpots == nil || ct.Analysis[0].Body.Note != c.Note {
		t.Errorf("completeness %+v", c)
	}
	// The exported container validates against the vendored schema.
	s, _ := vcon.Vendored()
	if res, err := s.ValidateJSON(got.Container); err != nil || !res.Valid {
		t.Errorf("exported container invalid: %v %+v", err, res.Errors)
	}
}

// TestExportByFilter: sip-488-codec-reject.pcapng holds four Call-IDs
// (tshark); one, NA4y5nr9Jk, is an INVITE answered 488.
func TestExportByFilter(t *testing.T) {
	_, tools := loaded(t, "sip-488-codec-reject.pcapng")
	type page struct {
		Returned     int     `json:"returned"`
		TotalMatched int     `json:"total_matched"`
		NextCursor   *string `json:"next_cursor"`
		Containers   []struct {
			CallID    string          `json:"call_id"`
			Container json.RawMessage `json:"container"`
		} `json:"containers"`
	}
	var failed page
	call(t, tools["export_vcon"], `{"filter":"final_status_code == 488"}`, &failed)
	if failed.TotalMatched != 1 || len(failed.Containers) != 1 || failed.Containers[0].CallID != "NA4y5nr9Jk" {
		t.Fatalf("488 page %+v", failed)
	}
	if !strings.Contains(string(failed.Containers[0].Container), `"disposition":"failed"`) {
		t.Errorf("488 container has no failed disposition")
	}
	// Every dialog, two per page: four containers over two pages, all valid.
	s, _ := vcon.Vendored()
	var first, second page
	call(t, tools["export_vcon"], `{"limit":2}`, &first)
	if first.TotalMatched != 4 || first.Returned != 2 || first.NextCursor == nil {
		t.Fatalf("first page %+v", first)
	}
	call(t, tools["export_vcon"], `{"limit":2,"cursor":"`+*first.NextCursor+`"}`, &second)
	if second.Returned != 2 || second.NextCursor != nil {
		t.Fatalf("second page %+v", second)
	}
	seen := map[string]bool{}
	for _, c := range append(first.Containers, second.Containers...) {
		seen[c.CallID] = true
		if r, err := s.ValidateJSON(c.Container); err != nil || !r.Valid {
			t.Errorf("%s: invalid %v %+v", c.CallID, err, r.Errors)
		}
	}
	if len(seen) != 4 {
		t.Errorf("containers of %d distinct dialogs, want 4", len(seen))
	}
	// A filter matching nothing is an empty set, not a refusal.
	var none page
	call(t, tools["export_vcon"], `{"filter":"final_status_code == 599"}`, &none)
	if none.Returned != 0 || none.TotalMatched != 0 || none.Containers == nil {
		t.Errorf("empty match %+v", none)
	}
}

func TestExportRefusals(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	cases := []struct {
		name, args string
		kind       sdk.Kind
		argument   string
	}{
		{"call_id with filter", `{"call_id":"1-1966@10.0.2.20","filter":"method == INVITE"}`, "", ""},
		{"unknown call_id", `{"call_id":"nope@nowhere"}`, sdk.KindUnknownID, "call_id"},
		{"filter that does not compile", `{"filter":"method =="}`, sdk.KindInvalidFilter, "filter"},
		{"media other than omit", `{"call_id":"1-1966@10.0.2.20","media":"inline"}`, sdk.KindInvalidArgument, "media"},
		{"forged cursor", `{"cursor":"abc"}`, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := callErr(t, tools["export_vcon"], tc.args)
			if e.Code != sdk.CodeInvalidParams || tc.kind != "" && e.Kind != tc.kind || e.Argument != tc.argument {
				t.Errorf("got code %d kind %q argument %q (%s)", e.Code, e.Kind, e.Argument, e.Message)
			}
		})
	}
}

// TestExportMediaOmit: media "omit" says so in the caveat.
func TestExportMediaOmit(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	var out struct {
		Containers []struct {
			Completeness vcon.Completeness `json:"completeness"`
		} `json:"containers"`
	}
	call(t, tools["export_vcon"], `{"call_id":"1-1966@10.0.2.20","media":"omit"}`, &out)
	if c := out.Containers[0].Completeness; c.Media != "not-considered" || !strings.Contains(c.MediaNote, "omit") {
		t.Errorf("completeness %+v", c)
	}
}

// TestExportInlineMedia: with --retain-audio the answered call carries
// its WAV (272044 bytes: tshark's 425 PCMU packets × 160 samples, stereo
// 16-bit, plus the 44-byte header); the host's --vcon-max-inline-media
// (vcon.Options) below that refuses it whole.
func TestExportInlineMedia(t *testing.T) {
	c := engine.New(engine.Config{Media: media.Config{RetainAudio: true}}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public("sip-rtp-g711.pcap")}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	type out struct {
		Containers []struct {
			Completeness vcon.Completeness `json:"completeness"`
			Container    struct {
				Dialog []struct {
					Body        string `json:"body"`
					ContentHash string `json:"content_hash"`
				} `json:"dialog"`
			} `json:"container"`
		} `json:"containers"`
	}
	for _, tc := range []struct {
		name     string
		services []any
		media    string
		bodyLen  int
	}{
		{"default budget: carried", []any{c}, "carried", base64.RawURLEncoding.EncodedLen(272044)},
		{"--vcon-max-inline-media 1000: refused", []any{c, vcon.Options{MaxInlineMedia: 1000}}, "refused-over-budget", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := tooltest.Provision(t, Bundle{}, sdk.EnvOptions{Services: tc.services})
			var o out
			call(t, tools["export_vcon"], `{"call_id":"1-1966@10.0.2.20"}`, &o)
			got := o.Containers[0]
			if got.Completeness.Media != tc.media || len(got.Container.Dialog[0].Body) != tc.bodyLen {
				t.Errorf("media %s, body %d bytes: %+v", got.Completeness.Media, len(got.Container.Dialog[0].Body), got.Completeness)
			}
			if tc.media == "refused-over-budget" && !strings.Contains(got.Completeness.MediaNote, "--vcon-max-inline-media 1000") {
				t.Errorf("note %q", got.Completeness.MediaNote)
			}
		})
	}
}
