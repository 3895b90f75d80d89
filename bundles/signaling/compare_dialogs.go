package signaling

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/sdk"
)

// compareDialogsSchemaVersion is compare_dialogs' response schema version.
const compareDialogsSchemaVersion = 1

type compareDialogsIn struct {
	CallIDA string `json:"call_id_a" desc:"first Call-ID, verbatim"`
	CallIDB string `json:"call_id_b" desc:"second Call-ID, verbatim"`
}

// CompareSide is one call of a comparison.
type CompareSide struct {
	// CallID is the call's Call-ID, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// State is the dialog state.
	State string `json:"state" desc:"dialog state"`
	// FinalStatusCode is the final response to the call's INVITE; absent
	// when there was none.
	FinalStatusCode int `json:"final_status_code,omitempty" desc:"final response code of the call's INVITE"`
	// MsgCount counts every message of the Call-ID.
	MsgCount int `json:"msg_count" desc:"SIP messages, retransmissions included"`
	// Methods are the request methods seen, in order of first appearance.
	Methods []string `json:"methods" desc:"request methods seen, in order of first appearance"`
	// Hints are the diagnosis hints (signaling, then media), unfenced.
	Hints []string `json:"hints" desc:"diagnosis hints, signaling then media"`
}

// Difference is one way the two calls differ.
type Difference struct {
	// Field names what differs.
	Field string `json:"field" desc:"what differs"`
	// A and B are its values on each side; absent where not measured.
	A string `json:"a,omitempty" desc:"value on call a; absent where not measured"`
	B string `json:"b,omitempty" desc:"value on call b; absent where not measured"`
}

// CompareDialogs is compare_dialogs' answer.
type CompareDialogs struct {
	A CompareSide `json:"a" desc:"call a"`
	B CompareSide `json:"b" desc:"call b"`
	// Differences list what differs, in a fixed field order ([] when the
	// calls agree on every compared field).
	Differences []Difference `json:"differences" nonnull:"true" desc:"what differs, in a fixed field order"`
	sdk.SourceFlags
	// CaptureIdentity names the capture both calls are in.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

func compareDialogsTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "compare_dialogs",
		Title: "Compare two calls",
		Description: "Two calls side by side (state, final code, messages, methods, hints) and the fields that differ: " +
			"a failing call against one that worked.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Where two calls differ", Args: map[string]any{"call_id_a": sampleCallID, "call_id_b": sampleCallID2}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id_a or call_id_b"},
			{Code: sdk.CodeInvalidParams, When: "an unknown call_id_a or call_id_b"},
		},
	}, func(ctx context.Context, c *sdk.Call, in compareDialogsIn) (CompareDialogs, error) {
		return compareDialogs(d, in)
	})
}

// compared is what the comparison reads of one call.
type compared struct {
	side CompareSide
	det  dialog.Detail
	diag analysis.DialogDiagnosis
	n    int // RTP streams
}

func compareDialogs(d *deps, in compareDialogsIn) (CompareDialogs, error) {
	capture := d.capture
	if in.CallIDA == "" || in.CallIDB == "" {
		return CompareDialogs{}, sdk.InvalidParams("call_id_a and call_id_b are required: give two Call-IDs from list_dialogs")
	}
	src := answer.SourceState(capture.Status())
	var ms analysis.MediaSource = media.NewStore(media.Config{})
	if m := capture.Media(); m != nil {
		ms = m
	}
	read := func(arg, id string) (compared, error) {
		det, ok := capture.Dialogs().Get(id)
		if !ok {
			return compared{}, answer.UnknownCall(arg, id)
		}
		cp := compared{det: det, diag: analysis.Diagnose(analysis.FactsFrom(det), ms, d.analysisOptions()), n: len(ms.StreamsFor(id))}
		cp.side = CompareSide{CallID: id, State: det.State, FinalStatusCode: det.FinalStatusCode, MsgCount: det.MsgCount,
			Methods: []string{}, Hints: []string{}}
		for i := range det.Messages {
			// method tokens are sender-written, shown unfenced
			if m := det.Messages[i].Msg; m != nil && m.IsRequest && !slices.Contains(cp.side.Methods, answer.Unfenced(m.Method)) {
				cp.side.Methods = append(cp.side.Methods, answer.Unfenced(m.Method))
			}
		}
		if s := cp.diag.Signaling; s != nil {
			cp.side.Hints = append(cp.side.Hints, s.Hints...)
		}
		cp.side.Hints = append(cp.side.Hints, cp.diag.Media.Hints...)
		return cp, nil
	}
	a, err := read("call_id_a", in.CallIDA)
	if err != nil {
		return CompareDialogs{}, err
	}
	b, err := read("call_id_b", in.CallIDB)
	if err != nil {
		return CompareDialogs{}, err
	}
	return CompareDialogs{
		A: a.side, B: b.side, Differences: differences(&a, &b),
		SourceFlags: src.Flags(), CaptureIdentity: src.Identity, SchemaVersion: compareDialogsSchemaVersion,
	}, nil
}

// differences compares two calls field by field, in a fixed order.
func differences(a, b *compared) []Difference {
	out := []Difference{}
	diff := func(field, x, y string) {
		if x != y {
			out = append(out, Difference{Field: field, A: x, B: y})
		}
	}
	num := func(v int) string {
		if v == 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	ms := func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	}
	cause := func(d *dialog.Detail) string {
		if t := d.Termination; t != nil {
			return fmt.Sprintf("%s %d (%s)", t.Protocol, t.Code, t.SourceHeader)
		}
		return ""
	}
	diff("method", answer.Unfenced(a.det.Method), answer.Unfenced(b.det.Method))
	diff("state", a.det.State, b.det.State)
	diff("final_status_code", num(a.det.FinalStatusCode), num(b.det.FinalStatusCode))
	diff("verdict", a.diag.Verdict, b.diag.Verdict)
	diff("msg_count", strconv.Itoa(a.det.MsgCount), strconv.Itoa(b.det.MsgCount))
	diff("retransmits", strconv.Itoa(a.det.Timing.Retransmits), strconv.Itoa(b.det.Timing.Retransmits))
	onlyA, onlyB := setMinus(a.side.Methods, b.side.Methods), setMinus(b.side.Methods, a.side.Methods)
	if len(onlyA) > 0 || len(onlyB) > 0 {
		out = append(out, Difference{Field: "methods", A: strings.Join(onlyA, ","), B: strings.Join(onlyB, ",")})
	}
	ta, tb := &a.det.TimingDetail, &b.det.TimingDetail
	diff("trying_ms", ms(ta.TryingMs), ms(tb.TryingMs))
	diff("pdd_ms", ms(ta.PDDMs), ms(tb.PDDMs))
	diff("setup_ms", ms(ta.SetupMs), ms(tb.SetupMs))
	// trying, PDD and setup run from each call's routed INVITE; the
	// caller's wait after a 401/407 is compared apart.
	diff("auth_wait_ms", ms(ta.AuthWaitMs), ms(tb.AuthWaitMs))
	diff("duration_ms", ms(ta.DurationMs), ms(tb.DurationMs))
	diff("termination", cause(&a.det), cause(&b.det))
	diff("rtp_streams", strconv.Itoa(a.n), strconv.Itoa(b.n))
	flag := func(name string, x, y bool) {
		if x != y {
			out = append(out, Difference{Field: name, A: strconv.FormatBool(x), B: strconv.FormatBool(y)})
		}
	}
	ma, mb := &a.diag.Media, &b.diag.Media
	flag("one_way_audio", ma.OneWayAudio, mb.OneWayAudio)
	flag("no_media", ma.NoMedia, mb.NoMedia)
	flag("nat_mismatch", ma.NATMismatch, mb.NATMismatch)
	return out
}

// setMinus lists the values of a not in b, in a's order.
func setMinus(a, b []string) []string {
	var out []string
	for _, v := range a {
		if !slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}
