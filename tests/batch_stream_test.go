package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/internal/testcap"
)

// The batch runs of a live interface or a HEP listener, driven through the
// built binary: sipnab -N -i IFACE|-L ADDR --json-run|--report reads until
// SIGINT or SIGTERM (or --duration, --count), then writes the document.

// bsDoc is the part of the batch document these tests read.
type bsDoc struct {
	Run struct {
		Source             string   `json:"source"`
		FramesRead         uint64   `json:"frames_read"`
		SIPMessages        uint64   `json:"sip_messages"`
		SIPRetransmissions uint64   `json:"sip_retransmissions"`
		Complete           bool     `json:"complete"`
		SourceExhausted    bool     `json:"source_exhausted"`
		SourceStoppedEarly bool     `json:"source_stopped_early"`
		Errors             []string `json:"errors"`
		HEP                struct {
			Datagrams uint64 `json:"datagrams"`
			Envelopes uint64 `json:"envelopes"`
			SIP       uint64 `json:"sip"`
		} `json:"hep"`
	} `json:"run"`
	Dialogs []struct {
		CallID          string `json:"call_id"`
		State           string `json:"state"`
		Method          string `json:"method"`
		MsgCount        int    `json:"msg_count"`
		FinalStatusCode int    `json:"final_status_code"`
		Timing          struct {
			PDDMs       *int64 `json:"pdd_ms"`
			Retransmits int    `json:"retransmits"`
		} `json:"timing"`
	} `json:"dialogs"`
}

// bsRun is a running batch sipnab.
type bsRun struct {
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *lockedBuffer
	exited chan struct{}
}

// bsStart starts the binary and waits until its sources run (the line
// "reading until interrupted" on stderr).
func bsStart(t *testing.T, args ...string) *bsRun {
	t.Helper()
	r := &bsRun{cmd: exec.Command(bin, args...), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.stderr.String(), "reading until interrupted") {
		select {
		case <-r.exited:
			t.Fatalf("sipnab %v exited %d before reading: %s", args, r.cmd.ProcessState.ExitCode(), r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sipnab %v never started reading: %s", args, r.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
}

// stop sends sig and returns the exit code.
func (r *bsRun) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	if sig != nil {
		if err := r.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	return r.wait(t)
}

func (r *bsRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("sipnab did not stop: %s", r.stderr.String())
	}
	return r.cmd.ProcessState.ExitCode()
}

func (r *bsRun) doc(t *testing.T) bsDoc {
	t.Helper()
	var d bsDoc
	if err := json.Unmarshal([]byte(r.stdout.String()), &d); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%.500s\nstderr: %s", err, r.stdout.String(), r.stderr.String())
	}
	return d
}

// bsCalls: bs-answered@example.net answered and hung up (INVITE, 180 after
// 1.5 s, 200, ACK, BYE, 200: HEP3 and HEP2 datagrams over UDP) and
// bs-cancelled@example.net cancelled while ringing (INVITE, 180, CANCEL,
// 200 to CANCEL, 487, ACK: HEP3 over one TCP connection).
func bsCalls() []heptest.Message {
	msg := func(callID, from, first, cseq, toTag, branch string) string {
		to := "<sip:bob@example.net>"
		if toTag != "" {
			to += ";tag=" + toTag
		}
		return first + "\r\nVia: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-" + branch + "\r\n" +
			"From: <sip:" + from + "@example.com>;tag=f-" + from + "\r\nTo: " + to + "\r\n" +
			"Call-ID: " + callID + "\r\nCSeq: " + cseq + "\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	}
	a := func(first, cseq, toTag, branch string) string {
		return msg("bs-answered@example.net", "alice", first, cseq, toTag, branch)
	}
	c := func(first, cseq, toTag string) string {
		return msg("bs-cancelled@example.net", "carol", first, cseq, toTag, "c1")
	}
	ms := time.Millisecond
	return []heptest.Message{
		{Version: 3, TCP: false, Offset: 0, Text: a("INVITE sip:bob@example.net SIP/2.0", "1 INVITE", "", "a1")},
		{Version: 2, TCP: false, Offset: 1500 * ms, Text: a("SIP/2.0 180 Ringing", "1 INVITE", "t-a", "a1")},
		{Version: 3, TCP: false, Offset: 4000 * ms, Text: a("SIP/2.0 200 OK", "1 INVITE", "t-a", "a1")},
		{Version: 2, TCP: false, Offset: 4050 * ms, Text: a("ACK sip:bob@example.net SIP/2.0", "1 ACK", "t-a", "a2")},
		{Version: 3, TCP: false, Offset: 9000 * ms, Text: a("BYE sip:bob@example.net SIP/2.0", "2 BYE", "t-a", "a3")},
		{Version: 3, TCP: false, Offset: 9040 * ms, Text: a("SIP/2.0 200 OK", "2 BYE", "t-a", "a3")},
		{Version: 3, TCP: true, Offset: 20000 * ms, Text: c("INVITE sip:bob@example.net SIP/2.0", "1 INVITE", "")},
		{Version: 3, TCP: true, Offset: 20200 * ms, Text: c("SIP/2.0 180 Ringing", "1 INVITE", "t-c")},
		{Version: 3, TCP: true, Offset: 25000 * ms, Text: c("CANCEL sip:bob@example.net SIP/2.0", "1 CANCEL", "")},
		{Version: 3, TCP: true, Offset: 25010 * ms, Text: c("SIP/2.0 200 OK", "1 CANCEL", "t-c")},
		{Version: 3, TCP: true, Offset: 25020 * ms, Text: c("SIP/2.0 487 Request Terminated", "1 INVITE", "t-c")},
		{Version: 3, TCP: true, Offset: 25030 * ms, Text: c("ACK sip:bob@example.net SIP/2.0", "1 ACK", "t-c")},
	}
}

// procSockets reads /proc/net/<proto>: per socket, its local port, state
// (hex) and receive queue.
func procSockets(t *testing.T, proto string) []struct {
	port  int
	state string
	rxq   int64
} {
	t.Helper()
	f, err := os.Open("/proc/net/" + proto)
	if err != nil {
		t.Skipf("needs /proc/net/%s to know what the listener has read: %v", proto, err)
	}
	defer f.Close()
	var out []struct {
		port  int
		state string
		rxq   int64
	}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			continue
		}
		_, portHex, _ := strings.Cut(fs[1], ":")
		port, _ := strconv.ParseInt(portHex, 16, 32)
		_, rxHex, _ := strings.Cut(fs[4], ":")
		rxq, _ := strconv.ParseInt(rxHex, 16, 64)
		out = append(out, struct {
			port  int
			state string
			rxq   int64
		}{int(port), fs[3], rxq})
	}
	return out
}

// bsWaitHEPRead waits until the listener on addr has read everything sent
// to it: its UDP socket's receive queue is empty and no accepted TCP
// connection is still open (the listener closes one after reading its end).
// Whatever a listener has read is routed before sipnab stops it.
func bsWaitHEPRead(t *testing.T, addr string) {
	t.Helper()
	_, portS, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portS)
	deadline := time.Now().Add(20 * time.Second)
	for {
		pending := 0
		for _, s := range procSockets(t, "udp") {
			if s.port == port && s.rxq > 0 {
				pending++
			}
		}
		for _, s := range procSockets(t, "tcp") {
			// 01 established, 08 close-wait: a connection the listener
			// has not finished reading.
			if s.port == port && (s.state == "01" || s.state == "08") {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HEP listener on %s never read what was sent", addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkBSDialogs checks the two calls of bsCalls in a document.
func checkBSDialogs(t *testing.T, d bsDoc) {
	t.Helper()
	type want struct {
		state        string
		msgs, final  int
		pddMs        int64 // -1: none
		retransmits  int
		method       string
		wantedByTest bool
	}
	wants := map[string]want{
		"bs-answered@example.net":  {"Completed", 6, 200, 1500, 0, "INVITE", true},
		"bs-cancelled@example.net": {"Cancelled", 6, 487, 200, 0, "INVITE", true},
	}
	if len(d.Dialogs) != len(wants) {
		t.Errorf("got %d dialogs, want %d", len(d.Dialogs), len(wants))
	}
	for _, dl := range d.Dialogs {
		w, ok := wants[dl.CallID]
		if !ok {
			t.Errorf("unexpected dialog %q", dl.CallID)
			continue
		}
		delete(wants, dl.CallID)
		pdd := int64(-1)
		if dl.Timing.PDDMs != nil {
			pdd = *dl.Timing.PDDMs
		}
		got := want{dl.State, dl.MsgCount, dl.FinalStatusCode, pdd, dl.Timing.Retransmits, dl.Method, true}
		if got != w {
			t.Errorf("%s: got %+v, want %+v", dl.CallID, got, w)
		}
	}
	for id := range wants {
		t.Errorf("dialog %s missing", id)
	}
}

// TestBatchHEPUntilSignalE2E: `sipnab -N -L ADDR --json-run` receives the two
// calls (HEP3 and HEP2 datagrams, HEP3 over TCP) from this process, and on
// SIGINT (and SIGTERM) writes the document of everything it read and exits
// 0: twelve messages, two dialogs as sent, not complete (a listener has no
// end) but not stopped early either. --report prints the same run.
func TestBatchHEPUntilSignalE2E(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  os.Signal
		out  string
	}{
		{"json, SIGINT", os.Interrupt, "--json-run"},
		{"json, SIGTERM", syscall.SIGTERM, "--json-run"},
		{"report, SIGINT", os.Interrupt, "--report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := heptest.FreeAddr(t)
			r := bsStart(t, "-N", "-L", addr, tc.out)
			heptest.Send(t, addr, bsCalls())
			bsWaitHEPRead(t, addr)
			if code := r.stop(t, tc.sig); code != 0 {
				t.Fatalf("exit %d, want 0: %s", code, r.stderr.String())
			}
			if tc.out == "--report" {
				out := r.stdout.String()
				for _, s := range []string{"12 SIP messages", "2 dialogs", "bs-answered@example.net", "bs-cancelled@example.net", "Cancelled", "INCOMPLETE RUN"} {
					if !strings.Contains(out, s) {
						t.Errorf("report lacks %q:\n%s", s, out)
					}
				}
				return
			}
			d := r.doc(t)
			run := d.Run
			for _, c := range []struct {
				name      string
				got, want any
			}{
				{"source", run.Source, "hep"},
				{"frames_read", run.FramesRead, uint64(12)},
				{"hep.datagrams", run.HEP.Datagrams, uint64(12)},
				{"hep.envelopes", run.HEP.Envelopes, uint64(12)},
				{"hep.sip", run.HEP.SIP, uint64(12)},
				{"sip_messages", run.SIPMessages, uint64(12)},
				{"sip_retransmissions", run.SIPRetransmissions, uint64(0)},
				{"complete", run.Complete, false},
				{"source_exhausted", run.SourceExhausted, false},
				{"source_stopped_early", run.SourceStoppedEarly, false},
			} {
				if c.got != c.want {
					t.Errorf("run.%s: got %v, want %v", c.name, c.got, c.want)
				}
			}
			checkBSDialogs(t, d)
		})
	}
}

// TestBatchStopConditionsE2E: --count and --duration stop a HEP batch run
// on their own, a stop on request (exit 0); --count on a file stops the
// load there (exit 0, stopped_on_request).
func TestBatchStopConditionsE2E(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		addr := heptest.FreeAddr(t)
		r := bsStart(t, "-N", "-L", addr, "--json-run", "--count", "12")
		heptest.Send(t, addr, bsCalls())
		if code := r.wait(t); code != 0 {
			t.Fatalf("exit %d, want 0: %s", code, r.stderr.String())
		}
		d := r.doc(t)
		if d.Run.SIPMessages != 12 || d.Run.SourceStoppedEarly {
			t.Errorf("run %+v: want 12 SIP messages, not stopped early", d.Run)
		}
		checkBSDialogs(t, d)
	})
	t.Run("duration", func(t *testing.T) {
		r := bsStart(t, "-N", "-L", heptest.FreeAddr(t), "--json-run", "--duration", "0.5")
		if code := r.wait(t); code != 0 {
			t.Fatalf("exit %d, want 0: %s", code, r.stderr.String())
		}
		if d := r.doc(t); d.Run.Source != "hep" || d.Run.FramesRead != 0 || len(d.Dialogs) != 0 || d.Run.SourceStoppedEarly {
			t.Errorf("run %+v, %d dialogs: want hep, nothing read, not stopped early", d.Run, len(d.Dialogs))
		}
		if !strings.Contains(r.stderr.String(), `reason="--duration reached"`) {
			t.Errorf("stderr: %s", r.stderr.String())
		}
	})
	t.Run("count on a file", func(t *testing.T) {
		out, stderr, code := runCLI(t, "-N", "-I", sampleCapture(), "--json-run", "--count", "25")
		if code != 0 {
			t.Fatalf("exit %d, want 0: %s", code, stderr)
		}
		var d struct {
			Run struct {
				FramesRead       uint64 `json:"frames_read"`
				StoppedOnRequest bool   `json:"stopped_on_request"`
				Complete         bool   `json:"complete"`
			} `json:"run"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		if d.Run.FramesRead != 25 || !d.Run.StoppedOnRequest || d.Run.Complete {
			t.Errorf("run %+v: want 25 frames, stopped on request, not complete", d.Run)
		}
	})
}

// TestBatchStdoutOutputsStillRefusedWithStdioMCPE2E: with stdio MCP,
// --json-run and --report stay refused whatever the source, before any source
// is opened; --duration and --count are batch-only.
func TestBatchStdoutOutputsStillRefusedWithStdioMCPE2E(t *testing.T) {
	addr := heptest.FreeAddr(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"json, HEP", []string{"-N", "--mcp", "-L", addr, "--json-run"}, "--json-run writes to stdout"},
		{"report, HEP", []string{"-N", "--mcp", "-L", addr, "--report"}, "--report writes to stdout"},
		{"json, live", []string{"-N", "--mcp", "-i", "lo", "--json-run"}, "--json-run writes to stdout"},
		{"json, file", []string{"-N", "--mcp", "-I", sampleCapture(), "--json-run"}, "--json-run writes to stdout"},
		{"duration with MCP", []string{"-N", "--mcp", "-L", addr, "--duration", "5"}, "do not combine with --mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, %q", code, out, stderr, tc.want)
			}
		})
	}
}

// bsFreeUDPPort returns a UDP port free on 127.0.0.1 now.
func bsFreeUDPPort(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// bsFreeUDPRange returns the first of n consecutive UDP ports free on
// 127.0.0.1 now (SIPp binds its media port and the three after it).
func bsFreeUDPRange(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		base := bsFreeUDPPort(t)
		if base+n > 65535 {
			continue
		}
		var held []net.PacketConn
		ok := true
		for p := base; p < base+n && ok; p++ {
			pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			held = append(held, pc)
		}
		for _, pc := range held {
			pc.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free UDP ports on loopback", n)
	return 0
}

// bsWaitPacketSocketsRead waits until every AF_PACKET socket of process pid
// has an empty receive queue (/proc/net/packet Rmem): a live capture has
// read every frame queued before the call.
func bsWaitPacketSocketsRead(t *testing.T, pid int) {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, err := os.ReadFile("/proc/net/packet")
		if err != nil {
			t.Skipf("needs /proc/net/packet: %v", err)
		}
		found, queued := 0, 0
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 9 || !inodes[fs[8]] {
				continue
			}
			found++
			if fs[6] != "0" {
				queued++
			}
		}
		if found == 0 {
			t.Fatalf("no AF_PACKET socket of sipnab (pid %d) in /proc/net/packet", pid)
		}
		if queued == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the live capture never read its queued frames")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBatchLiveLoopbackE2E (root): `sipnab -N -i lo --json-run` captures a real
// SIPp call over 127.0.0.1; on SIGINT the document holds the call's dialog,
// whole (INVITE, 180, 200, ACK, BYE, 200: six messages, Completed, final
// 200), and sipnab exits 0. Other traffic on lo may add dialogs; only this
// call's Call-ID is checked.
func TestBatchLiveLoopbackE2E(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture on lo needs root (CAP_NET_RAW); skipped")
	}
	if _, err := exec.LookPath("sipp"); err != nil {
		t.Skip("needs sipp (Debian package sip-tester); skipped")
	}
	dir := t.TempDir()
	uasPort, uacPort := bsFreeUDPPort(t), bsFreeUDPPort(t)
	for uacPort == uasPort {
		uacPort = bsFreeUDPPort(t)
	}
	// SIPp runs on free ports, not 5060: the port gate is told them.
	r := bsStart(t, "-N", "-i", "lo", "--json-run", "--portrange", fmt.Sprintf("%d,%d", uasPort, uacPort))
	common := []string{"-i", "127.0.0.1", "-m", "1", "-nostdin", "-timeout", "30s", "-timeout_error", "-mp", strconv.Itoa(bsFreeUDPRange(t, 4))}
	uas := exec.Command("sipp", append([]string{"-sn", "uas", "-p", strconv.Itoa(uasPort)}, common...)...)
	uas.Dir = dir
	uasOut := &lockedBuffer{}
	uas.Stdout, uas.Stderr = uasOut, uasOut
	if err := uas.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = uas.Process.Kill() }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, _ := exec.Command("ss", "-Hlun", fmt.Sprintf("sport = :%d", uasPort)).Output()
		if len(strings.TrimSpace(string(out))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIPp UAS never listened: %s", uasOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	common[len(common)-1] = strconv.Itoa(bsFreeUDPRange(t, 4))
	uac := exec.Command("sipp", append([]string{"-sn", "uac", fmt.Sprintf("127.0.0.1:%d", uasPort), "-p", strconv.Itoa(uacPort)}, common...)...)
	uac.Dir = dir
	if out, err := uac.CombinedOutput(); err != nil {
		t.Fatalf("SIPp UAC: %v\n%s", err, out)
	}
	if err := uas.Wait(); err != nil {
		t.Fatalf("SIPp UAS: %v\n%s", err, uasOut.String())
	}
	// The UAC received the last message (200 to BYE) after the capture
	// socket was handed it: once that socket's queue is empty, sipnab has
	// read the whole call.
	bsWaitPacketSocketsRead(t, r.cmd.Process.Pid)
	if code := r.stop(t, os.Interrupt); code != 0 {
		t.Fatalf("exit %d, want 0: %s", code, r.stderr.String())
	}
	d := r.doc(t)
	if d.Run.Source != "live" || d.Run.SourceStoppedEarly || d.Run.Complete || d.Run.SourceExhausted {
		t.Errorf("run %+v: want live, not stopped early, not complete, not exhausted", d.Run)
	}
	callID := regexp.MustCompile(fmt.Sprintf(`^1-%d@127\.0\.0\.1$`, uac.Process.Pid))
	var found bool
	for _, dl := range d.Dialogs {
		if !callID.MatchString(dl.CallID) {
			continue
		}
		found = true
		if dl.Method != "INVITE" || dl.State != "Completed" || dl.MsgCount != 6 || dl.FinalStatusCode != 200 || dl.Timing.Retransmits != 0 {
			t.Errorf("dialog %+v: want INVITE, Completed, 6 messages, final 200, no retransmissions", dl)
		}
	}
	if !found {
		t.Errorf("no dialog with the SIPp UAC's Call-ID (1-%d@127.0.0.1) among %d dialogs", uac.Process.Pid, len(d.Dialogs))
	}
}

// TestBatchLiveSourceFaultE2E (root): a live batch run whose interface goes
// away stops on its own, writes what it read with source_stopped_early and
// the error, and exits 1.
func TestBatchLiveSourceFaultE2E(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making and capturing on a veth pair needs root; skipped")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (Debian package iproute2); skipped")
	}
	va := fmt.Sprintf("snbf%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "link", "add", va, "type", "veth", "peer", "name", va+"p").CombinedOutput(); err != nil {
		t.Skipf("cannot make a veth pair here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", va).Run() })
	for _, dev := range []string{va, va + "p"} {
		if out, err := exec.Command("ip", "link", "set", dev, "up").CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	r := bsStart(t, "-N", "-i", va, "--json-run")
	if out, err := exec.Command("ip", "link", "del", va).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if code := r.wait(t); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, r.stderr.String())
	}
	d := r.doc(t)
	if !d.Run.SourceStoppedEarly || d.Run.Complete || len(d.Run.Errors) != 1 || !strings.HasPrefix(d.Run.Errors[0], va+": ") {
		t.Errorf("run %+v: want stopped early with one error naming %s", d.Run, va)
	}
}

// TestREADMEBatchLinesRunE2E runs the README's batch command lines for a
// live interface and a HEP listener (lo for the interface; a free port for
// the listener, which receives the two calls), stopping each with SIGINT.
func TestREADMEBatchLinesRunE2E(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testcap.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		for _, l := range strings.Split(m[1], "\n") {
			if strings.HasPrefix(l, "sipnab -N ") {
				lines = append(lines, l)
			}
		}
	}
	var live, hepLines int
	for _, line := range lines {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		if i := strings.Index(line, ">"); i >= 0 {
			line = line[:i]
		}
		args := strings.Fields(strings.TrimPrefix(line, "sipnab "))
		addr := ""
		for i, a := range args {
			switch {
			case a == "capture.pcap":
				args[i] = sampleCapture()
			case i > 0 && args[i-1] == "-i":
				args[i] = "lo"
			case i > 0 && args[i-1] == "-L":
				addr = heptest.FreeAddr(t)
				args[i] = addr
			}
		}
		t.Run(line, func(t *testing.T) {
			joined := " " + strings.Join(args, " ") + " "
			switch {
			case strings.Contains(joined, " -L "):
				hepLines++
				r := bsStart(t, args...)
				heptest.Send(t, addr, bsCalls())
				bsWaitHEPRead(t, addr)
				if code := r.stop(t, os.Interrupt); code != 0 {
					t.Fatalf("exit %d: %s", code, r.stderr.String())
				}
				if strings.Contains(joined, " --json-run ") {
					checkBSDialogs(t, r.doc(t))
				} else if !strings.Contains(r.stdout.String(), "bs-cancelled@example.net") {
					t.Errorf("report:\n%s", r.stdout.String())
				}
			case strings.Contains(joined, " -i "):
				live++
				if os.Geteuid() != 0 {
					t.Skip("live capture needs root; skipped")
				}
				r := bsStart(t, args...)
				if code := r.stop(t, os.Interrupt); code != 0 {
					t.Fatalf("exit %d: %s", code, r.stderr.String())
				}
				if strings.Contains(joined, " --json-run ") {
					if d := r.doc(t); d.Run.Source != "live" || d.Run.SourceStoppedEarly {
						t.Errorf("run %+v: want live, not stopped early", d.Run)
					}
				} else if !strings.HasPrefix(r.stdout.String(), "sipnab report: lo\n") {
					t.Errorf("report does not name the interface:\n%.400s", r.stdout.String())
				}
			default:
				out, stderr, code := runCLI(t, args...)
				if code != 0 || out == "" {
					t.Errorf("exit %d, %d bytes out: %s", code, len(out), stderr)
				}
			}
		})
	}
	if live == 0 || hepLines == 0 {
		t.Errorf("README has %d live and %d HEP batch lines; want at least one of each", live, hepLines)
	}
}

// TestBatchLiveNotPermittedE2E (root, to become nobody): a live batch run
// by a user without CAP_NET_RAW fails at once with an error that says so,
// exit 1, and writes no document.
func TestBatchLiveNotPermittedE2E(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs sipnab as nobody, which needs root; skipped")
	}
	cmd := exec.Command(bin, "-N", "-i", "lo", "--json-run")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || out.Len() != 0 ||
		!strings.Contains(errb.String(), "starting live capture on lo") || !strings.Contains(errb.String(), "needs root or CAP_NET_RAW") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, the permission error", code, out.String(), errb.String())
	}
}

// TestBatchLiveVethE2E (root): the binary captures a SIPp call between a
// network namespace and this one across a veth pair (Ethernet frames):
// `sipnab -N -i VETH --json-run`, SIGINT, the call's dialog whole, exit 0.
func TestBatchLiveVethE2E(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace and capture; skipped")
	}
	for _, tool := range []string{"ip", "sipp", "ss"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian packages iproute2 and sip-tester); skipped", tool)
		}
	}
	id := os.Getpid()%10000 + 1
	ns := fmt.Sprintf("snb-batch-%d", id)
	va, vb := fmt.Sprintf("snbb%da", id), fmt.Sprintf("snbb%db", id)
	net3 := fmt.Sprintf("198.19.%d", id%250)
	uasIP, uacIP := net3+".2", net3+".1"
	sh := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	sh("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	sh("link", "add", va, "type", "veth", "peer", "name", vb)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", va).Run() })
	sh("link", "set", vb, "netns", ns)
	sh("addr", "add", uacIP+"/30", "dev", va)
	sh("link", "set", va, "up")
	sh("-n", ns, "addr", "add", uasIP+"/30", "dev", vb)
	sh("-n", ns, "link", "set", vb, "up")
	sh("-n", ns, "link", "set", "lo", "up")

	r := bsStart(t, "-N", "-i", va, "--json-run")
	dir := t.TempDir()
	uas := exec.Command("ip", "netns", "exec", ns, "sipp", "-sn", "uas", "-i", uasIP, "-p", "5060", "-m", "1", "-nostdin", "-timeout", "30s", "-timeout_error")
	uas.Dir = dir
	uasOut := &lockedBuffer{}
	uas.Stdout, uas.Stderr = uasOut, uasOut
	if err := uas.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = uas.Process.Kill() }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, _ := exec.Command("ip", "netns", "exec", ns, "ss", "-Hlun", "sport = :5060").Output()
		if len(strings.TrimSpace(string(out))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIPp UAS never listened: %s", uasOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	uac := exec.Command("sipp", "-sn", "uac", uasIP+":5060", "-i", uacIP, "-p", "5061", "-m", "1", "-nostdin", "-timeout", "30s", "-timeout_error",
		"-mp", strconv.Itoa(bsFreeUDPRange(t, 4)))
	uac.Dir = dir
	if out, err := uac.CombinedOutput(); err != nil {
		t.Fatalf("SIPp UAC: %v\n%s", err, out)
	}
	if err := uas.Wait(); err != nil {
		t.Fatalf("SIPp UAS: %v\n%s", err, uasOut.String())
	}
	bsWaitPacketSocketsRead(t, r.cmd.Process.Pid)
	if code := r.stop(t, os.Interrupt); code != 0 {
		t.Fatalf("exit %d, want 0: %s", code, r.stderr.String())
	}
	d := r.doc(t)
	if d.Run.Source != "live" || d.Run.SourceStoppedEarly {
		t.Errorf("run %+v: want live, not stopped early", d.Run)
	}
	want := fmt.Sprintf("1-%d@%s", uac.Process.Pid, uacIP)
	var found bool
	for _, dl := range d.Dialogs {
		if dl.CallID != want {
			continue
		}
		found = true
		if dl.Method != "INVITE" || dl.State != "Completed" || dl.MsgCount != 6 || dl.FinalStatusCode != 200 || dl.Timing.Retransmits != 0 {
			t.Errorf("dialog %+v: want INVITE, Completed, 6 messages, final 200, no retransmissions", dl)
		}
	}
	if !found {
		t.Errorf("no dialog %s among %d dialogs", want, len(d.Dialogs))
	}
}
