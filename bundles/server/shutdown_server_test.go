package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// fakeStop records the stops asked (sdk.Shutdowner).
type fakeStop struct{ reasons []string }

func (f *fakeStop) Shutdown(_ context.Context, reason string) bool {
	f.reasons = append(f.reasons, reason)
	return len(f.reasons) == 1
}

// fakeAsk is a client with (or without) elicitation that answers answer.
type fakeAsk struct {
	supported, answer bool
	asked             []string
}

func (f *fakeAsk) Supported(context.Context) bool { return f.supported }
func (f *fakeAsk) Confirm(_ context.Context, msg string) (bool, error) {
	f.asked = append(f.asked, msg)
	return f.answer, nil
}

var allowShutdown = map[string]bool{optShutdown: true}

func sampleCapture(t *testing.T) *engine.Capture {
	return testengine.Load(t, engine.Config{}, filepath.Join(testcap.Root(), "testdata", "sip-rtp-g711.pcap"))
}

// liveCapture is a capture fed by a HEP listener (a live source: unsaved)
// holding one dialog.
func liveCapture(t *testing.T) *engine.Capture {
	c := engine.New(engine.Config{}, nil)
	addr := heptest.FreeAddr(t)
	if _, err := c.StartHEP(context.Background(), heplisten.Config{UDP: addr, TCP: addr}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	heptest.Send(t, addr, []heptest.Message{{Version: 3, Text: "INVITE sip:bob@example.net SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10;branch=z9hG4bK-1\r\nFrom: <sip:a@example.net>;tag=1\r\nTo: <sip:bob@example.net>\r\nCall-ID: live-1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"}})
	waitFor(t, func() bool { return c.Dialogs().Len() == 1 })
	return c
}

// TestShutdownServerIsGated: without --mcp-allow-shutdown the tool refuses
// (not_enabled, -32602) naming the flag, and stops nothing.
func TestShutdownServerIsGated(t *testing.T) {
	stop := &fakeStop{}
	tl := tools(t, sampleCapture(t), nil, sdk.FileRoot{}, sdk.Shutdowner(stop))["shutdown_server"]
	e := callErr(t, tl, `{"dry_run": false}`)
	if e.Code != sdk.CodeInvalidParams || e.Kind != sdk.KindNotEnabled || !strings.Contains(e.Message, "--mcp-allow-shutdown") || len(stop.reasons) != 0 {
		t.Errorf("got %+v, stops %v", e, stop.reasons)
	}
}

// TestShutdownServerFirstCallIsADryRun: the first call is a dry run even
// when it asks to stop; a dry run asks nobody; the deliberate second call
// of a file-fed server stops it (nothing unsaved), asking nobody when the
// client cannot be asked.
func TestShutdownServerFirstCallIsADryRun(t *testing.T) {
	stop, ask := &fakeStop{}, &fakeAsk{}
	tl := tools(t, sampleCapture(t), allowShutdown, sdk.FileRoot{}, sdk.Shutdowner(stop), sdk.Elicitor(ask))["shutdown_server"]
	var first, second Shutdown
	call(t, tl, `{"dry_run": false}`, &first)
	if !first.DryRun || !first.WouldStop || first.Stopping || first.Live || first.Unsaved || first.Dialogs != 2 || first.Streams != 2 ||
		!strings.Contains(first.Note, "always a dry run") || len(stop.reasons) != 0 || first.ConfirmedByOperator != nil {
		t.Errorf("first call %+v, stops %v", first, stop.reasons)
	}
	call(t, tl, `{"dry_run": false}`, &second)
	if second.DryRun || !second.Stopping || len(stop.reasons) != 1 || len(ask.asked) != 0 || second.ConfirmedByOperator != nil {
		t.Errorf("second call %+v, stops %v, asked %v", second, stop.reasons, ask.asked)
	}
}

// TestShutdownServerGuardsUnsavedLiveData: a HEP-fed server holds packets
// nothing saves: dry_run false is refused without save_to or
// discard_unsaved (naming both), and discard_unsaved stops it.
func TestShutdownServerGuardsUnsavedLiveData(t *testing.T) {
	stop := &fakeStop{}
	tl := tools(t, liveCapture(t), allowShutdown, sdk.FileRoot{}, sdk.Shutdowner(stop))["shutdown_server"]
	var dry Shutdown
	call(t, tl, `{}`, &dry)
	if !dry.DryRun || dry.WouldStop || !dry.Live || !dry.Unsaved || dry.Dialogs != 1 {
		t.Errorf("dry run %+v", dry)
	}
	e := callErr(t, tl, `{"dry_run": false}`)
	if e.Code != sdk.CodeInvalidParams || e.Argument != "discard_unsaved" || !strings.Contains(e.Message, "save_to") || len(stop.reasons) != 0 {
		t.Errorf("got %+v, stops %v", e, stop.reasons)
	}
	var done Shutdown
	call(t, tl, `{"dry_run": false, "discard_unsaved": true}`, &done)
	if !done.Stopping || len(stop.reasons) != 1 || done.SavedTo != "" {
		t.Errorf("got %+v, stops %v", done, stop.reasons)
	}
}

// TestShutdownServerSavesTheHeldSIP: save_to writes the held SIP into the
// root before stopping; the file loads back to the same dialog; a taken
// name, a path and a server without a root are refused and stop nothing.
func TestShutdownServerSavesTheHeldSIP(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "taken.pcapng"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := liveCapture(t)
	stop := &fakeStop{}
	tl := tools(t, c, allowShutdown, sdk.NewFileRoot(dir, nil), sdk.Shutdowner(stop))["shutdown_server"]
	var dry Shutdown
	call(t, tl, `{"save_to": "held.pcapng"}`, &dry)
	if !dry.DryRun || !dry.WouldStop || dry.SavedTo != "" {
		t.Errorf("dry run %+v", dry)
	}
	if _, err := os.Stat(filepath.Join(dir, "held.pcapng")); err == nil {
		t.Error("a dry run wrote the file")
	}
	for _, tc := range []struct{ args, kind string }{
		{`{"dry_run": false, "save_to": "taken.pcapng"}`, string(sdk.KindFileRefused)},
		{`{"dry_run": false, "save_to": "../out.pcapng"}`, string(sdk.KindFileRefused)},
	} {
		if e := callErr(t, tl, tc.args); string(e.Kind) != tc.kind || len(stop.reasons) != 0 {
			t.Errorf("%s: got %+v, stops %v", tc.args, e, stop.reasons)
		}
	}
	var done Shutdown
	call(t, tl, `{"dry_run": false, "save_to": "held.pcapng"}`, &done)
	if !done.Stopping || done.SavedTo != "held.pcapng" || done.Saved == nil || done.Saved.Dialogs != 1 || done.Saved.Messages != 1 || len(stop.reasons) != 1 {
		t.Fatalf("got %+v saved %+v, stops %v", done, done.Saved, stop.reasons)
	}
	back := testengine.Load(t, engine.Config{}, filepath.Join(dir, "held.pcapng"))
	if ids := back.Dialogs().CallIDs(); len(ids) != 1 || ids[0] != "live-1" {
		t.Errorf("the saved file holds %v, want live-1", ids)
	}

	noRoot := tools(t, c, allowShutdown, sdk.FileRoot{}, sdk.Shutdowner(&fakeStop{}))["shutdown_server"]
	if e := callErr(t, noRoot, `{"save_to": "x.pcapng"}`); e.Kind != sdk.KindNotEnabled || e.Argument != "save_to" {
		t.Errorf("no root: got %+v", e)
	}
}

// TestShutdownServerAsksTheOperator: with a client that can be asked, the
// deliberate call asks; a decline stops nothing and says so, an accept
// stops; confirmed_by_operator reports the answer.
func TestShutdownServerAsksTheOperator(t *testing.T) {
	for _, answer := range []bool{false, true} {
		stop, ask := &fakeStop{}, &fakeAsk{supported: true, answer: answer}
		tl := tools(t, sampleCapture(t), allowShutdown, sdk.FileRoot{}, sdk.Shutdowner(stop), sdk.Elicitor(ask))["shutdown_server"]
		call(t, tl, `{}`, nil)
		if len(ask.asked) != 0 {
			t.Fatalf("a dry run asked %v", ask.asked)
		}
		var got Shutdown
		call(t, tl, `{"dry_run": false}`, &got)
		if len(ask.asked) != 1 || got.ConfirmedByOperator == nil || *got.ConfirmedByOperator != answer ||
			got.Stopping != answer || (len(stop.reasons) == 1) != answer {
			t.Errorf("answer %v: got %+v, asked %v, stops %v", answer, got, ask.asked, stop.reasons)
		}
	}
}
