package analysis

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/stun"
)

// natEvidence collects the STUN/TURN/ICE evidence about the dialog's media
// addresses (engine.md §10): its SDP endpoints and its streams' ends, over
// the dialog's span. Nil when the capture holds none about them.
func natEvidence(nat *stun.Tracker, d DialogFacts, streams []media.StreamInfo, eps []media.Endpoint, opts Options) *stun.DialogEvidence {
	if nat == nil || !nat.Stats().Any() {
		return nil
	}
	var addrs []netip.AddrPort
	for _, e := range eps {
		if e.AddrPort.IsValid() {
			addrs = append(addrs, e.AddrPort)
		}
	}
	from, to := d.CreatedAt, d.LastAt
	for i := range streams {
		for _, x := range []string{streams[i].Src, streams[i].Dst} {
			if ap, err := netip.ParseAddrPort(x); err == nil {
				addrs = append(addrs, ap)
			}
		}
		if from.IsZero() || streams[i].FirstSeen.Before(from) {
			from = streams[i].FirstSeen
		}
		if streams[i].LastSeen.After(to) {
			to = streams[i].LastSeen
		}
	}
	end := opts.CaptureEnd
	if end.IsZero() {
		end = to
	}
	ev := nat.EvidenceFor(addrs, from, to, end)
	if ev.Empty() {
		return nil
	}
	return &ev
}

// stunPrivate judges announced private addresses against the STUN
// evidence: why is set when media towards one of them arrived at the
// public address STUN reported for it (its NAT mapping, XOR-MAPPED-ADDRESS)
// or at the relayed address of a TURN allocation its host made
// (XOR-RELAYED-ADDRESS), naming the frames; reached holds the streams'
// destinations. against lists what corroborates a failure instead: a
// mapping the media ignored, a Binding to a public server nobody answered
// (engine.md §10).
func stunPrivate(ev *stun.DialogEvidence, priv []string, reached map[netip.AddrPort]bool) (why string, against []string) {
	if ev == nil {
		return "", nil
	}
	privIP := map[netip.Addr]string{}
	for _, p := range priv {
		if ap, err := netip.ParseAddrPort(p); err == nil {
			privIP[ap.Addr()] = p
		}
	}
	for _, mp := range ev.Mappings {
		local, err1 := netip.ParseAddrPort(mp.Local)
		mapped, err2 := netip.ParseAddrPort(mp.Mapped)
		p, ok := privIP[local.Addr()]
		if err1 != nil || err2 != nil || !ok || !stun.IsPublic(mapped.Addr()) {
			continue
		}
		if reached[mapped] {
			return "STUN showed the NAT maps " + mp.Local + " to " + mp.Mapped + " (server " + mp.Server + ", frame " + mp.Frame + ") and media towards it arrived there", nil
		}
		against = append(against, "STUN showed the NAT maps "+mp.Local+" to "+mp.Mapped+" (frame "+mp.Frame+"), yet the SDP announced "+p+": the endpoint did not use its mapped address")
	}
	for _, a := range ev.Allocations {
		client, err1 := netip.ParseAddrPort(a.Client)
		relayed, err2 := netip.ParseAddrPort(a.Relayed)
		if err1 != nil || err2 != nil {
			continue
		}
		if _, ok := privIP[client.Addr()]; ok && reached[relayed] {
			return "its host " + a.Client + " holds a TURN allocation relaying at " + a.Relayed + " (frame " + a.Frame + ") and media towards it arrived at that relay", nil
		}
	}
	for _, u := range ev.Unanswered {
		client, err := netip.ParseAddrPort(u.Client)
		if err != nil || !u.ServerPublic {
			continue
		}
		if _, ok := privIP[client.Addr()]; ok && u.Method == "Binding" {
			against = append(against, "a STUN Binding from "+u.Client+" to the public server "+u.Server+" went unanswered ("+itoa(u.Sent)+" sent, first frame "+u.Frame+"): the endpoint could not learn its public address")
		}
	}
	return "", against
}

// natMismatchSTUN names the STUN evidence behind a rewritten media source:
// a source that is a NAT mapping a STUN server reported, or a TURN relayed
// address, is the traversal working as designed. It does not change the
// verdict (a failure towards it is still one); it says where the address
// came from.
func natMismatchSTUN(m *MediaDiagnosis) {
	if m.STUN == nil || len(m.NATEvidence) == 0 {
		return
	}
	for _, ne := range m.NATEvidence {
		for _, mp := range m.STUN.Mappings {
			if mp.Mapped == ne.Actual {
				m.Observations = append(m.Observations, "media source "+ne.Actual+" is the NAT mapping STUN reported for "+mp.Local+" (frame "+mp.Frame+")")
				break
			}
		}
		for _, a := range m.STUN.Allocations {
			if a.Relayed == ne.Actual {
				m.Observations = append(m.Observations, "media source "+ne.Actual+" is the relayed address of a TURN allocation of "+a.Client+" (frame "+a.Frame+")")
				break
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// relayContext says when the dialog's media crossed a TURN relay, and
// when that allocation lapsed during the call (engine.md §10: allocation
// lapse narrowed to the call): relayed media stops there.
func relayContext(m *MediaDiagnosis, streams []media.StreamInfo) {
	if m.STUN == nil {
		return
	}
	for _, a := range m.STUN.Allocations {
		var first, last time.Time
		for i := range streams {
			if streams[i].Src != a.Relayed && streams[i].Dst != a.Relayed {
				continue
			}
			if first.IsZero() || streams[i].FirstSeen.Before(first) {
				first = streams[i].FirstSeen
			}
			if streams[i].LastSeen.After(last) {
				last = streams[i].LastSeen
			}
		}
		if first.IsZero() {
			continue
		}
		m.Observations = append(m.Observations, "media crossed a TURN relay: "+a.Client+" relays at "+a.Relayed+" through "+a.Server+" (allocated frame "+a.Frame+")")
		if a.Lapsed && a.LapsedAt != nil && !a.LapsedAt.After(last.Add(stun.RequestTimeout)) {
			m.Hints = append(m.Hints, "the TURN allocation relaying this call's media at "+a.Relayed+" lapsed at "+a.LapsedAt.UTC().Format(time.RFC3339Nano)+
				" ("+a.LapseReason+", frame "+a.LapseFrame+"): relayed media stops when the server drops it")
		}
	}
}

func init() {
	for _, r := range []RuleInfo{
		{"stun_unanswered", FamilyCapture, true, []string{"requests_sent"}, "a STUN or TURN request nobody answered within a client's 39.5 s wait (RFC 8489 §6.2.1)", nil},
		{"turn_allocation_lapsed", FamilyCapture, true, []string{"relayed_packets"}, "a TURN allocation used after its lifetime ran out, or refused 437 on Refresh (RFC 8656 §7): relayed media stops", nil},
		{"ice_role_conflict", FamilyCapture, false, []string{"conflicts"}, "both ICE agents claimed one role, or a check was answered 487 (RFC 8445 §7.3.1.1): ICE repairs it (an observation)", nil},
		{"stun_fingerprint_bad", FamilyCapture, false, []string{"messages"}, "STUN messages whose FINGERPRINT CRC-32 does not match (RFC 8489 §14.7)", nil},
		{"stun_evidence_evicted", FamilyCapture, true, []string{"evicted"}, "STUN/TURN/ICE evidence dropped at a table cap", nil},
	} {
		RegisterRule(r)
	}
}

// stunFindings adds the capture's STUN/TURN/ICE findings (engine.md §11:
// STUN evidence in the capture analysis) and reports whether evidence was
// shed at a cap.
func stunFindings(get func(kind, sev, unit, summary string) *Finding, src MediaSource, end time.Time) (shed bool) {
	nat := natOf(src)
	if nat == nil || !nat.Stats().Any() {
		return false
	}
	r := nat.Report(end)
	at := func(t time.Time) *time.Time { return &t }
	frames := func(f string) []string {
		if f == "" {
			return nil
		}
		return []string{f}
	}
	if r.UnansweredCount > 0 {
		f := get("stun_unanswered", SeverityMedium, "transactions", "STUN/TURN requests nobody answered within 39.5 s: the server is unreachable or blocked")
		for _, u := range r.Unanswered {
			f.add(Evidence{Endpoints: []string{u.Client, u.Server}, At: at(u.First), Note: u.Method,
				Counts: map[string]int64{"requests_sent": int64(u.Sent)}, Frames: frames(u.Frame)})
		}
		f.Occurrences += int64(r.UnansweredCount - len(r.Unanswered))
		f.EvidenceOmitted += int64(r.UnansweredCount - len(r.Unanswered))
	}
	for _, a := range r.Allocations {
		if !a.Lapsed {
			continue
		}
		get("turn_allocation_lapsed", SeverityHigh, "allocations", "TURN allocations that lapsed while in use: media relayed through them stops").
			add(Evidence{Endpoints: []string{a.Client, a.Relayed}, At: a.LapsedAt, Note: a.LapseReason,
				Counts: map[string]int64{"relayed_packets": int64(a.PacketsToPeer + a.PacketsFromPeer)}, Frames: frames(a.LapseFrame)})
	}
	if n := r.LapsedAllocations - countLapsed(r.Allocations); n > 0 {
		f := get("turn_allocation_lapsed", SeverityHigh, "allocations", "TURN allocations that lapsed while in use: media relayed through them stops")
		f.Occurrences += int64(n)
		f.EvidenceOmitted += int64(n)
	}
	if n := r.Counts.RoleConflicts; n > 0 {
		f := get("ice_role_conflict", SeverityInfo, "conflicts", "ICE role conflicts (both agents claimed one role, or 487 Role Conflict): ICE repairs them")
		for _, c := range r.ICE.RoleConflicts {
			f.add(Evidence{Endpoints: []string{c.A, c.B}, At: at(c.At), Note: c.Why, Counts: map[string]int64{"conflicts": 1}, Frames: frames(c.Frame)})
		}
		f.Occurrences += int64(n) - int64(len(r.ICE.RoleConflicts))
		f.EvidenceOmitted += int64(n) - int64(len(r.ICE.RoleConflicts))
	}
	if n := r.Counts.FingerprintsBad; n > 0 {
		f := get("stun_fingerprint_bad", SeverityInfo, "messages", "STUN messages whose FINGERPRINT does not match: corrupted, or not STUN")
		f.Occurrences += int64(n)
		f.Evidence = append(f.Evidence, Evidence{Counts: map[string]int64{"messages": int64(n)}})
	}
	c := r.Counts
	if n := c.TransactionsEvicted + c.AllocationsEvicted + c.MappingsEvicted + c.ICEPairsEvicted; n > 0 {
		f := get("stun_evidence_evicted", SeverityHigh, "entries", "STUN/TURN/ICE evidence dropped at its table caps: NAT traversal answers are partial")
		f.Occurrences += int64(n)
		f.Evidence = append(f.Evidence, Evidence{Counts: map[string]int64{"evicted": int64(n)}})
		shed = true
	}
	return shed
}

func countLapsed(l []stun.Allocation) int {
	n := 0
	for _, a := range l {
		if a.Lapsed {
			n++
		}
	}
	return n
}
