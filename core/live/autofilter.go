package live

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sipnab/sipnab/core/portrange"
)

// The automatic kernel filter (engine.md §1, auto BPF;
// docs/capture-sources.md): with no filter of the user's, a live capture
// asks the kernel for the SIP ports' traffic only, so a busy link's RTP and
// everything else never crosses into sipnab. It accepts a frame carrying
// UDP or TCP whose source or destination port is in the ranges, over IPv4
// or IPv6, behind at most two VLAN tags (802.1Q 0x8100, 802.1ad 0x88A8,
// legacy 0x9100), a PPPoE session (0x8864, PPP protocol 0x0021 IPv4 or
// 0x0057 IPv6; RFC 2516) or one or two MPLS labels (0x8847/0x8848; RFC
// 3032, the IP version read from the first nibble after the bottom of the
// stack), in any order those nest to (a VLAN carrying PPPoE or MPLS). It
// also accepts IPv4 and IPv6 fragments past the first (they carry no port,
// and a SIP message larger than the MTU needs them to be reassembled), and
// ICMP/ICMPv6 errors (icmpErrorTypes), the evidence of a closed port or an
// unreachable host.
// Everything else, RTP included, is dropped in the kernel: a live capture
// that must see media needs a filter of the user's that covers it.
//
// The program is built by hand (no libpcap, no cgo) and walks the
// ethertypes as the socket sees them: from the Ethernet header at offset 0
// on a raw socket, from the kernel's protocol field (the `ether proto`
// of a cooked capture: SKF_AD_PROTOCOL) with the network header at offset
// 0 on a cooked one. The kernel has already moved the outer VLAN tag of a
// received frame into metadata on both, so the walk sees the inner
// ethertype, or the inner tag of a QinQ frame.

// AutoFilterMaxRanges bounds the merged port ranges one filter checks
// (a few instructions each, twice per packet).
const AutoFilterMaxRanges = 48

// acceptBytes is what an accepting filter keeps of a frame: all of it (the
// socket's buffer and snap length cut it, not the filter).
const acceptBytes = 0x40000

// Ethertypes and IP protocols the filter walks.
const (
	etherIPv4   = 0x0800
	etherIPv6   = 0x86DD
	etherVLAN   = 0x8100
	etherQinQ   = 0x88A8
	etherQinQ91 = 0x9100
	etherPPPoES = 0x8864
	etherMPLS   = 0x8847
	etherMPLSMC = 0x8848
	pppIPv4     = 0x0021
	pppIPv6     = 0x0057
	ipUDP       = 17
	ipTCP       = 6
	ip6Frag     = 44
	ipICMP      = 1
	ipICMPv6    = 58
)

// The ICMP errors the filter keeps besides the ports: they quote the packet
// that caused them, and core/dialog ties them to its dialog
// (docs/icmp-and-tunnels.md). Destination unreachable, time exceeded and
// parameter problem (RFC 792); ICMPv6 destination unreachable, packet too
// big, time exceeded and parameter problem (RFC 4443 §3). Echo, neighbour
// discovery and the rest stay in the kernel.
var (
	icmpErrorTypes   = []uint32{3, 11, 12}
	icmpv6ErrorTypes = []uint32{1, 2, 3, 4}
)

// AutoFilter builds the automatic filter for a socket that delivers raw
// Ethernet frames (cooked false) or network-layer packets with the
// protocol in the socket's metadata (cooked true). ports are the SIP and
// WebSocket ranges (at least one, at most AutoFilterMaxRanges merged).
func AutoFilter(cooked bool, ports ...*portrange.Set) ([]unix.SockFilter, error) {
	prog, err := autoProgram(cooked, ports...)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("automatic filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// autoProgram is AutoFilter's program before assembly.
func autoProgram(cooked bool, ports ...*portrange.Set) ([]bpf.Instruction, error) {
	all := &portrange.Set{}
	for _, s := range ports {
		for _, r := range s.Ranges() {
			all.Add(r.Lo, r.Hi)
		}
	}
	ranges := all.Ranges()
	if len(ranges) == 0 {
		return nil, errors.New("automatic filter: no port to filter on")
	}
	if len(ranges) > AutoFilterMaxRanges {
		return nil, fmt.Errorf("automatic filter: %d port ranges, at most %d: give fewer ranges or a filter of your own", len(ranges), AutoFilterMaxRanges)
	}
	a := &asm{}
	if cooked {
		a.op(bpf.LoadExtension{Num: bpf.ExtProto})
		a.walk(0, 0)
	} else {
		a.op(bpf.LoadAbsolute{Off: 12, Size: 2})
		a.walk(0, 14)
	}
	a.emitQueued()
	// The shared port check: X holds the transport header's offset.
	a.label("ports")
	a.op(bpf.LoadIndirect{Off: 0, Size: 2})
	a.portChecks(ranges, "src")
	a.op(bpf.LoadIndirect{Off: 2, Size: 2})
	a.portChecks(ranges, "dst")
	a.op(bpf.RetConstant{Val: 0})
	a.label("accept")
	a.op(bpf.RetConstant{Val: acceptBytes})
	return a.resolve()
}

// asm is a small assembler with labels: conditional jumps reach labels at
// most 255 instructions ahead (the walk keeps them local), ja reaches any.
type asm struct {
	ins    []asmIns
	labels map[string]int
	queue  []func() // blocks emitted after the dispatch that jumps to them
	n      int      // labels made
}

type asmIns struct {
	op     bpf.Instruction
	cond   *bpf.JumpIf // jt/jf by label ("" = the next instruction)
	jt, jf string
	ja     string
}

func (a *asm) op(i bpf.Instruction) { a.ins = append(a.ins, asmIns{op: i}) }

func (a *asm) label(l string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[l] = len(a.ins)
}

func (a *asm) jif(cond bpf.JumpTest, val uint32, jt, jf string) {
	a.ins = append(a.ins, asmIns{cond: &bpf.JumpIf{Cond: cond, Val: val}, jt: jt, jf: jf})
}

func (a *asm) jump(l string) { a.ins = append(a.ins, asmIns{ja: l}) }

// block queues a labelled block to be emitted later.
func (a *asm) block(l string, emit func()) {
	a.queue = append(a.queue, func() { a.label(l); emit() })
}

// newLabel returns a label no other instruction has.
func (a *asm) newLabel(prefix string) string {
	a.n++
	return prefix + "." + strconv.Itoa(a.n)
}

func (a *asm) emitQueued() {
	for len(a.queue) > 0 {
		next := a.queue[0]
		a.queue = a.queue[1:]
		next()
	}
}

func (a *asm) resolve() ([]bpf.Instruction, error) {
	out := make([]bpf.Instruction, len(a.ins))
	target := func(i int, l string) (int, error) {
		if l == "" {
			return 0, nil
		}
		t, ok := a.labels[l]
		if !ok {
			return 0, fmt.Errorf("automatic filter: no label %s", l)
		}
		if t <= i {
			return 0, fmt.Errorf("automatic filter: jump back to %s", l)
		}
		return t - i - 1, nil
	}
	for i, x := range a.ins {
		switch {
		case x.cond != nil:
			jt, err := target(i, x.jt)
			if err != nil {
				return nil, err
			}
			jf, err := target(i, x.jf)
			if err != nil {
				return nil, err
			}
			if jt > 255 || jf > 255 {
				return nil, fmt.Errorf("automatic filter: conditional jump %d past 255 instructions", max(jt, jf))
			}
			j := *x.cond
			j.SkipTrue, j.SkipFalse = uint8(jt), uint8(jf)
			out[i] = j
		case x.ja != "":
			s, err := target(i, x.ja)
			if err != nil {
				return nil, err
			}
			out[i] = bpf.Jump{Skip: uint32(s)}
		default:
			out[i] = x.op
		}
	}
	if len(out) > 4096 {
		return nil, fmt.Errorf("automatic filter: %d instructions, over the kernel's 4096", len(out))
	}
	return out, nil
}

// walk dispatches on the ethertype in A whose payload starts at off, with
// depth VLAN tags already walked. Every block is a fresh copy with labels
// of its own: classic BPF jumps forward only, so no block is shared.
func (a *asm) walk(depth int, off uint32) {
	ip4, ip6, pppoe, mpls, vlan := a.newLabel("ip4"), a.newLabel("ip6"), a.newLabel("pppoe"), a.newLabel("mpls"), a.newLabel("vlan")
	s4, s6, sp, sm, sv := a.newLabel("j"), a.newLabel("j"), a.newLabel("j"), a.newLabel("j"), a.newLabel("j")
	a.jif(bpf.JumpEqual, etherIPv4, s4, "")
	a.jif(bpf.JumpEqual, etherIPv6, s6, "")
	a.jif(bpf.JumpEqual, etherPPPoES, sp, "")
	a.jif(bpf.JumpEqual, etherMPLS, sm, "")
	a.jif(bpf.JumpEqual, etherMPLSMC, sm, "")
	if depth < 2 {
		a.jif(bpf.JumpEqual, etherVLAN, sv, "")
		a.jif(bpf.JumpEqual, etherQinQ, sv, "")
		a.jif(bpf.JumpEqual, etherQinQ91, sv, "")
	}
	a.op(bpf.RetConstant{Val: 0})
	// local trampolines: the blocks are emitted later, past the 255 reach
	a.label(s4)
	a.jump(ip4)
	a.label(s6)
	a.jump(ip6)
	a.label(sp)
	a.jump(pppoe)
	a.label(sm)
	a.jump(mpls)
	if depth < 2 {
		a.label(sv)
		a.jump(vlan)
	}
	a.block(ip4, func() { a.ipv4(off) })
	a.block(ip6, func() { a.ipv6(off) })
	a.block(pppoe, func() {
		// PPPoE session header (6 bytes), then the PPP protocol
		j4, j6 := a.newLabel("j"), a.newLabel("j")
		b4, b6 := a.newLabel("ip4"), a.newLabel("ip6")
		a.op(bpf.LoadAbsolute{Off: off + 6, Size: 2})
		a.jif(bpf.JumpEqual, pppIPv4, j4, "")
		a.jif(bpf.JumpEqual, pppIPv6, j6, "")
		a.op(bpf.RetConstant{Val: 0})
		a.label(j4)
		a.jump(b4)
		a.label(j6)
		a.jump(b6)
		a.block(b4, func() { a.ipv4(off + 8) })
		a.block(b6, func() { a.ipv6(off + 8) })
	})
	a.block(mpls, func() {
		// one label; its bottom-of-stack bit is the low bit of byte 2
		second, none := a.newLabel("mpls2"), a.newLabel("drop")
		a.op(bpf.LoadAbsolute{Off: off + 2, Size: 1})
		a.jif(bpf.JumpBitsSet, 1, "", second)
		a.ipByVersion(off + 4)
		a.label(second)
		// a second label, which must be the bottom of the stack
		a.op(bpf.LoadAbsolute{Off: off + 6, Size: 1})
		a.jif(bpf.JumpBitsSet, 1, "", none)
		a.ipByVersion(off + 8)
		a.label(none)
		a.op(bpf.RetConstant{Val: 0})
	})
	if depth < 2 {
		a.block(vlan, func() {
			// the tag: TCI, then the next ethertype
			a.op(bpf.LoadAbsolute{Off: off + 2, Size: 2})
			a.walk(depth+1, off+4)
		})
	}
}

// ipByVersion jumps to an IPv4 or IPv6 block at off by the first nibble
// (after an MPLS stack), or drops the frame.
func (a *asm) ipByVersion(off uint32) {
	j4, j6, b4, b6 := a.newLabel("j"), a.newLabel("j"), a.newLabel("ip4"), a.newLabel("ip6")
	a.op(bpf.LoadAbsolute{Off: off, Size: 1})
	a.op(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf0})
	a.jif(bpf.JumpEqual, 0x40, j4, "")
	a.jif(bpf.JumpEqual, 0x60, j6, "")
	a.op(bpf.RetConstant{Val: 0})
	a.label(j4)
	a.jump(b4)
	a.label(j6)
	a.jump(b6)
	a.block(b4, func() { a.ipv4(off) })
	a.block(b6, func() { a.ipv6(off) })
}

// ipv4 checks an IPv4 header at off: UDP or TCP, a first fragment (or a
// later one: accepted), then the ports past its IHL.
func (a *asm) ipv4(off uint32) {
	l4, frag, icmp := a.newLabel("l4"), a.newLabel("frag"), a.newLabel("icmp")
	a.op(bpf.LoadAbsolute{Off: off + 9, Size: 1})
	a.jif(bpf.JumpEqual, ipUDP, l4, "")
	a.jif(bpf.JumpEqual, ipTCP, l4, "")
	a.jif(bpf.JumpEqual, ipICMP, icmp, "")
	a.op(bpf.RetConstant{Val: 0})
	a.label(icmp)
	// the ICMP type, past the IHL
	a.op(bpf.LoadMemShift{Off: off})
	a.op(bpf.LoadIndirect{Off: off, Size: 1})
	a.acceptTypes(icmpErrorTypes)
	a.label(l4)
	a.op(bpf.LoadAbsolute{Off: off + 6, Size: 2})
	a.jif(bpf.JumpBitsSet, 0x1fff, frag, "")
	a.op(bpf.LoadMemShift{Off: off})
	a.op(bpf.TXA{})
	a.op(bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: off})
	a.op(bpf.TAX{})
	a.jump("ports")
	a.label(frag)
	a.op(bpf.RetConstant{Val: acceptBytes})
}

// ipv6 checks an IPv6 header at off: UDP or TCP directly or behind a
// fragment header (a fragment past the first is accepted), then the ports.
func (a *asm) ipv6(off uint32) {
	l4, fh, later, l4f, icmp := a.newLabel("l4"), a.newLabel("fh"), a.newLabel("frag"), a.newLabel("l4f"), a.newLabel("icmp")
	a.op(bpf.LoadAbsolute{Off: off + 6, Size: 1})
	a.jif(bpf.JumpEqual, ipUDP, l4, "")
	a.jif(bpf.JumpEqual, ipTCP, l4, "")
	a.jif(bpf.JumpEqual, ip6Frag, fh, "")
	a.jif(bpf.JumpEqual, ipICMPv6, icmp, "")
	a.op(bpf.RetConstant{Val: 0})
	a.label(icmp)
	// ICMPv6 straight after the fixed header (an error is not sent behind
	// extension headers in practice; one that is stays in the kernel)
	a.op(bpf.LoadAbsolute{Off: off + 40, Size: 1})
	a.acceptTypes(icmpv6ErrorTypes)
	a.label(l4)
	a.op(bpf.LoadConstant{Dst: bpf.RegX, Val: off + 40})
	a.jump("ports")
	a.label(fh)
	// fragment header (RFC 8200 §4.5): offset in the top 13 bits
	a.op(bpf.LoadAbsolute{Off: off + 42, Size: 2})
	a.jif(bpf.JumpBitsSet, 0xfff8, later, "")
	a.op(bpf.LoadAbsolute{Off: off + 40, Size: 1})
	a.jif(bpf.JumpEqual, ipUDP, l4f, "")
	a.jif(bpf.JumpEqual, ipTCP, l4f, "")
	a.op(bpf.RetConstant{Val: 0})
	a.label(l4f)
	a.op(bpf.LoadConstant{Dst: bpf.RegX, Val: off + 48})
	a.jump("ports")
	a.label(later)
	a.op(bpf.RetConstant{Val: acceptBytes})
}

// acceptTypes accepts when A is one of types and drops the frame otherwise
// (a local accept: the shared one may lie past a conditional jump's reach).
func (a *asm) acceptTypes(types []uint32) {
	acc := a.newLabel("acc")
	for _, t := range types {
		a.jif(bpf.JumpEqual, t, acc, "")
	}
	a.op(bpf.RetConstant{Val: 0})
	a.label(acc)
	a.op(bpf.RetConstant{Val: acceptBytes})
}

// portChecks accepts when A is in one of the ranges, else falls through.
func (a *asm) portChecks(ranges []portrange.Range, side string) {
	for _, r := range ranges {
		next := a.newLabel(side)
		if r.Lo == r.Hi {
			a.jif(bpf.JumpEqual, uint32(r.Lo), "accept", "")
			continue
		}
		a.jif(bpf.JumpGreaterOrEqual, uint32(r.Lo), "", next)
		a.jif(bpf.JumpGreaterThan, uint32(r.Hi), next, "accept")
		a.label(next)
	}
}
