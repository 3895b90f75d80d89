package server

import (
	"context"
	"io"
	"strings"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

type shutdownIn struct {
	DryRun         *bool  `json:"dry_run,omitempty" default:"true" desc:"true (default): say what stopping would do, stop nothing; the first call is always a dry run"`
	SaveTo         string `json:"save_to,omitempty" desc:"new file in --mcp-file-root: write the held SIP there (pcapng) before stopping"`
	DiscardUnsaved bool   `json:"discard_unsaved,omitempty" desc:"stop even though a live or HEP source holds packets nothing saves"`
}

// Shutdown is the answer of shutdown_server.
type Shutdown struct {
	DryRun    bool `json:"dry_run" desc:"nothing was stopped"`
	WouldStop bool `json:"would_stop" desc:"a call with dry_run: false would stop the server as things stand"`
	Stopping  bool `json:"stopping" desc:"the server stops once this answer is written"`
	Live      bool `json:"live" desc:"a live interface or HEP listener feeds the capture"`
	// Unsaved: a live or HEP source with no output target; stopping loses
	// its packets (the same test as capture_status's unsaved).
	Unsaved bool `json:"unsaved" desc:"a live or HEP source whose packets nothing saves"`
	Dialogs int  `json:"dialogs" desc:"dialogs held (lost on stop)"`
	Streams int  `json:"streams" desc:"RTP streams held (lost on stop)"`
	// SavedTo is the file save_to wrote (a name in the root, never a
	// path); Saved what it holds. Absent when nothing was saved.
	SavedTo string           `json:"saved_to,omitempty" desc:"file in the root the held SIP was written to"`
	Saved   *engine.SavedSIP `json:"saved,omitempty" desc:"dialogs, messages and frames written; skipped: messages no IP packet holds"`
	// ConfirmedByOperator: true/false when the person behind the client
	// was asked (elicitation) and accepted/declined; null when nobody was
	// asked (a dry run, or a client without elicitation).
	ConfirmedByOperator *bool  `json:"confirmed_by_operator" desc:"the operator's answer; null when nobody was asked"`
	Note                string `json:"note" desc:"what happens next"`
}

var _ = addTool(func(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "shutdown_server",
		Title: "Shut down the server",
		Description: "Stop sipnab (needs --mcp-allow-shutdown). dry_run defaults to true and the first call is always a dry run. " +
			"A live or HEP source with unsaved packets also needs save_to (held SIP as pcapng in --mcp-file-root) or discard_unsaved: true. " +
			"Asks the operator when the client supports elicitation.",
		Annotations: sdk.Annotations{Effect: sdk.Destructive, Idempotency: sdk.Idempotent, World: sdk.ClosedWorld},
		Examples:    []sdk.Example{{Title: "What stopping would do (dry run)"}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "--mcp-allow-shutdown is off (not_enabled)"},
			{Code: sdk.CodeInvalidParams, When: "dry_run: false while a live or HEP source holds unsaved packets, without save_to or discard_unsaved: true"},
			{Code: sdk.CodeInvalidParams, When: "save_to without --mcp-file-root, not one path component, or a name already taken (file_refused)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in shutdownIn) (Shutdown, error) {
		return shutdown(ctx, d, in)
	})
})

func shutdown(ctx context.Context, d *deps, in shutdownIn) (Shutdown, error) {
	if !d.env.Option(optShutdown) {
		return Shutdown{}, sdk.NotEnabled("", "shutdown_server is disabled: start sipnab with --%s to allow it", optShutdown)
	}
	st := d.capture.Status()
	live := strings.Contains(st.Source, "live") || strings.Contains(st.Source, "hep")
	out := Shutdown{Live: live, Unsaved: live, Dialogs: st.Dialogs.Dialogs}
	if st.Media != nil {
		out.Streams = st.Media.Streams
	}
	if in.SaveTo != "" {
		// Settled before anything is asked or written: the root and the
		// name's shape (a taken name is refused when the file is created).
		if !d.env.FileRoot().Enabled() {
			return Shutdown{}, sdk.NotEnabled("save_to", "save_to needs --mcp-file-root: file tools are disabled")
		}
		if err := sdk.CheckName(in.SaveTo); err != nil {
			return Shutdown{}, err
		}
	}
	blocked := out.Unsaved && !in.DiscardUnsaved && in.SaveTo == ""
	out.WouldStop = d.stop != nil && !blocked
	d.mu.Lock()
	first := !d.dryRunSeen
	d.dryRunSeen = true
	d.mu.Unlock()
	dry := in.DryRun == nil || *in.DryRun || first
	if dry {
		out.DryRun = true
		switch {
		case d.stop == nil:
			out.Note = "this host provides no clean stop: the server cannot be stopped from here"
		case blocked:
			out.Note = "a live or HEP source holds packets nothing saves: stopping loses them; call again with dry_run: false and save_to (a new file in the file root) to keep the held SIP, or discard_unsaved: true"
		case first && in.DryRun != nil && !*in.DryRun:
			out.Note = "the first shutdown_server call is always a dry run: call again with dry_run: false to stop"
		case in.SaveTo != "":
			out.Note = "call again with dry_run: false to write the held SIP to " + in.SaveTo + " and stop the server"
		default:
			out.Note = "call again with dry_run: false to stop the server"
		}
		return out, nil
	}
	if d.stop == nil {
		return Shutdown{}, sdk.Internal("shutdown_server: this host provides no clean stop")
	}
	if blocked {
		return Shutdown{}, sdk.Refuse(sdk.KindInvalidArgument, "discard_unsaved",
			"a %s source holds packets nothing saves (%d dialogs, %d streams): stopping loses them; pass save_to (a new file in the file root) or discard_unsaved: true", st.Source, out.Dialogs, out.Streams)
	}
	if d.elicit != nil && d.elicit.Supported(ctx) {
		msg := "An agent asks to stop sipnab (" + st.Source + " source"
		if out.Unsaved {
			msg += ", unsaved packets will be lost"
		}
		msg += "). Stop it?"
		ok, err := d.elicit.Confirm(ctx, msg)
		if err != nil {
			return Shutdown{}, sdk.Internal("shutdown_server: asking the operator failed: %v", err)
		}
		out.ConfirmedByOperator = &ok
		if !ok {
			out.WouldStop = false
			out.Note = "the operator did not confirm: the server keeps running"
			return out, nil
		}
	}
	if in.SaveTo != "" {
		var saved engine.SavedSIP
		_, err := d.env.FileRoot().WriteNewFrom(in.SaveTo, func(w io.Writer) error {
			var err error
			saved, err = d.capture.WriteHeldSIP(w, "sipnab "+d.build.Version)
			return err
		})
		if err != nil {
			return Shutdown{}, err // nothing stopped: the refusal or failure says why
		}
		out.SavedTo, out.Saved = in.SaveTo, &saved
	}
	if !d.stop.Shutdown(ctx, "shutdown_server") {
		out.Note = "a stop is already under way"
		return out, nil
	}
	out.Stopping = true
	out.Note = "the server stops once this answer is written: sources stop, outputs and the audit file are flushed, exit status 0"
	return out, nil
}
