package signaling

import (
	"fmt"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestRowsOfACallInProgressAtCaptureEnd: tail_dialogs and search_by_time
// rows and get_dialog_report json agree with the batch document on a call
// still in progress when the capture ended. sip-rtp-g711.pcap:
// 1-1968@10.0.2.20 was answered at 1480171988.290862, the capture's last
// packet (RTP) is at 1480171996.569179 (tshark): ended false, 8278 ms to
// capture end, while duration_sec stays 0.004 (first to last SIP message).
// 1-1966@10.0.2.20 ended with a BYE and carries neither field. Before
// this, no row did.
func TestRowsOfACallInProgressAtCaptureEnd(t *testing.T) {
	c := sgLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	type row struct {
		CallID  string `json:"call_id"`
		Ended   *bool  `json:"ended"`
		ToEndMs *int64 `json:"duration_to_capture_end_ms"`
	}
	want := map[string]string{
		"1-1966@10.0.2.20": "",
		"1-1968@10.0.2.20": " ended false to_end 8278 ms",
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"tail_dialogs", map[string]any{}},
		{"search_by_time", map[string]any{"start": "2016-01-01T00:00:00Z"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			var page struct {
				Dialogs []row `json:"dialogs"`
			}
			sgCall(t, c, tc.tool, tc.args, &page)
			got := map[string]string{}
			for _, r := range page.Dialogs {
				v := ""
				if r.Ended != nil {
					v += fmt.Sprintf(" ended %v", *r.Ended)
				}
				if r.ToEndMs != nil {
					v += fmt.Sprintf(" to_end %d ms", *r.ToEndMs)
				}
				got[r.CallID] = v
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	// get_dialog_report's json carries the same two fields beside its
	// duration_sec.
	for id, w := range want {
		t.Run("get_dialog_report "+id, func(t *testing.T) {
			var r row
			sgCall(t, c, "get_dialog_report", map[string]any{"call_id": id}, &r)
			got := ""
			if r.Ended != nil {
				got += fmt.Sprintf(" ended %v", *r.Ended)
			}
			if r.ToEndMs != nil {
				got += fmt.Sprintf(" to_end %d ms", *r.ToEndMs)
			}
			if got != w {
				t.Errorf("got %q, want %q", got, w)
			}
		})
	}
}
