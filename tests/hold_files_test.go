//go:build unix

package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runBounded runs the binary and fails when it has not exited within d.
func runBounded(t *testing.T, d time.Duration, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("sipnab %s: still running after %v; stderr:\n%s", strings.Join(args, " "), d, errb.String())
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestFIFOAsInputIsRefusedAtOnce: a FIFO named with -I, with
// no writer, used to block open(2) forever (probing opened it, then loading
// would have opened it again). It is refused at once, naming what it is, in
// a batch run and when the MCP server starts.
func TestFIFOAsInputIsRefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "live.pcap")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, args := range [][]string{
		{"-N", "-I", fifo, "--json-run"},
		{"-N", "--mcp", "-I", fifo},
	} {
		start := time.Now()
		_, stderr, code := runBounded(t, 10*time.Second, strings.NewReader(""), args...)
		if code == 0 || !strings.Contains(stderr, "opening capture live.pcap: is a named pipe (FIFO), not a regular file") || !strings.Contains(stderr, "save the stream to a file first") {
			t.Errorf("%v: exit %d, stderr %q; want a non-zero exit naming the FIFO", args, code, stderr)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: exited after %v, want promptly", args, d)
		}
	}
}

// TestSignalEndsAnIdleStdioServer: SIGTERM ends an MCP server whose stdin
// stays open (nothing to read, no EOF), promptly and cleanly (exit 0).
func TestSignalEndsAnIdleStdioServer(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin, "-N", "--mcp", "-I", sampleCapture())
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb lockedBuffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		_ = cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%v: server still running 15s after the signal; stderr:\n%s", sig, errb.String())
		}
		_ = stdin.Close()
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%v: exit %d, want 0 (stopped on request); stderr:\n%s", sig, code, errb.String())
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: ended after %v, want a clean stop at once (not the 30 s grace)", sig, d)
		}
	}
}

// TestMediaFlagsAreHonoured: --one-way-delay and
// --max-streams, named by the reference page and the eviction messages,
// exist and act. sip-rtp-g711.pcap has two RTP streams and no RTCP: by
// default the delay is the assumed 100 ms; --one-way-delay 20 makes it
// declared 20 ms; --max-streams 1 evicts one stream, counted.
func TestMediaFlagsAreHonoured(t *testing.T) {
	type doc struct {
		Run struct {
			StreamStore struct {
				StreamsEvicted int `json:"streams_evicted"`
			} `json:"stream_store"`
		} `json:"run"`
		Streams []struct {
			Delay struct {
				Source   string  `json:"source"`
				Assumed  bool    `json:"assumed"`
				OneWayMs float64 `json:"one_way_ms"`
			} `json:"delay"`
		} `json:"streams"`
	}
	for _, tc := range []struct {
		name    string
		args    []string
		streams int
		evicted int
		source  string
		delayMs float64
	}{
		{"defaults", nil, 2, 0, "assumed", 100},
		{"declared delay", []string{"--one-way-delay", "20"}, 2, 0, "declared", 20},
		{"stream cap", []string{"--max-streams", "1"}, 1, 1, "assumed", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runBounded(t, 60*time.Second, strings.NewReader(""), append([]string{"-N", "-I", sampleCapture(), "--json-run"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var d doc
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Streams) != tc.streams || d.Run.StreamStore.StreamsEvicted != tc.evicted {
				t.Errorf("%d streams, %d evicted; want %d, %d", len(d.Streams), d.Run.StreamStore.StreamsEvicted, tc.streams, tc.evicted)
			}
			for _, s := range d.Streams {
				if s.Delay.Source != tc.source || s.Delay.OneWayMs != tc.delayMs || s.Delay.Assumed != (tc.source == "assumed") {
					t.Errorf("delay %+v; want source %s, %v ms", s.Delay, tc.source, tc.delayMs)
				}
			}
		})
	}
	for _, bad := range [][]string{{"--max-streams", "0"}, {"--one-way-delay", "-5"}, {"--one-way-delay", "20000"}} {
		if _, stderr, code := runBounded(t, 10*time.Second, strings.NewReader(""), append([]string{"-N", "-I", sampleCapture(), "--json-run"}, bad...)...); code != 2 || !strings.Contains(stderr, bad[0]) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the flag", bad, code, stderr)
		}
	}
}
