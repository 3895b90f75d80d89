package security

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/endpoint"
	"github.com/sipnab/sipnab/sdk"
)

// diagnoseRegistrationSchemaVersion is diagnose_registration's response
// schema version.
const diagnoseRegistrationSchemaVersion = 1

type diagnoseRegistrationIn struct {
	CallID string `json:"call_id" desc:"Call-ID of a REGISTER dialog, verbatim (describe_endpoint's problem_call_ids)"`
}

// Evidence is one message proving a registration failure.
type Evidence struct {
	// MessageIndex is get_dialog's index of the message.
	MessageIndex int `json:"message_index" desc:"message index (get_dialog)"`
	// Frame is its evidence pointer (show_evidence); absent when the
	// source kept none.
	Frame string `json:"frame,omitempty" desc:"evidence pointer <source>#<ordinal>@<digest>"`
}

// RegistrationFailure is core/analysis' registration_failure with its
// evidence resolved to frames.
type RegistrationFailure struct {
	Kind string `json:"kind" enum:"rejected|shortened_expiry|auth_loop" desc:"rejected, shortened_expiry (granted < requested) or auth_loop"`
	Code int    `json:"code,omitempty" desc:"final response or last challenge"`
	// Evidence are the REGISTER and its final response, or the challenges.
	Evidence           []Evidence `json:"evidence" nonnull:"true" desc:"proving messages and their frames"`
	RequestedExpirySec *int64     `json:"requested_expiry_sec,omitempty" desc:"expiry asked (Contact expires, else Expires; RFC 3261 §10.2.1)"`
	GrantedExpirySec   *int64     `json:"granted_expiry_sec,omitempty" desc:"expiry the 2xx granted (RFC 3261 §10.3)"`
}

// RegistrationContact is the REGISTER's Contact against its source, and
// what later requests to the AoR did across the capture.
type RegistrationContact struct {
	ContactObservation
	Verdict           string `json:"verdict" enum:"rewritten|not-rewritten|no-later-requests" desc:"what later requests to the AoR did"`
	RequestsToContact int    `json:"requests_to_contact" desc:"later requests to the AoR sent to the Contact host"`
	RequestsToSource  int    `json:"requests_to_source" desc:"later requests to the AoR sent to the REGISTER's source"`
	IsFinding         bool   `json:"is_finding" desc:"rewrite required and a later request went to the private host"`
}

// RegistrationDiagnosis is diagnose_registration's answer. When applicable
// is false only call_id and reason are set.
type RegistrationDiagnosis struct {
	CallID     string `json:"call_id" desc:"Call-ID, verbatim"`
	Applicable bool   `json:"applicable" desc:"the Call-ID carries a REGISTER request"`
	Reason     string `json:"reason,omitempty" desc:"why not applicable"`
	// Requests counts the REGISTER transactions captured.
	Requests *int `json:"requests,omitempty" desc:"REGISTER transactions captured"`
	// FinalStatusCode is the last answered REGISTER's final response
	// (401/407 included); absent when none was answered.
	FinalStatusCode int `json:"final_status_code,omitempty" desc:"final response of the last answered REGISTER"`
	// Registered: a REGISTER got a 2xx.
	Registered *bool `json:"registered,omitempty" desc:"a REGISTER got a 2xx"`
	// AuthLoop: challenged three times or more with no 2xx.
	AuthLoop       *bool              `json:"auth_loop,omitempty" desc:"challenged 3+ times with no 2xx"`
	AuthLoopDetail *analysis.AuthLoop `json:"auth_loop_detail,omitempty" desc:"the auth loop: kind, challenges, credentialed attempts, evidence indexes"`
	// RegistrationFailure is absent when the registration left a binding
	// as asked.
	RegistrationFailure *RegistrationFailure `json:"registration_failure,omitempty" desc:"rejected, shortened expiry or auth loop; absent when none"`
	RequestedExpirySec  *int64               `json:"requested_expiry_sec,omitempty" desc:"expiry the last answered REGISTER asked"`
	GrantedExpirySec    *int64               `json:"granted_expiry_sec,omitempty" desc:"expiry its 2xx granted"`
	// ContactRewrite is absent when no REGISTER request was retained.
	ContactRewrite *RegistrationContact `json:"contact_rewrite,omitempty" desc:"the REGISTER's Contact vs its source; a private Contact alone is an observation"`
	// NotJudged lists detections the capture could not decide.
	NotJudged       []analysis.NotJudged `json:"not_judged,omitempty" desc:"detections the capture could not decide"`
	MessagesNotRead int                  `json:"messages_not_read,omitempty" desc:"messages past the retention cap, not read"`
	Hints           []string             `json:"hints,omitempty" desc:"what to look at next"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

func diagnoseRegistrationTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "diagnose_registration",
		Title: "Diagnose one registration",
		Description: "Did this phone register, and why not: final status, auth loop, registration_failure " +
			"(rejected, shortened_expiry, auth_loop) with requested/granted expiry and frames, private-Contact rewrite, hints.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "A call's Call-ID is not a registration", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
		},
	}, func(ctx context.Context, c *sdk.Call, in diagnoseRegistrationIn) (RegistrationDiagnosis, error) {
		return diagnoseRegistration(ctx, d, in.CallID)
	})
}

func diagnoseRegistration(ctx context.Context, d *deps, callID string) (RegistrationDiagnosis, error) {
	if callID == "" {
		return RegistrationDiagnosis{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give the Call-ID of a REGISTER dialog")
	}
	src := answer.SourceState(d.capture.Status())
	det, ok := d.capture.Dialogs().Get(callID)
	if !ok {
		return RegistrationDiagnosis{}, answer.UnknownCall("call_id", callID)
	}
	out := RegistrationDiagnosis{
		CallID: det.CallID, SourceFlags: src.Flags(), CaptureIdentity: src.Identity,
		SchemaVersion: diagnoseRegistrationSchemaVersion,
	}
	j := endpoint.JudgeRegistration(&det, d.analysisOptions())
	if !j.Applicable {
		out.Reason = "not a REGISTER dialog: no REGISTER request under this Call-ID (its method is " + answer.Unfenced(det.Method) + ")"
		if len(det.Messages) == 0 && det.Bounds.MessagesNotRetained > 0 {
			out.Reason = "no message of this Call-ID was retained, so no REGISTER could be read"
		}
		return out, nil
	}
	out.Applicable = true
	out.Requests = &j.Requests
	out.FinalStatusCode = j.FinalStatusCode
	out.Registered = &j.Succeeded
	loop := j.IsAuthLoop()
	out.AuthLoop = &loop
	out.AuthLoopDetail = j.AuthLoop
	out.RequestedExpirySec, out.GrantedExpirySec = j.RequestedExpirySec, j.GrantedExpirySec
	out.NotJudged, out.MessagesNotRead, out.Hints = j.NotJudged, j.MessagesNotRead, j.Hints
	if f := j.Failure; f != nil {
		out.RegistrationFailure = &RegistrationFailure{
			Kind: f.Kind, Code: f.Code, Evidence: evidenceOf(&det, f.Evidence),
			RequestedExpirySec: f.RequestedExpirySec, GrantedExpirySec: f.GrantedExpirySec,
		}
	}
	if j.HasContact() {
		to, from := endpoint.LaterRequests(j.Contact, j.AoR, j.RegisteredAt, func(fn func([]dialog.Message)) {
			_ = endpoint.EachDialog(ctx, d.capture.Dialogs(), func(x *dialog.Detail) { fn(x.Messages) })
		})
		if err := ctx.Err(); err != nil {
			return RegistrationDiagnosis{}, err
		}
		cr := endpoint.Corroborate(j.Contact, to, from)
		out.ContactRewrite = &RegistrationContact{
			ContactObservation: contactObservationOut(cr.Observation), Verdict: cr.Verdict,
			RequestsToContact: cr.RequestsToContact, RequestsToSource: cr.RequestsToSource, IsFinding: cr.IsFinding,
		}
		switch {
		case cr.IsFinding:
			out.Hints = append(out.Hints, "the Contact is private and a later request to this AoR went to it: the registrar did not rewrite the Contact, so those requests reach nobody (fix NAT handling: rport/received, force_rport, a NAT-aware registrar)")
		case cr.Observation.RewriteRequired && cr.Verdict == endpoint.VerdictNoLaterRequests:
			out.Hints = append(out.Hints, "the Contact is private behind a public source (an observation, common and usually fine): no later request to this AoR in the capture shows whether the registrar rewrote it")
		}
	}
	return out, nil
}

// evidenceOf resolves message indexes to their frames.
func evidenceOf(det *dialog.Detail, idx []int) []Evidence {
	out := make([]Evidence, 0, len(idx))
	for _, i := range idx {
		e := Evidence{MessageIndex: i}
		for k := range det.Messages {
			if m := &det.Messages[k]; m.Index == i {
				if !m.Frame.IsZero() {
					e.Frame = m.Frame.String()
				}
				break
			}
		}
		out = append(out, e)
	}
	return out
}
