package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/internal/testcap"
)

// batchDoc is the part of the batch JSON document these tests read.
type batchDoc struct {
	Run struct {
		Source             string `json:"source"`
		FramesRead         uint64 `json:"frames_read"`
		SIPMessages        uint64 `json:"sip_messages"`
		Complete           bool   `json:"complete"`
		SourceExhausted    bool   `json:"source_exhausted"`
		SourceStoppedEarly bool   `json:"source_stopped_early"`
		StoppedOnRequest   bool   `json:"stopped_on_request"`
		HEP                struct {
			Datagrams uint64 `json:"datagrams"`
			Envelopes uint64 `json:"envelopes"`
			SIP       uint64 `json:"sip"`
		} `json:"hep"`
	} `json:"run"`
	Dialogs []struct {
		CallID          string `json:"call_id"`
		State           string `json:"state"`
		MsgCount        int    `json:"msg_count"`
		FinalStatusCode int    `json:"final_status_code"`
		Timing          struct {
			PDDMs *int64 `json:"pdd_ms"`
		} `json:"timing"`
	} `json:"dialogs"`
}

// batchHEPCalls are two calls: hep-batch-a answered and hung up (INVITE,
// 180 one second later, 200, ACK, BYE, 200: six messages in HEP3 and HEP2
// datagrams), hep-batch-b refused busy (INVITE, 486, ACK: three messages in
// HEP3 over one TCP connection).
func batchHEPCalls() []heptest.Message {
	a := func(first, cseq, extra string) string {
		return first + "\r\nVia: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-a-" + strings.Fields(cseq)[1] + "\r\n" +
			"From: <sip:alice@example.com>;tag=fa\r\nTo: <sip:bob@example.net>" + extra + "\r\n" +
			"Call-ID: hep-batch-a@example.net\r\nCSeq: " + cseq + "\r\nContent-Length: 0\r\n\r\n"
	}
	b := func(first, cseq, extra string) string {
		return first + "\r\nVia: SIP/2.0/UDP 192.0.2.11:5060;branch=z9hG4bK-b-1\r\n" +
			"From: <sip:carol@example.com>;tag=fb\r\nTo: <sip:dave@example.net>" + extra + "\r\n" +
			"Call-ID: hep-batch-b@example.net\r\nCSeq: " + cseq + "\r\nContent-Length: 0\r\n\r\n"
	}
	ms := time.Millisecond
	return []heptest.Message{
		{Version: 3, TCP: false, Offset: 0 * ms, Text: a("INVITE sip:bob@example.net SIP/2.0", "1 INVITE", "")},
		{Version: 2, TCP: false, Offset: 1000 * ms, Text: a("SIP/2.0 180 Ringing", "1 INVITE", ";tag=tb")},
		{Version: 3, TCP: false, Offset: 3000 * ms, Text: a("SIP/2.0 200 OK", "1 INVITE", ";tag=tb")},
		{Version: 3, TCP: false, Offset: 3100 * ms, Text: a("ACK sip:bob@example.net SIP/2.0", "1 ACK", ";tag=tb")},
		{Version: 3, TCP: false, Offset: 10000 * ms, Text: a("BYE sip:bob@example.net SIP/2.0", "2 BYE", ";tag=tb")},
		{Version: 2, TCP: false, Offset: 10050 * ms, Text: a("SIP/2.0 200 OK", "2 BYE", ";tag=tb")},
		{Version: 3, TCP: true, Offset: 20000 * ms, Text: b("INVITE sip:dave@example.net SIP/2.0", "1 INVITE", "")},
		{Version: 3, TCP: true, Offset: 20500 * ms, Text: b("SIP/2.0 486 Busy Here", "1 INVITE", ";tag=tb2")},
		{Version: 3, TCP: true, Offset: 20600 * ms, Text: b("ACK sip:dave@example.net SIP/2.0", "1 ACK", ";tag=tb2")},
	}
}

// runBatchAsync runs sipnab in process and returns its exit code on a
// channel, with its stdout and stderr.
func runBatchAsync(ctx context.Context, args ...string) (<-chan int, *syncBuffer, *syncBuffer) {
	out, errb := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, args, nil, IO{Stdin: strings.NewReader(""), Stdout: out, Stderr: errb})
	}()
	return done, out, errb
}

func waitFor(t *testing.T, errb *syncBuffer, done <-chan int, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), what) {
		select {
		case code := <-done:
			t.Fatalf("exited %d before logging %q: %s", code, what, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("never logged %q: %s", what, errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exitOf(t *testing.T, done <-chan int, errb *syncBuffer) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("batch run did not stop: %s", errb.String())
	}
	return -1
}

func decodeBatch(t *testing.T, out *syncBuffer) batchDoc {
	t.Helper()
	var doc batchDoc
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%.500s", err, out.String())
	}
	return doc
}

const readingLine = "reading until interrupted"

// TestBatchHEPStopsAtCount receives the two calls over HEP (v3 and v2 on
// UDP, v3 on TCP) in a batch run that stops itself at --count 9: all nine
// messages, both dialogs as sent, exit 0, and a run that says it was not
// read to an end (a listener has none) and did not stop early.
func TestBatchHEPStopsAtCount(t *testing.T) {
	addr := heptest.FreeAddr(t)
	done, out, errb := runBatchAsync(context.Background(), "-N", "-L", addr, "--json-run", "--count", "9")
	waitFor(t, errb, done, readingLine)
	heptest.Send(t, addr, batchHEPCalls())
	if code := exitOf(t, done, errb); code != exitOK {
		t.Fatalf("exit %d, want 0: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), `reason="--count reached"`) {
		t.Errorf("stderr does not say --count stopped the run: %s", errb.String())
	}
	doc := decodeBatch(t, out)
	r := doc.Run
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"source", r.Source, "hep"},
		{"frames_read", r.FramesRead, uint64(9)},
		{"sip_messages", r.SIPMessages, uint64(9)},
		{"hep.envelopes", r.HEP.Envelopes, uint64(9)},
		{"hep.sip", r.HEP.SIP, uint64(9)},
		{"complete", r.Complete, false},
		{"source_exhausted", r.SourceExhausted, false},
		{"source_stopped_early", r.SourceStoppedEarly, false},
		{"dialogs", len(doc.Dialogs), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	checkBatchDialogs(t, doc)
}

// checkBatchDialogs checks the two dialogs of batchHEPCalls.
func checkBatchDialogs(t *testing.T, doc batchDoc) {
	t.Helper()
	want := map[string]struct {
		state string
		msgs  int
		final int
		pdd   int64 // ms; -1: none
	}{
		"hep-batch-a@example.net": {"Completed", 6, 200, 1000},
		"hep-batch-b@example.net": {"Failed", 3, 486, -1},
	}
	for _, d := range doc.Dialogs {
		w, ok := want[d.CallID]
		if !ok {
			t.Errorf("unexpected dialog %q", d.CallID)
			continue
		}
		delete(want, d.CallID)
		pdd := int64(-1)
		if d.Timing.PDDMs != nil {
			pdd = *d.Timing.PDDMs
		}
		if d.State != w.state || d.MsgCount != w.msgs || d.FinalStatusCode != w.final || pdd != w.pdd {
			t.Errorf("%s: got state %s, %d messages, final %d, pdd_ms %d; want %s, %d, %d, %d",
				d.CallID, d.State, d.MsgCount, d.FinalStatusCode, pdd, w.state, w.msgs, w.final, w.pdd)
		}
	}
	for id := range want {
		t.Errorf("dialog %s missing", id)
	}
}

// TestBatchHEPStopsOnRequest: a HEP batch run stopped by its context (what
// SIGINT and SIGTERM do) or by --duration exits 0 with the document of what
// it read, --report as well as --json-run.
func TestBatchHEPStopsOnRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		cancel bool
		reason string
		stdout string
	}{
		{"signal, json", []string{"--json-run"}, true, "interrupted (SIGINT or SIGTERM)", `"source_stopped_early": false`},
		{"signal, report", []string{"--report"}, true, "interrupted (SIGINT or SIGTERM)", "INCOMPLETE RUN"},
		{"duration", []string{"--json-run", "--duration", "0.3"}, false, "--duration reached", `"dialogs": []`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done, out, errb := runBatchAsync(ctx, append([]string{"-N", "-L", heptest.FreeAddr(t)}, tc.args...)...)
			waitFor(t, errb, done, readingLine)
			if tc.cancel {
				cancel()
			}
			if code := exitOf(t, done, errb); code != exitOK {
				t.Fatalf("exit %d, want 0: %s", code, errb.String())
			}
			if !strings.Contains(errb.String(), `reason="`+tc.reason+`"`) {
				t.Errorf("stderr lacks reason %q: %s", tc.reason, errb.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout lacks %q: %.400s", tc.stdout, out.String())
			}
		})
	}
}

// TestBatchFileCount: --count on a file run stops the load after that many
// frames, a stop on request: exit 0, frames_read 10, stopped_on_request,
// not complete.
func TestBatchFileCount(t *testing.T) {
	sample := filepath.Join(testcap.Root(), "testdata", "sip-rtp-g711.pcap")
	done, out, errb := runBatchAsync(context.Background(), "-N", "-I", sample, "--json-run", "--count", "10")
	if code := exitOf(t, done, errb); code != exitOK {
		t.Fatalf("exit %d, want 0: %s", code, errb.String())
	}
	r := decodeBatch(t, out).Run
	if r.FramesRead != 10 || !r.StoppedOnRequest || r.Complete || r.SourceStoppedEarly {
		t.Errorf("run %+v: want 10 frames read, stopped on request, not complete, not stopped early", r)
	}
}

// TestBatchTruncatedFileWithHEP: a truncated file read beside a HEP
// listener still exits 1 when the run is stopped on request: the file
// stopped early.
func TestBatchTruncatedFileWithHEP(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testcap.Root(), "testdata", "sip-rtp-g711.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(cut, data[:len(data)/2+7], 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, out, errb := runBatchAsync(ctx, "-N", "-I", cut, "-L", heptest.FreeAddr(t), "--json-run")
	waitFor(t, errb, done, readingLine)
	// The load records the early stop, then logs it: after this line a
	// stop request cannot turn the truncation into a stop on request.
	waitFor(t, errb, done, "capture input stopped early")
	cancel()
	if code := exitOf(t, done, errb); code != exitFailure {
		t.Fatalf("exit %d, want 1: %s", code, errb.String())
	}
	r := decodeBatch(t, out).Run
	if r.Source != "file+hep" || !r.SourceStoppedEarly || r.Complete {
		t.Errorf("run %+v: want file+hep, stopped early, not complete", r)
	}
}

func TestBatchExit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		st        engine.Status
		onRequest bool
		want      int
	}{
		{"file read whole", engine.Status{SourceExhausted: true, Complete: true}, false, exitOK},
		{"file read whole, dialogs evicted at the cap", engine.Status{SourceExhausted: true, IncompleteReasons: []string{"dialogs_evicted"}}, false, exitOK},
		{"file load stopped on request", engine.Status{StoppedOnRequest: true}, false, exitOK},
		{"live or HEP stopped on request", engine.Status{}, true, exitOK},
		{"truncated file", engine.Status{SourceStoppedEarly: true}, false, exitFailure},
		{"truncated file, run stopped on request", engine.Status{SourceStoppedEarly: true}, true, exitFailure},
		{"live source fault", engine.Status{SourceStoppedEarly: true, Errors: []string{"lo: network is down"}}, false, exitFailure},
		{"live source ended, no fault recorded", engine.Status{}, false, exitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := batchExit(tc.st, tc.onRequest); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// TestBatchUsage: batch sources and stop conditions that make no sense are
// usage errors (exit 2) before anything is opened, and stdio MCP still
// refuses stdout-writing outputs with a live or HEP source.
func TestBatchUsage(t *testing.T) {
	addr := heptest.FreeAddr(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"-N", "--json-run"}, "-i IFACE (live) or -L ADDR (HEP)"},
		{"negative duration", []string{"-N", "-L", addr, "--json-run", "--duration", "-1"}, "--duration -1"},
		{"infinite duration", []string{"-N", "-L", addr, "--json-run", "--duration", "+Inf"}, "--duration +Inf"},
		{"negative count", []string{"-N", "-L", addr, "--json-run", "--count", "-5"}, "--count -5"},
		{"duration with mcp", []string{"-N", "--mcp", "-L", addr, "--duration", "5"}, "do not combine with --mcp"},
		{"count with mcp", []string{"-N", "--mcp", "-I", "x.pcap", "--count", "5"}, "do not combine with --mcp"},
		{"json with stdio mcp and HEP", []string{"-N", "--mcp", "-L", addr, "--json-run"}, "--json-run writes to stdout"},
		{"report with stdio mcp and live", []string{"-N", "--mcp", "-i", "lo", "--report"}, "--report writes to stdout"},
		{"no -N", []string{"-L", addr, "--json-run"}, "-i IFACE|-L ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			code := Run(context.Background(), tc.args, nil, IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
			if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tc.want)
			}
			if stdout.String() != "" {
				t.Errorf("stdout written: %q", stdout.String())
			}
		})
	}
}

// TestBatchCallReportFromHEP: --call-report reads a HEP listener as the
// batch documents do (here until --count 9) and prints the call's report:
// the answered call with its six messages, exit 0.
func TestBatchCallReportFromHEP(t *testing.T) {
	addr := heptest.FreeAddr(t)
	done, out, errb := runBatchAsync(context.Background(), "-N", "-L", addr, "--call-report", "hep-batch-a@example.net", "--count", "9")
	waitFor(t, errb, done, readingLine)
	heptest.Send(t, addr, batchHEPCalls())
	if code := exitOf(t, done, errb); code != exitOK {
		t.Fatalf("exit %d, want 0: %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "sipnab call report: hep-batch-a@example.net") || !strings.Contains(out.String(), "LADDER") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if want := "call hep-batch-a@example.net: 6 messages"; !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "read stopped on request") {
		t.Errorf("stderr lacks %q and 'read stopped on request': %s", want, errb.String())
	}
}

// TestBatchOutputsHonourThresholds: --report and --call-report judge with
// the run's thresholds. hep-batch-a rang after 1000 ms: over a 0.5 s
// --pdd-threshold it is a post_dial_delay finding, under the default 11 s
// it is none.
func TestBatchOutputsHonourThresholds(t *testing.T) {
	const slowReport, slowCall = "post_dial_delay: 1 dialog", "slow setup: post-dial delay 1000 ms over 500 ms"
	for _, tc := range []struct {
		name    string
		args    []string
		marker  string
		finding bool
	}{
		{"report, default threshold", []string{"--report"}, "post_dial_delay", false},
		{"report, 0.5 s threshold", []string{"--report", "--pdd-threshold", "0.5"}, slowReport, true},
		{"call report, default threshold", []string{"--call-report", "hep-batch-a@example.net"}, "slow setup", false},
		{"call report, 0.5 s threshold", []string{"--call-report", "hep-batch-a@example.net", "--pdd-threshold", "0.5"}, slowCall, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := heptest.FreeAddr(t)
			done, out, errb := runBatchAsync(context.Background(), append([]string{"-N", "-L", addr, "--count", "9"}, tc.args...)...)
			waitFor(t, errb, done, readingLine)
			heptest.Send(t, addr, batchHEPCalls())
			if code := exitOf(t, done, errb); code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if got := strings.Contains(out.String(), tc.marker); got != tc.finding {
				t.Errorf("%q in the output: got %v, want %v\n%s", tc.marker, got, tc.finding, out.String())
			}
		})
	}
}
