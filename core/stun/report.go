package stun

import (
	"net/netip"
	"sort"
	"strconv"
	"time"
)

// MaxReportRows bounds each list of a Report (mappings, allocations, ICE
// pairs); the rest are counted in the list's omitted count.
const MaxReportRows = 256

// Report is the tracker's evidence at one moment: what --json-run's stun
// section and the capture status carry. Lists are ordered by first sight.
type Report struct {
	Counts Stats `json:"counts"`
	// Methods are the transactions by method.
	Methods []MethodCounts `json:"methods"`
	// Unanswered are requests without any response for longer than a
	// client waits (RequestTimeout) before the capture's end; at most
	// MaxExamples, UnansweredCount counts them all.
	Unanswered      []Unanswered `json:"unanswered"`
	UnansweredCount int          `json:"unanswered_count"`
	// Pending counts requests without a response that were younger than
	// RequestTimeout at the capture's end: not judged.
	Pending int `json:"pending,omitempty"`

	Mappings        []Mapping    `json:"mappings"`
	MappingsOmitted int          `json:"mappings_omitted,omitempty"`
	Allocations     []Allocation `json:"allocations"`
	AllocsOmitted   int          `json:"allocations_omitted,omitempty"`
	// LapsedAllocations counts allocations that lapsed (Allocation.Lapsed).
	LapsedAllocations int       `json:"lapsed_allocations"`
	ICE               ICEReport `json:"ice"`
	// Software lists the SOFTWARE values seen with their counts (as sent,
	// at most 128 bytes each; at most MaxSoftware values).
	Software []Software `json:"software,omitempty"`
}

// MethodCounts counts one method's transactions.
type MethodCounts struct {
	Method          string `json:"method"`
	Transactions    int    `json:"transactions"`
	Success         int    `json:"success"`
	Error           int    `json:"error"`
	Unanswered      int    `json:"unanswered"`
	Retransmissions int    `json:"retransmissions"`
	// ErrorCodes counts error responses by code ("401": 3).
	ErrorCodes map[string]int `json:"error_codes,omitempty"`
}

// Unanswered is a request nobody answered.
type Unanswered struct {
	Method string    `json:"method"`
	Client string    `json:"client"`
	Server string    `json:"server"`
	Sent   int       `json:"requests_sent"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	Frame  string    `json:"frame,omitempty"`
	// ServerPublic: the request went to a public address (not RFC 1918,
	// RFC 4193, link-local or loopback).
	ServerPublic bool `json:"server_public"`
}

// Mapping is a server's report of the address it saw a request come from
// (XOR-MAPPED-ADDRESS, RFC 8489 §14.2).
type Mapping struct {
	Local  string    `json:"local"`
	Server string    `json:"server"`
	Mapped string    `json:"mapped"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	Frame  string    `json:"frame,omitempty"`
	Count  int       `json:"responses"`
	// Translated: the mapped address differs from the request's source
	// as captured (a NAT sits between the capture point and the server).
	Translated bool `json:"translated"`
	// ICE: learned from an ICE connectivity check (a peer-reflexive
	// address), not from a STUN server.
	ICE bool `json:"ice_check,omitempty"`
}

// Allocation is one TURN allocation (RFC 8656 §7).
type Allocation struct {
	Client  string    `json:"client"`
	Server  string    `json:"server"`
	Relayed string    `json:"relayed"`
	Mapped  string    `json:"mapped,omitempty"`
	Created time.Time `json:"created"`
	Frame   string    `json:"frame,omitempty"`
	// LifetimeSec is the lifetime last granted; ExpiresAt when it ran
	// out (or runs out).
	LifetimeSec uint32    `json:"lifetime_sec"`
	ExpiresAt   time.Time `json:"expires_at"`
	Refreshes   int       `json:"refreshes"`
	// State is active, deleted (a Refresh with LIFETIME 0) or expired (the
	// lifetime ran out before the capture's end without a Refresh).
	State     string     `json:"state"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
	// Lapsed: the allocation was used after it expired, or a Refresh was
	// refused 437 (the server had dropped it): media relayed through it
	// stops. LapseReason says which; LapseFrame names the frame.
	Lapsed          bool       `json:"lapsed"`
	LapsedAt        *time.Time `json:"lapsed_at,omitempty"`
	LapseReason     string     `json:"lapse_reason,omitempty"`
	LapseFrame      string     `json:"lapse_frame,omitempty"`
	Channels        []Channel  `json:"channels"`
	ChannelsOverCap int        `json:"channels_over_cap,omitempty"`
	Permissions     int        `json:"permissions"`
	// PacketsToPeer and PacketsFromPeer count relayed packets unwrapped
	// (ChannelData and Send/Data indications).
	PacketsToPeer   uint64 `json:"packets_to_peer"`
	PacketsFromPeer uint64 `json:"packets_from_peer"`
}

// Channel is a channel binding (RFC 8656 §12).
type Channel struct {
	Number string `json:"number"`
	Peer   string `json:"peer"`
	// Confirmed: the ChannelBind success response was seen.
	Confirmed       bool   `json:"confirmed"`
	Frame           string `json:"frame,omitempty"`
	PacketsToPeer   uint64 `json:"packets_to_peer"`
	PacketsFromPeer uint64 `json:"packets_from_peer"`
}

// ICEReport is the ICE connectivity checks seen (RFC 8445 §7).
type ICEReport struct {
	// Pairs are the checked candidate pairs (from the requester's
	// candidate to the responder's), at most MaxReportRows.
	Pairs        []ICEPair `json:"pairs"`
	PairsOmitted int       `json:"pairs_omitted,omitempty"`
	// Nominated are the pairs nominated (a successful check carrying
	// USE-CANDIDATE, RFC 8445 §8.1.1).
	Nominated []ICEPair `json:"nominated"`
	// RoleConflicts are the role conflicts seen (at most MaxExamples;
	// counts.ice_role_conflicts counts them all).
	RoleConflicts []RoleConflict `json:"role_conflicts"`
}

// ICEPair is one candidate pair's checks.
type ICEPair struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Checks    int    `json:"checks"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	// Role is the role the requester claimed: controlling, controlled or
	// both (it switched, as a conflict's repair does).
	Role           string     `json:"role"`
	Nominated      bool       `json:"nominated"`
	NominatedAt    *time.Time `json:"nominated_at,omitempty"`
	NominatedFrame string     `json:"nominated_frame,omitempty"`
	RoleConflict   bool       `json:"role_conflict"`
	First          time.Time  `json:"first"`
	Frame          string     `json:"frame,omitempty"`
}

// RoleConflict is one ICE role conflict.
type RoleConflict struct {
	A     string    `json:"a"`
	B     string    `json:"b"`
	At    time.Time `json:"at"`
	Frame string    `json:"frame,omitempty"`
	Why   string    `json:"why"`
}

// Software is a SOFTWARE value and how many messages carried it.
type Software struct {
	Value string `json:"value"`
	Count uint64 `json:"count"`
}

// Stats returns the counters.
func (t *Tracker) Stats() Stats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.st
}

// IsPublic reports whether a is a public address: not RFC 1918, RFC 4193,
// link-local, loopback or unspecified.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && !a.IsPrivate() && !a.IsLinkLocalUnicast() && !a.IsLoopback() && !a.IsUnspecified()
}

func frameStr(f interface{ String() string }) string { return f.String() }

// Report returns the evidence as of end, the capture's end (its latest
// packet; the latest STUN or ChannelData message when later): requests
// unanswered for RequestTimeout before it are unanswered, allocations whose
// lifetime ran out before it expired.
func (t *Tracker) Report(end time.Time) Report {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.last.After(end) {
		end = t.last
	}
	r := Report{Counts: t.st, Unanswered: []Unanswered{}, Mappings: []Mapping{}, Allocations: []Allocation{},
		ICE: ICEReport{Pairs: []ICEPair{}, Nominated: []ICEPair{}, RoleConflicts: append([]RoleConflict{}, t.conflict...)}}
	byMethod := map[Method]*MethodCounts{}
	for _, x := range sortedBy(t.txs, func(x *tx) uint64 { return x.ordinal }) {
		mc := byMethod[x.method]
		if mc == nil {
			mc = &MethodCounts{Method: x.method.String()}
			if x.method.String() == "unknown" {
				mc.Method = "0x" + strconv.FormatUint(uint64(x.method), 16)
			}
			byMethod[x.method] = mc
		}
		mc.Transactions++
		mc.Retransmissions += x.requests - 1
		switch {
		case x.answered && x.class == ClassSuccess:
			mc.Success++
		case x.answered:
			mc.Error++
			if mc.ErrorCodes == nil {
				mc.ErrorCodes = map[string]int{}
			}
			mc.ErrorCodes[strconv.Itoa(x.errorCode)]++
		case end.Sub(x.last) < RequestTimeout:
			r.Pending++
		default:
			mc.Unanswered++
			r.UnansweredCount++
			if len(r.Unanswered) < MaxExamples {
				r.Unanswered = append(r.Unanswered, Unanswered{
					Method: x.method.String(), Client: x.client.String(), Server: x.server.String(),
					Sent: x.requests, First: x.first, Last: x.last, Frame: frameStr(x.frame),
					ServerPublic: IsPublic(x.server.Addr()),
				})
			}
		}
	}
	for _, mc := range byMethod {
		r.Methods = append(r.Methods, *mc)
	}
	sort.Slice(r.Methods, func(i, j int) bool { return r.Methods[i].Method < r.Methods[j].Method })
	if r.Methods == nil {
		r.Methods = []MethodCounts{}
	}
	for _, mp := range sortedBy(t.mappings, func(v *mapping) uint64 { return v.ordinal }) {
		if len(r.Mappings) >= MaxReportRows {
			r.MappingsOmitted++
			continue
		}
		r.Mappings = append(r.Mappings, mp.view())
	}
	for _, a := range sortedBy(t.allocs, func(v *alloc) uint64 { return v.ordinal }) {
		av := a.view(end)
		if av.Lapsed {
			r.LapsedAllocations++
		}
		if len(r.Allocations) >= MaxReportRows {
			r.AllocsOmitted++
			continue
		}
		r.Allocations = append(r.Allocations, av)
	}
	for _, p := range sortedBy(t.pairs, func(v *icePair) uint64 { return v.ordinal }) {
		pv := p.view()
		if p.nominated {
			r.ICE.Nominated = append(r.ICE.Nominated, pv)
		}
		if len(r.ICE.Pairs) >= MaxReportRows {
			r.ICE.PairsOmitted++
			continue
		}
		r.ICE.Pairs = append(r.ICE.Pairs, pv)
	}
	for v, n := range t.software {
		r.Software = append(r.Software, Software{Value: v, Count: n})
	}
	sort.Slice(r.Software, func(i, j int) bool { return r.Software[i].Value < r.Software[j].Value })
	return r
}

func (mp *mapping) view() Mapping {
	return Mapping{
		Local: mp.local.String(), Server: mp.server.String(), Mapped: mp.mapped.String(),
		First: mp.first, Last: mp.last, Frame: frameStr(mp.frame), Count: mp.count,
		Translated: mp.mapped != mp.local, ICE: mp.ice,
	}
}

func tp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (a *alloc) view(end time.Time) Allocation {
	v := Allocation{
		Client: a.client.String(), Server: a.server.String(), Relayed: a.relayed.String(),
		Created: a.created, Frame: frameStr(a.frame), LifetimeSec: a.lifetime, ExpiresAt: a.expires,
		Refreshes: a.refreshes, State: "active", Lapsed: a.lapsed, Channels: []Channel{},
		ChannelsOverCap: a.channelsOver, Permissions: a.permissions,
		PacketsToPeer: a.relayedPkts[0], PacketsFromPeer: a.relayedPkts[1],
	}
	if a.mapped.IsValid() {
		v.Mapped = a.mapped.String()
	}
	switch {
	case a.deleted:
		v.State, v.DeletedAt = "deleted", tp(a.deletedAt)
	case end.After(a.expires):
		v.State = "expired"
	}
	if a.lapsed {
		v.LapsedAt, v.LapseReason, v.LapseFrame = tp(a.lapsedAt), a.lapseWhy, frameStr(a.lapseFrame)
	}
	for _, c := range a.channels {
		v.Channels = append(v.Channels, Channel{
			Number: "0x" + strconv.FormatUint(uint64(c.num), 16), Peer: c.peer.String(), Confirmed: c.confirmed,
			Frame: frameStr(c.frame), PacketsToPeer: c.packets[0], PacketsFromPeer: c.packets[1],
		})
	}
	return v
}

func (p *icePair) view() ICEPair {
	v := ICEPair{
		From: p.from.String(), To: p.to.String(), Checks: p.checks, Succeeded: p.succeeded, Failed: p.failed,
		Nominated: p.nominated, RoleConflict: p.roleConflict, First: p.first, Frame: frameStr(p.frame),
	}
	switch {
	case p.controlling && p.controlled:
		v.Role = "both"
	case p.controlling:
		v.Role = "controlling"
	default:
		v.Role = "controlled"
	}
	if p.nominated {
		v.NominatedAt, v.NominatedFrame = tp(p.nominatedAt), frameStr(p.nomFrame)
	}
	return v
}
