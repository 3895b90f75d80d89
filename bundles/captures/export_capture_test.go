package captures

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// tsharkSIP lists the SIP messages of a capture as tshark reads them
// (testcap.TsharkSIP), sorted.
func tsharkSIP(t *testing.T, path string) []string {
	t.Helper()
	rows := testcap.TsharkSIP(t, path)
	slices.Sort(rows)
	return rows
}

// TestExportCaptureReadsBackAsTheSameSIP: the held SIP of five public
// captures (UDP, SIP over TCP, pcapng, a proxy, a re-INVITE) exported to a
// new pcap in the root reads back in tshark as the same SIP messages as the
// source: the same Call-ID, CSeq and method or status, message for
// message. Every one of these captures' messages is held (no capture
// duplicates, no message without a Call-ID, under the retention cap).
func TestExportCaptureReadsBackAsTheSameSIP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		messages int // tshark -Y sip, messages (not frames)
	}{
		{sampleCapture, 10},
		{"sip-over-tcp.pcap", 7},
		{"sip-auth-failure.pcapng", 8},
		{"sip-proxy.pcap", 11},
		{"register-invite-reinvite-bye.pcap", 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := cpRoot(t)
			tools := cpTools(t, cpLoad(t, tc.name), root, sdk.EnvOptions{})
			var got ExportCapture
			cpCall(t, tools["export_capture"], `{"filename":"export.pcap"}`, &got)
			st, err := os.Stat(filepath.Join(root, "export.pcap"))
			if err != nil {
				t.Fatal(err)
			}
			if got.Path != "export.pcap" || got.Messages != tc.messages || int64(got.Bytes) != st.Size() || !got.SourceExhausted {
				t.Errorf("answer: %+v (file %d bytes)", got, st.Size())
			}
			src, exp := tsharkSIP(t, testcap.Public(tc.name)), tsharkSIP(t, filepath.Join(root, "export.pcap"))
			if len(src) != tc.messages || !slices.Equal(src, exp) {
				t.Errorf("tshark reads back %d messages, the source %d:\nsource %v\nexport %v", len(exp), len(src), src, exp)
			}
		})
	}
}

// TestExportCaptureRefusals: a name already taken (the earlier export, a
// capture staged in the root), a name with a directory, a capture the
// server reads (-I, protected by canonical path) and a server without a
// root are refused; the file in the way is untouched.
func TestExportCaptureRefusals(t *testing.T) {
	root := cpRoot(t, sampleCapture)
	input := filepath.Join(root, "input.pcap")
	cpCopy(t, testcap.Public(sampleCapture), input)
	capture := cpLoad(t, sampleCapture)
	env := sdk.EnvOptions{FileRoot: sdk.NewFileRoot(root, []string{input})}
	tools := cpTools(t, capture, "", env)
	cpCall(t, tools["export_capture"], `{"filename":"first.pcap"}`, nil)
	before, _ := os.ReadFile(filepath.Join(root, "first.pcap"))
	for _, tc := range []struct{ name, want string }{
		{"first.pcap", "is taken"},
		{sampleCapture, "is taken"},
		{"input.pcap", "a capture this server reads"},
		{"../out.pcap", "without a directory"},
	} {
		e := cpRefused(t, tools["export_capture"], `{"filename":`+cpJSON(tc.name)+`}`)
		if e.Kind != sdk.KindFileRefused || !strings.Contains(e.Message, tc.want) || strings.Contains(e.Message, root) {
			t.Errorf("%s: %+v, want file_refused naming %q without the root's path", tc.name, e, tc.want)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(root, "first.pcap")); !slices.Equal(before, after) {
		t.Errorf("the refused export changed first.pcap")
	}
	none := cpTools(t, capture, "", sdk.EnvOptions{})
	if e := cpRefused(t, none["export_capture"], `{"filename":"x.pcap"}`); e.Kind != sdk.KindNotEnabled {
		t.Errorf("no root: %+v", e)
	}
}
