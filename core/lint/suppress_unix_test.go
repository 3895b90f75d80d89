//go:build unix

package lint

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadSuppressionRefusesAFIFO: a FIFO named as the suppression list is
// refused at once, never waited on.
func TestReadSuppressionRefusesAFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), SuppressionFileName)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadSuppression(p); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is a named pipe (FIFO), not a regular file") {
			t.Errorf("got %v, want the FIFO refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadSuppression blocked on a FIFO")
	}
}
