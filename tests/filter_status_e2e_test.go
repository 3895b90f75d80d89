package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// statusCase is one status-code filter and what each tool answers with it
// on one capture: list_dialogs' total, find_problems' total (the filter
// AND-ed with problems) and aggregate_dialogs' response_code buckets.
type statusCase struct {
	filter   string
	list     int
	problems int
	buckets  string // "code=count ..." largest first, as aggregate_dialogs ranks them
}

// TestFilterFinalStatusCode: "which calls got 503" is one filter.
// final_status_code (also written status) reads the
// row's final_status_code, the call's INVITE final (docs/data-model.md);
// a row without one is absent: no comparison but != selects it. The
// counts are tshark's: on sipp-branch-scenario.pcapng the truth file's
// per-Call-ID INVITE finals (1,148 × 403, 102 × 200, 84 with none; -z
// sip,stat counts 403 1,148 times); on the others, the INVITE finals
// tshark shows with -Y 'sip.CSeq.method == "INVITE" && sip.Status-Code >=
// 200' (a 401 followed by a credentialed retry is not the call's outcome).
func TestFilterFinalStatusCode(t *testing.T) {
	tr := testcap.LoadTruth[e2eTruth](t, "sipp-branch-scenario.pcapng")
	byFinal := map[string]int{}
	for _, d := range tr.SIP.Dialogs {
		k := "none"
		if d.InviteFinalStatus != nil {
			k = fmt.Sprint(*d.InviteFinalStatus)
		}
		byFinal[k]++
	}
	if byFinal["403"] != 1148 || byFinal["200"] != 102 || byFinal["none"] != 84 {
		t.Fatalf("truth for sipp-branch-scenario.pcapng: got INVITE finals %v, want 403 ×1148, 200 ×102, none ×84", byFinal)
	}
	tests := []struct {
		capture string
		cases   []statusCase
	}{
		{"sipp-branch-scenario.pcapng", []statusCase{
			{"final_status_code == 403", byFinal["403"], byFinal["403"], "403=1148"},
			{"final_status_code == 200", byFinal["200"], 0, "200=102"},
			{"status == 403", 1148, 1148, "403=1148"},
			{"final_status_code >= 400", 1148, 1148, "403=1148"},
			{"final_status_code >= 500", 0, 0, ""},
			// absent is not zero: the 84 calls with no final response
			{"final_status_code == 0", 0, 0, ""},
			{"final_status_code != 403", byFinal["200"] + byFinal["none"], 0, "200=102 (none)=84"},
			{"not final_status_code >= 100", byFinal["none"], 0, "(none)=84"},
		}},
		{"SIP_DTMF2.cap", []statusCase{
			// 603 Decline on 5514@192.168.105.110; 200 on the other call
			{"final_status_code >= 600", 1, 1, "603=1"},
			{"status >= 400 and status < 500", 0, 0, ""},
			// the answered call is a problem for its late media
			{"final_status_code == 200", 1, 1, "200=1"},
		}},
		{"sip-routing-error.pcapng", []statusCase{
			// two calls: 401, then 404 to the credentialed retry
			{"final_status_code == 404", 2, 2, "404=2"},
			{"final_status_code == 401", 0, 0, ""},
			{"final_status_code >= 400 and final_status_code < 500", 2, 2, "404=2"},
		}},
		{"sip-488-codec-reject.pcapng", []statusCase{
			// 401, then 488 Not Acceptable Here to the retry
			{"status == 488", 1, 1, "488=1"},
			{"final_status_code >= 500", 0, 0, ""},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.capture, func(t *testing.T) {
			s := startRaw(t, "-N", "--mcp", "-I", testcap.Public(tc.capture))
			s.waitLoaded()
			for _, c := range tc.cases {
				l, _ := s.ok("list_dialogs", map[string]any{"filter": c.filter, "limit": 500})
				if got := statusNum(l["total_matched"]); got != c.list {
					t.Errorf("list_dialogs %q: total_matched %d, want %d", c.filter, got, c.list)
				}
				// every row returned carries a code the filter accepts
				ds, _ := l["dialogs"].([]any)
				for _, d := range ds {
					code, has := d.(map[string]any)["final_status_code"]
					if strings.Contains(c.filter, "== 403") && (!has || statusNum(code) != 403) {
						t.Errorf("list_dialogs %q: row with final_status_code %v", c.filter, code)
						break
					}
				}
				p, _ := s.ok("find_problems", map[string]any{"filter": c.filter, "limit": 1})
				if got := statusNum(p["total_matched"]); got != c.problems {
					t.Errorf("find_problems %q: total_matched %d, want %d", c.filter, got, c.problems)
				}
				a, _ := s.ok("aggregate_dialogs", map[string]any{"filter": c.filter, "group_by": "response_code"})
				var bs []string
				for _, b := range a["buckets"].([]any) {
					m := b.(map[string]any)
					bs = append(bs, fmt.Sprintf("%v=%d", m["value"], statusNum(m["count"])))
				}
				if got := strings.Join(bs, " "); got != c.buckets {
					t.Errorf("aggregate_dialogs %q by response_code: got %q, want %q", c.filter, got, c.buckets)
				}
				if statusNum(a["total_matched"]) != c.list {
					t.Errorf("aggregate_dialogs %q: total_matched %v, want %d", c.filter, a["total_matched"], c.list)
				}
			}
		})
	}

	t.Run("a number field refuses text", func(t *testing.T) {
		s := startRaw(t, "-N", "--mcp", "-I", testcap.Public("SIP_DTMF2.cap"))
		for _, c := range []struct{ filter, want string }{
			{"status == Failed", "status is a number"},
			{"final_status_code =~ 5..", "=~ applies only to string fields"},
		} {
			// a filter that does not compile is a tool execution error
			// (invalid_filter) with the position and the hint
			r := s.call("list_dialogs", map[string]any{"filter": c.filter})
			if rf := r.refused(t); rf == nil || rf.Code != "invalid_filter" || rf.Argument != "filter" || rf.Position == nil || !strings.Contains(rf.Message, c.want) {
				t.Errorf("list_dialogs %q: got %s, want isError invalid_filter saying %q", c.filter, r.Response, c.want)
			}
		}
	})
}

// statusNum reads a JSON number as an int (-1 when it is not a number).
func statusNum(v any) int {
	f, ok := v.(float64)
	if !ok {
		return -1
	}
	return int(f)
}
