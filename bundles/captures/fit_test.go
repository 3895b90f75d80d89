package captures

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// cpCallUnder invokes a tool under a --mcp-max-response-bytes of max and
// decodes its answer; it fails when the reply is larger on the wire.
func cpCallUnder(t *testing.T, tool sdk.Tool, args string, max int, into any) {
	t.Helper()
	l := sdk.DefaultLimits()
	l.MaxResponseBytes = max
	r, err := tool.Invoke(context.Background(), json.RawMessage(args), l)
	if err != nil {
		t.Fatalf("%s %s: %v", tool.Name, args, err)
	}
	if n := r.WireBytes(); n > max {
		t.Errorf("%s: %d bytes on the wire, over %d", tool.Name, n, max)
	}
	if err := json.Unmarshal([]byte(r.Blocks[0]), into); err != nil {
		t.Fatal(err)
	}
}

// TestAnswersFitTheResponseCap: under an 8000-byte cap (3000 for decode_evidence), show_evidence keeps
// one frame per pointer and shows fewer bytes of each (saying so),
// decode_evidence leaves headers out (saying so), and compare_captures
// (under 200 bytes less than its whole answer) keeps fewer buckets per dimension, the rest counted in other.
func TestAnswersFitTheResponseCap(t *testing.T) {
	const cap = 8000
	capture := cpLoad(t, sampleCapture)
	tools := cpTools(t, capture, cpRoot(t, sampleCapture, "sipp-branch-scenario.pcapng"), sdk.EnvOptions{})
	ptrs := cpPointers(capture)

	var ev ShowEvidence
	cpCallUnder(t, tools["show_evidence"], `{"refs":`+cpJSON(ptrs)+`,"max_bytes":4096}`, cap, &ev)
	if len(ev.Frames) != len(ptrs) || ev.Verified != len(ptrs) || !strings.Contains(ev.Summary, "to fit the response cap") {
		t.Errorf("show_evidence: %d frames, %s", len(ev.Frames), ev.Summary)
	}
	for _, f := range ev.Frames {
		if *f.HexBytesShown >= 4096 || *f.HexBytesShown >= *f.FrameBytes || !*f.Truncated || len(f.Hex) != 2**f.HexBytesShown {
			t.Errorf("%s: shown %d of %d", f.Pointer, *f.HexBytesShown, *f.FrameBytes)
		}
	}

	// Frame 4 is the 1103-byte INVITE with SDP and 15 headers.
	var dec DecodeEvidence
	cpCallUnder(t, tools["decode_evidence"], `{"frame_ref":"`+ptrs[2]+`"}`, 3000, &dec)
	if dec.SIP == nil || !dec.SIP.HeadersTruncated || dec.SIP.HeadersReturned >= dec.SIP.HeaderCount || len(dec.SIP.Headers) != dec.SIP.HeadersReturned {
		t.Errorf("decode_evidence under 3000 bytes: %+v", dec.SIP)
	}

	var all, cut CompareCaptures
	args := `{"a":"` + sampleCapture + `","b":"sipp-branch-scenario.pcapng","dimensions":["from.user","src.ip","state"]}`
	cpCall(t, tools["compare_captures"], args, &all)
	whole := cpCall(t, tools["compare_captures"], args, nil)
	cpCallUnder(t, tools["compare_captures"], args, whole.WireBytes()-200, &cut)
	if !strings.Contains(cut.Summary, "to fit the response cap") {
		t.Errorf("compare_captures summary: %s", cut.Summary)
	}
	for i, d := range cut.Dimensions {
		w := all.Dimensions[i]
		sumA, sumB := d.Other.A, d.Other.B
		for _, b := range d.Buckets {
			sumA, sumB = sumA+b.A, sumB+b.B
		}
		if d.DistinctValues != w.DistinctValues || sumA != all.A.Dialogs || sumB != all.B.Dialogs || len(d.Buckets)+d.Other.Buckets != w.DistinctValues {
			t.Errorf("%s under the cap: %d buckets + %d other, sums %d/%d; whole: %d values, %d/%d dialogs",
				d.Dimension, len(d.Buckets), d.Other.Buckets, sumA, sumB, w.DistinctValues, all.A.Dialogs, all.B.Dialogs)
		}
	}
}

// TestListCapturesFitsTheResponseCap: 30 captures under a cap that holds
// fewer: the first rows by name, truncated.
func TestListCapturesFitsTheResponseCap(t *testing.T) {
	root := cpRoot(t)
	for i := range 30 {
		cpCopy(t, testcap.Public("sip_call.pcap"), filepath.Join(root, fmt.Sprintf("call-%02d.pcap", i)))
	}
	tools := cpTools(t, cpLoad(t, sampleCapture), root, sdk.EnvOptions{})
	var got CaptureList
	cpCallUnder(t, tools["list_captures"], `{}`, 4000, &got)
	if got.Returned == 0 || got.Returned >= 30 || !got.Truncated || got.Captures[0].Filename != "call-00.pcap" || len(got.Captures) != got.Returned {
		t.Errorf("under the cap: %d returned, truncated %v", got.Returned, got.Truncated)
	}
}
