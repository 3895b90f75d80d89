package report

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
)

var update = flag.Bool("update", false, "rewrite golden files")

func load(t *testing.T, path string) *engine.Capture {
	t.Helper()
	return loadWith(t, path, engine.Config{})
}

func loadWith(t *testing.T, path string, cfg engine.Config) *engine.Capture {
	t.Helper()
	cfg.Node = "test-node"
	c := engine.New(cfg, nil)
	if err := c.LoadFiles(context.Background(), []string{path}); err != nil {
		t.Fatalf("LoadFiles: %v", err)
	}
	c.Wait()
	return c
}

// normalized builds the document with the values that change from run to
// run (instance, elapsed time, absolute paths) fixed.
func normalized(c *engine.Capture) Document {
	doc := Build(c)
	doc.Run.Identity.Instance = "instance"
	doc.Run.Elapsed, doc.Run.ElapsedSec = 0, 0
	// The store's byte account follows the build's structure sizes and
	// its default budget the machine's memory (core/dialog/membudget.go).
	doc.Run.Dialogs.Bytes, doc.Run.Dialogs.MaxBytes = 0, 0
	for i := range doc.Run.Files {
		f := &doc.Run.Files[i]
		dir := filepath.Dir(f.Path) + string(filepath.Separator)
		f.Path = filepath.Base(f.Path)
		f.Error = strings.ReplaceAll(f.Error, dir, "")
		for j := range doc.Run.Errors {
			doc.Run.Errors[j] = strings.ReplaceAll(doc.Run.Errors[j], dir, "")
		}
	}
	return doc
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run with -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; review and run go test -update\n--- got ---\n%s", path, got)
	}
}

// truncated writes the first 60 % of a capture to a temporary file.
func truncated(t *testing.T, name string) string {
	t.Helper()
	full, err := os.ReadFile(testcap.Public(name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cut-"+name)
	if err := os.WriteFile(p, full[:len(full)*6/10+3], 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGolden renders captures without RTP (the stream rows belong to the
// stream store's own tests) as JSON and text.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		path func(t *testing.T) string
		cfg  engine.Config
	}{
		{"sip-proxy.pcap", func(t *testing.T) string { return testcap.Public("sip-proxy.pcap") }, engine.Config{}},
		{"DTMFsipinfo.pcap", func(t *testing.T) string { return testcap.Public("DTMFsipinfo.pcap") }, engine.Config{}},
		{"sip-auth-failure.pcapng", func(t *testing.T) string { return testcap.Public("sip-auth-failure.pcapng") }, engine.Config{}},
		{"truncated-sip-routing-error.pcapng", func(t *testing.T) string { return truncated(t, "sip-routing-error.pcapng") }, engine.Config{}},
		// A whole read past a dialog cap of 3 (the capture has 18 Call-IDs):
		// complete false, incomplete_reasons [dialogs_evicted], and the
		// INCOMPLETE RUN block says how many.
		{"capped-sip-routing-error.pcapng", func(t *testing.T) string { return testcap.Public("sip-routing-error.pcapng") }, engine.Config{Dialog: dialog.Config{MaxDialogs: 3}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := loadWith(t, tc.path(t), tc.cfg)
			doc := normalized(c)
			js, err := json.MarshalIndent(doc, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".json", append(js, '\n'))
			var b bytes.Buffer
			tdoc, rep := textDocument(c, DefaultOptions())
			tdoc.Run = doc.Run
			writeText(&b, &tdoc, &rep, DefaultOptions())
			golden(t, tc.name+".txt", b.Bytes())
		})
	}
}

// TestJSONShape checks the document's keys: the run fields the issue names
// and the list_dialogs row shape of every dialog.
func TestJSONShape(t *testing.T) {
	c := load(t, testcap.Public("Asterisk_ZFONE_XLITE.pcap"))
	var b bytes.Buffer
	if err := WriteJSON(&b, c); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if v, _ := doc["schema_version"].(float64); v != SchemaVersion {
		t.Errorf("schema_version: got %v, want %d", doc["schema_version"], SchemaVersion)
	}
	run, _ := doc["run"].(map[string]any)
	want := map[string]any{
		"frames_read": 1042.0, "sip_messages": 27.0, "sip_malformed": 0.0, "complete": true,
		"source_exhausted": true, "source_stopped_early": false,
	}
	for k, v := range want {
		if run[k] != v {
			t.Errorf("run.%s: got %v, want %v", k, run[k], v)
		}
	}
	for _, k := range []string{"bytes", "undecodable", "inputs", "capture_identity"} {
		if _, ok := run[k]; !ok {
			t.Errorf("run.%s missing", k)
		}
	}
	dialogs, _ := doc["dialogs"].([]any)
	if len(dialogs) != 5 {
		t.Fatalf("dialogs: got %d, want 5", len(dialogs))
	}
	required := []string{"call_id", "state", "method", "msg_count", "duration_sec", "created_at", "updated_at", "timing", "frame", "input_origin"}
	allowed := map[string]bool{"from_user": true, "to_user": true, "final_status_code": true, "challenges": true, "other_legs": true}
	for _, k := range required {
		allowed[k] = true
	}
	for _, d := range dialogs {
		row := d.(map[string]any)
		for _, k := range required {
			if _, ok := row[k]; !ok {
				t.Errorf("%v: %s missing", row["call_id"], k)
			}
		}
		for k := range row {
			if !allowed[k] {
				t.Errorf("%v: unexpected key %s", row["call_id"], k)
			}
		}
		timing := row["timing"].(map[string]any)
		if _, ok := timing["retransmits"]; !ok {
			t.Errorf("%v: timing.retransmits missing", row["call_id"])
		}
	}
	if _, ok := doc["streams"].([]any); !ok {
		t.Errorf("streams is not an array")
	}
}

// TestNotDecoded: frames the decoder could not read are listed by reason.
func TestNotDecoded(t *testing.T) {
	c := load(t, testcap.Public("SIP_CALL_RTP_G711"))
	st := c.Status()
	if st.UndecodableFrames == 0 {
		t.Skip("no undecodable frames in this capture any more")
	}
	var b bytes.Buffer
	if err := WriteText(&b, c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "NOT DECODED") || strings.Contains(out, "INCOMPLETE RUN") {
		t.Errorf("want a NOT DECODED block and no INCOMPLETE RUN block:\n%s", out)
	}
	for _, r := range st.UndecodableReasons() {
		if !strings.Contains(out, r.Name) {
			t.Errorf("reason %s not listed", r.Name)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	c := load(t, testcap.Public("sip_call.pcap"))
	if err := WriteJSON(failWriter{}, c); err == nil {
		t.Errorf("WriteJSON: want the write error")
	}
	if err := WriteText(failWriter{}, c); err == nil {
		t.Errorf("WriteText: want the write error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// TestInCallAtCaptureEnd: sip-rtp-g711.pcap's second call (1-1968@10.0.2.20)
// is answered at 1480171988.290862 and has no BYE; the capture's last packet
// (RTP, tshark frame.time_epoch) is at 1480171996.569179: 8278 ms. The
// code before gave no duration but the message span (0.004 s).
func TestInCallAtCaptureEnd(t *testing.T) {
	c := load(t, testcap.Public("sip-rtp-g711.pcap"))
	doc := Build(c)
	var streamed Document
	var b bytes.Buffer
	if err := WriteJSON(&b, c); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &streamed); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]Document{"Build": doc, "WriteJSON": streamed} {
		got := map[string]string{}
		for _, r := range d.Dialogs {
			v := "absent"
			if r.Ended != nil {
				v = fmt.Sprintf("ended %v", *r.Ended)
			}
			if r.DurationToCaptureEndMs != nil {
				v += fmt.Sprintf(" %d ms", *r.DurationToCaptureEndMs)
			}
			if r.Timing.DurationMs != nil {
				v += fmt.Sprintf(" duration_ms %d", *r.Timing.DurationMs)
			}
			got[r.CallID] = v
		}
		want := map[string]string{
			"1-1966@10.0.2.20": "absent duration_ms 8499", // 200 at .670743, BYE at 88.170086
			"1-1968@10.0.2.20": "ended false 8278 ms",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	var txt bytes.Buffer
	rep, _ := Analyze(c, analysis.Options{})
	writeText(&txt, &doc, &rep, DefaultOptions())
	for _, want := range []string{"InCall     200   8.278s+", "+ still in call when the capture ended"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, txt.String())
		}
	}
}

// TestWriteTextWithThresholds: the text report judges with the run's
// thresholds. WriteText used the defaults whatever --pdd-threshold,
// --loss-threshold or --jitter-threshold said. Values: Asterisk_ZFONE_XLITE
// streams lose 64.29 %, 0.13 % and 0 % with jitter_ms 0.25, 0.56 and
// 0.03 ms; b2bua-asterisk.pcapng's two INVITEs have PDD 0.744 s and 0.740 s.
func TestWriteTextWithThresholds(t *testing.T) {
	th := func(pdd, loss, jitter float64) Options {
		o := DefaultOptions()
		o.Thresholds.PDDSeconds, o.Thresholds.LossPct, o.Thresholds.JitterMs = pdd, loss, jitter
		return o
	}
	cases := []struct {
		name, capture string
		opts          Options
		want, not     []string
	}{
		{"defaults", "Asterisk_ZFONE_XLITE.pcap", DefaultOptions(),
			[]string{"WORST STREAMS (1 of 3 degraded)", "high_loss: 1 stream (streams losing more than 5% of packets; threshold loss_pct=5)", "loss 64.29% > 5%"},
			[]string{"high_jitter"}},
		{"loss 70 %", "Asterisk_ZFONE_XLITE.pcap", th(11, 70, 50),
			[]string{"WORST STREAMS (1 of 3 degraded)", "R 22.5 < 70"},
			[]string{"high_loss", "loss 64.29% >"}},
		{"jitter 0.5 ms", "Asterisk_ZFONE_XLITE.pcap", th(11, 5, 0.5),
			[]string{"WORST STREAMS (2 of 3 degraded)", "high_jitter: 1 stream (streams with jitter (jitter_ms) over 0.5 ms; threshold jitter_ms=0.5)", "jitter 0.6 ms > 0.5 ms"},
			nil},
		{"pdd 0.5 s", "b2bua-asterisk.pcapng", th(0.5, 5, 50),
			[]string{"post_dial_delay: 2 dialogs"},
			nil},
		{"pdd default", "b2bua-asterisk.pcapng", DefaultOptions(),
			nil,
			[]string{"post_dial_delay"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, testcap.Public(tc.capture))
			var b bytes.Buffer
			if err := WriteTextWith(&b, c, tc.opts); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("has %q:\n%s", w, b.String())
				}
			}
		})
	}
}
