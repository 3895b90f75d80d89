package live

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("live capture tests need root (or CAP_NET_RAW); skipped")
	}
}

type frameCopy struct {
	ts      time.Time
	lt      uint16
	data    []byte
	orig    int
	source  string
	ordinal uint64
}

type collector struct {
	mu     sync.Mutex
	frames []frameCopy
	match  []byte // keep only frames containing this (nil: all)
	seen   chan struct{}
	until  []byte // close seen when a frame contains this
	once   sync.Once
}

func (c *collector) HandleFrame(f *packet.Frame) {
	if c.until != nil && bytes.Contains(f.Data, c.until) {
		c.once.Do(func() { close(c.seen) })
	}
	if c.match != nil && !bytes.Contains(f.Data, c.match) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames = append(c.frames, frameCopy{ts: f.TS, lt: f.LinkType, data: append([]byte(nil), f.Data...), orig: f.OrigLen, source: f.Source, ordinal: f.Ordinal})
}

func (c *collector) get() []frameCopy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]frameCopy(nil), c.frames...)
}

func waitSeen(t *testing.T, c *collector, what string) {
	t.Helper()
	select {
	case <-c.seen:
	case <-time.After(15 * time.Second):
		t.Fatalf("no frame with %s captured", what)
	}
}

// sendUDP sends each payload to a listening loopback socket.
func sendUDP(t *testing.T, payloads ...string) {
	t.Helper()
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.DialUDP("udp", nil, ln.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range payloads {
		if _, err := c.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoopbackDevices(t *testing.T) {
	needRoot(t)
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skip("no lo interface")
	}
	cases := []struct {
		name   string
		opts   Options
		wantLT uint16
	}{
		{"named lo raw", Options{Device: "lo", Snaplen: SnaplenSignaling}, LinkTypeEthernet},
		{"named lo cooked", Options{Device: "lo", Cooked: true}, LinkTypeSLL2},
		{"any", Options{}, LinkTypeSLL2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			marker := fmt.Sprintf("sipnab-live-%d-%s", time.Now().UnixNano(), strings.ReplaceAll(tc.name, " ", "-"))
			c := &collector{match: []byte(marker), until: []byte(marker + "-end"), seen: make(chan struct{})}
			capt, err := Start(context.Background(), tc.opts, c)
			if err != nil {
				t.Fatal(err)
			}
			sendUDP(t, marker+"-one", marker+"-end")
			waitSeen(t, c, marker+"-end")
			if err := capt.Stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}
			st := capt.Stats()
			frames := c.get()
			// each datagram once: the loopback's outgoing copy is skipped
			if len(frames) != 2 {
				t.Fatalf("got %d frames with the marker, want 2 (one per datagram)", len(frames))
			}
			if st.Received < 2 || capt.Handle().LinkType() != tc.wantLT {
				t.Fatalf("stats %+v link type %d", st, capt.Handle().LinkType())
			}
			f := frames[0]
			if f.lt != tc.wantLT || f.source != capt.Handle().Device() || f.ordinal == 0 {
				t.Fatalf("got link type %d source %q ordinal %d", f.lt, f.source, f.ordinal)
			}
			if d := time.Since(f.ts); d < 0 || d > time.Minute {
				t.Fatalf("frame timestamp %v is not the kernel's recent time", f.ts)
			}
			payloadLen := len(marker) + len("-one")
			var ipOff int
			switch tc.wantLT {
			case LinkTypeEthernet:
				if et := binary.BigEndian.Uint16(f.data[12:14]); et != 0x0800 {
					t.Fatalf("ethertype 0x%04x, want 0x0800", et)
				}
				ipOff = 14
			case LinkTypeSLL2:
				if p := binary.BigEndian.Uint16(f.data[0:2]); p != 0x0800 {
					t.Fatalf("SLL2 protocol 0x%04x, want 0x0800", p)
				}
				if idx := binary.BigEndian.Uint32(f.data[4:8]); int(idx) != lo.Index {
					t.Fatalf("SLL2 ifindex %d, want lo's %d", idx, lo.Index)
				}
				if hw := binary.BigEndian.Uint16(f.data[8:10]); hw != 772 {
					t.Fatalf("SLL2 hardware type %d, want 772 (loopback)", hw)
				}
				ipOff = 20
			}
			if len(f.data) != ipOff+20+8+payloadLen || f.orig != len(f.data) {
				t.Fatalf("frame has %d bytes (orig %d), want %d", len(f.data), f.orig, ipOff+20+8+payloadLen)
			}
			if !bytes.HasSuffix(f.data, []byte(marker+"-one")) {
				t.Fatal("frame does not end with the datagram's payload")
			}
			if !st.KernelStats || st.KernelPackets < 2 {
				t.Fatalf("kernel stats %+v, want readable with at least 2 packets", st)
			}
		})
	}
}

func TestSnaplen(t *testing.T) {
	needRoot(t)
	marker := fmt.Sprintf("sipnab-snap-%d", time.Now().UnixNano())
	c := &collector{match: []byte(marker), until: []byte(marker), seen: make(chan struct{})}
	capt, err := Start(context.Background(), Options{Device: "lo", Snaplen: 200}, c)
	if err != nil {
		t.Fatal(err)
	}
	big := marker + strings.Repeat("x", 1000)
	sendUDP(t, big)
	waitSeen(t, c, marker)
	capt.Stop()
	f := c.get()[0]
	want := 14 + 20 + 8 + len(big)
	if len(f.data) != 200 || f.orig != want {
		t.Fatalf("got %d captured of %d, want 200 of %d", len(f.data), f.orig, want)
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(Options{Device: "nosuchdev0"})
	if err == nil || err.Error() != "opening live capture on nosuchdev0: no such device" {
		t.Fatalf("got %v, want a no-such-device error", err)
	}
}

// TestPermissionDenied re-runs this test binary as an unprivileged user and
// checks the error it reports.
func TestPermissionDenied(t *testing.T) {
	if os.Getenv("LIVE_HELPER") == "perm" {
		_, err := Open(Options{Device: "lo"})
		if err == nil {
			fmt.Println("opened")
			os.Exit(0)
		}
		fmt.Println(err.Error())
		os.Exit(0)
	}
	needRoot(t)
	dir, err := os.MkdirTemp("", "sipnab-live-perm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "live.test")
	src, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestPermissionDenied$")
	cmd.Env = append(os.Environ(), "LIVE_HELPER=perm")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("cannot run a helper as an unprivileged user here: %v (%s)", err, out)
	}
	want := "opening live capture on lo: permission denied (needs root or CAP_NET_RAW)"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
