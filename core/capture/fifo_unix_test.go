//go:build unix

package capture

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExpandRefusesAFIFOWithoutBlocking: a FIFO named as an input is
// refused at once with what it is (open(2) without O_NONBLOCK would wait
// for a writer forever); one reached through a symlink in a searched
// directory is a skipped-file warning, and the real capture beside it is
// still read.
func TestExpandRefusesAFIFOWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "stream.pcap")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(sub, "link.pcap")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "ami", "testdata", "ami-cleartext.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "real.pcap"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ins   []Input
		warns []Warning
		err   error
	}
	expand := func(inputs ...string) result {
		done := make(chan result, 1)
		go func() { ins, w, err := Expand(inputs, ExpandOptions{}); done <- result{ins, w, err} }()
		select {
		case r := <-done:
			return r
		case <-time.After(5 * time.Second):
			t.Fatalf("Expand(%v) blocked", inputs)
		}
		return result{}
	}
	r := expand(fifo)
	if r.err == nil || !strings.Contains(r.err.Error(), "opening capture stream.pcap: is a named pipe (FIFO), not a regular file") {
		t.Errorf("named FIFO: got %v, want the FIFO refusal", r.err)
	}
	r = expand(sub)
	if r.err != nil || len(r.ins) != 1 || r.ins[0].Name != "real.pcap" || len(r.warns) != 1 || !strings.Contains(r.warns[0].String(), "named pipe (FIFO)") {
		t.Errorf("directory: got %v inputs, warnings %v, error %v; want real.pcap read and link.pcap skipped as a FIFO", r.ins, r.warns, r.err)
	}
}
