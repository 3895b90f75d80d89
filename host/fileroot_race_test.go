//go:build unix

package host

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sipnab/sipnab/sdk"
)

// TestFileRootSymlinkSwapRaceNeverLeaks reproduces a symlink-swap race
// against the file root: one goroutine swaps a name of the root,
// atomically (rename), between a regular file and a symlink to a file
// outside the root, while 20,000
// resources/read calls of that name go through the real stdio server. A
// check-then-open by name leaked the outside file (11 in 12,000 reads);
// opening beneath the root (sdk.FileRoot.open, os.Root) must leak none:
// every answer is the inside content or a refusal ("resolves outside the
// file root", or the name changed while it was opened).
func TestFileRootSymlinkSwapRaceNeverLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 reads")
	}
	const reads = 20000
	const secret = "OUTSIDE-SECRET-CONTENT"
	root, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(target, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(root, "swap.txt")
	if err := os.WriteFile(name, []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		link, file := filepath.Join(root, ".tmp-link"), filepath.Join(root, ".tmp-file")
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Remove(link)
			if err := os.Symlink(target, link); err == nil {
				_ = os.Rename(link, name)
			}
			runtime.Gosched()
			if err := os.WriteFile(file, []byte("inside"), 0o644); err == nil {
				_ = os.Rename(file, name)
			}
			swaps.Add(1)
			runtime.Gosched()
		}
	}()

	s := startStdio(t, []string{"-N", "--mcp", "--mcp-file-root", root}, []sdk.Bundle{fileBundle{}}, nil)
	defer s.close()
	var inside, refused, leaks, other int // 35 leaks in 20,000 before the fix
	const window = 32
	for done := 0; done < reads; done += window {
		chans := make([]<-chan map[string]any, 0, window)
		for i := 0; i < window && done+i < reads; i++ {
			chans = append(chans, s.callAsync("resources/read", map[string]any{"uri": "sipnab:///swap.txt"}))
		}
		for _, ch := range chans {
			var m map[string]any
			select {
			case m = <-ch:
			case <-time.After(20 * time.Second):
				t.Fatalf("resources/read: no response; stderr:\n%s", s.stderr.String())
			}
			text := ""
			if r, ok := m["result"].(map[string]any); ok {
				text, _ = r["contents"].([]any)[0].(map[string]any)["text"].(string)
			}
			_, msg := errCode(m)
			switch {
			case strings.Contains(text, secret) || strings.Contains(msg, secret):
				leaks++
			case text == "inside":
				inside++
			case strings.Contains(msg, "resolves outside the file root"),
				strings.Contains(msg, "the name changed while it was opened"):
				refused++
			default:
				other++
				if other <= 3 {
					t.Logf("other answer: %v", m)
				}
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads over %d swaps: %d inside, %d refused as outside, %d other, %d leaks", reads, swaps.Load(), inside, refused, other, leaks)
	if leaks != 0 {
		t.Errorf("%d of %d reads returned the file outside the root", leaks, reads)
	}
	if inside == 0 || refused == 0 {
		t.Errorf("the race was not exercised: %d inside, %d refused", inside, refused)
	}
}

// TestFileRootNeverBlocksOnASpecialFile: a FIFO without a writer and a UNIX
// socket in the root are refused at once by resources/read and by a tool
// (open with O_NONBLOCK, type checked on the descriptor), naming what they
// are; a plain open(2) of the FIFO would block forever.
func TestFileRootNeverBlocksOnASpecialFile(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A socket path is capped near 108 bytes: listen from inside the root.
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

	s := startStdio(t, []string{"-N", "--mcp", "--mcp-file-root", root}, []sdk.Bundle{fileBundle{}}, nil)
	defer s.close()
	for _, tc := range []struct{ name, file, want string }{
		{"fifo", "fifo", "named pipe (FIFO), not a regular file"},
		{"socket", "sock", "not a regular file"},
	} {
		for _, via := range []string{"resource", "tool"} {
			t.Run(tc.name+" via "+via, func(t *testing.T) {
				start := time.Now()
				var ch <-chan map[string]any
				if via == "resource" {
					ch = s.callAsync("resources/read", map[string]any{"uri": "sipnab:///" + tc.file})
				} else {
					ch = s.callAsync("tools/call", map[string]any{"name": "f_read", "arguments": map[string]any{"name": tc.file}})
				}
				select {
				case m := <-ch:
					// A resource read's refusal is a JSON-RPC error; a
					// tool's is a tool execution error.
					code, msg := errCode(m)
					if via == "tool" {
						var kind string
						kind, msg = refusalOf(t, m)
						if kind == "file_refused" {
							code = sdk.CodeInvalidParams
						}
					}
					if code != sdk.CodeInvalidParams || !strings.Contains(msg, tc.want) || strings.Contains(msg, root) {
						t.Errorf("got %d %q; want a refusal mentioning %q", code, msg, tc.want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("no answer within 5s: the open blocked")
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("answered after %v, want promptly", d)
				}
			})
		}
	}
	// The root still serves regular files afterwards.
	if err := os.WriteFile(filepath.Join(root, "ok.txt"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := s.call("resources/read", map[string]any{"uri": "sipnab:///ok.txt"})
	if r, ok := m["result"].(map[string]any); !ok || r["contents"].([]any)[0].(map[string]any)["text"] != "fine" {
		t.Errorf("regular file after the refusals: %v", m)
	}
}
