package engine

import (
	"net"
	"net/netip"

	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/packet"
)

// A host that captures live and receives HEP at once (-i any -L ...) sees
// every HEP datagram twice: the listener receives it, and the live capture
// sees it on the wire on its way to the listener. Routing both would count
// every HEP message twice in sip_messages, the second copy as a capture
// duplicate (core/dialog/dup.go). The listener is the datagram's door: a
// live packet addressed to a running listener of this capture is skipped
// and counted (Status.HEP.OwnListenerSkipped). An envelope bound for
// another collector is routed: its message is then a capture duplicate of
// the copy the listener received, if that agent also sends here.

// selfAddr is one address a running HEP listener of this capture receives
// on.
type selfAddr struct {
	transport packet.Transport
	addr      netip.AddrPort
	// local holds the host's addresses when the listener is bound to the
	// unspecified address (0.0.0.0 or ::): it receives on any of them.
	local map[netip.Addr]bool
	done  <-chan struct{} // closed when the listener stops
}

// watchListener records the addresses a listener receives on (wmu held).
func (c *Capture) watchListener(l *heplisten.Listener) {
	add := func(tr packet.Transport, a netip.AddrPort) {
		if !a.IsValid() {
			return
		}
		sa := selfAddr{transport: tr, addr: netip.AddrPortFrom(a.Addr().Unmap(), a.Port()), done: l.Done()}
		if a.Addr().IsUnspecified() {
			sa.local = localAddrs()
		}
		c.self = append(c.self, sa)
	}
	add(packet.TransportUDP, l.UDPAddr())
	add(packet.TransportTCP, l.TCPAddr())
}

// localAddrs returns the host's interface addresses (loopback included).
func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{netip.MustParseAddr("127.0.0.1"): true, netip.IPv6Loopback(): true}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap()] = true
		}
	}
	return out
}

// toOwnListener reports whether a live packet is addressed to a running
// HEP listener of this capture (wmu held).
func (c *Capture) toOwnListener(p *packet.Packet) bool {
	dst := netip.AddrPortFrom(p.Dst.Addr().Unmap(), p.Dst.Port())
	for i := range c.self {
		sa := &c.self[i]
		if sa.transport != p.Transport || sa.addr.Port() != dst.Port() {
			continue
		}
		if sa.local != nil {
			if !sa.local[dst.Addr()] {
				continue
			}
		} else if sa.addr.Addr() != dst.Addr() {
			continue
		}
		select {
		case <-sa.done:
			continue // stopped: nobody receives it but the live capture
		default:
		}
		return true
	}
	return false
}

// routeLive is the live sources' sink: the router, less the packets a
// running HEP listener of this capture receives itself (wmu held).
func (c *Capture) routeLive(p *packet.Packet) {
	if len(c.self) > 0 && c.toOwnListener(p) {
		c.pend.ownListener++
		return
	}
	if c.sendTo.addr.IsValid() && c.sendTo.matches(p) {
		c.pend.ownSender++
		return
	}
	c.routeLocked(p)
}
