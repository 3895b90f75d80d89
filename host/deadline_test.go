package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/sdk"
)

// blockBundle has a tool that blocks where no context reaches it (as an
// open(2) of a FIFO would) until unblock is closed, and one that answers.
type blockBundle struct{ unblock chan struct{} }

type blockIn struct {
	Name string `json:"name,omitempty" desc:"unused"`
}

type blockOut struct {
	OK bool `json:"ok" desc:"answered"`
}

func (blockBundle) Info() sdk.Info {
	return sdk.Info{ID: "b", Summary: "blocking tools", ByteBudget: sdk.Budget{Default: 100000, WithOutputSchemas: 100000}}
}

func (b blockBundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	ann := sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld}
	return []sdk.Tool{
		sdk.NewTool(sdk.Descriptor{Name: "b_block", Description: "blocks", Annotations: ann},
			func(ctx context.Context, c *sdk.Call, in blockIn) (blockOut, error) {
				<-b.unblock // deliberately deaf to ctx
				return blockOut{OK: true}, nil
			}),
		sdk.NewTool(sdk.Descriptor{Name: "b_ok", Description: "answers", Annotations: ann},
			func(ctx context.Context, c *sdk.Call, in blockIn) (blockOut, error) {
				return blockOut{OK: true}, nil
			}),
	}, nil
}

// TestToolCallDeadline: a tool blocked beyond --mcp-call-timeout is answered
// at the deadline (-32603 naming the flag) with an audit record whose
// outcome is timed_out; it keeps its concurrency slot until it really
// returns (a second call meanwhile is refused at capacity), and the slot is
// free again once it does.
func TestToolCallDeadline(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	b := blockBundle{unblock: make(chan struct{})}
	s := startStdio(t, []string{"-N", "--mcp", "--mcp-max-wait-seconds", "1", "--mcp-call-timeout", "2",
		"--mcp-max-concurrent", "1", "--mcp-audit-file", auditPath}, []sdk.Bundle{b}, nil)
	defer s.close()

	start := time.Now()
	code, msg := errCode(s.tool("b_block", map[string]any{}))
	elapsed := time.Since(start)
	if code != sdk.CodeInternal || !strings.Contains(msg, "did not answer within 2s (--mcp-call-timeout)") {
		t.Errorf("blocked call: got %d %q, want -32603 naming the deadline", code, msg)
	}
	if elapsed < 2*time.Second || elapsed > 6*time.Second {
		t.Errorf("answered after %v, want at the 2s deadline", elapsed)
	}
	if code, msg := errCode(s.tool("b_ok", map[string]any{})); code != sdk.CodeUnavailable || !strings.Contains(msg, "at capacity") {
		t.Errorf("call while the abandoned one still runs: got %d %q, want the capacity refusal", code, msg)
	}
	close(b.unblock)
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := s.tool("b_ok", map[string]any{})
		if code, _ := errCode(m); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot not freed after the blocked tool returned: %v", m)
		}
		time.Sleep(50 * time.Millisecond)
	}

	raw, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r auditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		outcomes = append(outcomes, r.Tool+":"+r.Outcome)
		if r.Outcome == outcomeTimedOut && (r.Error == nil || !strings.Contains(*r.Error, "did not answer within 2s") || r.ElapsedMS < 2000) {
			t.Errorf("timed_out record: %+v", r)
		}
	}
	if len(outcomes) < 3 || outcomes[0] != "b_block:timed_out" || outcomes[1] != "b_ok:refused" || outcomes[len(outcomes)-1] != "b_ok:ok" {
		t.Errorf("audit outcomes %v, want b_block:timed_out, b_ok:refused, …, b_ok:ok", outcomes)
	}
}

func TestCallTimeoutMustExceedMaxWait(t *testing.T) {
	var stderr syncBuffer
	code := Run(context.Background(), []string{"-N", "--mcp", "--mcp-max-wait-seconds", "60", "--mcp-call-timeout", "60"}, nil,
		IO{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &stderr})
	if code != exitUsage || !strings.Contains(stderr.String(), "--mcp-call-timeout 60 must exceed --mcp-max-wait-seconds 60") {
		t.Errorf("exit %d, stderr %q; want 2 naming both flags", code, stderr.String())
	}
}

// TestExitAfterSignal: a run still stopping grace after its signal is
// ended (exit 1, saying so); one that stops in time, or whose context the
// caller ended (no signal), is left alone; the signals get their default
// action back at the first one.
func TestExitAfterSignal(t *testing.T) {
	for _, tc := range []struct {
		name       string
		byCaller   bool
		stopsInMs  int
		wantExit   bool
		wantStderr string
	}{
		{"stuck after a signal", false, -1, true, "still stopping 50ms after SIGINT/SIGTERM; exiting now"},
		{"stops in time", false, 10, false, ""},
		{"ended by the caller", true, -1, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancelParent := context.WithCancel(context.Background())
			defer cancelParent()
			sig, cancelSig := context.WithCancel(parent)
			runDone := make(chan struct{})
			exited := make(chan int, 1)
			stopped := make(chan struct{}, 1)
			var stderr syncBuffer
			finished := make(chan struct{})
			go func() {
				exitAfterSignal(parent, sig, func() { stopped <- struct{}{} }, runDone, &stderr, 50*time.Millisecond, func(c int) { exited <- c })
				close(finished)
			}()
			if tc.byCaller {
				cancelParent()
			}
			cancelSig()
			if tc.stopsInMs >= 0 {
				time.Sleep(time.Duration(tc.stopsInMs) * time.Millisecond)
				close(runDone)
			}
			select {
			case <-finished:
			case <-time.After(5 * time.Second):
				t.Fatal("exitAfterSignal did not return")
			}
			select {
			case c := <-exited:
				if !tc.wantExit || c != exitFailure || !strings.Contains(stderr.String(), tc.wantStderr) {
					t.Errorf("exit %d, stderr %q; want exit: %v %q", c, stderr.String(), tc.wantExit, tc.wantStderr)
				}
			default:
				if tc.wantExit {
					t.Errorf("no exit; want exit 1")
				}
			}
			if len(stopped) == 0 && !tc.byCaller {
				t.Error("signals not given back their default action")
			}
		})
	}
}

// TestSweepBoundsAreRangeChecked: each --mcp-sweep-* flag outside 1 to its
// maximum (mcp-surface §5) stops startup with a usage error naming it; the
// maxima themselves start.
func TestSweepBoundsAreRangeChecked(t *testing.T) {
	for _, tc := range []struct {
		flag, value, key string
	}{
		{"--mcp-sweep-max-files", "4294967296", "mcp.sweep_max_files"},
		{"--mcp-sweep-deadline-ms", "43200001", "mcp.sweep_deadline_ms"},
		{"--mcp-sweep-max-running", "65", "mcp.sweep_max_running"},
		{"--mcp-sweep-max-running", "0", "mcp.sweep_max_running"},
		{"--mcp-sweep-max-held-results", "257", "mcp.sweep_max_held_results"},
		{"--mcp-sweep-result-retention-secs", "43201", "mcp.sweep_result_retention_secs"},
	} {
		t.Run(tc.flag+"="+tc.value, func(t *testing.T) {
			var stderr syncBuffer
			code := Run(context.Background(), []string{"-N", "--mcp", tc.flag, tc.value}, nil,
				IO{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &stderr})
			if code != exitUsage || !strings.Contains(stderr.String(), tc.key+" must be between 1 and") {
				t.Errorf("exit %d, stderr %q", code, stderr.String())
			}
		})
	}
	var stderr syncBuffer
	code := Run(context.Background(), []string{"-N", "--mcp", "--mcp-sweep-max-files", "4294967295", "--mcp-sweep-deadline-ms", "43200000",
		"--mcp-sweep-max-running", "64", "--mcp-sweep-max-held-results", "256", "--mcp-sweep-result-retention-secs", "43200"}, nil,
		IO{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &stderr})
	if code == exitUsage {
		t.Errorf("the maxima refused: %q", stderr.String())
	}
}
