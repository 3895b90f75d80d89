package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHTTPTransportRules(t *testing.T) {
	s := startHTTP(t, nil)

	t.Run("health", func(t *testing.T) {
		resp, err := http.Get(s.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok" {
			t.Errorf("got %d %q, want 200 ok", resp.StatusCode, b)
		}
	})
	for _, tc := range []struct {
		name     string
		body     string
		hdr      map[string]string
		want     int
		wantBody string
	}{
		{"accept json only is 406", initBody, map[string]string{"Accept": "application/json"}, 406, "Not Acceptable"},
		{"accept sse only is 406", initBody, map[string]string{"Accept": "text/event-stream"}, 406, "Not Acceptable"},
		{"accept event-stream with q=0 is 406", initBody, map[string]string{"Accept": "application/json, text/event-stream;q=0"}, 406, "Not Acceptable"},
		{"no Accept is 406", initBody, map[string]string{"Accept": ""}, 406, "Not Acceptable"},
		{"no session after initialize is 400", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Mcp-Session-Id header required`},
		{"notification without session is 400", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 400, "Mcp-Session-Id header required"},
		{"foreign Host is 403", initBody, map[string]string{"Host": "evil.example"}, 403, "Forbidden"},
		{"foreign Origin is 403", initBody, map[string]string{"Origin": "https://evil.example"}, 403, "Forbidden: Origin not allowed"},
		{"Origin null is 403", initBody, map[string]string{"Origin": "null"}, 403, "Forbidden: Origin not allowed"},
		{"loopback Origin is served", initBody, map[string]string{"Origin": "http://localhost:6274"}, 200, `"protocolVersion":"2025-11-25"`},
		{"batch is refused as a batch", `[` + initBody + `]`, nil, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: MCP 2025-06-18 removed them`},
		{"object id is -32600 with id null", `{"jsonrpc":"2.0","id":{"a":1},"method":"initialize","params":{}}`, nil, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"the request id is an object`},
		{"boolean id is -32600 with id null", `{"jsonrpc":"2.0","id":true,"method":"initialize","params":{}}`, nil, 400, `"id":null,"error":{"code":-32600,"message":"the request id is a boolean`},
		{"unknown session is 404", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "deadbeef"}, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawPost(t, s.URL, tc.body, tc.hdr)
			if resp.StatusCode != tc.want || !strings.Contains(body, tc.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", resp.StatusCode, body, tc.want, tc.wantBody)
			}
		})
	}
	t.Run("GET without a session is 400", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("got %d, want 400", resp.StatusCode)
		}
	})
	t.Run("health answers any Host", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/health", nil)
		req.Host = "lb-probe.internal"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("got %d, want 200", resp.StatusCode)
		}
	})
	t.Run("initialize mints a session; DELETE ends it for real", func(t *testing.T) {
		resp, body := rawPost(t, s.URL, initBody, nil)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("initialize: got %d, session %q, body %s", resp.StatusCode, sid, body)
		}
		// One answer still comes as an event stream, keepalive first.
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || !strings.HasPrefix(body, "data: \n\nevent: message\ndata: {") {
			t.Errorf("reply framing: %s %q", ct, body)
		}
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		if resp, body := rawPost(t, s.URL, list, hdr); resp.StatusCode != 200 || !strings.Contains(body, `"tools"`) {
			t.Fatalf("tools/list in session: got %d %s", resp.StatusCode, body)
		}
		req, _ := http.NewRequest(http.MethodDelete, s.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", sid)
		dresp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		dresp.Body.Close()
		if dresp.StatusCode != 200 {
			t.Fatalf("DELETE: got %d", dresp.StatusCode)
		}
		if resp, _ := rawPost(t, s.URL, list, hdr); resp.StatusCode != 404 {
			t.Errorf("after DELETE: got %d, want 404", resp.StatusCode)
		}
	})
	// In a session of each protocol version with a Mcp-Protocol-Version
	// header, a batch gets the JSON-RPC refusal (never "not valid json"),
	// and the session goes on serving.
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run("batch in a "+version+" session is refused and the session goes on", func(t *testing.T) {
			resp, _ := rawPost(t, s.URL, strings.Replace(initBody, "2025-11-25", version, 1), nil)
			sid := resp.Header.Get("Mcp-Session-Id")
			hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": version}
			batch := `[{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`
			resp, body := rawPost(t, s.URL, batch, hdr)
			var m struct {
				ID    json.RawMessage
				Error struct {
					Code    int
					Message string
				}
			}
			if err := json.Unmarshal([]byte(body), &m); err != nil || resp.StatusCode != 400 || string(m.ID) != "null" ||
				m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "batches are not supported") ||
				resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("batch: got %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if resp, body := rawPost(t, s.URL, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, hdr); resp.StatusCode != 200 || !strings.Contains(body, `"id":4,"result":{}`) {
				t.Errorf("ping after the batch: got %d %q", resp.StatusCode, body)
			}
		})
	}
}

// TestHTTPBatchIn20250326Session: protocol version 2025-03-26 is the one
// whose servers must receive batches; each element is answered as its own
// event, an initialize or a bad id in its place is -32600, and a batch of
// notifications only is 202.
func TestHTTPBatchIn20250326Session(t *testing.T) {
	s := startHTTP(t, nil, "-I", sampleCapture())
	resp, body := rawPost(t, s.URL, strings.Replace(initBody, "2025-11-25", "2025-03-26", 1), nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || !strings.Contains(body, `"protocolVersion":"2025-03-26"`) {
		t.Fatalf("initialize 2025-03-26: %d %s", resp.StatusCode, body)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid}
	batch := `[{"jsonrpc":"2.0","id":2,"method":"ping"},` +
		`{"jsonrpc":"2.0","method":"notifications/initialized"},` +
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"capture_status","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":{"x":4},"method":"ping"},` +
		strings.Replace(initBody, `"id":1`, `"id":5`, 1) + `]`
	resp, body = rawPost(t, s.URL, batch, hdr)
	var got []string
	for _, l := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok && strings.TrimSpace(d) != "" {
			var m struct {
				ID     json.RawMessage
				Result json.RawMessage
				Error  *struct{ Code int }
			}
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("event %q: %v", d, err)
			}
			switch {
			case m.Error != nil:
				got = append(got, string(m.ID)+" error "+strconv.Itoa(m.Error.Code))
			case strings.Contains(string(m.Result), "sip-rtp-g711.pcap"):
				got = append(got, string(m.ID)+" capture_status")
			default:
				got = append(got, string(m.ID)+" "+string(m.Result))
			}
		}
	}
	want := []string{`2 {}`, `"three" capture_status`, `null error -32600`, `null error -32600`}
	if resp.StatusCode != 200 || strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("batch: got %d %q, want %q; body %q", resp.StatusCode, got, want, body)
	}
	if resp, body := rawPost(t, s.URL, `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, hdr); resp.StatusCode != 202 || body != "" {
		t.Errorf("batch of a notification: got %d %q, want 202 and no body", resp.StatusCode, body)
	}
	if resp, body := rawPost(t, s.URL, `[]`, hdr); resp.StatusCode != 400 || !strings.Contains(body, "empty batch") {
		t.Errorf("empty batch: got %d %q", resp.StatusCode, body)
	}
}

// TestHTTPAllowedOrigins: --mcp-allowed-origin admits a listed browser
// origin; the allowed Host names admit their own origins; anything else
// is 403 before authentication.
func TestHTTPAllowedOrigins(t *testing.T) {
	s := startHTTP(t, nil, "--mcp-allowed-origin", "https://app.example", "--mcp-allowed-host", "127.0.0.1")
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"https://app.example", 200},
		{"http://127.0.0.1:6274", 200},
		{"http://localhost:6274", 403}, // not in --mcp-allowed-host any more
		{"https://app.example.evil", 403},
		{"", 200}, // no Origin: not a browser's cross-origin request
	} {
		resp, body := rawPost(t, s.URL, initBody, map[string]string{"Origin": tc.origin})
		if resp.StatusCode != tc.want {
			t.Errorf("Origin %q: got %d %q, want %d", tc.origin, resp.StatusCode, body, tc.want)
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mint(t *testing.T, key, id, scope string, extra ...string) string {
	t.Helper()
	args := append([]string{"--mint-token", "--token-id", id, "--token-scope", scope}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SIPNAB_MCP_SIGNING_KEY="+key)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("minting: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// tamperSignature changes one fully significant character in the middle of
// the token's signature, so the result never decodes to the same bytes.
func tamperSignature(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 5
	b := []byte(tok)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestBadTokensGetByteIdenticalChallenges: expired, revoked, forged,
// wrong-scope and malformed tokens all get the same 401 challenge; a request
// presenting nothing gets no error code.
func TestBadTokensGetByteIdenticalChallenges(t *testing.T) {
	dir := sharedDir(t)
	key := strings.Repeat("k", 40)
	otherKey := strings.Repeat("z", 40)
	revoked := writeFile(t, dir, "revoked", "revoked-agent\n")
	s := startHTTP(t, []string{"SIPNAB_MCP_SIGNING_KEY=" + key},
		"--mcp-revoked-file", revoked, "--mcp-resource-url", "https://mcp.example.net/mcp")

	good := mint(t, key, "agent-1", "full")
	bad := map[string]string{
		"expired":     mint(t, key, "agent-1", "full", "--mcp-token-ttl", "-10"),
		"revoked":     mint(t, key, "revoked-agent", "full"),
		"forged":      mint(t, otherKey, "agent-1", "full"),
		"wrong scope": mint(t, key, "agent-1", "metrics"),
		"garbage":     "not-a-token",
		"tampered":    tamperSignature(good),
	}
	const metadata = "https://mcp.example.net/.well-known/oauth-protected-resource/mcp"
	want := `Bearer realm="sipnab", error="invalid_token", error_description="the access token is invalid", resource_metadata="` + metadata + `"`
	var bodies []string
	for name, tok := range bad {
		t.Run(name, func(t *testing.T) {
			resp, body := rawPost(t, s.URL, initBody, map[string]string{"Authorization": "Bearer " + tok})
			if resp.StatusCode != 401 {
				t.Fatalf("got %d, want 401", resp.StatusCode)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != want {
				t.Errorf("challenge:\n got %s\nwant %s", got, want)
			}
			bodies = append(bodies, body)
		})
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Errorf("bodies differ: %q vs %q", b, bodies[0])
		}
	}
	t.Run("nothing presented: no error code", func(t *testing.T) {
		resp, _ := rawPost(t, s.URL, initBody, nil)
		if got, w := resp.Header.Get("WWW-Authenticate"), `Bearer realm="sipnab", resource_metadata="`+metadata+`"`; resp.StatusCode != 401 || got != w {
			t.Errorf("got %d %q, want 401 %q", resp.StatusCode, got, w)
		}
	})
	t.Run("good token passes", func(t *testing.T) {
		resp, body := rawPost(t, s.URL, initBody, map[string]string{"Authorization": "Bearer " + good})
		if resp.StatusCode != 200 {
			t.Errorf("got %d %s", resp.StatusCode, body)
		}
	})
	t.Run("RFC 9728 document", func(t *testing.T) {
		resp, err := http.Get(s.URL + "/.well-known/oauth-protected-resource/mcp")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if doc["resource"] != "https://mcp.example.net/mcp" || doc["resource_name"] != "sipnab MCP server" {
			t.Errorf("document %v", doc)
		}
		if _, ok := doc["authorization_servers"]; ok {
			t.Error("document names authorization_servers")
		}
	})
}

func TestNoMetadataWithoutResourceURL(t *testing.T) {
	s := startHTTP(t, nil)
	resp, err := http.Get(s.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("got %d, want 404", resp.StatusCode)
	}
}

func TestStartupRefusalsOfTheBinary(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"non-loopback bind without credential", []string{"-N", "--mcp", "--mcp-transport", "http", "--mcp-bind", "0.0.0.0:0"}, "no credential"},
		{"malformed resource url", []string{"-N", "--mcp", "--mcp-transport", "http", "--mcp-resource-url", "::nope"}, "--mcp-resource-url"},
		{"--json-run with stdio MCP", []string{"-N", "--mcp", "--json-run"}, "--json-run writes to stdout"},
		{"--mcp without -N", []string{"--mcp"}, "needs -N"},
		{"unknown bundle", []string{"-N", "--mcp", "--mcp-tools", "nosuch"}, `unknown bundle "nosuch" (not compiled in? see bundles/all)`},
		{"unusable audit path", []string{"-N", "--mcp", "--mcp-audit-file", "/nonexistent/dir/a.jsonl"}, "--mcp-audit-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Stdin = strings.NewReader("")
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("did not exit")
			}
			if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", cmd.ProcessState.ExitCode(), stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q", stdout.String())
			}
		})
	}
}

// TestHTTPServerDropsRootBeforeServing: started as root, the HTTP server
// runs as nobody once it listens (it binds after the drop).
func TestHTTPServerDropsRootBeforeServing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	s := startHTTP(t, nil)
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.cmd.Process.Pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no nobody user")
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[0] == "Uid:" {
			for _, id := range f[1:5] {
				if id != nobody.Uid {
					t.Errorf("uid line %q: want every uid %s", line, nobody.Uid)
				}
			}
			return
		}
	}
	t.Fatal("no Uid line")
}
