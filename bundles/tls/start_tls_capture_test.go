package tls

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/tlspeer"
	"github.com/sipnab/sipnab/sdk"
)

// waitDialog waits (≤ 5 s) until the capture holds n messages of callID.
func waitDialog(t *testing.T, capture *engine.Capture, callID string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if d, ok := capture.Dialogs().Get(callID); ok && len(d.Messages) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the capture did not get %d messages of %s", n, callID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartTLSCaptureReadsARealOpenSSLServersSIPIntoTheEngineAndStopDetachesEverything(t *testing.T) {
	needRoot(t)
	srv := tlspeer.Start(t)
	capture := engine.New(engine.Config{}, nil)
	ts := tools(t, capture, allowed)
	var lib *string
	var libs Libraries
	call(t, ts["list_tls_libraries"], `{}`, &libs)
	for _, l := range libs.Libraries {
		for _, p := range l.PIDs {
			if p == srv.PID && l.Probeable {
				lib = l.ProbePath
			}
		}
	}
	if lib == nil {
		t.Fatalf("no probeable library maps pid %d", srv.PID)
	}
	before := bpfObjects(t)
	var st Capture
	r, err := ts["start_tls_capture"].Invoke(context.Background(), []byte(fmt.Sprintf(`{"flavors":["openssl"],"libraries":[%q]}`, *lib)), sdk.DefaultLimits())
	if err != nil {
		t.Skipf("the kernel refused the uprobes: %v", err)
	}
	t.Cleanup(func() { call(t, ts["stop_tls_capture"], `{}`, nil) })
	if !strings.Contains(r.Blocks[0], `"running":true`) {
		t.Fatalf("start answered %s", r.Blocks[0])
	}
	call(t, ts["stop_tls_capture"], `{}`, nil) // stop and start again: a capture after a stop is allowed
	call(t, ts["start_tls_capture"], fmt.Sprintf(`{"flavors":["openssl"],"libraries":[%q]}`, *lib), &st)
	if !st.Running || len(st.Targets) != 1 || st.Targets[0].ProbePath != *lib || st.Targets[0].Symbols != "SSL_write, SSL_read, SSL_write_ex, SSL_read_ex" {
		t.Fatalf("start answered %+v", st)
	}
	// each library: 2 functions × (entry + return) perf events and links
	if got := bpfObjects(t) - before; got < 8 {
		t.Fatalf("%d BPF/perf descriptors opened, want at least the 4 probes and their links", got)
	}
	// one writer: a second start is refused while this one runs
	if e := callErr(t, ts["start_tls_capture"], `{}`); e.StableKind() != sdk.KindUnavailable || !strings.Contains(e.Message, "already runs") {
		t.Fatalf("second writer: %v %s", e.StableKind(), e.Message)
	}
	srv.Exchange(t, invite, ok200)
	waitDialog(t, capture, "tls-bundle-1@example.test", 2)
	call(t, ts["stop_tls_capture"], `{}`, &st)
	// at least these 2: a uprobe on libssl fires in every process mapping
	// it, and another test (go test runs packages at once) may send SIP
	// over TLS meanwhile; the dialog below holds exactly ours
	if st.Running || st.Messages < 2 || st.Lost != 0 || st.Error != nil || st.Framing.Bytes < uint64(len(invite)+len(ok200)) {
		t.Fatalf("stop answered %+v", st)
	}
	if got := bpfObjects(t); got != before {
		t.Fatalf("%d BPF/perf descriptors after the stop, %d before the start: a probe was left attached", got, before)
	}
	d, _ := capture.Dialogs().Get("tls-bundle-1@example.test")
	if len(d.Messages) != 2 {
		t.Fatalf("%d messages", len(d.Messages))
	}
	in, out := d.Messages[0].View(), d.Messages[1].View()
	want := fmt.Sprintf("127.%d.%d.%d", byte(srv.PID>>16), byte(srv.PID>>8), byte(srv.PID))
	if in.Method != "INVITE" || in.CSeq == nil || in.CSeq.Number != 7 || in.InputOrigin != "uprobe" || in.Transport != "TLS" ||
		in.Dst != want || in.DstPort != 5061 {
		t.Fatalf("INVITE %+v", in)
	}
	if out.StatusCode != 200 || out.CSeq.Method != "INVITE" || out.InputOrigin != "uprobe" || out.Src != want || out.Dst != in.Src || out.DstPort != in.SrcPort {
		t.Fatalf("200 %+v", out)
	}
}

func TestStartTLSCaptureRefusesBeforeAttachingAnything(t *testing.T) {
	tests := []struct {
		name  string
		opts  map[string]bool
		setup func(*engine.Capture)
		args  string
		kind  sdk.Kind
		says  string
	}{
		{"flag off, naming it", nil, nil, `{}`, sdk.KindNotEnabled, "--mcp-allow-tls-capture"},
		{"an unknown flavor", allowed, nil, `{"flavors":["gnutls"]}`, sdk.KindInvalidArgument, "gnutls"},
		{"a misspelt flavors key never widens the probe", allowed, nil, `{"flavor":["openssl"]}`, sdk.KindInvalidArgument, `unknown argument "flavor"`},
		{"a live source running", allowed, func(c *engine.Capture) {
			done := make(chan struct{})
			c.AttachLive("eth9", func() error { close(done); return nil }, done, nil)
		}, `{}`, sdk.KindUnavailable, "live source (eth9)"},
		{"a library no process maps", allowed, nil, `{"libraries":["/nonexistent/libssl.so.3"]}`, sdk.KindUnknownID, "/nonexistent/libssl.so.3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			needRoot(t) // past the flag, the root check comes first
			capture := engine.New(engine.Config{}, nil)
			if tc.setup != nil {
				tc.setup(capture)
			}
			before := bpfObjects(t)
			e := callErr(t, tools(t, capture, tc.opts)["start_tls_capture"], tc.args)
			if e.StableKind() != tc.kind || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("refusal %s %q, want %s naming %q", e.StableKind(), e.Message, tc.kind, tc.says)
			}
			if bpfObjects(t) != before {
				t.Fatal("a refusal left kernel state behind")
			}
		})
	}
}

func TestStartTLSCaptureRefusesWhileALoadIsInFlight(t *testing.T) {
	needRoot(t)
	capture := engine.New(engine.Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); capture.Wait() }()
	if err := capture.LoadFiles(ctx, []string{testcap.Public("sipp-branch-scenario.pcapng")}); err != nil {
		t.Fatal(err)
	}
	ts := tools(t, capture, allowed)
	_, err := ts["start_tls_capture"].Invoke(context.Background(), []byte(`{}`), sdk.DefaultLimits())
	// read after the answer: a load still in flight then was in flight
	// during the call (a load never restarts)
	if !capture.Status().Loading {
		call(t, ts["stop_tls_capture"], `{}`, nil)
		t.Skip("the load ended before the call was answered: nothing to check")
	}
	if e := sdk.AsError(err); e == nil || e.StableKind() != sdk.KindUnavailable || !strings.Contains(e.Message, "load is in flight") {
		t.Fatalf("got %v, want the load-in-flight refusal", err)
	}
}

func TestStopTLSCaptureWithNoCaptureAnswersNothingStarted(t *testing.T) {
	var st Capture
	call(t, tools(t, engine.New(engine.Config{}, nil), nil)["stop_tls_capture"], `{}`, &st)
	if st.Running || st.Messages != 0 || st.Summary != "no TLS capture was started" || st.Targets == nil {
		t.Fatalf("%+v", st)
	}
}
