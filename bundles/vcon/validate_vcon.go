package vcon

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/vcon"
	"github.com/sipnab/sipnab/sdk"
)

// validateSchemaVersion is validate_vcon's response schema version: 2
// dropped version 1's deviations, explanations and third verdict
// (valid-except-documented-deviation), which core-04 §4.3's typed
// placeholder made moot (design notes, "Notes for vCon bundle").
const validateSchemaVersion = 2

type validateVConIn struct {
	CallID    string     `json:"call_id,omitempty" desc:"check the container export_vcon builds for this Call-ID; not with container"`
	Container sdk.Object `json:"container,omitempty" desc:"a vCon container (unsigned JSON form) to check; not with call_id"`
}

// ValidateVCon is validate_vcon's answer.
type ValidateVCon struct {
	SchemaVersion int `json:"schema_version" desc:"response schema version (2)"`
	// Verdict is valid only when the walk found no error and the schema
	// holds no keyword outside the walked subset.
	Verdict    string `json:"verdict" enum:"valid|invalid" desc:"valid: no error; invalid: errors says where and why"`
	SchemaPath string `json:"schema_path" desc:"the vendored schema, in sipnab's repository (draft-ietf-vcon-vcon-core-04, draft-07)"`
	SchemaID   string `json:"schema_id" desc:"the schema's $id"`
	// Errors are the first vcon.MaxErrors errors; ErrorsTotal counts all.
	Errors      []vcon.Error `json:"errors" nonnull:"true" desc:"why the container is invalid, first 100, in document order; empty when valid"`
	ErrorsTotal int          `json:"errors_total" desc:"every error found"`
	// CallID and Digest name the exported container checked (call_id).
	CallID string `json:"call_id,omitempty" desc:"the Call-ID whose exported container was checked"`
	Digest string `json:"digest,omitempty" desc:"with call_id: the checked container's digest, as export_vcon gives it"`
}

func validateVConTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "validate_vcon",
		Title: "Validate a vCon container",
		Description: "Checks a vCon container (container, unsigned JSON form) or the one export_vcon builds for a call (call_id) " +
			"against the vendored draft-ietf-vcon-vcon-core-04 JSON Schema: verdict valid or invalid, each error with its JSON Pointer, " +
			"keyword and schema path. A schema keyword the validator does not walk makes the verdict invalid, naming it.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "The container of one call", Args: map[string]any{"call_id": sampleCallID}},
			{Title: "A container lacking created_at", Args: map[string]any{"container": map[string]any{
				"vcon": "0.4.0", "uuid": "01928e10-193e-8231-b9a2-279e0d16bc46", "parties": []any{map[string]any{"tel": "+12345678901"}}}}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "both or neither of call_id and container"},
			answer.UnknownCallRefusal,
		},
	}, func(ctx context.Context, c *sdk.Call, in validateVConIn) (ValidateVCon, error) {
		return validateVCon(d, c, in)
	})
}

func validateVCon(d *deps, c *sdk.Call, in validateVConIn) (ValidateVCon, error) {
	switch {
	case in.CallID != "" && in.Container != nil:
		return ValidateVCon{}, sdk.InvalidParams("give call_id or container, not both: two containers have two verdicts")
	case in.CallID == "" && in.Container == nil:
		return ValidateVCon{}, sdk.InvalidParams("give call_id (the container export_vcon builds) or container (a vCon to check)")
	}
	s, err := vcon.Vendored()
	if err != nil {
		return ValidateVCon{}, sdk.Internal("the vendored vCon schema: %v", err)
	}
	out := ValidateVCon{SchemaVersion: validateSchemaVersion, SchemaPath: vcon.SchemaPath, SchemaID: s.ID()}
	var r vcon.Result
	if in.CallID != "" {
		det, ok := d.capture.Dialogs().Get(in.CallID)
		if !ok {
			return ValidateVCon{}, answer.UnknownCall("call_id", in.CallID)
		}
		row, err := d.container(det, d.capture.Status(), "", 0)
		if err != nil {
			return ValidateVCon{}, err
		}
		out.CallID, out.Digest = in.CallID, row.Digest
		r = s.Validate(map[string]any(row.Container))
	} else {
		r = s.Validate(map[string]any(in.Container))
	}
	out.Verdict = "invalid"
	if r.Valid {
		out.Verdict = "valid"
	}
	out.ErrorsTotal = r.ErrorsTotal
	// A path holds the container's member names and a message quotes its
	// values (64 bytes at most): caller- or capture-written, shown with
	// the fence's hygiene, no markers.
	out.Errors = make([]vcon.Error, len(r.Errors))
	for i, e := range r.Errors {
		e.Path, e.Message = answer.Unfenced(e.Path), answer.Unfenced(e.Message)
		out.Errors[i] = e
	}
	return out, nil
}
