package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stdioPeer drives the binary over stdio one line at a time.
type stdioPeer struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan []byte
	stderr *lockedBuffer
}

func startStdioPeer(t *testing.T) *stdioPeer {
	t.Helper()
	cmd := exec.Command(bin, stdioArgs()...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	p := &stdioPeer{t: t, cmd: cmd, in: in, lines: make(chan []byte, 64), stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				p.lines <- bytes.TrimSpace(line)
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill() })
	return p
}

func (p *stdioPeer) send(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, s); err != nil {
		p.t.Fatal(err)
	}
}

// answer is the next message on stdout.
type answer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *stdioPeer) next() answer {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("stdout closed; stderr:\n%s", p.stderr.String())
		}
		var a answer
		if err := json.Unmarshal(l, &a); err != nil {
			p.t.Fatalf("not JSON-RPC: %q", l)
		}
		return a
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no answer; stderr:\n%s", p.stderr.String())
	}
	return answer{}
}

// wait closes stdin, waits for the exit and returns the peak RSS in KiB.
func (p *stdioPeer) wait() int64 {
	p.t.Helper()
	_ = p.in.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			p.t.Fatalf("exit: %v; stderr:\n%s", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		p.t.Fatal("sipnab did not exit after stdin closed")
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// stdioBoundsSession runs one stdio session: initialize, then a 50 MB request line
// when big is set (streamed in 64 KiB writes, never held whole), then a
// ping, an object id, a batch, and a last tools/call without a newline
// before stdin closes. It checks every answer and returns the peak RSS.
func stdioBoundsSession(t *testing.T, big bool) int64 {
	p := startStdioPeer(t)
	for _, l := range initLines("2025-11-25") {
		p.send(l + "\n")
	}
	if a := p.next(); string(a.ID) != "1" || a.Error != nil {
		t.Fatalf("initialize: %+v", a)
	}
	if big {
		p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"capture_status","arguments":{"pad":"`)
		chunk := strings.Repeat("a", 64<<10)
		for i := 0; i < 800; i++ { // 50 MiB
			p.send(chunk)
		}
		p.send("\"}}}\n")
		a := p.next()
		if string(a.ID) != "null" || a.Error == nil || a.Error.Code != -32600 ||
			!strings.Contains(a.Error.Message, "message of 52428904 bytes exceeds the 4194304-byte limit") {
			t.Errorf("50 MB line: got %+v, want -32600 id null naming the limit", a)
		}
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
	if a := p.next(); string(a.ID) != "3" || a.Error != nil || string(a.Result) != "{}" {
		t.Errorf("ping after the long line: %+v", a)
	}
	p.send(`{"jsonrpc":"2.0","id":{"x":4},"method":"ping"}` + "\n")
	if a := p.next(); string(a.ID) != "null" || a.Error == nil || a.Error.Code != -32600 || !strings.Contains(a.Error.Message, "the request id is an object") {
		t.Errorf("object id: %+v", a)
	}
	p.send(`[{"jsonrpc":"2.0","id":5,"method":"ping"}]` + "\n")
	if a := p.next(); string(a.ID) != "null" || a.Error == nil || a.Error.Code != -32600 || !strings.Contains(a.Error.Message, "batches are not supported") {
		t.Errorf("batch: %+v", a)
	}
	// The last request carries no newline: EOF ends it, and it is answered
	// before the server exits.
	p.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"capture_status","arguments":{}}}`)
	_ = p.in.Close()
	a := p.next()
	if string(a.ID) != "6" || a.Error != nil || !strings.Contains(string(a.Result), `sip-rtp-g711.pcap`) {
		t.Errorf("last line without a newline: %+v", a)
	}
	return p.wait()
}

// TestStdioRefusesA50MBLineAndKeepsServing: a request line over the 4 MiB
// limit is answered -32600 (id null) without buffering it, the session
// goes on, and the last line before EOF is answered without its newline.
func TestStdioRefusesA50MBLineAndKeepsServing(t *testing.T) {
	base := stdioBoundsSession(t, false)
	peak := stdioBoundsSession(t, true)
	t.Logf("peak RSS: %d KiB without the 50 MB line, %d KiB with it", base, peak)
	if base > 0 && peak-base > 32<<10 {
		t.Errorf("peak RSS grew by %d KiB with the 50 MB line, want under 32 MiB (the line is discarded, not buffered)", peak-base)
	}
}
