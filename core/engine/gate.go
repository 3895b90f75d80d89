package engine

import (
	"sort"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/portrange"
)

// PortGate restricts which SIP the router analyses (engine.md §1, port
// gate; docs/capture-sources.md): a SIP-looking payload whose source and
// destination ports are both outside SIP (and, for SIP over WebSocket,
// both outside SIP and WS) is not parsed, not applied to the dialog store
// and not handed to media, but counted under the lower of its two ports
// (usually the server's) and reported as not analysed. SIP a HEP envelope
// carried is never gated: the HEP agent chose what to send; nor is SIP a
// TLS uprobe read, whose ports are placeholders (core/tlsprobe) and whose
// operator chose the library. Media is never gated.
type PortGate struct {
	// SIP are the SIP ports (--portrange). A nil set admits nothing.
	SIP *portrange.Set
	// WS are the WebSocket ports (--ws-portrange): SIP over WebSocket on
	// them is analysed too.
	WS *portrange.Set
}

// MaxGatedPorts bounds the ports the gate names; messages on further ports
// are counted in NotAnalyzed.PortsDropped (the sum stays whole).
const MaxGatedPorts = 256

// admits reports whether the gate lets p's SIP through.
func (g *PortGate) admits(p *packet.Packet) bool {
	if p.Origin == packet.OriginHEP || p.Origin == packet.OriginUprobe {
		return true
	}
	s, d := p.Src.Port(), p.Dst.Port()
	if g.SIP.Contains(s) || g.SIP.Contains(d) {
		return true
	}
	ws := p.Transport == packet.TransportWS || p.Transport == packet.TransportWSS
	return ws && (g.WS.Contains(s) || g.WS.Contains(d))
}

// gateTally is the gate's count (under wmu).
type gateTally struct {
	messages uint64
	ports    map[uint16]uint64 // at most MaxGatedPorts keys
	dropped  uint64
}

// note counts one gated payload under its lower port.
func (t *gateTally) note(p *packet.Packet) {
	t.messages++
	port := min(p.Src.Port(), p.Dst.Port())
	if n, ok := t.ports[port]; ok {
		t.ports[port] = n + 1
		return
	}
	if t.ports == nil {
		t.ports = map[uint16]uint64{}
	}
	if len(t.ports) >= MaxGatedPorts {
		t.dropped++
		return
	}
	t.ports[port] = 1
}

// NotAnalyzed is the port gate's account: SIP seen on neither the SIP nor
// (for WebSocket) the WebSocket ports, counted, named by port, not
// analysed. Present whenever a gate is set (zero counts: looked, none).
type NotAnalyzed struct {
	// SIPPortRange and WSPortRange are the gate's ports.
	SIPPortRange string `json:"sip_portrange"`
	WSPortRange  string `json:"ws_portrange"`
	// SIPMessages counts SIP-looking payloads not analysed (a datagram
	// carrying several SIP messages counts once).
	SIPMessages uint64 `json:"sip_messages"`
	// Ports names them by the lower of their two ports, busiest first
	// (then by port), at most MaxGatedPorts.
	Ports []PortCount `json:"ports"`
	// PortsDropped counts those on ports past the table.
	PortsDropped uint64 `json:"ports_dropped,omitempty"`
}

// PortCount is a port and the SIP payloads not analysed on it.
type PortCount struct {
	Port        uint16 `json:"port"`
	SIPMessages uint64 `json:"sip_messages"`
}

// notAnalyzed reads the gate's account (wmu held); nil without a gate.
func (c *Capture) notAnalyzed() *NotAnalyzed {
	g := c.cfg.Gate
	if g == nil {
		return nil
	}
	t := &c.gated
	na := &NotAnalyzed{SIPPortRange: g.SIP.String(), WSPortRange: g.WS.String(),
		SIPMessages: t.messages, PortsDropped: t.dropped, Ports: make([]PortCount, 0, len(t.ports))}
	for p, n := range t.ports {
		na.Ports = append(na.Ports, PortCount{Port: p, SIPMessages: n})
	}
	sort.Slice(na.Ports, func(i, j int) bool {
		a, b := na.Ports[i], na.Ports[j]
		if a.SIPMessages != b.SIPMessages {
			return a.SIPMessages > b.SIPMessages
		}
		return a.Port < b.Port
	})
	return na
}
