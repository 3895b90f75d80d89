package analysis_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/stun"
)

func has(l []string, sub string) bool {
	for _, s := range l {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// The answerer announces 10.1.1.1:5000 (private) to a public offerer. A
// STUN server told it (Binding from 10.1.1.1:5000) that the NAT maps it
// to 203.0.113.9:5000; a Binding to a second public server went
// unanswered. The tests judge the private address with that evidence.
func TestPrivateSDPAddressIsJudgedWithTheSTUNEvidence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	offerer := netip.MustParseAddrPort("198.51.100.1:4000")
	private := netip.MustParseAddrPort("10.1.1.1:5000")
	mapped := netip.MustParseAddrPort("203.0.113.9:5000")
	stunServer := netip.MustParseAddrPort("198.51.100.7:3478")
	deadServer := netip.MustParseAddrPort("192.0.2.200:3478")
	run := func(towardsPrivate, fromPrivate bool) analysis.MediaDiagnosis {
		tr := stun.NewTracker(stun.Config{})
		var w stun.Builder
		var m stun.Message
		obs := func(at time.Duration, src, dst netip.AddrPort, b []byte) {
			if err := stun.Parse(b, &m); err != nil {
				t.Fatal(err)
			}
			tr.Observe(stun.Obs{TS: t0.Add(at), Src: src, Dst: dst}, &m)
		}
		obs(-time.Second, private, stunServer, w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{1}).End(true))
		obs(-time.Second, stunServer, private, w.Begin(stun.ClassSuccess, stun.MethodBinding, [12]byte{1}).Address(stun.AttrXORMappedAddress, mapped, true).End(true))
		obs(-time.Second, private, deadServer, w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{2}).End(true))
		obs(-500*time.Millisecond, private, deadServer, w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{2}).End(true))

		st := media.NewStore(media.Config{})
		st.SetNATEvidence(tr)
		st.OnSDP("c", t0, &sdp.Session{Conn: "198.51.100.1", Media: []sdp.Media{{Type: "audio", Port: 4000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, offerer)
		st.OnSDP("c", t0, &sdp.Session{Conn: "10.1.1.1", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}}}}}, false, mapped)
		send := func(src, dst netip.AddrPort, ssrc byte) {
			for i := 0; i < 100; i++ {
				pkt := []byte{0x80, 0, 0, byte(i), 0, 0, byte(i >> 8), byte(i), 0, 0, 0, ssrc}
				st.Observe(&packet.Packet{TS: t0.Add(time.Duration(i) * 20 * time.Millisecond), Src: src, Dst: dst, Transport: packet.TransportUDP, Payload: pkt})
			}
		}
		if towardsPrivate {
			send(offerer, mapped, 1) // the offerer answers symmetric RTP at the mapping
		}
		if fromPrivate {
			send(mapped, offerer, 2)
		}
		return analysis.Diagnose(analysis.DialogFacts{CallID: "c", Answered: true, AnsweredAt: t0, CreatedAt: t0, LastAt: t0.Add(2 * time.Second)},
			st, analysis.Options{CaptureEnd: t0.Add(time.Minute)}).Media
	}

	m := run(true, true)
	if m.PrivateMediaAddress || !has(m.Observations, "STUN showed the NAT maps 10.1.1.1:5000 to 203.0.113.9:5000") {
		t.Errorf("media reached the mapping: got private %v observations %q", m.PrivateMediaAddress, m.Observations)
	}
	if !has(m.Observations, "media source 203.0.113.9:5000 is the NAT mapping STUN reported for 10.1.1.1:5000") {
		t.Errorf("the rewritten source is not attributed to STUN: %q", m.Observations)
	}
	if m.STUN == nil || len(m.STUN.Mappings) != 1 || len(m.STUN.Unanswered) != 1 || m.STUN.Unanswered[0].Sent != 2 || m.STUN.Caveat != "" {
		t.Fatalf("got evidence %+v", m.STUN)
	}

	// Nothing reached the answerer: the failure stands, and the STUN
	// evidence corroborates it.
	m = run(false, true)
	if !m.PrivateMediaAddress || !has(m.Hints, "the endpoint did not use its mapped address") ||
		!has(m.Hints, "a STUN Binding from 10.1.1.1:5000 to the public server 192.0.2.200:3478 went unanswered (2 sent") {
		t.Errorf("media towards the private side failed: got private %v hints %q", m.PrivateMediaAddress, m.Hints)
	}
}

// STUN evidence more than 120 s from the call is caveated.
func TestSTUNEvidenceFarFromTheCallIsCaveated(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := netip.MustParseAddrPort("10.1.1.1:5000")
	tr := stun.NewTracker(stun.Config{})
	var w stun.Builder
	var m stun.Message
	for _, b := range [][]byte{
		w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{1}).End(true),
	} {
		_ = stun.Parse(b, &m)
		tr.Observe(stun.Obs{TS: t0.Add(-10 * time.Minute), Src: a, Dst: netip.MustParseAddrPort("198.51.100.7:3478")}, &m)
	}
	ev := tr.EvidenceFor([]netip.AddrPort{a}, t0, t0.Add(time.Second), t0.Add(time.Hour))
	if len(ev.Unanswered) != 1 || !strings.Contains(ev.Caveat, "10m0s from the call") {
		t.Fatalf("got %+v", ev)
	}
}

// The capture report ranks the STUN findings: STUN evidence shed at a cap
// and an allocation that lapsed while relaying (high; the first makes the
// report incomplete), an unanswered Binding (medium), a role conflict
// (info).
func TestCaptureReportRanksTheSTUNFindings(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := netip.MustParseAddrPort("10.0.0.2:40000")
	srv := netip.MustParseAddrPort("198.51.100.1:3478")
	relayed := netip.MustParseAddrPort("198.51.100.1:49152")
	peer := netip.MustParseAddrPort("203.0.113.7:5004")
	tr := stun.NewTracker(stun.Config{MaxMappings: 1})
	var w stun.Builder
	var m stun.Message
	obs := func(at time.Duration, src, dst netip.AddrPort, b []byte) {
		if err := stun.Parse(b, &m); err != nil {
			t.Fatal(err)
		}
		tr.Observe(stun.Obs{TS: t0.Add(at), Src: src, Dst: dst}, &m)
	}
	obs(0, c, srv, w.Begin(stun.ClassRequest, stun.MethodAllocate, [12]byte{1}).End(true))
	obs(0, srv, c, w.Begin(stun.ClassSuccess, stun.MethodAllocate, [12]byte{1}).Address(stun.AttrXORRelayedAddress, relayed, true).
		Address(stun.AttrXORMappedAddress, netip.MustParseAddrPort("192.0.2.1:1"), true).U32(stun.AttrLifetime, 30).End(true))
	obs(0, c, srv, w.Begin(stun.ClassRequest, stun.MethodChannelBind, [12]byte{2}).U32(stun.AttrChannelNumber, 0x4000<<16).Address(stun.AttrXORPeerAddress, peer, true).End(true))
	obs(0, srv, c, w.Begin(stun.ClassSuccess, stun.MethodChannelBind, [12]byte{2}).End(true))
	for i := 0; i < 40; i++ { // relayed media past the 30 s lifetime
		tr.Channel(stun.Obs{TS: t0.Add(time.Duration(i) * time.Second), Src: c, Dst: srv}, 0x4000)
	}
	obs(time.Second, c, netip.MustParseAddrPort("192.0.2.9:3478"), w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{3}).End(true))
	c2 := netip.MustParseAddrPort("10.0.0.2:40001") // a second mapping: one over the cap of 1
	obs(2*time.Second, c2, srv, w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{4}).End(true))
	obs(2*time.Second, srv, c2, w.Begin(stun.ClassSuccess, stun.MethodBinding, [12]byte{4}).Address(stun.AttrXORMappedAddress, netip.MustParseAddrPort("192.0.2.1:2"), true).End(true))
	obs(3*time.Second, c, peer, w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{5}).U32(stun.AttrPriority, 1).U64(stun.AttrICEControlling, 1).End(true))
	obs(3*time.Second, peer, c, w.Begin(stun.ClassError, stun.MethodBinding, [12]byte{5}).ErrorCode(487, "Role Conflict").End(true))

	st := media.NewStore(media.Config{})
	st.SetNATEvidence(tr)
	r := analysis.CaptureReport(nil, st, analysis.CaptureFacts{SourceExhausted: true}, analysis.Options{CaptureEnd: t0.Add(time.Minute)})
	var kinds []string
	for _, f := range r.Findings {
		kinds = append(kinds, f.Kind)
		if _, ok := analysis.LookupRule(f.Rule); !ok {
			t.Errorf("finding %s names no registered rule", f.Kind)
		}
	}
	// both high findings occur once: ranked by kind
	want := "stun_evidence_evicted turn_allocation_lapsed stun_unanswered ice_role_conflict"
	if strings.Join(kinds, " ") != want || r.Complete {
		t.Fatalf("got findings %q complete %v, want %q and incomplete (a mapping was evicted)", kinds, r.Complete, want)
	}
	lapse := r.Findings[1].Evidence[0]
	if lapse.Endpoints[1] != relayed.String() || lapse.Counts["relayed_packets"] != 40 || !lapse.At.Equal(t0.Add(31*time.Second)) {
		t.Fatalf("got lapse evidence %+v", lapse)
	}
	if u := r.Findings[2].Evidence[0]; u.Endpoints[1] != "192.0.2.9:3478" || u.Counts["requests_sent"] != 1 {
		t.Fatalf("got unanswered evidence %+v", u)
	}
}
