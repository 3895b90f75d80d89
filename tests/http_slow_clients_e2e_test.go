package tests

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSlowUnauthenticatedConnectionsDoNotStarveAClient: 500 connections
// that never authenticate hold the server (250 dribble their headers, 250
// send a request without credentials and promise a body they never send)
// while an authenticated client completes 100 tool calls. Every promised
// body gets its 401 at once, before the body (the server does not wait for
// it).
func TestSlowUnauthenticatedConnectionsDoNotStarveAClient(t *testing.T) {
	token := "slow-clients-token-0123456789"
	srv := startHTTP(t, []string{"SIPNAB_MCP_TOKEN=" + token}, "-I", sampleCapture())
	u, _ := url.Parse(srv.URL)

	const slow = 500
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < slow; i++ {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatalf("slow connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", u.Host) // the rest never comes
		} else {
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n", u.Host)
		}
	}
	// The promised bodies: each gets its 401 without sending one.
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := 0
	for i := 1; i < slow; i += 2 {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				mu.Lock()
				answered++
				mu.Unlock()
			}
		}(conns[i])
	}

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := gosdk.NewClient(&gosdk.Implementation{Name: "e2e-slow", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: httpClient(token), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("the authenticated client could not connect beside %d slow connections: %v", slow, err)
	}
	defer cs.Close()
	for i := 0; i < 100; i++ {
		res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "capture_status", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("call %d beside %d slow connections: %v %+v", i, slow, err, res)
		}
	}
	wg.Wait()
	if answered != slow/2 {
		t.Errorf("%d of %d requests whose body never came got their 401", answered, slow/2)
	}
}
