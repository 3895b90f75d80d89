package live

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// vlanFrame is a broadcast Ethernet frame tagged with VLAN 100 carrying an
// IPv4/UDP datagram whose payload is marker (checksums are not checked by
// the capture).
func vlanFrame(marker string) []byte {
	f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x81, 0x00, 0x00, 100, 0x08, 0x00}
	ip := make([]byte, 20+8+len(marker))
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{198, 19, 0, 2})
	copy(ip[16:], []byte{198, 19, 0, 1})
	binary.BigEndian.PutUint16(ip[20:], 5060)
	binary.BigEndian.PutUint16(ip[22:], 5060)
	binary.BigEndian.PutUint16(ip[24:], uint16(8+len(marker)))
	copy(ip[28:], marker)
	return append(f, ip...)
}

// sendVLANHelper runs in the test's namespace (LIVE_HELPER=sendvlan): it
// writes tagged frames raw onto a device.
func sendVLANHelper() error {
	frame := vlanFrame(os.Getenv("LIVE_MARKER"))
	return sendRaw(os.Getenv("LIVE_DEV"), func(send func([]byte) error) error {
		for i := 0; i < 3; i++ {
			if err := send(frame); err != nil {
				return err
			}
		}
		return nil
	})
}

// sendRaw opens a raw packet socket and hands fill a function that writes
// one whole Ethernet frame onto dev (broadcast), for the helpers the live
// tests run inside their namespaces.
func sendRaw(dev string, fill func(send func([]byte) error) error) error {
	ifc, err := net.InterfaceByName(dev)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	to := &unix.SockaddrLinklayer{Ifindex: ifc.Index, Halen: 6, Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	return fill(func(f []byte) error { return unix.Sendto(fd, f, 0, to) })
}

// TestVLANTagReinserted writes 802.1Q-tagged frames into one end of a veth
// pair (from a namespace made for the test); the receiving end's kernel
// moves the tag into packet metadata, and the capture on that end must put
// it back into raw and cooked frames.
func TestVLANTagReinserted(t *testing.T) {
	if os.Getenv("LIVE_HELPER") == "sendvlan" {
		if err := sendVLANHelper(); err != nil {
			fmt.Println("helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	ns, va, vb := vethPair(t, 1, "snb-vlan", "snv")

	for _, cooked := range []bool{false, true} {
		t.Run(fmt.Sprintf("cooked=%v", cooked), func(t *testing.T) {
			marker := fmt.Sprintf("sipnab-vlan-%d-%v", time.Now().UnixNano(), cooked)
			c := &collector{match: []byte(marker), until: []byte(marker), seen: make(chan struct{})}
			capt, err := Start(context.Background(), Options{Device: va, Cooked: cooked}, c)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestVLANTagReinserted$")
			cmd.Env = append(os.Environ(), "LIVE_HELPER=sendvlan", "LIVE_DEV="+vb, "LIVE_MARKER="+marker)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("sending tagged frames: %v\n%s", err, out)
			}
			waitSeen(t, c, marker)
			capt.Stop()
			want := vlanFrame(marker)
			f := c.get()[0]
			if cooked {
				if p := binary.BigEndian.Uint16(f.data[0:2]); p != 0x8100 {
					t.Fatalf("SLL2 protocol 0x%04x, want 0x8100", p)
				}
				if hw := binary.BigEndian.Uint16(f.data[8:10]); hw != 1 {
					t.Fatalf("SLL2 hardware type %d, want 1", hw)
				}
				if !bytes.Equal(f.data[20:], want[14:]) {
					t.Fatalf("cooked frame after the header:\n% x\nwant\n% x", f.data[20:], want[14:])
				}
			} else if !bytes.Equal(f.data, want) {
				t.Fatalf("raw frame:\n% x\nwant\n% x", f.data, want)
			}
			if f.orig != len(f.data) {
				t.Fatalf("orig %d, captured %d", f.orig, len(f.data))
			}
			if st := capt.Stats(); st.VLANTagsRestored == 0 {
				t.Fatalf("stats %+v: no tag was restored (the kernel kept it in the frame?)", st)
			}
		})
	}
}

// vethPair makes a network namespace and a veth pair for one test (root and
// iproute2 needed, else the test is skipped), removed when it ends: va
// stays here, up; vb is up inside ns. offset keeps the names of tests that
// run at once apart.
func vethPair(t *testing.T, offset int, nsPrefix, linkPrefix string) (ns, va, vb string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace and capture; skipped")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2); skipped")
	}
	id := (os.Getpid() + offset) % 10000
	ns = fmt.Sprintf("%s-%d", nsPrefix, id)
	va, vb = fmt.Sprintf("%s%da", linkPrefix, id), fmt.Sprintf("%s%db", linkPrefix, id)
	ipCmd(t, "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	ipCmd(t, "link", "add", va, "type", "veth", "peer", "name", vb)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", va).Run() })
	ipCmd(t, "link", "set", vb, "netns", ns)
	ipCmd(t, "link", "set", va, "up")
	ipCmd(t, "-n", ns, "link", "set", vb, "up")
	return ns, va, vb
}
