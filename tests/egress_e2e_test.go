package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/pcapout"
	"github.com/sipnab/sipnab/internal/testcap"
)

// egressTshark returns tshark's per-frame fields used to compare a capture
// with its -O copy: time (ns), wire and captured length, MD5 of the bytes
// and the dissected protocols.
func egressTshark(t *testing.T, path string) string {
	t.Helper()
	args := []string{"-r", path, "-n", "-o", "frame.generate_md5_hash:TRUE", "-T", "fields"}
	for _, f := range []string{"frame.number", "frame.time_epoch", "frame.len", "frame.cap_len", "frame.md5_hash", "frame.protocols"} {
		args = append(args, "-e", f)
	}
	out, err := exec.Command("tshark", args...).Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", path, err)
	}
	return string(out)
}

func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed (.ci/run installs it)", name)
	}
}

func runSipnab(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

func fileMD5(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// -O FILE writes every frame read; tshark reads the copy with the same
// frames as the input (time to the nanosecond, lengths, bytes, dissection),
// as classic pcap and pcapng, from pcap (Ethernet, Linux cooked) and
// pcapng inputs.
func TestOutputFileReadsBackInTsharkWithIdenticalFrames(t *testing.T) {
	t.Parallel()
	needTool(t, "tshark")
	dir := t.TempDir()
	for _, name := range []string{"sip-rtp-g711.pcap", "b2bua-asterisk.pcapng", "SIP_CALL_RTP_G711"} {
		for _, ext := range []string{".pcap", ".pcapng"} {
			in := testcap.Public(name)
			out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))+ext)
			code, _, stderr := runSipnab(t, "-N", "-I", in, "-O", out)
			if code != 0 {
				t.Fatalf("%s -O %s: exit %d\n%s", name, out, code, stderr)
			}
			want, got := egressTshark(t, in), egressTshark(t, out)
			if want != got || want == "" {
				t.Errorf("%s → %s: tshark reads different frames\nwant %.300s\ngot  %.300s", name, out, want, got)
			}
			n := strings.Count(want, "\n")
			if !strings.Contains(stderr, fmt.Sprintf("-O: %d frames", n)) {
				t.Errorf("%s: stderr does not count %d frames: %s", name, n, stderr)
			}
		}
	}
}

// Rotation deletes only files the run wrote: a ring of two over a split
// set leaves the two newest files (holding the capture's last frames, as
// tshark reads them) and every file it did not write untouched; a file
// already at a name of the set stops the run (exit 1) and is not
// replaced; an input is never written over (exit 2).
func TestOutputRotationNeverTouchesAFileItDidNotWrite(t *testing.T) {
	t.Parallel()
	needTool(t, "tshark")
	in := testcap.Public("Asterisk_ZFONE_XLITE.pcap") // 255,581 bytes
	inMD5 := fileMD5(t, in)

	t.Run("ring keeps the newest two of its own files", func(t *testing.T) {
		dir := t.TempDir()
		foreign := map[string]string{"notes.txt": "mine", "out-old.pcap": "an older capture", "out.pcap": "not a set member"}
		for n, c := range foreign {
			writeFile(t, dir, n, c)
		}
		code, _, stderr := runSipnab(t, "-N", "-I", in, "-O", filepath.Join(dir, "out.pcap"), "--output-split-size", "64k", "--output-ring", "2")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		var set []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if _, theirs := foreign[e.Name()]; !theirs {
				set = append(set, e.Name())
			}
		}
		// 255,581 bytes in files of at most 65,536: four files, the
		// first two deleted.
		if strings.Join(set, " ") != "out-00003.pcap out-00004.pcap" {
			t.Fatalf("set files %v, want out-00003.pcap out-00004.pcap", set)
		}
		for n, c := range foreign {
			if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != c {
				t.Errorf("%s changed: %q", n, b)
			}
		}
		if !strings.Contains(stderr, "the ring deleted 2 of its own files") {
			t.Errorf("stderr does not count the deletions: %s", stderr)
		}
		// The kept files are the input's last frames, in order (time,
		// lengths, bytes: the dissection of a split file differs where
		// tshark's RTP heuristic needs the SDP of an earlier file).
		all := strings.Split(strings.TrimSuffix(egressTshark(t, in), "\n"), "\n")
		var kept []string
		for _, f := range set {
			kept = append(kept, strings.Split(strings.TrimSuffix(egressTshark(t, filepath.Join(dir, f)), "\n"), "\n")...)
		}
		tail := all[len(all)-len(kept):]
		for i := range kept {
			if dropNumber(kept[i]) != dropNumber(tail[i]) {
				t.Fatalf("kept frame %d differs from input frame %d:\n%s\n%s", i+1, len(all)-len(kept)+i+1, kept[i], tail[i])
			}
		}
	})

	t.Run("a file already at a set name stops the run and is kept", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "out-00002.pcap", "someone else's")
		code, _, stderr := runSipnab(t, "-N", "-I", in, "-O", filepath.Join(dir, "out.pcap"), "--output-split-size", "64k", "--output-ring", "1")
		if code != 1 || !strings.Contains(stderr, "out-00002.pcap already exists") {
			t.Fatalf("exit %d, want 1 naming out-00002.pcap\n%s", code, stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "out-00002.pcap")); string(b) != "someone else's" {
			t.Errorf("the pre-existing file changed: %q", b)
		}
	})

	t.Run("an input is never written over", func(t *testing.T) {
		code, _, stderr := runSipnab(t, "-N", "-I", in, "-O", in)
		if code != 2 || !strings.Contains(stderr, "never writes over an input") {
			t.Fatalf("exit %d, want 2\n%s", code, stderr)
		}
		if fileMD5(t, in) != inMD5 {
			t.Fatal("the input changed")
		}
	})
}

// The host names a pcapng input gives in its Name Resolution Block reach
// the -O copy: tshark resolves the address with them in the copy, and in
// every file of a split set.
func TestOutputCarriesTheInputsHostNames(t *testing.T) {
	t.Parallel()
	needTool(t, "tshark")
	dir := t.TempDir()
	in := filepath.Join(dir, "named.pcapng")
	r, err := capture.Open(testcap.Public("sip-rtp-g711.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcapout.Create(pcapout.Options{Path: in, Names: []pcapout.Name{{Addr: netip.MustParseAddr("10.0.2.20"), Name: "pbx.example"}}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	resolves := func(path string) bool {
		out, err := exec.Command("tshark", "-r", path, "-N", "n", "-T", "fields", "-e", "ip.src_host", "-e", "ip.dst_host").Output()
		if err != nil {
			t.Fatalf("tshark -r %s: %v", path, err)
		}
		return strings.Contains(string(out), "pbx.example")
	}
	if !resolves(in) {
		t.Fatal("the input does not resolve 10.0.2.20 (test setup)")
	}
	out := filepath.Join(dir, "copy.pcapng")
	if code, _, stderr := runSipnab(t, "-N", "-I", in, "-O", out); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !resolves(out) {
		t.Error("the copy does not resolve 10.0.2.20 to pbx.example")
	}
	set := filepath.Join(dir, "set.pcapng")
	if code, _, stderr := runSipnab(t, "-N", "-I", in, "-O", set, "--output-split-size", "64k"); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "set-*.pcapng"))
	if len(files) < 3 {
		t.Fatalf("split set %v, want at least 3 files", files)
	}
	for _, f := range files {
		if !resolves(f) {
			t.Errorf("%s does not resolve 10.0.2.20", filepath.Base(f))
		}
	}
}

// dropNumber keeps tshark's time, lengths and MD5 (drops the frame number
// and the protocols).
func dropNumber(line string) string {
	f := strings.Split(line, "\t")
	if len(f) < 5 {
		return line
	}
	return strings.Join(f[1:5], "\t")
}

// kamailioConfig is a Kamailio configuration whose sipcapture module
// receives HEP on UDP and logs every envelope's chunks (nonsip_hook runs
// event_route[sipcapture:request] per HEP packet; $hep(0x...) reads a
// chunk) with the MD5 of its payload.
const kamailioConfig = `#!KAMAILIO
debug=1
log_stderror=yes
fork=yes
children=1
auto_aliases=no
disable_tcp=yes
listen=udp:127.0.0.1:%d
mpath="%s"
loadmodule "pv.so"
loadmodule "db_text.so"
loadmodule "xlog.so"
loadmodule "sipcapture.so"
modparam("sipcapture", "db_url", "text://%s")
modparam("sipcapture", "hep_capture_on", 1)
modparam("sipcapture", "nonsip_hook", 1)
modparam("sipcapture", "insert_retries", 0)
modparam("sipcapture", "insert_retry_timeout", 0)
event_route[sipcapture:request] {
	xlog("L_ALERT", "HEPRX v=$hep(version) proto=$hep(0x002) src=$hep(0x003) dst=$hep(0x004) sport=$hep(0x007) dport=$hep(0x008) sec=$hep(0x009) usec=$hep(0x00a) type=$hep(0x00b) id=$hep(0x00c) key=$hep(0x00e) md5=$(hep(0x00f){s.md5})\n");
	return 0;
}
request_route {
	drop;
}
`

var heprx = regexp.MustCompile(`HEPRX (v=.*)`)

// startKamailio runs Kamailio with sipcapture on a free loopback UDP port
// and returns the port and a function returning the HEPRX lines so far.
func startKamailio(t *testing.T) (int, func() []string) {
	t.Helper()
	kam, err := exec.LookPath("kamailio")
	if err != nil {
		t.Skip("kamailio not installed (.ci/run installs it)")
	}
	mods := ""
	for _, d := range []string{"/usr/lib/x86_64-linux-gnu/kamailio/modules", "/usr/lib/aarch64-linux-gnu/kamailio/modules", "/usr/lib/kamailio/modules"} {
		if _, err := os.Stat(filepath.Join(d, "sipcapture.so")); err == nil {
			mods = d
		}
	}
	if mods == "" {
		t.Skip("Kamailio's sipcapture module not found")
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	dir := t.TempDir()
	dbDir := filepath.Join(dir, "db")
	_ = os.Mkdir(dbDir, 0o755)
	cfg := writeFile(t, dir, "kamailio.cfg", fmt.Sprintf(kamailioConfig, port, mods, dbDir))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, kam, "-f", cfg, "-E", "-DD", "-m", "32", "-M", "4", "-P", filepath.Join(dir, "k.pid"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Kamailio lists its sockets on stdout and logs on stderr: one pipe
	// takes both.
	stderr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var mu sync.Mutex
	var lines, all []string
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			l := sc.Text()
			mu.Lock()
			all = append(all, l)
			if m := heprx.FindStringSubmatch(l); m != nil {
				lines = append(lines, m[1])
			}
			mu.Unlock()
			if strings.Contains(l, "udp: 127.0.0.1") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cancel()
			<-done
		}
		cancel()
		if t.Failed() {
			mu.Lock()
			t.Logf("kamailio said:\n%s", strings.Join(all, "\n"))
			mu.Unlock()
		}
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("kamailio did not start:\n%s", strings.Join(all, "\n"))
	}
	time.Sleep(300 * time.Millisecond) // the worker forks after the listing
	return port, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// wantHEP is what a receiver must log for each SIP message and RTCP packet
// of a UDP capture, from tshark: addresses, ports, the capture time in
// seconds and microseconds, the HEP payload type, the agent id, the key
// and the MD5 of the payload.
func wantHEP(t *testing.T, capture string, id int, key string) []string {
	t.Helper()
	out, err := exec.Command("tshark", "-r", capture, "-n", "-Y", "(sip || rtcp) && udp", "-T", "fields", "-E", "separator=|",
		"-e", "ip.src", "-e", "ip.dst", "-e", "udp.srcport", "-e", "udp.dstport", "-e", "frame.time_epoch", "-e", "udp.payload", "-e", "sip.Call-ID").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "|")
		payload, err := hex.DecodeString(strings.ReplaceAll(f[5], ":", ""))
		if err != nil {
			t.Fatal(err)
		}
		sec, frac, _ := strings.Cut(f[4], ".")
		usec := strings.TrimLeft(frac[:6], "0")
		if usec == "" {
			usec = "0"
		}
		typ := 5
		if f[6] != "" {
			typ = 1
		}
		sum := md5.Sum(payload)
		want = append(want, fmt.Sprintf("v=3 proto=17 src=%s dst=%s sport=%s dport=%s sec=%s usec=%s type=%d id=%d key=%s md5=%s",
			f[0], f[1], f[2], f[3], sec, usec, typ, id, key, hex.EncodeToString(sum[:])))
	}
	return want
}

// sipnab -H feeds Kamailio's sipcapture module over UDP: every SIP message
// and RTCP packet of the capture (by tshark) arrives once, with its
// addresses, ports, capture time (µs), payload type, capture id, auth key
// and bytes (MD5) intact.
func TestHEPAgentFeedsKamailioSipcapture(t *testing.T) {
	t.Parallel()
	needTool(t, "tshark")
	port, got := startKamailio(t)
	var want []string
	for _, name := range []string{"rtp-protocol.pcap", "Asterisk_ZFONE_XLITE.pcap"} {
		in := testcap.Public(name)
		code, _, stderr := runSipnab(t, "-N", "-I", in, "-H", fmt.Sprintf("127.0.0.1:%d", port), "--hep-capture-id", "2001", "--hep-auth-key", "s3cret")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		if !strings.Contains(stderr, "forwarding the SIP and RTCP of capture files") || !strings.Contains(stderr, "dropped 0 ") {
			t.Errorf("%s: stderr lacks the file warning or a clean summary:\n%s", name, stderr)
		}
		want = append(want, wantHEP(t, in, 2001, "s3cret")...)
	}
	var lines []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if lines = got(); len(lines) >= len(want) {
			break
		}
	}
	sort.Strings(want)
	sort.Strings(lines)
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Kamailio received %d envelopes, tshark counts %d messages\ngot:\n%s\nwant:\n%s", len(lines), len(want), strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("Kamailio sipcapture logged %d envelopes identical to tshark's messages", len(lines))
}

// sipnab -H over TCP feeds another sipnab's -L: the receiver builds the
// same dialogs (Call-ID, message count, first and last message time) as a
// run over the file itself, from as many SIP messages, and counts the RTCP.
func TestHEPAgentOverTCPFeedsASipnabListener(t *testing.T) {
	t.Parallel()
	in := testcap.Public("sip-over-tcp.pcap") // SIP over TCP, RTCP over UDP
	code, direct, stderr := runSipnab(t, "-N", "-I", in, "--json-run")
	if code != 0 {
		t.Fatalf("direct run: exit %d\n%s", code, stderr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rx := exec.Command(bin, "-N", "-L", addr, "--json-run", "--duration", "20")
	var rxOut bytes.Buffer
	rxErr := &lockedBuffer{}
	rx.Stdout, rx.Stderr = &rxOut, rxErr
	if err := rx.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rx.Process.Kill() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listener did not start: %s", rxErr.String())
		}
	}
	code, agentDoc, stderr := runSipnab(t, "-N", "-I", in, "-H", addr, "--hep-send-transport", "tcp", "--hep-capture-id", "9", "--json-run")
	if code != 0 || !strings.Contains(stderr, "dropped 0 ") {
		t.Fatalf("agent: exit %d\n%s", code, stderr)
	}
	// The agent's own document accounts for what -H did (run.egress).
	var agent struct {
		Run struct {
			SIPMessages uint64 `json:"sip_messages"`
			Egress      struct {
				HEPSend *struct {
					Sent             uint64 `json:"sent"`
					SentSIP          uint64 `json:"sent_sip"`
					SentRTCP         uint64 `json:"sent_rtcp"`
					DroppedQueueFull uint64 `json:"dropped_queue_full"`
					DroppedTooLarge  uint64 `json:"dropped_too_large"`
					DroppedSendError uint64 `json:"dropped_send_error"`
					DroppedAtStop    uint64 `json:"dropped_at_stop"`
					Network          string `json:"network"`
				} `json:"hep_send"`
			} `json:"egress"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(agentDoc), &agent); err != nil {
		t.Fatal(err)
	}
	hs := agent.Run.Egress.HEPSend
	if hs == nil || hs.Network != "tcp" || hs.SentSIP != agent.Run.SIPMessages || hs.SentRTCP != 2 || hs.Sent != hs.SentSIP+hs.SentRTCP ||
		hs.DroppedQueueFull+hs.DroppedTooLarge+hs.DroppedSendError+hs.DroppedAtStop != 0 {
		t.Fatalf("agent's run.egress.hep_send %+v: want every one of its %d SIP messages and 2 RTCP sent over tcp, none dropped", hs, agent.Run.SIPMessages)
	}
	time.Sleep(500 * time.Millisecond)
	_ = rx.Process.Signal(os.Interrupt)
	_ = rx.Wait()

	type dlg struct {
		CallID    string `json:"call_id"`
		MsgCount  int    `json:"msg_count"`
		CreatedAt string `json:"created_at"`
		UpdatedAt string `json:"updated_at"`
	}
	type doc struct {
		Run struct {
			SIPMessages int `json:"sip_messages"`
			HEP         struct {
				SIP  int `json:"sip"`
				RTCP int `json:"rtcp"`
			} `json:"hep"`
		} `json:"run"`
		Dialogs []dlg `json:"dialogs"`
	}
	var a, b doc
	if err := json.Unmarshal([]byte(direct), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rxOut.Bytes(), &b); err != nil {
		t.Fatalf("receiver document: %v\n%s", err, rxErr.String())
	}
	if a.Run.SIPMessages == 0 || b.Run.SIPMessages != a.Run.SIPMessages || b.Run.HEP.SIP != a.Run.SIPMessages || b.Run.HEP.RTCP != 2 {
		t.Fatalf("receiver read %d SIP messages (%d HEP SIP, %d RTCP), the file holds %d SIP messages and 2 RTCP", b.Run.SIPMessages, b.Run.HEP.SIP, b.Run.HEP.RTCP, a.Run.SIPMessages)
	}
	if fmt.Sprint(a.Dialogs) != fmt.Sprint(b.Dialogs) {
		t.Fatalf("dialogs differ\nfile: %+v\nHEP:  %+v", a.Dialogs, b.Dialogs)
	}
}

// A live sipnab feeding a HEP receiver on the interface it captures (here
// loopback): each SIP message is forwarded once, and the envelopes it
// sends, which the live capture sees too, are skipped and counted instead
// of being unwrapped and forwarded again without end. Other tests' traffic
// on loopback is read too: the test counts its own Call-IDs.
func TestLiveHEPAgentDoesNotForwardItsOwnEnvelopes(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (core/engine's TestLivePacketsToTheHEPReceiverAreSkippedNotForwardedAgain covers the rule)")
	}
	rx, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	// The automatic kernel filter admits only the SIP ports
	// (docs/capture-sources.md); the receiver's port joins them so the
	// live capture sees the envelopes it must skip.
	rxPort := rx.LocalAddr().(*net.UDPAddr).Port
	cmd := exec.Command(bin, "-N", "-i", "lo", "-H", rx.LocalAddr().String(), "--portrange", fmt.Sprintf("5060-5061,%d", rxPort), "--json-run", "--duration", "5")
	var out bytes.Buffer
	errb := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errb.String(), "capturing live"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no live capture: %s", errb.String())
		}
	}
	time.Sleep(time.Second)
	// An unconnected socket: nothing listens on 5060, and a connected UDP
	// socket fails the writes after the ICMP port unreachable the first
	// one draws (ECONNREFUSED), so fewer messages would be sent.
	sip, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5060}
	const n = 5
	tag := fmt.Sprintf("live-egress-%d", time.Now().UnixNano())
	for i := range n {
		msg := fmt.Sprintf("OPTIONS sip:a@example.com SIP/2.0\r\nCall-ID: %s-%d@example.com\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n", tag, i)
		if _, err := sip.WriteTo([]byte(msg), to); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sip.Close()
	envelopes := 0
	perCall := map[string]int{}
	buf := make([]byte, 65536)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		_ = rx.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		k, _, err := rx.ReadFrom(buf)
		if err != nil {
			continue
		}
		envelopes++
		m, err := hep.Decode(buf[:k])
		if err != nil {
			t.Fatalf("envelope %d: %v", envelopes, err)
		}
		if i := bytes.Index(m.Payload, []byte("Call-ID: "+tag)); i >= 0 {
			id, _, _ := strings.Cut(string(m.Payload[i+len("Call-ID: "):]), "\r")
			perCall[id]++
		}
	}
	_ = cmd.Wait()
	var doc struct {
		Run struct {
			HEP struct {
				OwnSenderSkipped int `json:"own_sender_skipped"`
			} `json:"hep"`
		} `json:"run"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if len(perCall) != n || doc.Run.HEP.OwnSenderSkipped != envelopes {
		t.Fatalf("forwarded %d of our messages; %d envelopes received, %d skipped; want all %d, and every envelope skipped once", len(perCall), envelopes, doc.Run.HEP.OwnSenderSkipped, n)
	}
	for id, c := range perCall {
		if c != 1 {
			t.Errorf("%s forwarded %d times", id, c)
		}
	}
	t.Logf("%d of %d messages read live, each forwarded once; %d own envelopes skipped", len(perCall), n, doc.Run.HEP.OwnSenderSkipped)
}
