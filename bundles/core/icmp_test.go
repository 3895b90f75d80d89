package core

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// Over MCP, the ICMP port unreachables of testdata/made/icmp-port-unreachable.pcap
// show on the dialog whose INVITEs they answered: get_dialog lists them
// (icmp_errors, icmp_error_count), and triage_call's verdict rests on the
// icmp_unreachable clause with the hint that the far end's port was closed
// and the retransmitted INVITE's icmp_cause.
func TestICMPShowsInGetDialogAndTriage(t *testing.T) {
	c := rptLoad(t, filepath.Join(testcap.Root(), "testdata", "made", "icmp-port-unreachable.pcap"))
	const id = "2-18669@10.99.0.1"
	g, _ := rptCall(t, c, "get_dialog", map[string]any{"call_id": id})
	det := g["dialog"].(map[string]any)
	errs, _ := det["icmp_errors"].([]any)
	if len(errs) != 3 || det["icmp_error_count"] != float64(3) {
		t.Fatalf("get_dialog icmp_errors %v (count %v), want 3", det["icmp_errors"], det["icmp_error_count"])
	}
	for i, e := range errs {
		m := e.(map[string]any)
		// tshark: the errors are frames 4, 8 and 12, quoting the INVITEs
		// of frames 3, 7 and 11 (messages 0, 1, 2 of the dialog)
		if m["kind"] != "port_unreachable" || m["reporter"] != "10.99.0.2" || m["endpoint"] != "10.99.0.2:5060" ||
			m["matched_by"] != "call_id" || m["message"] != float64(i) || !strings.Contains(fmt.Sprint(m["frame"]), fmt.Sprintf("#%d@", 4*(i+1))) {
			t.Errorf("icmp_errors[%d] = %v", i, m)
		}
	}
	tr, _ := rptCall(t, c, "triage_call", map[string]any{"call_id": id})
	if tr["verdict"] != "signaling" {
		t.Errorf("verdict %v, want signaling", tr["verdict"])
	}
	found := false
	for _, e := range tr["evidence"].([]any) {
		m := e.(map[string]any)
		if m["rule"] == "icmp_unreachable" {
			found = fmt.Sprint(m["values"].(map[string]any)["errors"]) == "3"
		}
	}
	if !found {
		t.Errorf("no icmp_unreachable clause with 3 errors in %v", tr["evidence"])
	}
	sig := tr["signaling"].(map[string]any)
	if !strings.Contains(fmt.Sprint(sig["hints"]), "the far end's port was closed: 10.99.0.2:5060 answered 3 INVITE requests with ICMP port unreachable") {
		t.Errorf("hints %v", sig["hints"])
	}
	rs, _ := sig["retransmissions"].([]any)
	if len(rs) != 1 || rs[0].(map[string]any)["icmp_cause"] == nil {
		t.Errorf("retransmissions %v, want the INVITE with its icmp_cause", sig["retransmissions"])
	}
}
