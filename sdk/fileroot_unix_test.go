//go:build unix

package sdk

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFileRootRefusesSpecialFiles: a FIFO without a writer and a UNIX
// socket are refused at once, naming what they are; nothing blocks.
func TestFileRootRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", "sock")
	_ = os.Chdir(wd)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := NewFileRoot(root, nil)
	for _, tc := range []struct{ file, want string }{
		{"fifo", "is a named pipe (FIFO), not a regular file"},
		{"sock", "not a regular file"},
	} {
		done := make(chan error, 1)
		go func() { _, err := r.ReadFile(tc.file, 0); done <- err }()
		select {
		case err := <-done:
			if code(err) != CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want -32602 mentioning %q", tc.file, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile blocked", tc.file)
		}
	}
}
