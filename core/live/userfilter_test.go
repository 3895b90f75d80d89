package live

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/bpf"

	"github.com/sipnab/sipnab/internal/testcap"
)

func filterFile(t *testing.T, name string) []bpf.Instruction {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testcap.Root(), "testdata", "bpf", name))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := ParseFilterFile(string(raw))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return prog
}

// sll2UDP is an SLL2 frame (as -i any delivers) carrying IPv4/UDP.
func sll2UDP(sport, dport uint16) []byte {
	f := make([]byte, 20+20+8+4)
	binary.BigEndian.PutUint16(f[0:], 0x0800)
	binary.BigEndian.PutUint16(f[8:], 1)
	ip := f[20:]
	ip[0], ip[9] = 0x45, 17
	binary.BigEndian.PutUint16(ip[2:], 32)
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	return f
}

// TestFilterFileFromTcpdumpJudgesSLL2Frames: tcpdump's program for
// `-i any` 'udp port 5060 or udp portrange 16384-32767', read from its
// -ddd output, run as given on the SLL2 frames sipnab's any capture
// delivers: SIP and RTP in, the rest out.
func TestFilterFileFromTcpdumpJudgesSLL2Frames(t *testing.T) {
	vm, err := bpf.NewVM(filterFile(t, "any-sip-and-rtp.ddd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sport, dport uint16
		accept       bool
	}{{40000, 5060, true}, {5060, 40000, true}, {20000, 20002, true}, {40000, 7000, false}, {40000, 5061, false}} {
		n, err := vm.Run(sll2UDP(c.sport, c.dport))
		if err != nil || (n > 0) != c.accept {
			t.Errorf("%d -> %d: kept %d bytes (%v), want accepted %v", c.sport, c.dport, n, err, c.accept)
		}
	}
}

// TestFilterFileRefusesWhatIsNotAProgram: each mistake is refused with its
// line.
func TestFilterFileRefusesWhatIsNotAProgram(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", "empty"},
		{"udp port 5060\n", "line 1"},
		{"2\n6 0 0 262144\n", "1 instructions, 2 announced"},
		{"1\n6 0 0 262144\n6 0 0 0\n", "line 3"},
		{"1\n6 0 0 4294967296\n", "line 2"},
		{"1\n6 0 0\n", "line 2"},
		{"2\n32 0 0 4294963200\n6 0 0 1\n", "cannot run"}, // ld #proto: a kernel extension
		{"1\n40 0 0 12\n", "cannot run"},                  // no return
		{"5000\n", "line 1"},
	} {
		if _, err := ParseFilterFile(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.text, err, c.want)
		}
	}
}

// TestUserFilterRunsOnLiveFramesAsGiven captures on lo with tcpdump's
// program for `-i lo` 'udp port 5090': datagrams to 5090 are delivered,
// those to 5091 are rejected and counted, and no kernel filter runs.
func TestUserFilterRunsOnLiveFramesAsGiven(t *testing.T) {
	needRoot(t)
	marker := fmt.Sprintf("sipnab-userfilter-%d", time.Now().UnixNano())
	c := &collector{match: []byte(marker), until: []byte(marker + "-end"), seen: make(chan struct{})}
	capt, err := Start(context.Background(), Options{Device: "lo", UserFilter: filterFile(t, "lo-udp-5090.ddd")}, c)
	if err != nil {
		t.Fatal(err)
	}
	defer capt.Stop()
	send := func(port int, payload string) {
		conn, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = conn.Write([]byte(payload))
	}
	send(5091, marker+"-no")
	send(5090, marker+"-yes")
	send(5090, marker+"-end")
	waitSeen(t, c, marker+"-end")
	capt.Stop()
	for _, f := range c.get() {
		if strings.Contains(string(f.data), marker+"-no") {
			t.Error("a datagram to 5091 passed the filter")
		}
	}
	if n := len(c.get()); n != 2 {
		t.Errorf("%d frames with the marker, want 2", n)
	}
	st := capt.Stats()
	if st.Filter != "user" || st.UserFilterRejected == 0 {
		t.Errorf("stats %+v: want the user filter, rejections counted", st)
	}
}
