// Package tests drives the built sipnab binary end to end: over stdio and
// over streamable HTTP, with the mcp-go client and with the independent
// modelcontextprotocol/go-sdk client, in both protocol eras.
package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testgen"
)

// bin is the sipnab binary built once for the package's tests.
var bin string

func TestMain(m *testing.M) {
	// A parallel test here mostly waits on a sipnab process loading or
	// answering: four at once keep a 2-core machine busy, not crowded.
	testcap.DefaultParallel(4)
	dir, err := os.MkdirTemp("", "sipnab-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The HTTP server drops root privileges to nobody before binding: keep
	// the binary reachable for it.
	_ = os.Chmod(dir, 0o755)
	bin = filepath.Join(dir, "sipnab")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sipnab")
	cmd.Dir = testcap.Root()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building sipnab:", err)
		os.Exit(1)
	}
	// The sample capture is copied beside the binary, where the HTTP server
	// can still read it once it runs as nobody, wherever the checkout is.
	data, err := os.ReadFile(filepath.Join(testcap.Root(), "testdata", "sip-rtp-g711.pcap"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "sip-rtp-g711.pcap"), data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "copying the sample capture:", err)
		os.Exit(1)
	}
	code := m.Run()
	testgen.Cleanup()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// loadingCapture is the bench generator's carrier capture at 600 calls of
// 25 s: about 1.2 million frames (285 MB), written gzip-compressed (about
// 50 MB), so inflating adds to the load, which takes several seconds: long
// enough to query the binary while it loads. Generated once for the
// package and shared by the tests that watch a load.
func loadingCapture(t *testing.T) (string, *gen.Answers) {
	t.Helper()
	cfg := gen.Carrier(5)
	cfg.Calls, cfg.Registers = 600, 60
	return testgen.GzipCapture(t, cfg)
}

// carrierCapture is the bench generator's carrier capture (200 calls of
// 25 s, about 400,000 frames, 95 MB), generated once for the package.
func carrierCapture(t *testing.T) (string, *gen.Answers) {
	t.Helper()
	return testgen.Capture(t, gen.Carrier(1))
}

// sampleCapture is the small capture shipped in the repository
// (testdata/sip-rtp-g711.pcap), copied beside the binary.
func sampleCapture() string { return filepath.Join(filepath.Dir(bin), "sip-rtp-g711.pcap") }

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// httpServer is a running `sipnab --mcp --mcp-transport http`.
type httpServer struct {
	URL    string // http://127.0.0.1:PORT
	stderr *lockedBuffer
	cmd    *exec.Cmd
	// exited is closed once the process has ended (cmd.ProcessState is
	// then set).
	exited chan struct{}
}

var listenRE = regexp.MustCompile(`url=(https?://[^ ]+)/mcp`)

// startHTTP starts the binary with --mcp-transport http on a free loopback
// port (unless args bind elsewhere) and waits for it to listen.
func startHTTP(t *testing.T, env []string, args ...string) *httpServer {
	t.Helper()
	full := args
	if !strings.Contains(strings.Join(args, " "), "--mcp-transport http") {
		full = append([]string{"-N", "--mcp", "--mcp-transport", "http"}, args...)
	}
	// A config file's own bind (0 port in the tests' copies) stands.
	if !strings.Contains(strings.Join(args, " "), "--mcp-bind") && !slices.Contains(args, "--config") {
		full = append(full, "--mcp-bind", "127.0.0.1:0")
	}
	cmd := exec.Command(bin, full...)
	cmd.Env = append(os.Environ(), env...)
	s := &httpServer{stderr: &lockedBuffer{}, cmd: cmd}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(s.stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = pw.Close()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case u := <-found:
		s.URL = u
	case <-exited:
		t.Fatalf("server exited with %v; stderr:\n%s", cmd.ProcessState, s.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start; stderr:\n%s", s.stderr.String())
	}
	return s
}

// sharedDir is a temporary directory the server can still read after it
// drops root privileges.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sipnab-test-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// bearer is an http.RoundTripper adding an Authorization header.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

func httpClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}, Timeout: 30 * time.Second}
}

// rawPost sends one JSON-RPC body to /mcp with the given headers.
func rawPost(t *testing.T, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// runCode runs the binary to completion and returns its stderr and exit code.
func runCode(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader("")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	_ = cmd.Run()
	return errb.String(), cmd.ProcessState.ExitCode()
}
