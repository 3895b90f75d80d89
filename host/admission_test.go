package host

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/sdk"
)

// TestAdmissionRefusalsAnswerTheRequestID: a capacity refusal is written by
// the admission layer itself, -32000 for the very id of the refused
// request, while the admitted calls run.
func TestAdmissionRefusalsAnswerTheRequestID(t *testing.T) {
	b := &testBundle{id: "t", release: make(chan struct{}), started: make(chan struct{}, 8)}
	s := startStdio(t, []string{"-N", "--mcp", "--mcp-max-concurrent", "1", "--mcp-rate-limit-per-peer", "0"}, []sdk.Bundle{b}, nil)
	slow := s.callAsync("tools/call", map[string]any{"name": "t_slow", "arguments": map[string]any{}})
	<-b.started
	s.mu.Lock()
	s.nextID = 41
	s.mu.Unlock()
	m := s.tool("t_echo", map[string]any{"text": "x"})
	if code, msg := errCode(m); code != sdk.CodeUnavailable || m["id"] != float64(42) || !strings.Contains(msg, "at capacity: 1 calls in flight") {
		t.Errorf("got id %v, %d %q; want id 42, -32000 at capacity", m["id"], code, msg)
	}
	close(b.release)
	if m := <-slow; m["error"] != nil || m["result"] == nil {
		t.Errorf("admitted call: %v", m)
	}
	s.close()
}

// TestTicketsMcpGoNeverHandledFreeTheirSlot: a call admitted in front of
// mcp-go that mcp-go refuses before any handler runs (a wrong jsonrpc
// version) frees its concurrency slot once answered: with a cap of one,
// three such calls leave the next good call admitted.
func TestTicketsMcpGoNeverHandledFreeTheirSlot(t *testing.T) {
	s := startStdio(t, []string{"-N", "--mcp", "--mcp-max-concurrent", "1", "--mcp-rate-limit-per-peer", "0"}, []sdk.Bundle{&testBundle{id: "t"}}, nil)
	for i := 0; i < 3; i++ {
		s.mu.Lock()
		s.nextID++
		id := s.nextID
		ch := make(chan map[string]any, 1)
		s.resp[fmt.Sprint(id)] = ch
		s.mu.Unlock()
		s.send(map[string]any{"jsonrpc": "1.0", "id": id, "method": "tools/call", "params": map[string]any{"name": "t_echo", "arguments": map[string]any{"text": "x"}}})
		select {
		case m := <-ch:
			if code, _ := errCode(m); code != -32600 {
				t.Fatalf("jsonrpc 1.0: got %v, want -32600", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
	}
	m := s.tool("t_echo", map[string]any{"text": "x"})
	if m["error"] != nil || m["result"] == nil {
		t.Errorf("call after three unhandled tickets: %v, want admitted", m)
	}
	s.close()
}

// TestHostRewritesNoOutgoingBytes: no code in host/ matches patterns over
// the JSON it sends (the admission layer answers with typed values; what
// mcp-go writes passes unchanged).
func TestHostRewritesNoOutgoingBytes(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	bad := regexp.MustCompile(`regexp\.|codeMark|rewriteCodes|bytes\.Replace|bytes\.Contains\(`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if bad.MatchString(l) {
				t.Errorf("%s:%d: %s", f, i+1, strings.TrimSpace(l))
			}
		}
	}
}
