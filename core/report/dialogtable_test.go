package report

import (
	"bytes"
	"fmt"
	"testing"
	"text/tabwriter"

	"github.com/sipnab/sipnab/core/dialog"
)

// TestDialogTableAlignsAsTabwriter: the DIALOGS table written a line at a
// time from measured widths is byte for byte what text/tabwriter (padding
// 2, spaces) wrote from the whole table, with Call-IDs and users that are
// wide, multi-byte, invalid UTF-8, empty, cut at their limit or carry
// controls, and every Code, Duration and PDD form.
func TestDialogTableAlignsAsTabwriter(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	rows := []DialogRow{
		{Summary: dialog.Summary{CallID: "a", FromUser: "alice", ToUser: "bob", State: "InCall", FinalStatusCode: 200, DurationSec: 1.5, MsgCount: 7}},
		{Summary: dialog.Summary{CallID: "ünïcödé-€-callid@ホスト", FromUser: "", ToUser: "日本語ユーザー", State: "Failed", MsgCount: 12}, failCode: 486},
		{Summary: dialog.Summary{CallID: "bad\xff\xfeutf8\t\x00\x1b[31m", FromUser: "tab\there", ToUser: "nl\nthere", State: "Terminated", DurationSec: 1234.5678, MsgCount: 100000}},
		{Summary: dialog.Summary{CallID: "x-very-long-call-id-that-is-cut-at-forty-eight-runes-0123456789", FromUser: "a-user-name-longer-than-twenty-four", State: "Ringing"}},
		{Summary: dialog.Summary{CallID: "open", State: "InCall", FinalStatusCode: 200, DurationToCaptureEndMs: i64(8278), Timing: dialog.Timing{PDDMs: i64(1234)}}},
	}
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  Call-ID\tFrom\tTo\tState\tCode\tDuration\tMsgs\tPDD\n")
	var tab dialogTable
	tab.measure(dialogHeader)
	for i := range rows {
		c := tab.cells(&rows[i])
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])
		tab.measure(c)
	}
	tw.Flush()
	var got bytes.Buffer
	tab.write(&got, dialogHeader)
	for i := range rows {
		tab.write(&got, tab.cells(&rows[i]))
	}
	if got.String() != want.String() {
		t.Errorf("table differs from tabwriter's:\n got:\n%s\nwant:\n%s", got.String(), want.String())
	}
	if !bytes.Contains(got.Bytes(), []byte("486")) || !bytes.Contains(got.Bytes(), []byte("8.278s+")) || !bytes.Contains(got.Bytes(), []byte("1.234s")) {
		t.Errorf("table lacks the failure code, the open duration or the PDD:\n%s", got.String())
	}
}
