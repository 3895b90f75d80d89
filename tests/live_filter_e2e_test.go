package tests

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// liveFilterSend sends, on 127.0.0.1, one SIP INVITE to sipPort and 60
// RTP packets (PCMU, 20 ms, SSRC ssrc) from rtpFrom to rtpTo.
func liveFilterSend(t *testing.T, sipPort, rtpFrom, rtpTo int, callID string, ssrc uint32) {
	t.Helper()
	invite := "INVITE sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5999;branch=z9hG4bK-" + callID + "\r\n" +
		"From: <sip:alice@127.0.0.1>;tag=a1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: " + callID + "\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
	c, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", sipPort))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte(invite))
	c.Close()
	rc, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: rtpFrom}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: rtpTo})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	pkt := make([]byte, 12+160)
	for i := 0; i < 60; i++ {
		pkt[0], pkt[1] = 0x80, 0
		binary.BigEndian.PutUint16(pkt[2:], uint16(1000+i))
		binary.BigEndian.PutUint32(pkt[4:], uint32(8000+160*i))
		binary.BigEndian.PutUint32(pkt[8:], ssrc)
		_, _ = rc.Write(pkt)
		time.Sleep(2 * time.Millisecond)
	}
}

// TestLiveFilterE2E (root): a live capture on lo with the automatic kernel
// filter sees the SIP sent to a --portrange port but not the RTP beside it
// (no stream of its SSRC); with --bpf-file naming both ports (a program in
// tcpdump -ddd form: IPv4 UDP to either port, IHL 5, as `tcpdump -i lo
// -ddd` would write for it) the same traffic gives the dialog and the
// stream. Other traffic on lo may add dialogs and streams: only these are
// checked.
func TestLiveFilterE2E(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("live capture on lo needs root (CAP_NET_RAW); skipped")
	}
	sipPort, rtpFrom, rtpTo := bsFreeUDPPort(t), bsFreeUDPPort(t), bsFreeUDPPort(t)
	prog := fmt.Sprintf("9\n40 0 0 12\n21 0 6 2048\n48 0 0 23\n21 0 4 17\n40 0 0 36\n21 1 0 %d\n21 0 1 %d\n6 0 0 262144\n6 0 0 0\n", sipPort, rtpTo)
	file := filepath.Join(t.TempDir(), "sip-and-rtp.bpf")
	if err := os.WriteFile(file, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		stream  bool
		logLine string
	}{
		{"automatic filter", nil, false, "RTP is not captured"},
		{"--bpf-file", []string{"--bpf-file", file}, true, "--bpf-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			callID := fmt.Sprintf("live-filter-%d@127.0.0.1", time.Now().UnixNano())
			ssrc := uint32(time.Now().UnixNano())
			r := bsStart(t, append([]string{"-N", "-i", "lo", "--json-run", "--portrange", fmt.Sprint(sipPort)}, tc.args...)...)
			liveFilterSend(t, sipPort, rtpFrom, rtpTo, callID, ssrc)
			bsWaitPacketSocketsRead(t, r.cmd.Process.Pid)
			if code := r.stop(t, os.Interrupt); code != 0 {
				t.Fatalf("exit %d: %s", code, r.stderr.String())
			}
			if !strings.Contains(r.stderr.String(), tc.logLine) {
				t.Errorf("stderr lacks %q: %s", tc.logLine, r.stderr.String())
			}
			var d struct {
				Dialogs []struct {
					CallID string `json:"call_id"`
				} `json:"dialogs"`
				Streams []struct {
					SSRC    string `json:"ssrc"`
					Packets uint64 `json:"packets"`
				} `json:"streams"`
			}
			if err := json.Unmarshal([]byte(r.stdout.String()), &d); err != nil {
				t.Fatal(err)
			}
			dialog, stream := false, false
			for _, dl := range d.Dialogs {
				dialog = dialog || dl.CallID == callID
			}
			for _, s := range d.Streams {
				stream = stream || strings.EqualFold(s.SSRC, fmt.Sprintf("0x%08x", ssrc))
			}
			if !dialog || stream != tc.stream {
				t.Errorf("dialog %v, stream of 0x%08x %v; want true, %v (streams %+v)", dialog, ssrc, stream, tc.stream, d.Streams)
			}
		})
	}
}

// TestBPFFileUsageErrors: --bpf-file without -i, a file that is not
// tcpdump -ddd output, and a program using a kernel extension are usage
// errors (exit 2) naming the flag, before any capture opens.
func TestBPFFileUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := writeFile(t, dir, "expr.bpf", "udp port 5060\n")
	ext := writeFile(t, dir, "ext.bpf", "2\n32 0 0 4294963200\n6 0 0 1\n")
	good := writeFile(t, dir, "good.bpf", "1\n6 0 0 262144\n")
	for _, args := range [][]string{
		{"-N", "-I", sampleCapture(), "--json-run", "--bpf-file", good},
		{"-N", "-i", "lo", "--json-run", "--bpf-file", text},
		{"-N", "-i", "lo", "--json-run", "--bpf-file", ext},
		{"-N", "-i", "lo", "--json-run", "--bpf-file", filepath.Join(dir, "missing.bpf")},
	} {
		stderr, code := runCode(t, args...)
		if code != 2 || !strings.Contains(stderr, "--bpf-file") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming --bpf-file", args[len(args)-1], code, stderr)
		}
	}
}
