package signaling

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// The -update flag rewrites golden files. Another test file of the package
// may define it too, so it is defined here only when missing (package
// variables initialize before init functions).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func crUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// crGolden compares got with testdata/callreport/<name>, rewriting it
// under -update.
func crGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "callreport", name)
	if crUpdate() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// crReportCalls are the calls the golden files cover: a stateful proxy
// (three participants, no RTP), a B2BUA leg (challenge, re-INVITE moving
// the media, RTP, a timing guess) and a call with PRACK and RTP both ways.
var crReportCalls = []struct{ capture, callID string }{
	{"sip-proxy.pcap", "75104938772201062721@10.33.6.101"},
	{"b2bua-asterisk.pcapng", "M2Q0ZDc1ZGM1NzIyMTlhZTA3NDU3NTgzMzA5YmJmZWQ."},
	{"rtp-protocol.pcap", "1907983263271201083544@10.33.6.101"},
}

// crStable indents a JSON answer in wire order and replaces the capture
// instance (minted per run).
func crStable(t *testing.T, block string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(block), "", "  "); err != nil {
		t.Fatal(err)
	}
	return crInstance.ReplaceAllString(b.String(), `"instance": "(per run)"`) + "\n"
}

var crInstance = regexp.MustCompile(`"instance": "[^"]*"`)

func TestGetDialogReportGolden(t *testing.T) {
	for _, rc := range crReportCalls {
		c := crLoad(t, testcap.Public(rc.capture))
		for _, f := range []struct{ format, ext string }{{"json", "json"}, {"markdown", "md"}, {"text", "txt"}} {
			t.Run(rc.capture+" "+f.format, func(t *testing.T) {
				r := crCall(t, c, "get_dialog_report", map[string]any{"call_id": rc.callID, "format": f.format}, nil)
				if !r.Fenced {
					t.Error("a report always carries the provenance note")
				}
				if strings.Contains(r.Blocks[0], sdk.FenceOpen) || strings.Contains(r.Blocks[0], sdk.FenceClose) {
					t.Error("a report carries the note, never markers")
				}
				doc := r.Blocks[0]
				if f.format == "json" {
					doc = crStable(t, doc)
				} else if strings.Contains(doc, "INCOMPLETE RUN") {
					t.Error("a whole read is no INCOMPLETE RUN")
				}
				crGolden(t, rc.capture+".report."+f.ext, doc)
			})
		}
	}
}

func TestGetDialogReportJSON(t *testing.T) {
	c := crLoad(t, testcap.Public("sip-proxy.pcap"))
	var got DialogReport
	r := crCall(t, c, "get_dialog_report", map[string]any{"call_id": "75104938772201062721@10.33.6.101"}, &got)
	truth := crTruthDialogs(t, "sip-proxy.pcap")["75104938772201062721@10.33.6.101"]
	// tshark: 11 messages; From <sip:201@10.33.6.101>, To
	// <sip:101@10.33.6.102;user=phone> (no display names); the INVITE is
	// answered 200 on both hops; four SDP bodies (frames 1, 3, 7, 8); the
	// 100 Trying comes 24.7 ms after the INVITE (frame 2), the 200 725 ms
	// after it (frame 8), the BYE's 200 12.9 ms after the BYE.
	if got.MsgCount != truth.Messages || got.FinalStatusCode != 200 || got.FinalStatusReason != "OK" || got.State != "Completed" {
		t.Errorf("got msg_count %d final %d %q state %s, want %d, 200 OK, Completed", got.MsgCount, got.FinalStatusCode, got.FinalStatusReason, got.State, truth.Messages)
	}
	if got.From != "sip:201@10.33.6.101" || got.To != "sip:101@10.33.6.102;user=phone" || got.FromDisplay != "" {
		t.Errorf("got from %q (%q) to %q, want the URIs unfenced", got.From, got.FromDisplay, got.To)
	}
	// The offer (frame 1, index 0) and the answer (frame 7, index 6); the
	// copies on the proxy's other hop (frames 3 and 8) are listed once, as
	// get_sdp_timeline lists them.
	dirs := []string{}
	for _, x := range got.SDPTimeline {
		dirs = append(dirs, fmt.Sprintf("%s@%s#%d", x.Direction, x.Transaction, x.MessageIndex))
	}
	if strings.Join(dirs, " ") != "offer@INVITE#0 answer@INVITE#6" {
		t.Errorf("got sdp timeline %v, want the offer and its answer", dirs)
	}
	if got.Timing.TryingDelayMs == nil || *got.Timing.TryingDelayMs != 24 || got.Timing.SetupMs == nil || *got.Timing.SetupMs != 725 ||
		got.Timing.TeardownMs == nil || *got.Timing.TeardownMs != 12 {
		t.Errorf("got timing %+v, want trying 24, setup 725, teardown 12 ms", got.Timing)
	}
	if got.Termination == nil || got.Termination.Code != 16 || got.Termination.Protocol != "Q.850" {
		t.Errorf("got termination %+v, want Q.850 cause 16 from the BYE's Reason", got.Termination)
	}
	if !got.SourceExhausted || got.SchemaVersion != 1 || !r.Fenced {
		t.Errorf("got source_exhausted %v schema %d note %v", got.SourceExhausted, got.SchemaVersion, r.Fenced)
	}

	// Streams come without MOS.
	c2 := crLoad(t, testcap.Public("rtp-protocol.pcap"))
	r2 := crCall(t, c2, "get_dialog_report", map[string]any{"call_id": "1907983263271201083544@10.33.6.101"}, &got)
	if len(got.Streams) != 2 || strings.Contains(r2.Blocks[0], `"mos`) || strings.Contains(r2.Blocks[0], "r_factor") {
		t.Errorf("got %d streams, want 2 without MOS: %s", len(got.Streams), r2.Blocks[0])
	}
}

func TestGetDialogReportRefusals(t *testing.T) {
	c := crCapture(t, crafted{callID: "a", a: "192.0.2.1:5060", b: "192.0.2.2:5060"})
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"unknown call_id", map[string]any{"call_id": "nobody"}},
		{"bad format", map[string]any{"call_id": "a", "format": "yang-json"}},
		{"missing call_id", map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := crInvoke(t, c, "get_dialog_report", tc.args); crCode(err) != sdk.CodeInvalidParams {
				t.Errorf("got %v, want -32602", err)
			}
		})
	}
}
