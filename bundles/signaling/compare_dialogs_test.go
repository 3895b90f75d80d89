package signaling

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// truthDialog is one dialog of a truth/ file.
type truthDialog struct {
	CallID            string         `json:"call_id"`
	Messages          int            `json:"messages"`
	Requests          map[string]int `json:"requests"`
	InviteFinalStatus *int           `json:"invite_final_status"`
}

func crTruthDialogs(t *testing.T, name string) map[string]truthDialog {
	t.Helper()
	tr := testcap.LoadTruth[struct {
		SIP struct {
			Dialogs []truthDialog `json:"dialogs"`
		} `json:"sip"`
	}](t, name)
	out := map[string]truthDialog{}
	for _, d := range tr.SIP.Dialogs {
		out[d.CallID] = d
	}
	return out
}

func TestCompareDialogsAnsweredAgainstRejected(t *testing.T) {
	// The B2BUA's answered A leg against sip-routing-error.pcapng's INVITE
	// challenged and then refused 404 (frames 21-32), both loaded in one
	// capture.
	const ok, bad = "M2Q0ZDc1ZGM1NzIyMTlhZTA3NDU3NTgzMzA5YmJmZWQ.", "xxJSCjm44uRLi5nqaGN3Hg.."
	c := crLoad(t, testcap.Public("b2bua-asterisk.pcapng"), testcap.Public("sip-routing-error.pcapng"))
	var got CompareDialogs
	crCall(t, c, "compare_dialogs", map[string]any{"call_id_a": ok, "call_id_b": bad}, &got)

	ta, tb := crTruthDialogs(t, "b2bua-asterisk.pcapng")[ok], crTruthDialogs(t, "sip-routing-error.pcapng")[bad]
	for _, side := range []struct {
		name string
		got  CompareSide
		tr   truthDialog
	}{{"a", got.A, ta}, {"b", got.B, tb}} {
		if side.got.MsgCount != side.tr.Messages {
			t.Errorf("%s: got msg_count %d, want tshark's %d", side.name, side.got.MsgCount, side.tr.Messages)
		}
		for m := range side.tr.Requests {
			if !strings.Contains(strings.Join(side.got.Methods, ","), m) {
				t.Errorf("%s: methods %v lack %s", side.name, side.got.Methods, m)
			}
		}
		if len(side.got.Methods) != len(side.tr.Requests) {
			t.Errorf("%s: got methods %v, want tshark's %v", side.name, side.got.Methods, side.tr.Requests)
		}
	}
	// tshark's invite_final_status is the first final response, the 401
	// challenge on both; the final status skips challenges: 200 (frame 34)
	// and 404 (frame 30).
	if got.A.FinalStatusCode != 200 || got.B.FinalStatusCode != 404 {
		t.Errorf("got final codes %d / %d, want 200 / 404", got.A.FinalStatusCode, got.B.FinalStatusCode)
	}
	if got.A.State != "Completed" || got.B.State != "Failed" {
		t.Errorf("got states %s / %s, want Completed / Failed", got.A.State, got.B.State)
	}
	diffs := map[string]Difference{}
	for _, d := range got.Differences {
		diffs[d.Field] = d
	}
	want := map[string]Difference{
		"state":             {"state", "Completed", "Failed"},
		"final_status_code": {"final_status_code", "200", "404"},
		"msg_count":         {"msg_count", "13", "6"},
		"methods":           {"methods", "BYE", ""},
		"verdict":           {"verdict", "media", "signaling"},
	}
	for f, w := range want {
		if diffs[f] != w {
			t.Errorf("difference %s: got %+v, want %+v", f, diffs[f], w)
		}
	}
	if _, same := diffs["method"]; same {
		t.Errorf("both opened with INVITE: no method difference, got %+v", diffs["method"])
	}
	if len(got.B.Hints) == 0 {
		t.Errorf("the rejected call has diagnosis hints: got none")
	}

	// A call against itself differs in nothing.
	var self CompareDialogs
	r := crCall(t, c, "compare_dialogs", map[string]any{"call_id_a": bad, "call_id_b": bad}, &self)
	if len(self.Differences) != 0 || !strings.Contains(r.Blocks[0], `"differences":[]`) {
		t.Errorf("self comparison: got %v", self.Differences)
	}
}

func TestCompareDialogsRefusals(t *testing.T) {
	c := crCapture(t, crafted{callID: "a", a: "192.0.2.1:5060", b: "192.0.2.2:5060"})
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown a", map[string]any{"call_id_a": "x", "call_id_b": "a"}, `unknown call_id_a "x"`},
		{"unknown b", map[string]any{"call_id_a": "a", "call_id_b": "y"}, `unknown call_id_b "y"`},
		{"missing b", map[string]any{"call_id_a": "a"}, "call_id_b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := crInvoke(t, c, "compare_dialogs", tc.args)
			if crCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want -32602 mentioning %q", err, tc.want)
			}
		})
	}
}
