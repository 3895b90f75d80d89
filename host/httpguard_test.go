package host

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestConnCapStaysBelowTheFileLimit(t *testing.T) {
	for _, tc := range []struct {
		nofile uint64
		want   int
	}{
		{100, minConnsCap},
		{256, minConnsCap},
		{300, minConnsCap},
		{1024, 384},
		{65536, 8192},
		{1 << 20, maxConnsCap},
	} {
		if got := connCap(tc.nofile); got != tc.want {
			t.Errorf("connCap(%d) = %d, want %d", tc.nofile, got, tc.want)
		}
		if tc.nofile > fdReserve+2*minConnsCap && uint64(connCap(tc.nofile)) >= tc.nofile-fdReserve {
			t.Errorf("connCap(%d) leaves fewer than %d descriptors", tc.nofile, fdReserve)
		}
	}
}

// guardServer serves h behind a connGuard of max connections.
func guardServer(t *testing.T, max int, h http.Handler) (*connGuard, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newConnGuard(ln, max, newTestLogger())
	srv := &http.Server{Handler: h, ConnState: g.connState, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(g)
	t.Cleanup(func() { srv.Close() })
	return g, ln.Addr().String()
}

// guardRequest sends one HTTP/1.1 request on c and reads the response.
func guardRequest(t *testing.T, c net.Conn, br *bufio.Reader) *http.Response {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func waitOpen(t *testing.T, g *connGuard, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("open connections %d, want %d", g.open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConnGuardClosesTheIdlestAtTheCap: at the cap a keep-alive connection
// idle between requests is closed to admit a new one; when every
// connection is busy the new one is refused; both are counted.
func TestConnGuardClosesTheIdlestAtTheCap(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			<-release
		}
		io.WriteString(w, "ok")
	})
	g, addr := guardServer(t, 2, h)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	idle := dial()
	guardRequest(t, idle, bufio.NewReader(idle)) // now idle between requests
	busy := dial()
	fmt.Fprintf(busy, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	waitOpen(t, g, 2)
	time.Sleep(50 * time.Millisecond) // let the busy request reach its handler (StateActive)

	newcomer := dial()
	if resp := guardRequest(t, newcomer, bufio.NewReader(newcomer)); resp.StatusCode != 200 {
		t.Fatalf("newcomer got %d", resp.StatusCode)
	}
	if g.evicted.Load() != 1 || g.refused.Load() != 0 {
		t.Fatalf("evicted %d refused %d, want 1 0", g.evicted.Load(), g.refused.Load())
	}
	_ = idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Error("the idle connection was not closed")
	}

	// newcomer is idle again, busy is busy: make newcomer busy too.
	fmt.Fprintf(newcomer, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	extra := dial()
	_ = extra.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); err == nil {
		t.Error("a connection past the cap of busy connections was served")
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.refused.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if g.refused.Load() != 1 || g.evicted.Load() != 1 {
		t.Errorf("refused %d evicted %d, want 1 1", g.refused.Load(), g.evicted.Load())
	}
	close(release)
}

// TestBodyGuardCutsASlowBodyAndAnswersBeforeAnUnreadOne: a body slower
// than the minimum rate is cut; a fast one is read whole; a response
// written before the body was read (a refusal) is sent at once with
// Connection: close, without waiting for a body that never comes.
func TestBodyGuardCutsASlowBodyAndAnswersBeforeAnUnreadOne(t *testing.T) {
	readErr := make(chan error, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		_, err := io.ReadAll(r.Body)
		readErr <- err
		io.WriteString(w, "read")
	})
	bg := newBodyGuard(h, newTestLogger())
	bg.grace, bg.minRate = 300*time.Millisecond, 1000
	_, addr := guardServer(t, 16, bg)

	t.Run("slow body cut", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n")
		for i := 0; i < 30; i++ { // 10 bytes/s against a 1,000 bytes/s minimum
			if _, err := c.Write([]byte("x")); err != nil {
				break
			}
			select {
			case err := <-readErr:
				if err == nil {
					t.Fatal("a slow body was read whole")
				}
				if bg.slowCuts.Load() != 1 {
					t.Errorf("slow cuts %d, want 1", bg.slowCuts.Load())
				}
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		t.Fatal("a body at 10 bytes/s was never cut")
	})
	t.Run("fast body read", func(t *testing.T) {
		resp, err := http.Post("http://"+addr+"/read", "text/plain", strings.NewReader(strings.Repeat("x", 100000)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if err := <-readErr; err != nil || resp.StatusCode != 200 {
			t.Errorf("fast body: %v, status %d", err, resp.StatusCode)
		}
	})
	t.Run("refusal before the body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Headers promise a body that is never sent.
		fmt.Fprintf(c, "POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer while the body is missing: %v", err)
		}
		if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
			t.Errorf("status %d, close %v; want 401 and Connection: close", resp.StatusCode, resp.Close)
		}
	})
}
