package tests

// Engine I acceptance of the batch CLI over file sets: inputs read in
// first-packet order whatever their names, so a call spanning two files
// is one dialog; truncated inputs analyzed up to the cut, flagged, exit 1.

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

func TestEngineAcceptanceFileSets(t *testing.T) {
	dir := sharedDir(t)
	set := filepath.Join(dir, "set")
	if err := os.Mkdir(set, 0o755); err != nil {
		t.Fatal(err)
	}
	var frames []accFrame
	for j, m := range accCall("spans@a.example") {
		frames = append(frames, accFrame{accAt(1000 * j), accIPEth(accUDP(t, m[0].(string), m[1].(string), m[2].([]byte)))})
	}
	// The first four messages in z-first.pcap, the last three in
	// a-second.pcap.gz: name order is the reverse of time order.
	first := accPcap(t, filepath.Join(set, "z-first.pcap"), 1, binary.LittleEndian, false, frames[:4])
	second := accGzip(t, accPcap(t, filepath.Join(dir, "a-second.pcap"), 1, binary.BigEndian, true, frames[4:]))
	if err := os.Rename(second, filepath.Join(set, "a-second.pcap.gz")); err != nil {
		t.Fatal(err)
	}
	second = filepath.Join(set, "a-second.pcap.gz")
	// A NetMon file found in the directory is skipped with a warning.
	netmon, err := os.ReadFile(testcap.Public("rtsp-packets.cap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(set, "m-netmon.cap"), netmon, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		inputs []string
	}{
		{"directory", []string{set}},
		{"named in name order", []string{second, first}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := accJSON(t, 0, tc.inputs...)
			r := doc.Run
			if r.FramesRead != 7 || r.SIPMessages != 7 || !r.Complete || len(doc.Dialogs) != 1 {
				t.Fatalf("got %d frames, %d messages, complete %v, %d dialogs; want 7, 7, true, 1", r.FramesRead, r.SIPMessages, r.Complete, len(doc.Dialogs))
			}
			if d := doc.Dialogs[0]; d.State != "Completed" || d.MsgCount != 7 || d.FinalStatusCode != 200 {
				t.Errorf("got %s with %d messages, final %d; want Completed, 7, 200", d.State, d.MsgCount, d.FinalStatusCode)
			}
			var names []string
			for _, in := range r.Inputs {
				names = append(names, in.Name)
			}
			if len(names) != 2 || names[0] != "z-first.pcap" || names[1] != "a-second.pcap.gz" {
				t.Errorf("got inputs %v, want z-first.pcap then a-second.pcap.gz", names)
			}
		})
	}

	t.Run("truncated member", func(t *testing.T) {
		raw, err := os.ReadFile(first)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, "cut.pcap")
		if err := os.WriteFile(cut, raw[:len(raw)-20], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, in := range []string{cut, accGzip(t, cut)} {
			doc := accJSON(t, 1, in, second)
			r := doc.Run
			if r.Complete || !r.SourceStoppedEarly || r.FramesRead != 6 || r.SIPMessages != 6 {
				t.Errorf("%s: got complete %v stopped_early %v, %d frames, %d messages; want false, true, 6, 6",
					filepath.Base(in), r.Complete, r.SourceStoppedEarly, r.FramesRead, r.SIPMessages)
			}
		}
		if out, _, code := accRun(t, "-N", "-I", cut, "--report"); code != 1 || !strings.Contains(out, "INCOMPLETE RUN") {
			t.Errorf("--report: exit %d, INCOMPLETE RUN shown %v; want 1, true", code, strings.Contains(out, "INCOMPLETE RUN"))
		}
	})
}
