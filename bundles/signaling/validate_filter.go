package signaling

import (
	"context"
	"errors"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// validateFilterSchemaVersion is validate_filter's response schema version.
const validateFilterSchemaVersion = 1

type validateFilterIn struct {
	Expr string `json:"expr" desc:"filter expression or alias to check"`
}

// FilterError is why an expression does not parse.
type FilterError struct {
	// Message is the parser's message, without the position.
	Message string `json:"message" desc:"what is wrong"`
	// Position is the byte offset (from 0) where the problem starts.
	Position int `json:"position" desc:"byte offset, from 0, where the problem starts"`
	// Caret is the expression (a window around the position for a long
	// one) and a line with ^ under the position.
	Caret string `json:"caret" desc:"the expression and a line with ^ under the position"`
	// Hint says how to fix it; absent when the parser has none.
	Hint string `json:"hint,omitempty" desc:"how to fix it"`
}

// ValidateFilter is validate_filter's answer. A parse failure is a
// successful answer with valid false: a model acts least on the error
// channel.
type ValidateFilter struct {
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
	// Expr is the expression as given.
	Expr string `json:"expr" desc:"the expression as given"`
	// Valid: the expression parses; every tool taking a filter accepts it.
	Valid bool `json:"valid" desc:"the expression parses"`
	// Canonical is the expression as the compiler reads it (aliases by
	// name, precedence made explicit where needed); absent when invalid.
	Canonical string `json:"canonical,omitempty" desc:"the expression as the compiler reads it"`
	// Error is why it does not parse; absent when valid.
	Error *FilterError `json:"error,omitempty" desc:"why it does not parse"`
	// TotalMatched counts the dialogs it matches; null when it does not
	// parse (0 would read as "parsed, matched nothing").
	TotalMatched *int `json:"total_matched" desc:"dialogs matched; null when the expression does not parse"`
	// TotalDialogs counts every dialog held.
	TotalDialogs int `json:"total_dialogs" desc:"dialogs held"`
	sdk.SourceFlags
	// CaptureIdentity names the capture counted.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
}

func validateFilterTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "validate_filter",
		Title: "Check a filter expression",
		Description: "Does a filter expression parse, and how many dialogs does it match? A parse failure is a " +
			"successful answer: valid false, the error's position, caret line and hint, total_matched null. Grammar: " +
			reference.FilterURI,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "An unfinished filter: where it breaks", Args: map[string]any{"expr": "state == Failed and (method =="}},
		},
	}, func(ctx context.Context, c *sdk.Call, in validateFilterIn) (ValidateFilter, error) {
		return validateFilter(ctx, d, in)
	})
}

func validateFilter(ctx context.Context, d *deps, in validateFilterIn) (ValidateFilter, error) {
	q := storeQuerier(d)
	src := answer.SourceState(d.capture.Status())
	out := ValidateFilter{
		SchemaVersion:   validateFilterSchemaVersion,
		Expr:            in.Expr,
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
	}
	// The compiler every tool uses, called directly so that an empty
	// expression is reported (tools read an empty filter as no filter).
	f, err := filter.Compile(in.Expr, q.Thresholds())
	if err != nil {
		var fe *filter.Error
		if !errors.As(err, &fe) {
			return ValidateFilter{}, sdk.Internal("compiling filter: %v", err)
		}
		out.Error = &FilterError{Message: fe.Msg, Position: fe.Pos, Caret: fe.Caret, Hint: fe.Hint}
		out.TotalDialogs = len(q.Rows(dialog.ByCreated))
		return out, nil
	}
	p, err := q.List(ctx, query.ListOptions{Filter: f, Limit: 1})
	if err != nil {
		return ValidateFilter{}, err
	}
	n := p.TotalMatched
	out.Valid, out.Canonical, out.TotalMatched = true, f.String(), &n
	out.TotalDialogs = len(q.Rows(dialog.ByCreated))
	return out, nil
}
