package signaling

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/callreport"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

func TestRenderLadderGolden(t *testing.T) {
	for _, rc := range crReportCalls {
		c := crLoad(t, testcap.Public(rc.capture))
		for _, f := range []struct {
			format, ext string
			cli         callreport.Format
		}{{"markdown", "md", callreport.Markdown}, {"text", "txt", callreport.Text}} {
			t.Run(rc.capture+" "+f.format, func(t *testing.T) {
				r := crCall(t, c, "render_ladder", map[string]any{"call_id": rc.callID, "format": f.format}, nil)
				if !r.Fenced || len(r.Blocks) != 1 {
					t.Errorf("want one document and the provenance note: got %d blocks, note %v", len(r.Blocks), r.Fenced)
				}
				doc := r.Blocks[0]
				crGolden(t, rc.capture+".ladder."+f.ext, doc)
				// What the --call-report command line prints: the same
				// function over a correlator of its own.
				call, ok := callreport.Build(c, rc.callID, callreport.Options{})
				if !ok {
					t.Fatal("Build: unknown call")
				}
				if cli := call.CallReport(f.cli); cli != unfence(doc) {
					t.Errorf("render_ladder without its markers and --call-report differ:\n--- tool\n%s\n--- cli\n%s", doc, cli)
				}
				if !strings.Contains(doc, sdk.FenceOpen) {
					t.Error("the report above the drawing fences the sender's values (From, To): no marker")
				}
			})
		}
	}
}

func TestRenderLadderDefaultsAndRefusals(t *testing.T) {
	c := crLoad(t, testcap.Public("sip-proxy.pcap"))
	const id = "75104938772201062721@10.33.6.101"
	def := crCall(t, c, "render_ladder", map[string]any{"call_id": id}, nil)
	md := crCall(t, c, "render_ladder", map[string]any{"call_id": id, "format": "markdown"}, nil)
	if def.Blocks[0] != md.Blocks[0] || !strings.HasPrefix(def.Blocks[0], "# sipnab call report") {
		t.Errorf("the default format is markdown")
	}
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"json is not a drawing", map[string]any{"call_id": id, "format": "json"}},
		{"unknown call_id", map[string]any{"call_id": "nobody"}},
		{"missing call_id", map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := crInvoke(t, c, "render_ladder", tc.args); crCode(err) != sdk.CodeInvalidParams {
				t.Errorf("got %v, want -32602", err)
			}
		})
	}
}

// TestRenderLadderIncompleteRun: on a truncated capture the ladder of a
// call read before the cut is drawn, then the INCOMPLETE RUN block, after
// the last line of the drawing.
func TestRenderLadderIncompleteRun(t *testing.T) {
	full, err := os.ReadFile(testcap.Public("sip-routing-error.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut-sip-routing-error.pcapng")
	if err := os.WriteFile(cut, full[:len(full)*6/10+3], 0o644); err != nil {
		t.Fatal(err)
	}
	c := crLoad(t, cut)
	const id = "xxJSCjm44uRLi5nqaGN3Hg.." // frames 21-32, before the cut
	for _, f := range []string{"text", "markdown"} {
		t.Run(f, func(t *testing.T) {
			r := crCall(t, c, "render_ladder", map[string]any{"call_id": id, "format": f}, nil)
			doc := r.Blocks[0]
			ladder := strings.Index(doc, "Ladder")
			if f == "text" {
				ladder = strings.Index(doc, "LADDER")
			}
			inc := strings.Index(doc, "INCOMPLETE RUN")
			last := strings.LastIndex(doc, "|<---404 Not Found----|")
			if ladder < 0 || inc < 0 || last < 0 || !(ladder < last && last < inc) {
				t.Fatalf("want the ladder, its last arrow (404), then INCOMPLETE RUN; got positions %d %d %d:\n%s", ladder, last, inc, doc)
			}
			if !strings.Contains(doc[inc:], "Reading stopped before the end of the input") {
				t.Errorf("INCOMPLETE RUN must say reading stopped early:\n%s", doc[inc:])
			}
			if f == "markdown" && strings.Index(doc, "```\n") > inc {
				t.Errorf("the drawing's code block must close before INCOMPLETE RUN")
			}
		})
	}
	// get_dialog_report's renderings end the same way; its json says the
	// read stopped early.
	r := crCall(t, c, "get_dialog_report", map[string]any{"call_id": id, "format": "text"}, nil)
	if !strings.Contains(r.Blocks[0], "\nINCOMPLETE RUN\n") {
		t.Errorf("get_dialog_report text on a truncated capture: no INCOMPLETE RUN:\n%s", r.Blocks[0])
	}
	var rep DialogReport
	crCall(t, c, "get_dialog_report", map[string]any{"call_id": id}, &rep)
	if !rep.SourceStoppedEarly {
		t.Errorf("get_dialog_report json on a truncated capture: source_stopped_early false")
	}
}

// unfence removes the untrusted-capture-data markers: what remains of a
// render_ladder answer is the --call-report document.
func unfence(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, sdk.FenceOpen, ""), sdk.FenceClose, "")
}
