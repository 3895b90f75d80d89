package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, a *gen.Answers)
	}{
		{
			name: "small preset",
			args: []string{"-preset", "small", "-seed", "2"},
			check: func(t *testing.T, a *gen.Answers) {
				want := gen.Small(2)
				if a.Config.Calls != want.Calls || a.Config.Duration != want.Duration || a.Config.Seed != 2 {
					t.Errorf("config %+v, want %+v", a.Config, want)
				}
			},
		},
		{
			name: "flags override the preset",
			args: []string{"-preset", "carrier", "-calls", "3", "-duration", "1s", "-spacing", "10ms", "-registers", "1"},
			check: func(t *testing.T, a *gen.Answers) {
				if a.Config.Calls != 3 || a.Config.Duration != time.Second || a.Config.Spacing != 10*time.Millisecond || a.Config.Registers != 1 {
					t.Errorf("config %+v, want 3 calls of 1s, 10ms apart, 1 register", a.Config)
				}
				if got := a.Counts.CallIDs; got != 4 {
					t.Errorf("call ids %d, want 4", got)
				}
			},
		},
		{name: "unknown preset", args: []string{"-preset", "huge"}, wantErr: "unknown preset"},
		{name: "bad config", args: []string{"-calls", "-2"}, wantErr: "calls -2 out of range"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pcap := filepath.Join(dir, "c"+string(rune('a'+i))+".pcap")
			answers := strings.TrimSuffix(pcap, ".pcap") + ".json"
			var stdout, stderr bytes.Buffer
			err := run(append(tc.args, "-o", pcap, "-answers", answers), &stdout, &stderr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("run() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run() = %v (stderr %s)", err, stderr.String())
			}
			a, err := gen.ReadAnswers(answers)
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(pcap)
			if err != nil || st.Size() == 0 {
				t.Fatalf("capture not written: %v", err)
			}
			if !strings.Contains(stdout.String(), a.Capture.SHA256) {
				t.Errorf("summary %q does not name the sha256 %s", stdout.String(), a.Capture.SHA256)
			}
			tc.check(t, a)
		})
	}
	if err := run(nil, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "missing -o") {
		t.Errorf("run() without -o = %v, want a missing -o error", err)
	}
}
