package host

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/sdk"
)

func init() {
	// In-process servers must not drop the test binary's privileges.
	dropPrivileges = func(string, hclog.Logger) error { return nil }
}

var urlRE = regexp.MustCompile(`url=(https?://[^ ]+)/mcp`)

// startHTTPInProcess runs Run with the HTTP transport and returns its base URL.
func startHTTPInProcess(t *testing.T, bundles []sdk.Bundle, env []string, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	full := append([]string{"-N", "--mcp", "--mcp-transport", "http", "--mcp-bind", "127.0.0.1:0"}, args...)
	go func() {
		done <- Run(ctx, full, bundles, IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Env: env})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := urlRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr
		}
		select {
		case code := <-done:
			t.Fatalf("server exited %d:\n%s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("server did not start:\n%s", stderr.String())
	return "", nil
}

// post sends one JSON-RPC message and returns the decoded answer.
func post(t *testing.T, url, token, sid, body string) (map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	payload := string(raw)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(payload, "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, `"id"`) {
				payload = d
			}
		}
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(payload), &m)
	return m, resp.Header.Get("Mcp-Session-Id")
}

const initMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func TestReadScopeRefusesWriteToolsOverHTTP(t *testing.T) {
	key := strings.Repeat("s", 40)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	url, _ := startHTTPInProcess(t, []sdk.Bundle{&testBundle{id: "t"}}, []string{"SIPNAB_MCP_SIGNING_KEY=" + key},
		"--mcp-audit-file", audit, "--mcp-rate-limit-per-peer", "0")
	// A tool the token's scope does not allow is 403 insufficient_scope
	// (RFC 6750 §3.1; MCP authorization: runtime insufficient scope), so a
	// client can ask for a wider token; the call is audited as refused.
	for _, tc := range []struct {
		scope, tool string
		wantStatus  int
	}{
		{"read", "t_write", http.StatusForbidden},
		{"read", "t_echo", http.StatusOK},
		{"full", "t_write", http.StatusOK},
	} {
		t.Run(tc.scope+"/"+tc.tool, func(t *testing.T) {
			tok, err := mintToken([]byte(key), "agent-"+tc.scope, tc.scope, tokenAudience, time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			_, sid := post(t, url, tok, "", initMsg)
			args := `{"text":"x"}` // t_echo's; t_write takes none (the input schema is closed)
			if tc.tool == "t_write" {
				args = `{}`
			}
			req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(fmt.Sprintf(
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tc.tool, args)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, body, tc.wantStatus)
			}
			if tc.wantStatus == http.StatusForbidden {
				if ch := resp.Header.Get("WWW-Authenticate"); !strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, `scope="full"`) ||
					!strings.Contains(ch, "scope is read") {
					t.Errorf("WWW-Authenticate %q: want insufficient_scope naming scope full", ch)
				}
			} else if !strings.Contains(string(body), `"result"`) || strings.Contains(string(body), `"isError":true`) {
				t.Errorf("body %s: want a successful result", body)
			}
		})
	}
	f, _ := os.Open(audit)
	defer f.Close()
	sc := bufio.NewScanner(f)
	var callers, outcomes []string
	for sc.Scan() {
		var r auditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		callers = append(callers, r.Caller)
		outcomes = append(outcomes, r.Outcome)
		if r.ID != "2" {
			t.Errorf("record %+v: id %q, want the request's id 2", r, r.ID)
		}
	}
	wantCallers := []string{
		"peer 127.0.0.1 bearer-verified scope=read token=agent-read",
		"peer 127.0.0.1 bearer-verified scope=read token=agent-read",
		"peer 127.0.0.1 bearer-verified scope=full token=agent-full",
	}
	if strings.Join(callers, "\n") != strings.Join(wantCallers, "\n") {
		t.Errorf("callers:\n%s\nwant\n%s", strings.Join(callers, "\n"), strings.Join(wantCallers, "\n"))
	}
	if strings.Join(outcomes, ",") != "refused,ok,ok" {
		t.Errorf("outcomes %v", outcomes)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}

// TestTLSHandshakesRunApartAndAreCapped: connections that never complete a
// handshake neither block a real client nor exceed the cap; past the cap a
// connection is closed at once, and a stalled handshake ends at its deadline.
func TestTLSHandshakesRunApartAndAreCapped(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newTLSListenerLimits(inner, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}, newTestLogger(), 3, 2*time.Second)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	defer srv.Close()
	addr := inner.Addr().String()

	// Two stalled handshakes hold two of the three slots.
	var stalled []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
		defer c.Close()
	}
	waitSlots(t, ln, 2)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second}
	resp, err := client.Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("a real client was blocked by stalled handshakes: %v", err)
	}
	resp.Body.Close()

	// Fill the last slot with a third stalled connection: the next one is
	// closed at once.
	c3, _ := net.Dial("tcp", addr)
	defer c3.Close()
	waitSlots(t, ln, 3)
	c4, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c4.Close()
	_ = c4.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c4.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection past the cap: got %v, want EOF (closed)", err)
	}
	// A stalled handshake is closed by its deadline.
	_ = stalled[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := stalled[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("stalled handshake: got %v, want EOF after the deadline", err)
	}
}

// waitSlots waits until n handshakes hold a slot.
func waitSlots(t *testing.T, l *tlsListener, n int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if len(l.slots) == n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%d handshakes in flight, want %d", len(l.slots), n)
}

// TestSessionTableIsCapped floods initialize with 50k sessions and checks
// the cap at every step, with evictions counted.
func TestSessionTableIsCapped(t *testing.T) {
	m := newSessionManager()
	m.max = 1000
	ended := 0
	m.onEnd = func(string) { ended++ }
	var first string
	for i := 0; i < 50000; i++ {
		id := m.Generate()
		if i == 0 {
			first = id
		}
		if len(m.live) > m.max {
			t.Fatalf("step %d: %d sessions, cap %d", i, len(m.live), m.max)
		}
	}
	if m.evicted != 49000 || ended != 49000 {
		t.Errorf("evicted %d, ended %d, want 49000", m.evicted, ended)
	}
	if _, err := m.Validate(first); err == nil {
		t.Error("the oldest session survived eviction")
	}
	if len(m.order) > 2*m.max+64 {
		t.Errorf("order slice grew to %d", len(m.order))
	}
}
