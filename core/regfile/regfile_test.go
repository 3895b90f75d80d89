//go:build unix

package regfile

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenRefusesWhatIsNotARegularFileWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "link-to-fifo")); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", "sock")
	_ = os.Chdir(wd)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct{ name, path, want string }{
		{"regular file", filepath.Join(dir, "plain"), ""},
		{"fifo", filepath.Join(dir, "fifo"), "is a named pipe (FIFO), not a regular file"},
		{"symlink to a fifo", filepath.Join(dir, "link-to-fifo"), "is a named pipe (FIFO), not a regular file"},
		{"socket", filepath.Join(dir, "sock"), "not a regular file"},
		{"directory", dir, "is a directory, not a regular file"},
		{"device", "/dev/null", "is a device, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type res struct {
				f   *os.File
				err error
			}
			done := make(chan res, 1)
			go func() { f, err := Open(tc.path); done <- res{f, err} }()
			var r res
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Open blocked")
			}
			if tc.want == "" {
				if r.err != nil {
					t.Fatal(r.err)
				}
				defer r.f.Close()
				if b, _ := io.ReadAll(r.f); string(b) != "data" {
					t.Errorf("read %q, want data", b)
				}
				return
			}
			var nr *NotRegularError
			if r.err == nil || !errors.As(r.err, &nr) || !strings.Contains(r.err.Error(), tc.want) {
				t.Errorf("got %v, want a NotRegularError saying %q", r.err, tc.want)
			}
		})
	}
}
