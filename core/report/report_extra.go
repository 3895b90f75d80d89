package report

// This file renders the blocks of `--report` that the run document carries
// beside the dialogs and streams: the STUN/TURN/ICE evidence (docs/stun.md),
// the RFC 3611 burst/gap line of a lossy stream (docs/media-quality.md) and
// the egress account of -O and -H (docs/egress.md). Each is written only
// when the run measured it: absent is not zero.

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/stun"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// stunRowsShown is how many rows of each STUN list (mappings, allocations,
// nominated pairs, role conflicts, unanswered requests) the report names;
// --json-run's stun section has them all (up to stun.MaxReportRows).
const stunRowsShown = 5

// writeBurstGap writes one line per listed stream that lost packets, with
// its loss pattern in RFC 3611 §4.7.2 terms (core/media/burst.go). A stream
// without burst_gap (fax) or without a loss has no line.
func writeBurstGap(w io.Writer, worst []media.StreamInfo) {
	head := false
	for i := range worst {
		s := &worst[i]
		g := s.BurstGap
		if g == nil || g.BurstLost+g.GapLost == 0 {
			continue
		}
		if !head {
			fmt.Fprintf(w, "  Loss pattern (RFC 3611 §4.7.2 burst/gap, Gmin %d):\n", g.Gmin)
			head = true
		}
		fmt.Fprintf(w, "    %s %s -> %s: %s\n", s.SSRC, s.Src, s.Dst, burstGapText(g))
	}
}

// burstGapText is a stream's burst/gap line: bursts and gaps with their
// losses, densities and mean durations (durations only where the ptime was
// measured), the longest run of consecutive losses.
func burstGapText(g *media.BurstGap) string {
	var b strings.Builder
	b.WriteString(plural(g.Bursts, "burst"))
	if g.Bursts > 0 {
		fmt.Fprintf(&b, " (%d of %d lost", g.BurstLost, g.BurstPackets)
		if g.BurstDensityPct != nil {
			fmt.Fprintf(&b, ", %.1f%%", *g.BurstDensityPct)
		}
		if g.MeanBurstMs != nil {
			fmt.Fprintf(&b, ", mean %.0f ms", *g.MeanBurstMs)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, "; gaps %d of %d lost (%.1f%%", g.GapLost, g.GapPackets, g.GapDensityPct)
	if g.MeanGapMs != nil {
		fmt.Fprintf(&b, ", mean %.0f ms", *g.MeanGapMs)
	}
	fmt.Fprintf(&b, "); longest loss run %d", g.MaxConsecutiveLost)
	if g.IsBursty {
		b.WriteString(", bursty")
	}
	if g.LateAfterSettled > 0 {
		fmt.Fprintf(&b, "; %d arrived after being counted lost", g.LateAfterSettled)
	}
	return b.String()
}

// writeSTUN writes the STUN/TURN/ICE block (docs/stun.md): the counters of
// run.stun, the transactions by method, what went unanswered, the NAT
// mappings, the TURN allocations with their channels and lapse, the ICE
// nominations and role conflicts, and the SOFTWARE values. Nothing when
// the capture held no STUN. Values the sender wrote (SOFTWARE) are
// escaped and quoted as every wire text of this report (internal/textsafe).
func writeSTUN(w io.Writer, r *stun.Report) {
	if r == nil {
		return
	}
	c := &r.Counts
	fmt.Fprintf(w, "\nSTUN / TURN / ICE\n")
	fmt.Fprintf(w, "  %s (%d requests, %d success and %d error responses, %d indications, %d retransmissions, %d malformed), %d ChannelData (%d relayed packets unwrapped, %d unbound).\n",
		plural(c.Messages, "STUN message"), c.Requests, c.Successes, c.Errors, c.Indications, c.Retransmissions, c.Malformed,
		c.ChannelData, c.Relayed, c.RelayUnbound)
	if c.FingerprintsBad > 0 || c.ResponsesWithoutRequest > 0 || c.AttrsMalformed > 0 {
		fmt.Fprintf(w, "  %d of %d FINGERPRINTs bad, %d responses without their request, %d malformed attributes.\n",
			c.FingerprintsBad, c.FingerprintsChecked, c.ResponsesWithoutRequest, c.AttrsMalformed)
	}
	if ev := evictedSTUN(c); ev != "" {
		fmt.Fprintf(w, "  Evicted at the tracker's caps (not below): %s.\n", ev)
	}
	if len(r.Methods) > 0 {
		var ms []string
		for _, m := range r.Methods {
			s := fmt.Sprintf("%s %d (%d ok", textsafe.Line(m.Method, 24), m.Transactions, m.Success)
			if m.Error > 0 {
				s += fmt.Sprintf(", %d error %s", m.Error, errorCodes(m.ErrorCodes))
			}
			if m.Unanswered > 0 {
				s += fmt.Sprintf(", %d unanswered", m.Unanswered)
			}
			ms = append(ms, s+")")
		}
		fmt.Fprintf(w, "  Transactions: %s.\n", strings.Join(ms, ", "))
	}
	if r.UnansweredCount > 0 || r.Pending > 0 {
		fmt.Fprintf(w, "  Unanswered: %s", plural(uint64(r.UnansweredCount), "request"))
		if r.Pending > 0 {
			fmt.Fprintf(w, "; %d pending (younger than a client's wait at the capture's end, not judged)", r.Pending)
		}
		fmt.Fprintf(w, ".\n")
		for i, u := range r.Unanswered {
			if i == stunRowsShown {
				break
			}
			pub := ""
			if u.ServerPublic {
				pub = " (public)"
			}
			fmt.Fprintf(w, "    %s %s -> %s%s: %d sent, frame %s\n", textsafe.Line(u.Method, 24), u.Client, u.Server, pub, u.Sent, textsafe.Line(u.Frame, 120))
		}
		more(w, r.UnansweredCount-min(len(r.Unanswered), stunRowsShown))
	}
	if len(r.Mappings) > 0 {
		fmt.Fprintf(w, "  NAT mappings (%d):\n", len(r.Mappings)+r.MappingsOmitted)
		for i, m := range r.Mappings {
			if i == stunRowsShown {
				break
			}
			how := "not translated"
			switch {
			case m.ICE:
				how = "peer-reflexive, from an ICE check"
			case m.Translated:
				how = "translated"
			}
			fmt.Fprintf(w, "    %s -> %s seen by %s (%s), frame %s\n", m.Local, m.Mapped, m.Server, how, textsafe.Line(m.Frame, 120))
		}
		more(w, len(r.Mappings)+r.MappingsOmitted-min(len(r.Mappings), stunRowsShown))
	}
	if len(r.Allocations) > 0 {
		fmt.Fprintf(w, "  TURN allocations (%d, %d lapsed):\n", len(r.Allocations)+r.AllocsOmitted, r.LapsedAllocations)
		for i := range r.Allocations {
			if i == stunRowsShown {
				break
			}
			writeAllocation(w, &r.Allocations[i])
		}
		more(w, len(r.Allocations)+r.AllocsOmitted-min(len(r.Allocations), stunRowsShown))
	}
	ice := &r.ICE
	if len(ice.Pairs) > 0 || c.RoleConflicts > 0 {
		fmt.Fprintf(w, "  ICE: %d candidate pairs checked, %d nominated, %d role conflicts.\n",
			len(ice.Pairs)+ice.PairsOmitted, len(ice.Nominated), c.RoleConflicts)
		for i, p := range ice.Nominated {
			if i == stunRowsShown {
				break
			}
			fmt.Fprintf(w, "    nominated %s -> %s (%s, %d of %d checks succeeded), frame %s\n",
				p.From, p.To, textsafe.Line(p.Role, 24), p.Succeeded, p.Checks, textsafe.Line(p.NominatedFrame, 120))
		}
		more(w, len(ice.Nominated)-min(len(ice.Nominated), stunRowsShown))
		for i, rc := range ice.RoleConflicts {
			if i == stunRowsShown {
				break
			}
			fmt.Fprintf(w, "    role conflict %s / %s: %s, frame %s\n", rc.A, rc.B, textsafe.Line(rc.Why, 120), textsafe.Line(rc.Frame, 120))
		}
		more(w, int(c.RoleConflicts)-min(len(ice.RoleConflicts), stunRowsShown))
	}
	if len(r.Software) > 0 {
		var sw []string
		for _, s := range r.Software {
			sw = append(sw, fmt.Sprintf("\"%s\" (%d)", textsafe.Line(s.Value, 128), s.Count))
		}
		over := ""
		if c.SoftwareOver > 0 {
			over = fmt.Sprintf(", %d more values not kept", c.SoftwareOver)
		}
		fmt.Fprintf(w, "  SOFTWARE: %s%s.\n", strings.Join(sw, ", "), over)
	}
}

// writeAllocation writes one TURN allocation (RFC 8656 §7) and its channels.
func writeAllocation(w io.Writer, a *stun.Allocation) {
	state := textsafe.Line(a.State, 24)
	if a.Lapsed {
		state += fmt.Sprintf(", LAPSED (%s, frame %s)", textsafe.Line(a.LapseReason, 80), textsafe.Line(a.LapseFrame, 120))
	}
	fmt.Fprintf(w, "    %s via %s relayed %s: %s, lifetime %d s, %d refreshes, %d permissions, %d/%d packets to/from peers, frame %s\n",
		a.Client, a.Server, a.Relayed, state, a.LifetimeSec, a.Refreshes, a.Permissions, a.PacketsToPeer, a.PacketsFromPeer, textsafe.Line(a.Frame, 120))
	if len(a.Channels) == 0 && a.ChannelsOverCap == 0 {
		return
	}
	var chs []string
	for _, ch := range a.Channels {
		s := fmt.Sprintf("%s to %s %d/%d", textsafe.Line(ch.Number, 8), ch.Peer, ch.PacketsToPeer, ch.PacketsFromPeer)
		if !ch.Confirmed {
			s += " (unconfirmed)"
		}
		chs = append(chs, s)
	}
	if a.ChannelsOverCap > 0 {
		chs = append(chs, fmt.Sprintf("%d more over the cap", a.ChannelsOverCap))
	}
	fmt.Fprintf(w, "      channels (packets to/from peer): %s\n", strings.Join(chs, ", "))
}

// errorCodes is "(401 x3, 438 x1)", codes in order.
func errorCodes(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s x%d", textsafe.Line(k, 8), m[k]))
	}
	return "(" + strings.Join(out, ", ") + ")"
}

// evictedSTUN names the STUN tracker's evictions, empty when none.
func evictedSTUN(c *stun.Stats) string {
	var ev []string
	for _, x := range []struct {
		n    uint64
		what string
	}{
		{c.TransactionsEvicted, "transaction"}, {c.AllocationsEvicted, "allocation"},
		{c.MappingsEvicted, "mapping"}, {c.ICEPairsEvicted, "ICE pair"},
		{c.ChannelsOver, "channel binding over the cap"}, {c.PeersOverCap, "peer address over the cap"},
	} {
		if x.n > 0 {
			ev = append(ev, plural(x.n, x.what))
		}
	}
	return strings.Join(ev, ", ")
}

func more(w io.Writer, n int) {
	if n > 0 {
		fmt.Fprintf(w, "    … %d more (--json-run has them)\n", n)
	}
}

// writeEgress writes what -O wrote and -H forwarded (docs/egress.md), with
// every message -H did not deliver counted by reason. Nothing without them.
func writeEgress(w io.Writer, e *engine.EgressStatus) {
	if e == nil || (e.Output == nil && e.HEPSend == nil) {
		return
	}
	fmt.Fprintf(w, "\nEGRESS\n")
	if o := e.Output; o != nil {
		files := make([]string, 0, len(o.Files))
		for i, f := range o.Files {
			if i == stunRowsShown {
				files = append(files, fmt.Sprintf("%d more", len(o.Files)-i))
				break
			}
			files = append(files, textsafe.Line(f, 200))
		}
		fmt.Fprintf(w, "  -O: %s (%d bytes) written to %s", plural(o.Frames, "frame"), o.Bytes, plural(uint64(len(o.Files)), "file"))
		if len(files) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(files, ", "))
		}
		if o.Deleted > 0 {
			fmt.Fprintf(w, ", %d deleted by the ring", o.Deleted)
		}
		fmt.Fprintf(w, ".\n")
		if len(o.RingKept) > 0 {
			kept := make([]string, 0, len(o.RingKept))
			for _, f := range o.RingKept {
				kept = append(kept, textsafe.Line(f, 200))
			}
			fmt.Fprintf(w, "  -O: kept, replaced under its name since this run created it: %s.\n", strings.Join(kept, ", "))
		}
		if o.SkippedLinkType > 0 {
			fmt.Fprintf(w, "  -O: %s of another link type not written (a classic pcap holds one; write .pcapng to keep them).\n", plural(o.SkippedLinkType, "frame"))
		}
		if o.Error != "" {
			fmt.Fprintf(w, "  -O stopped: %s\n", textsafe.Line(o.Error, 300))
		}
	}
	if h := e.HEPSend; h != nil {
		fmt.Fprintf(w, "  -H %s (%s): sent %d (SIP %d, RTCP %d, %d bytes), dropped %d (queue full %d, too large %d, send errors %d, unsent at stop %d).\n",
			textsafe.Line(h.Receiver, 200), textsafe.Line(h.Network, 8), h.Sent, h.SentSIP, h.SentRTCP, h.SentBytes,
			h.Dropped(), h.DroppedQueueFull, h.DroppedTooLarge, h.DroppedSendError, h.DroppedAtStop)
		if h.LastError != "" {
			fmt.Fprintf(w, "  -H last error: %s\n", textsafe.Line(h.LastError, 300))
		}
	}
}
