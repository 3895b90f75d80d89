package engine

import (
	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/packet"
)

// ICMP errors (engine.md §2, §11): the decoder hands every ICMP/ICMPv6
// error with the packet it quotes to onICMP, on the router's goroutine with
// wmu held, and the dialog store ties it to the dialog whose message it
// quotes (core/dialog/icmp.go). Nothing runs for a frame that is not an
// ICMP error.

// withICMP returns the decoder configuration of the router's decoders: cfg
// with onICMP called after any callback cfg already had.
func (c *Capture) withICMP(cfg decode.Config) decode.Config {
	prev := cfg.OnICMPError
	cfg.OnICMPError = func(e *decode.ICMPError) {
		if prev != nil {
			prev(e)
		}
		c.onICMP(e)
	}
	return cfg
}

// onICMP offers one ICMP error to the dialog store (wmu held).
func (c *Capture) onICMP(e *decode.ICMPError) {
	c.drainSIP() // the dialog store has every earlier message (sipshard.go)
	q := dialog.ICMPQuote{
		TS: e.TS, Reporter: e.Reporter, V6: e.V6, Type: e.Type, Code: e.Code,
		HasPorts: e.Quoted && e.HasPorts, Payload: e.Payload, Truncated: e.QuoteTruncated, MTU: e.MTU,
	}
	if e.Quoted {
		q.Src, q.Dst = e.Src, e.Dst
	}
	switch e.Protocol {
	case 17:
		q.Transport = packet.TransportUDP
	case 6:
		q.Transport = packet.TransportTCP
	case 132:
		q.Transport = packet.TransportSCTP
	default:
		q.HasPorts = false // no SIP transport quoted
	}
	if e.Frame != nil {
		q.Frame = packet.RefOf(e.Frame)
	}
	c.dialogs.MatchICMP(&q)
}
