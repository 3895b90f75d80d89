package stun

import (
	"net/netip"
	"time"
)

// EvidenceWindow is how far from a call STUN evidence may lie before a
// conclusion drawn from it is caveated (engine.md §10: evidence more than
// 120 s from the call).
const EvidenceWindow = 120 * time.Second

// DialogEvidence is the STUN/TURN/ICE evidence touching one dialog's media
// addresses: what a dialog's media diagnosis carries as `stun`.
type DialogEvidence struct {
	// Mappings are NAT bindings a STUN server reported for one of the
	// dialog's addresses (its local side or its mapped side).
	Mappings []Mapping `json:"mappings,omitempty"`
	// Allocations are TURN allocations whose relayed address the dialog's
	// media or SDP used, or whose client is one of its SDP addresses.
	Allocations []Allocation `json:"allocations,omitempty"`
	// ICEPairs are connectivity checks between the dialog's addresses.
	ICEPairs []ICEPair `json:"ice_pairs,omitempty"`
	// Unanswered are STUN requests from one of the dialog's addresses
	// that nobody answered.
	Unanswered []Unanswered `json:"unanswered,omitempty"`
	// Caveat is set when all of the evidence lies more than 120 s from the
	// call: the NAT or relay state may have changed since.
	Caveat string `json:"caveat,omitempty"`
}

// Empty reports whether no evidence was found.
func (e *DialogEvidence) Empty() bool {
	return len(e.Mappings) == 0 && len(e.Allocations) == 0 && len(e.ICEPairs) == 0 && len(e.Unanswered) == 0
}

// EvidenceFor collects the evidence about addrs (a dialog's SDP endpoints
// and the ends of its streams) for a call spanning [from, to]; end is the
// capture's end (Report's). Rows are capped at MaxExamples per list.
// Addresses match by IP and port, and a STUN client also by IP alone (an
// agent gathers from the port it sends media on, but a Binding to a STUN
// server may leave another port of the same host).
func (t *Tracker) EvidenceFor(addrs []netip.AddrPort, from, to, end time.Time) DialogEvidence {
	var ev DialogEvidence
	if t == nil || len(addrs) == 0 {
		return ev
	}
	exact := make(map[netip.AddrPort]bool, len(addrs))
	hosts := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		exact[a] = true
		hosts[a.Addr()] = true
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	nearest := time.Duration(-1)
	near := func(at time.Time) {
		var d time.Duration
		switch {
		case at.Before(from):
			d = from.Sub(at)
		case at.After(to):
			d = at.Sub(to)
		}
		if nearest < 0 || d < nearest {
			nearest = d
		}
	}
	for _, mp := range sortedBy(t.mappings, func(v *mapping) uint64 { return v.ordinal }) {
		if (exact[mp.local] || hosts[mp.local.Addr()] || exact[mp.mapped]) && len(ev.Mappings) < MaxExamples {
			ev.Mappings = append(ev.Mappings, mp.view())
			near(mp.last)
		}
	}
	for _, a := range sortedBy(t.allocs, func(v *alloc) uint64 { return v.ordinal }) {
		if (exact[a.relayed] || hosts[a.client.Addr()]) && len(ev.Allocations) < MaxExamples {
			ev.Allocations = append(ev.Allocations, a.view(end))
			near(a.created)
			if !a.lastUse.IsZero() {
				near(a.lastUse)
			}
		}
	}
	for _, p := range sortedBy(t.pairs, func(v *icePair) uint64 { return v.ordinal }) {
		if (exact[p.from] || exact[p.to]) && len(ev.ICEPairs) < MaxExamples {
			ev.ICEPairs = append(ev.ICEPairs, p.view())
			near(p.first)
		}
	}
	for _, x := range sortedBy(t.txs, func(v *tx) uint64 { return v.ordinal }) {
		if x.answered || x.ice || end.Sub(x.last) < RequestTimeout || !hosts[x.client.Addr()] || len(ev.Unanswered) >= MaxExamples {
			continue
		}
		ev.Unanswered = append(ev.Unanswered, Unanswered{
			Method: x.method.String(), Client: x.client.String(), Server: x.server.String(),
			Sent: x.requests, First: x.first, Last: x.last, Frame: frameStr(x.frame), ServerPublic: IsPublic(x.server.Addr()),
		})
		near(x.last)
	}
	if !ev.Empty() && nearest > EvidenceWindow {
		ev.Caveat = "the nearest STUN/TURN evidence is " + nearest.Round(time.Second).String() +
			" from the call (more than 120 s): the NAT or relay state may have changed"
	}
	return ev
}

// RelayFor returns the allocation whose relayed address is a, if any.
func (t *Tracker) RelayFor(a netip.AddrPort, end time.Time) (Allocation, bool) {
	if t == nil {
		return Allocation{}, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	x := t.relayIdx[a]
	if x == nil {
		return Allocation{}, false
	}
	return x.view(end), true
}
