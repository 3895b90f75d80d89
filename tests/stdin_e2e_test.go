package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestStdinSourceThroughTheBinary: `sipnab -N -I - --json-run` reading a
// capture on standard input writes the document the file gives (same
// dialogs, streams and counters; the input named stdin), pcap and pcapng
// alike, exit 0. A stream cut inside a record is partial input: the
// document says source_stopped_early and the exit code is 1. -I - beside
// another -I, or with stdio MCP, is a usage error (exit 2).
func TestStdinSourceThroughTheBinary(t *testing.T) {
	t.Parallel()
	type doc struct {
		Run struct {
			FramesRead         uint64 `json:"frames_read"`
			SIPMessages        uint64 `json:"sip_messages"`
			MediaPackets       uint64 `json:"media_packets"`
			SourceExhausted    bool   `json:"source_exhausted"`
			SourceStoppedEarly bool   `json:"source_stopped_early"`
			Name               string `json:"name"`
			Errors             []string
		} `json:"run"`
		Dialogs []struct {
			CallID   string `json:"call_id"`
			MsgCount int    `json:"msg_count"`
		} `json:"dialogs"`
		Streams []json.RawMessage `json:"streams"`
	}
	run := func(t *testing.T, stdin []byte, args ...string) (doc, int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Stdin = bytes.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		var d doc
		if out.Len() > 0 {
			if err := json.Unmarshal([]byte(out.String()), &d); err != nil {
				t.Fatalf("%v: %.300s", err, out.String())
			}
		}
		return d, cmd.ProcessState.ExitCode(), errb.String()
	}
	for _, name := range []string{"sip-rtp-g711.pcap", "b2bua-asterisk.pcapng"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(testcap.Public(name))
			if err != nil {
				t.Fatal(err)
			}
			file, code, _ := run(t, nil, "-N", "-I", testcap.Public(name), "--json-run")
			if code != 0 {
				t.Fatalf("file: exit %d", code)
			}
			in, code, stderr := run(t, raw, "-N", "-I", "-", "--json-run")
			if code != 0 {
				t.Fatalf("stdin: exit %d: %s", code, stderr)
			}
			if in.Run.Name != "stdin" || !in.Run.SourceExhausted || in.Run.SourceStoppedEarly {
				t.Errorf("stdin run %+v", in.Run)
			}
			if in.Run.FramesRead != file.Run.FramesRead || in.Run.SIPMessages != file.Run.SIPMessages ||
				in.Run.MediaPackets != file.Run.MediaPackets || len(in.Streams) != len(file.Streams) || len(in.Dialogs) != len(file.Dialogs) {
				t.Fatalf("stdin frames %d sip %d media %d streams %d dialogs %d; file %d %d %d %d %d", in.Run.FramesRead, in.Run.SIPMessages,
					in.Run.MediaPackets, len(in.Streams), len(in.Dialogs), file.Run.FramesRead, file.Run.SIPMessages, file.Run.MediaPackets,
					len(file.Streams), len(file.Dialogs))
			}
			for i := range file.Dialogs {
				if in.Dialogs[i] != file.Dialogs[i] {
					t.Errorf("dialog %d: stdin %+v, file %+v", i, in.Dialogs[i], file.Dialogs[i])
				}
			}
			if len(file.Dialogs) == 0 {
				t.Fatal("the file gave no dialog: nothing compared")
			}
		})
	}
	t.Run("cut inside a record", func(t *testing.T) {
		raw, err := os.ReadFile(testcap.Public("sip-rtp-g711.pcap"))
		if err != nil {
			t.Fatal(err)
		}
		d, code, _ := run(t, raw[:len(raw)/2+7], "-N", "-I", "-", "--json-run")
		if code != 1 || !d.Run.SourceStoppedEarly || d.Run.FramesRead == 0 || len(d.Run.Errors) != 1 || !strings.Contains(d.Run.Errors[0], "stdin") {
			t.Errorf("exit %d, run %+v; want 1, stopped early with the frames before the cut", code, d.Run)
		}
	})
	for _, args := range [][]string{
		{"-N", "-I", "-", "-I", testcap.Public("sip_call.pcap"), "--json-run"},
		{"-N", "--mcp", "-I", "-"},
	} {
		t.Run("usage "+strings.Join(args, " "), func(t *testing.T) {
			if _, code, stderr := run(t, nil, args...); code != 2 || !strings.Contains(stderr, "-I -") {
				t.Errorf("exit %d, stderr %q; want 2 naming -I -", code, stderr)
			}
		})
	}
}
