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

	"golang.org/x/net/bpf"

	"github.com/sipnab/sipnab/core/portrange"
)

// filterCase is one frame the automatic filter judges: its encapsulation
// (outermost first), IP version, transport, ports, and the verdict for the
// SIP ports 5060-5061 and the WebSocket ports 80,443,8080,8443.
type filterCase struct {
	name  string
	encap []string // "vlan", "qinq" (0x88A8 then 0x8100), "pppoe", "mpls1", "mpls2", "arp"
	v6    bool
	tcp   bool
	sport uint16
	dport uint16
	later bool // a fragment past the first
	ihl   int  // IPv4 header words (0: 5)
	icmp  bool // an ICMP (v4) or ICMPv6 (v6) message of icmpType instead of UDP/TCP
	// icmpType is the ICMP type when icmp is set.
	icmpType byte
	accept   bool
}

var filterCases = []filterCase{
	{name: "v4 udp to 5060", sport: 40000, dport: 5060, accept: true},
	{name: "v4 udp from 5061", sport: 5061, dport: 40000, accept: true},
	{name: "v4 udp to 5062", sport: 40000, dport: 5062},
	{name: "v4 udp rtp", sport: 16384, dport: 16386},
	{name: "v4 tcp to 5060", tcp: true, sport: 40000, dport: 5060, accept: true},
	{name: "v4 tcp to 8443 (websocket)", tcp: true, sport: 40000, dport: 8443, accept: true},
	{name: "v4 options udp to 5060", ihl: 6, sport: 40000, dport: 5060, accept: true},
	{name: "v4 later fragment", later: true, sport: 1, dport: 1, accept: true},
	{name: "v6 udp to 5060", v6: true, sport: 40000, dport: 5060, accept: true},
	{name: "v6 tcp from 5061", v6: true, tcp: true, sport: 5061, dport: 40000, accept: true},
	{name: "v6 udp to 7000", v6: true, sport: 40000, dport: 7000},
	{name: "v6 later fragment", v6: true, later: true, sport: 1, dport: 1, accept: true},
	{name: "vlan v4 udp to 5060", encap: []string{"vlan"}, sport: 40000, dport: 5060, accept: true},
	{name: "vlan v4 udp to 7000", encap: []string{"vlan"}, sport: 40000, dport: 7000},
	{name: "qinq v6 udp to 5060", encap: []string{"qinq"}, v6: true, sport: 40000, dport: 5060, accept: true},
	{name: "pppoe v4 udp to 5060", encap: []string{"pppoe"}, sport: 40000, dport: 5060, accept: true},
	{name: "pppoe v6 udp to 5060", encap: []string{"pppoe"}, v6: true, sport: 40000, dport: 5060, accept: true},
	{name: "pppoe v4 udp to 7000", encap: []string{"pppoe"}, sport: 40000, dport: 7000},
	{name: "vlan pppoe v4 tcp to 5060", encap: []string{"vlan", "pppoe"}, tcp: true, sport: 40000, dport: 5060, accept: true},
	{name: "mpls1 v4 udp to 5060", encap: []string{"mpls1"}, sport: 40000, dport: 5060, accept: true},
	{name: "mpls2 v6 udp to 5061", encap: []string{"mpls2"}, v6: true, sport: 40000, dport: 5061, accept: true},
	{name: "mpls2 v4 udp to 7000", encap: []string{"mpls2"}, sport: 40000, dport: 7000},
	{name: "vlan mpls1 v4 udp to 5060", encap: []string{"vlan", "mpls1"}, sport: 40000, dport: 5060, accept: true},
	{name: "arp", encap: []string{"arp"}},
	{name: "v4 icmp port unreachable", icmp: true, icmpType: 3, accept: true},
	{name: "v4 icmp time exceeded", icmp: true, icmpType: 11, accept: true},
	{name: "v4 options icmp port unreachable", ihl: 6, icmp: true, icmpType: 3, accept: true},
	{name: "v4 icmp echo request", icmp: true, icmpType: 8},
	{name: "v6 icmpv6 destination unreachable", v6: true, icmp: true, icmpType: 1, accept: true},
	{name: "v6 icmpv6 packet too big", v6: true, icmp: true, icmpType: 2, accept: true},
	{name: "v6 icmpv6 echo request", v6: true, icmp: true, icmpType: 128},
	{name: "v6 icmpv6 neighbour solicitation", v6: true, icmp: true, icmpType: 135},
	{name: "vlan v4 icmp port unreachable", encap: []string{"vlan"}, icmp: true, icmpType: 3, accept: true},
}

// filterFrame builds a case's Ethernet frame carrying marker.
func filterFrame(c filterCase, marker string) []byte {
	var l4 []byte
	if c.icmp {
		l4 = []byte{c.icmpType, 3, 0, 0, 0, 0, 0, 0} // type, code, checksum, unused
	} else if c.tcp {
		l4 = make([]byte, 20)
		l4[12] = 5 << 4
	} else {
		l4 = make([]byte, 8)
		binary.BigEndian.PutUint16(l4[4:], uint16(8+len(marker)))
	}
	if !c.icmp {
		binary.BigEndian.PutUint16(l4[0:], c.sport)
		binary.BigEndian.PutUint16(l4[2:], c.dport)
	}
	l4 = append(l4, marker...)
	proto := byte(17)
	switch {
	case c.icmp && c.v6:
		proto = 58
	case c.icmp:
		proto = 1
	case c.tcp:
		proto = 6
	}
	var ip []byte
	ether := uint16(0x0800)
	if c.v6 {
		ether = 0x86DD
		ip = make([]byte, 40)
		ip[0] = 0x60
		ip[6], ip[7] = proto, 64
		if c.later {
			ip[6] = 44
			fh := make([]byte, 8)
			fh[0] = proto
			binary.BigEndian.PutUint16(fh[2:], 100<<3)
			ip = append(ip, fh...)
		}
		binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40+len(l4)))
		copy(ip[8:], net.ParseIP("2001:db8::1"))
		copy(ip[24:], net.ParseIP("2001:db8::2"))
	} else {
		ihl := max(c.ihl, 5)
		ip = make([]byte, ihl*4)
		ip[0] = 0x40 | byte(ihl)
		ip[8], ip[9] = 64, proto
		if c.later {
			binary.BigEndian.PutUint16(ip[6:], 100)
		}
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+len(l4)))
		copy(ip[12:], []byte{198, 19, 0, 2})
		copy(ip[16:], []byte{198, 19, 0, 1})
	}
	body := append(ip, l4...)
	for i := len(c.encap) - 1; i >= 0; i-- {
		switch c.encap[i] {
		case "vlan":
			body = append(binary.BigEndian.AppendUint16([]byte{0x00, 100}, ether), body...)
			ether = 0x8100
		case "qinq":
			inner := append(binary.BigEndian.AppendUint16([]byte{0x00, 100}, ether), body...)
			body = append([]byte{0x00, 200, 0x81, 0x00}, inner...)
			ether = 0x88A8
		case "pppoe":
			ppp := uint16(0x0021)
			if ether == 0x86DD {
				ppp = 0x0057
			}
			h := []byte{0x11, 0x00, 0x12, 0x34, 0, 0}
			binary.BigEndian.PutUint16(h[4:], uint16(2+len(body)))
			body = append(binary.BigEndian.AppendUint16(h, ppp), body...)
			ether = 0x8864
		case "mpls1":
			body = append([]byte{0x00, 0x01, 0x01, 64}, body...) // label 16, bottom of stack
			ether = 0x8847
		case "mpls2":
			body = append([]byte{0x00, 0x01, 0x00, 64, 0x00, 0x02, 0x01, 64}, body...)
			ether = 0x8847
		case "arp":
			body = append([]byte{0, 1, 8, 0, 6, 4, 0, 1}, marker...)
			ether = 0x0806
		}
	}
	f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1}
	f = binary.BigEndian.AppendUint16(f, ether)
	return append(f, body...)
}

var (
	testSIP = portrange.MustParse(portrange.DefaultSIP)
	testWS  = portrange.MustParse(portrange.DefaultWS)
)

// TestAutoFilterJudgesEachEncapsulationInTheVM runs the raw (Ethernet)
// program in x/net/bpf's virtual machine over frames whose tags are still
// in the data, as a capture of a trunk port delivers them.
func TestAutoFilterJudgesEachEncapsulationInTheVM(t *testing.T) {
	prog, err := autoProgram(false, testSIP, testWS)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("raw program: %d instructions", len(prog))
	for _, c := range filterCases {
		n, err := vm.Run(filterFrame(c, "sipnab-vm-marker"))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := n > 0; got != c.accept {
			t.Errorf("%s: accepted %v, want %v", c.name, got, c.accept)
		}
	}
}

// TestAutoFilterRefusesWhatItCannotCheck: no ports, or more merged ranges
// than AutoFilterMaxRanges.
func TestAutoFilterRefusesWhatItCannotCheck(t *testing.T) {
	if _, err := AutoFilter(false); err == nil {
		t.Error("no ports: want an error")
	}
	many := &portrange.Set{}
	for i := 0; i <= AutoFilterMaxRanges; i++ {
		many.Add(uint16(10000+3*i), uint16(10000+3*i))
	}
	if _, err := AutoFilter(true, many); err == nil || !strings.Contains(err.Error(), "port ranges") {
		t.Errorf("too many ranges: %v", err)
	}
	at := &portrange.Set{}
	for i := 0; i < AutoFilterMaxRanges; i++ {
		at.Add(uint16(10000+3*i), uint16(10001+3*i))
	}
	for _, cooked := range []bool{false, true} {
		if p, err := AutoFilter(cooked, at); err != nil || len(p) > 4096 {
			t.Errorf("cooked=%v at the cap: %d instructions, %v", cooked, len(p), err)
		}
	}
}

// sendFramesHelper runs in the test's namespace (LIVE_HELPER=sendframes):
// it writes every filter case's frame, then an end frame, raw onto a
// device.
func sendFramesHelper() error {
	marker := os.Getenv("LIVE_MARKER")
	return sendRaw(os.Getenv("LIVE_DEV"), func(send func([]byte) error) error {
		for i, c := range filterCases {
			if err := send(filterFrame(c, fmt.Sprintf("%s-%02d-", marker, i))); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
		}
		return send(filterFrame(filterCase{sport: 40000, dport: 5060}, marker+"-end"))
	})
}

// TestAutoFilterInTheKernel attaches the automatic filter to a live
// capture on one end of a veth pair, raw and cooked, and writes every
// filter case's frame into the other end (in a namespace made for the
// test): the frames the kernel hands the capture are exactly the accepted
// cases. The receiving kernel moves the outer VLAN tag into metadata, so
// this runs the walk as a real capture meets it.
func TestAutoFilterInTheKernel(t *testing.T) {
	if os.Getenv("LIVE_HELPER") == "sendframes" {
		if err := sendFramesHelper(); err != nil {
			fmt.Println("helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	ns, va, vb := vethPair(t, 2, "snb-bpf", "snf")

	for _, cooked := range []bool{false, true} {
		t.Run(fmt.Sprintf("cooked=%v", cooked), func(t *testing.T) {
			prog, err := AutoFilter(cooked, testSIP, testWS)
			if err != nil {
				t.Fatal(err)
			}
			marker := fmt.Sprintf("sipnab-bpf-%d-%v", time.Now().UnixNano(), cooked)
			c := &collector{match: []byte(marker), until: []byte(marker + "-end"), seen: make(chan struct{})}
			capt, err := Start(context.Background(), Options{Device: va, Cooked: cooked, Filter: prog}, c)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestAutoFilterInTheKernel$")
			cmd.Env = append(os.Environ(), "LIVE_HELPER=sendframes", "LIVE_DEV="+vb, "LIVE_MARKER="+marker)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("sending frames: %v\n%s", err, out)
			}
			waitSeen(t, c, marker+"-end")
			capt.Stop()
			got := map[int]bool{}
			for _, f := range c.get() {
				for i := range filterCases {
					if bytes.Contains(f.data, []byte(fmt.Sprintf("%s-%02d-", marker, i))) {
						got[i] = true
					}
				}
			}
			for i, fc := range filterCases {
				if got[i] != fc.accept {
					t.Errorf("%s: captured %v, want %v", fc.name, got[i], fc.accept)
				}
			}
		})
	}
}
