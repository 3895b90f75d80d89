package testgen

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// TestCaptureIsTheInProcessGeneratorsBytesAndAnswers: the file gencapture
// writes has the bytes and the answers gen.WriteFiles gives in process, the
// gzip form inflates to the same bytes, and a second request returns the
// same file without writing it again.
func TestCaptureIsTheInProcessGeneratorsBytesAndAnswers(t *testing.T) {
	cfg := gen.Small(4)
	cfg.Calls = 6
	wantPath := filepath.Join(t.TempDir(), "want.pcap")
	want, err := gen.WriteFiles(cfg, wantPath, "")
	if err != nil {
		t.Fatal(err)
	}
	wantBytes, err := os.ReadFile(wantPath)
	if err != nil {
		t.Fatal(err)
	}
	path, got := Capture(t, cfg)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("answers differ from the in-process generator's:\n got %+v\nwant %+v", got.Counts, want.Counts)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, wantBytes) {
		t.Errorf("capture: %d bytes, want the in-process %d bytes", len(b), len(wantBytes))
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != got.Capture.SHA256 {
		t.Errorf("sha256 %x, answers say %s", sum, got.Capture.SHA256)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	again, ans2 := Capture(t, cfg)
	st2, err := os.Stat(again)
	if err != nil {
		t.Fatal(err)
	}
	if again != path || ans2 != got || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("second request: %s (%v), want the first file %s (%v) and answers", again, st2.ModTime(), path, st.ModTime())
	}

	gzPath, gzAns := GzipCapture(t, cfg)
	if gzPath == path || !reflect.DeepEqual(gzAns, want) {
		t.Errorf("gzip capture %s shares the plain path or has other answers", gzPath)
	}
	f, err := os.Open(gzPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	inflated, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(inflated, wantBytes) {
		t.Errorf("gzip capture inflates to %d bytes, want the in-process %d", len(inflated), len(wantBytes))
	}
}

// TestCaptureWithAStartTimeIsGeneratedInProcess: gencapture has no flag
// for Start, so such a configuration is written in process, with its
// answers.
func TestCaptureWithAStartTimeIsGeneratedInProcess(t *testing.T) {
	cfg := gen.Small(5)
	cfg.Calls, cfg.Registers = 2, 1
	cfg.Start = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	_, ans := Capture(t, cfg)
	if !ans.Config.Start.Equal(cfg.Start) || ans.Counts.CallIDs != 3 {
		t.Errorf("config %+v, %d Call-IDs; want the start %v and 3 Call-IDs", ans.Config, ans.Counts.CallIDs, cfg.Start)
	}
}
