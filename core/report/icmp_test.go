package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// testdata/made/icmp-port-unreachable.pcap (INVITEs to a closed port, each
// answered by the kernel's port unreachable) in the batch outputs: the run
// document counts the errors and how they were matched, and the text
// report ranks icmp_unreachable first with the three dialogs.
func TestICMPInTheBatchOutputs(t *testing.T) {
	c := load(t, filepath.Join(testcap.Root(), "testdata", "made", "icmp-port-unreachable.pcap"))
	var js bytes.Buffer
	if err := WriteJSON(&js, c); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Run struct {
			ICMP map[string]any `json:"icmp"`
		} `json:"run"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"errors": 9, "offered": 9, "matched_by_call_id": 9, "matched_by_tuple": 0, "unmatched": 0, "dialogs": 3} {
		if got, _ := doc.Run.ICMP[k].(float64); got != want {
			t.Errorf("run.icmp.%s = %v, want %v", k, doc.Run.ICMP[k], want)
		}
	}
	var txt bytes.Buffer
	if err := WriteText(&txt, c); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	_, findings, _ := strings.Cut(out, "FINDINGS (2), worst first\n")
	if !strings.HasPrefix(findings, "  [high] icmp_unreachable: 3 dialogs") {
		t.Fatalf("report findings do not start with icmp_unreachable on 3 dialogs:\n%s", out)
	}
	for _, id := range []string{"1-18669@10.99.0.1", "2-18669@10.99.0.1", "1-18866@fd00:99::1"} {
		if !strings.Contains(findings, "      "+id+"; ") {
			t.Errorf("no icmp_unreachable row for %s", id)
		}
	}
}
