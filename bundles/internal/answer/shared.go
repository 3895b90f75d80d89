package answer

import (
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/sdk"
)

// FencedRow returns a copy of a dialog row with its sender-written values
// readied for an answer: from_user and to_user fenced, the method given
// the fence's hygiene (Unfenced). Every bundle listing dialog rows uses it.
func FencedRow(c *sdk.Call, r dialog.Summary) dialog.Summary {
	r.Method = Unfenced(r.Method)
	if r.FromUser != "" {
		r.FromUser = c.Fence(r.FromUser)
	}
	if r.ToUser != "" {
		r.ToUser = c.Fence(r.ToUser)
	}
	return r
}

// Suppression resolves a lint suppression list the way every lint-reading
// tool does (lint_dialog, validate_message, evaluate_expectations): the
// named file inside the file root (read through the sandbox's one open,
// then parsed, never reopened by path), or without a name the .sipnablint
// discovered beside the capture's first file, up to its project root, as
// --lint-fail-on does (nil when none applies).
func Suppression(root sdk.FileRoot, capture *engine.Capture, name string) (*lint.Suppression, error) {
	if name != "" {
		if !root.Enabled() {
			return nil, sdk.NotEnabled("suppression_file", "file tools are disabled: suppression_file needs the server started with --mcp-file-root")
		}
		data, err := root.ReadFile(name, lint.MaxSuppressionBytes)
		if err != nil {
			return nil, err
		}
		pats, err := lint.ParseSuppression(data)
		if err != nil {
			return nil, sdk.InvalidParams("suppression_file %q: %v", Clip(name), err)
		}
		return &lint.Suppression{File: name, Patterns: pats}, nil
	}
	files := capture.Status().Files
	if len(files) == 0 {
		return nil, nil
	}
	path, err := lint.DiscoverSuppression(files[0].Path)
	if err != nil {
		return nil, sdk.Internal("discovering the suppression list: %v", err)
	}
	if path == "" {
		return nil, nil
	}
	s, err := lint.ReadSuppression(path)
	if err != nil {
		return nil, sdk.Internal("%v", err)
	}
	return s, nil
}
