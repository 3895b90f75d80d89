package analysis_test

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/internal/testcap"
)

func load(t *testing.T, name string) (*media.Store, []analysis.DialogFacts) {
	t.Helper()
	st := media.NewStore(media.Config{})
	ds := dialog.New(dialog.Config{})
	if _, err := mediatest.Feed(t, testcap.Public(name), st, ds); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return st, analysis.FactsFromStore(ds)
}

func diagnose(t *testing.T, name, callID string) analysis.DialogDiagnosis {
	t.Helper()
	st, facts := load(t, name)
	for _, f := range facts {
		if f.CallID == callID {
			return analysis.Diagnose(f, st, analysis.Options{})
		}
	}
	t.Fatalf("%s: no dialog %q", name, callID)
	return analysis.DialogDiagnosis{}
}

// TestDiagnosePublicCaptures checks verdicts hand-verified against the
// captures (tshark -Y sdp / rtp).
func TestDiagnosePublicCaptures(t *testing.T) {
	tests := []struct {
		capture, callID string
		check           func(t *testing.T, d analysis.DialogDiagnosis)
	}{
		{"rtp-protocol.pcap", "1907983263271201083544@10.33.6.101", func(t *testing.T, d analysis.DialogDiagnosis) {
			// G.711A both ways with comfort noise: nothing wrong.
			if d.Verdict != "none" || !d.Media.Applicable || d.Media.OneWayAudio || d.Media.StreamCount != 2 {
				t.Errorf("got %+v", d)
			}
		}},
		{"sip-sdp-example.pcap", "1450530377152201062221@10.33.6.101", func(t *testing.T, d analysis.DialogDiagnosis) {
			// Offer/answer and an answered call, no RTP anywhere in the
			// capture: media was not captured at this point, not judged,
			// never no_media.
			if d.Media.NoMedia || d.Media.Applicable || !d.Media.MediaNotCaptured || d.Verdict != "none" || len(d.Media.SDPMedia) != 4 ||
				!strings.Contains(d.Media.Reason, "media was not captured at this point") {
				t.Errorf("got %+v", d.Media)
			}
		}},
		{"sip-rtp-g711.pcap", "1-1968@10.0.2.20", func(t *testing.T, d analysis.DialogDiagnosis) {
			// One-way RTP, but the SDP said sendonly/recvonly: withheld.
			if d.Media.OneWayAudio || d.Media.OneWayWithheld == "" {
				t.Errorf("got one_way %v withheld %q", d.Media.OneWayAudio, d.Media.OneWayWithheld)
			}
		}},
		{"h263-over-rtp.pcap", "NmNhYWNhMjY0Y2M0OTc4YTI2MzgzZTNlYTRhZTMxNTE.", func(t *testing.T, d analysis.DialogDiagnosis) {
			// One video stream (tshark: 45 H263 packets, no audio RTP);
			// its sender announced 127.0.0.1:57128 and sends from
			// 192.168.6.199:57128. A video stream says nothing about
			// audio: no one_way_audio (was true).
			if d.Media.OneWayAudio || !d.Media.NATMismatch || len(d.Media.NATEvidence) != 1 || d.Media.NATEvidence[0].Actual != "192.168.6.199:57128" {
				t.Errorf("got %+v", d.Media)
			}
			if len(d.Evidence) != 1 || d.Evidence[0].Rule != "nat_mismatch" || d.Evidence[0].Values["streams"] != 1 ||
				d.Evidence[0].Observed["actual_source"] != "192.168.6.199:57128" || len(d.Evidence[0].Frames) != 1 {
				t.Errorf("evidence: got %+v", d.Evidence)
			}
		}},
		{"sip-488-codec-reject.pcapng", "NA4y5nr9Jk", func(t *testing.T, d analysis.DialogDiagnosis) {
			if d.Signaling == nil || d.Signaling.FinalFailure == nil || d.Signaling.FinalFailure.Code != 488 || d.Verdict != "signaling" {
				t.Fatalf("got %+v", d)
			}
			if d.Media.Applicable || d.Media.Reason == "" || d.Media.Hints == nil {
				t.Errorf("got media %+v, want not applicable with a reason", d.Media)
			}
		}},
		{"sip-rtp-opus-hybrid.pcap", "1-4237@10.0.2.20", func(t *testing.T, d analysis.DialogDiagnosis) {
			// 5 packets of 316 expected.
			if len(d.Media.HighLoss) != 1 || d.Media.HighLoss[0].Value != 98.418 {
				t.Errorf("got high loss %+v", d.Media.HighLoss)
			}
		}},
		// Asterisk hands both legs direct media (frames 35/37/38/41: each
		// leg's re-INVITE and 200 name 172.16.98.1:8000 and
		// 172.16.98.145:8000): the two streams (355 packets 145→1, 1 packet
		// 1→145, tshark -z rtp,streams) belong to both legs. Before, both
		// were bound to the last announcer's leg and the other read a
		// false no_media (and then a false NAT mismatch).
		// Both legs are one-way (the capture's README: "one-way media"):
		// 355 packets 145→1 against a single 1→145 packet. The leg's SDP
		// names the direction: on M2Q0… Asterisk's re-INVITE offered
		// phone 145 and phone 1 answered; on 37686… the reverse.
		{"b2bua-asterisk.pcapng", "M2Q0ZDc1ZGM1NzIyMTlhZTA3NDU3NTgzMzA5YmJmZWQ.", b2buaLeg("offerer→answerer")},
		{"b2bua-asterisk.pcapng", "37686afc57ce24ac655742b3644a7bb8@172.16.98.101:5060", b2buaLeg("answerer→offerer")},
		{"codec-negotiation.pcap", "1-3685341@127.0.0.1", func(t *testing.T, d analysis.DialogDiagnosis) {
			// G722 both ways then G.711u after the re-INVITE: the G722 MOS
			// is a placeholder.
			if d.Media.UngroundedMOSStreams != 2 || d.Media.CodecAsymmetry != nil {
				t.Errorf("got %+v", d.Media)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.capture, func(t *testing.T) {
			tc.check(t, diagnose(t, tc.capture, tc.callID))
		})
	}
}

// b2buaLeg checks one leg of b2bua-asterisk.pcapng's direct-media call.
func b2buaLeg(dir string) func(t *testing.T, d analysis.DialogDiagnosis) {
	return func(t *testing.T, d analysis.DialogDiagnosis) {
		b2buaStreams(t, d)
		m := d.Media
		if !m.OneWayAudio || m.OneWayDirection != dir || m.OneWayQuietPackets == nil || *m.OneWayQuietPackets != 1 {
			t.Errorf("got one_way %v direction %q quiet %v, want true %q 1", m.OneWayAudio, m.OneWayDirection, m.OneWayQuietPackets, dir)
		}
		// The single packet's direction has no duration to compare:
		// before, duration_asymmetry read forward_ms=0 reverse_ms=7117.
		if m.DurationAsymmetry != nil || m.CodecAsymmetry != nil || m.PtimeAsymmetry != nil {
			t.Errorf("got asymmetries %+v %+v %+v, want none", m.DurationAsymmetry, m.CodecAsymmetry, m.PtimeAsymmetry)
		}
	}
}

func b2buaStreams(t *testing.T, d analysis.DialogDiagnosis) {
	m := d.Media
	if m.NoMedia || m.NATMismatch || !m.Applicable || m.StreamCount != 2 {
		t.Errorf("got no_media %v nat_mismatch %v applicable %v streams %d, want false false true 2", m.NoMedia, m.NATMismatch, m.Applicable, m.StreamCount)
	}
	want := []string{"172.16.98.1:8000→172.16.98.145:8000", "172.16.98.145:8000→172.16.98.1:8000"}
	if fmt.Sprint(m.ActualMedia) != fmt.Sprint(want) {
		t.Errorf("got actual media %v, want %v", m.ActualMedia, want)
	}
}

func TestCaptureReport(t *testing.T) {
	st, facts := load(t, "SIP_CALL_RTP_G711")
	r := analysis.CaptureReport(facts, st, analysis.CaptureFacts{FramesRead: 4269, SourceExhausted: true}, analysis.Options{})
	if !r.Complete || r.StreamsExamined != 5 || r.FramesRead != 4269 {
		t.Errorf("got complete %v streams %d frames %d", r.Complete, r.StreamsExamined, r.FramesRead)
	}
	var orphans *analysis.Finding
	for i := range r.Findings {
		if r.Findings[i].Kind == "orphaned_media" {
			orphans = &r.Findings[i]
		}
	}
	// The MGCP call's stream and the two relay legs have no SIP dialog.
	if orphans == nil || orphans.Occurrences != 3 {
		t.Fatalf("got orphaned finding %+v, want 3 streams", orphans)
	}
	// Ranking: no finding outranks an earlier one.
	rank := map[string]int{"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}
	for i := 1; i < len(r.Findings); i++ {
		a, b := r.Findings[i-1], r.Findings[i]
		if rank[a.Severity] > rank[b.Severity] || (a.Severity == b.Severity && a.Occurrences < b.Occurrences) {
			t.Errorf("finding %d (%s %s %d) ranks above %d (%s %s %d)", i-1, a.Kind, a.Severity, a.Occurrences, i, b.Kind, b.Severity, b.Occurrences)
		}
	}
	// A read that stopped early, or shed anything, is never complete.
	for _, cf := range []analysis.CaptureFacts{
		{SourceExhausted: false},
		{SourceExhausted: true, SourceStoppedEarly: true},
		{SourceExhausted: true, Undecodable: map[string]uint64{"truncated": 1}},
		{SourceExhausted: true, DialogsEvicted: 2},
	} {
		if r := analysis.CaptureReport(facts, st, cf, analysis.Options{}); r.Complete || r.Clean {
			t.Errorf("facts %+v: got complete %v clean %v, want false", cf, r.Complete, r.Clean)
		}
	}
}

func TestReportEvidenceCap(t *testing.T) {
	st := media.NewStore(media.Config{})
	var facts []analysis.DialogFacts
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < analysis.MaxEvidence+7; i++ {
		facts = append(facts, analysis.DialogFacts{CallID: string(rune('a'+i%26)) + "x" + string(rune('0'+i/26)), Method: "INVITE", HasFinal: true, FinalCode: 503, CreatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	r := analysis.CaptureReport(facts, st, analysis.CaptureFacts{SourceExhausted: true}, analysis.Options{})
	if len(r.Findings) != 1 {
		t.Fatalf("got %d findings, want 1", len(r.Findings))
	}
	f := r.Findings[0]
	if f.Kind != "final_failure" || f.Severity != "high" || f.Occurrences != int64(analysis.MaxEvidence+7) || len(f.Evidence) != analysis.MaxEvidence || f.EvidenceOmitted != 7 {
		t.Errorf("got %s %s occurrences %d evidence %d omitted %d", f.Kind, f.Severity, f.Occurrences, len(f.Evidence), f.EvidenceOmitted)
	}
}

func TestOneWayAndCNWithhold(t *testing.T) {
	a := netip.MustParseAddrPort("198.51.100.1:4000")
	b := netip.MustParseAddrPort("203.0.113.9:5000")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := func(cnEvery int, reverse bool) analysis.MediaDiagnosis {
		st := media.NewStore(media.Config{})
		st.OnSDP("c", t0, &sdp.Session{Conn: "198.51.100.1", Media: []sdp.Media{{Type: "audio", Port: 4000, Formats: []sdp.Format{{PayloadType: 0}, {PayloadType: 13}}}}}, true, a)
		st.OnSDP("c", t0, &sdp.Session{Conn: "10.1.1.1", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}}}}}, false, b)
		for i := 0; i < 100; i++ {
			pt := byte(0)
			if cnEvery > 0 && i%cnEvery == 0 {
				pt = 13
			}
			pkt := []byte{0x80, pt, 0, byte(i), 0, 0, byte(i >> 8), byte(i), 0, 0, 0, 1}
			src, dst := a, b
			if reverse {
				src, dst = b, a
			}
			st.Observe(&packet.Packet{TS: t0.Add(time.Duration(i) * 20 * time.Millisecond), Src: src, Dst: dst, Transport: packet.TransportUDP, Payload: pkt})
		}
		return analysis.Diagnose(analysis.DialogFacts{CallID: "c", Answered: true, AnsweredAt: t0}, st, analysis.Options{}).Media
	}
	m := run(0, false)
	if !m.OneWayAudio || m.OneWayDirection != "offerer→answerer" {
		t.Errorf("no CN: got one_way %v direction %q", m.OneWayAudio, m.OneWayDirection)
	}
	// The answer announced 10.1.1.1 (private) to a public peer, but media
	// towards the answerer flowed (its own direction is the silent one):
	// the private address is an observation, not the problem.
	if m.PrivateMediaAddress || len(m.PrivateAddresses) != 1 || m.PrivateAddresses[0] != "10.1.1.1:5000" || len(m.Observations) != 1 {
		t.Errorf("got private %v %v observations %q", m.PrivateMediaAddress, m.PrivateAddresses, m.Observations)
	}
	// Media towards the private answerer never flowed: a problem.
	m = run(0, true)
	if !m.OneWayAudio || m.OneWayDirection != "answerer→offerer" || !m.PrivateMediaAddress || len(m.PrivateAddresses) != 1 {
		t.Errorf("towards the private side silent: got one_way %v %q private %v %v", m.OneWayAudio, m.OneWayDirection, m.PrivateMediaAddress, m.PrivateAddresses)
	}
	m = run(2, false) // half the packets comfort noise
	if m.OneWayAudio || m.OneWayWithheld == "" {
		t.Errorf("CN share 0.5: got one_way %v withheld %q", m.OneWayAudio, m.OneWayWithheld)
	}
}

// TestOneWayQuietDirection checks the silent-direction rule: none, or at
// most 5 packets against at least 50 the other way. The code before
// concluded one-way only with no packet at all the other way.
func TestOneWayQuietDirection(t *testing.T) {
	a := netip.MustParseAddrPort("198.51.100.1:4000")
	b := netip.MustParseAddrPort("198.51.100.2:5000")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		fwd, rev   int // packets a→b, b→a
		revFirst   bool
		wantOneWay bool
		wantQuiet  uint64
		wantDir    string
	}{
		{"nothing back", 100, 0, false, true, 0, "offerer→answerer"},
		{"one keepalive back", 100, 1, false, true, 1, "offerer→answerer"},
		{"one packet back before the media", 100, 1, true, true, 1, "offerer→answerer"},
		{"five back", 100, 5, false, true, 5, "offerer→answerer"},
		{"six back is two-way", 100, 6, false, false, 0, ""},
		{"quiet the other way round", 1, 100, true, true, 1, "answerer→offerer"},
		{"too little either way", 49, 1, false, false, 0, ""},
		{"fifty against one", 50, 1, false, true, 1, "offerer→answerer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := media.NewStore(media.Config{})
			st.OnSDP("c", t0, &sdp.Session{Conn: "198.51.100.1", Media: []sdp.Media{{Type: "audio", Port: 4000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, a)
			st.OnSDP("c", t0, &sdp.Session{Conn: "198.51.100.2", Media: []sdp.Media{{Type: "audio", Port: 5000, Formats: []sdp.Format{{PayloadType: 0}}}}}, false, b)
			send := func(src, dst netip.AddrPort, ssrc byte, n int, start time.Duration) {
				for i := 0; i < n; i++ {
					pkt := []byte{0x80, 0, 0, byte(i), 0, 0, byte(i >> 8), byte(i), 0, 0, 0, ssrc}
					st.Observe(&packet.Packet{TS: t0.Add(start + time.Duration(i)*20*time.Millisecond), Src: src, Dst: dst, Transport: packet.TransportUDP, Payload: pkt})
				}
			}
			revStart := 500 * time.Millisecond
			if tc.revFirst {
				revStart = -time.Second
			}
			send(a, b, 1, tc.fwd, 0)
			send(b, a, 2, tc.rev, revStart)
			m := analysis.Diagnose(analysis.DialogFacts{CallID: "c", Answered: true, AnsweredAt: t0.Add(-2 * time.Second)}, st, analysis.Options{}).Media
			if m.OneWayAudio != tc.wantOneWay || m.OneWayDirection != tc.wantDir {
				t.Fatalf("got one_way %v direction %q, want %v %q", m.OneWayAudio, m.OneWayDirection, tc.wantOneWay, tc.wantDir)
			}
			switch {
			case tc.wantOneWay && (m.OneWayQuietPackets == nil || *m.OneWayQuietPackets != tc.wantQuiet):
				t.Errorf("got quiet packets %v, want %d", m.OneWayQuietPackets, tc.wantQuiet)
			case !tc.wantOneWay && m.OneWayQuietPackets != nil:
				t.Errorf("got quiet packets %d, want absent", *m.OneWayQuietPackets)
			}
		})
	}
}

func TestSlowSetup(t *testing.T) {
	st := media.NewStore(media.Config{})
	f := analysis.DialogFacts{CallID: "s", HasPDD: true, PDD: 12 * time.Second}
	d := analysis.Diagnose(f, st, analysis.Options{})
	if d.Signaling == nil || d.Signaling.SlowSetup == nil || d.Signaling.SlowSetup.PDDMs != 12000 || d.Verdict != "signaling" {
		t.Errorf("got %+v", d.Signaling)
	}
	if d := analysis.Diagnose(f, st, analysis.Options{SlowSetup: 15 * time.Second}); d.Signaling != nil {
		t.Errorf("threshold 15 s: got %+v, want nothing fired", d.Signaling)
	}
	// The hint names the threshold as set: 0.5 s was printed "0 s".
	for _, tc := range []struct {
		threshold time.Duration
		want      string
	}{
		{0, "post-dial delay 12.0 s exceeds 11 s"},
		{500 * time.Millisecond, "post-dial delay 12.0 s exceeds 0.5 s"},
		{2250 * time.Millisecond, "post-dial delay 12.0 s exceeds 2.25 s"},
	} {
		d := analysis.Diagnose(f, st, analysis.Options{SlowSetup: tc.threshold})
		if d.Signaling == nil || !slices.Contains(d.Signaling.Hints, tc.want) {
			t.Errorf("threshold %v: hints %v, want %q", tc.threshold, d.Signaling, tc.want)
		}
	}
}

// TestHighJitterJudgesFinal checks that high jitter is judged on jitter_ms
// (the RFC 3550 value at the last packet, the value the MOS, rtp_stats and
// the rtp.jitter filter read), never on its mean: the code before judged
// jitter_mean_ms, so a late spike (the generator's jitter_spike kind: the
// last 3 packets held 1.0-1.2 s) went unreported while find_problems
// selected it, and long-settled early jitter was reported.
func TestHighJitterJudgesFinal(t *testing.T) {
	a := netip.MustParseAddrPort("198.51.100.1:4000")
	b := netip.MustParseAddrPort("198.51.100.2:5000")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		delay    func(i int) time.Duration // arrival delay of packet i of 250
		wantHigh bool
	}{
		{"late spike", func(i int) time.Duration {
			if i >= 247 {
				return time.Second + time.Duration(i-247)*100*time.Millisecond
			}
			return 0
		}, true},
		{"early jitter that settled", func(i int) time.Duration {
			if i < 150 && i%2 == 1 {
				return 120 * time.Millisecond
			}
			return 0
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := media.NewStore(media.Config{})
			st.OnSDP("c", t0, &sdp.Session{Conn: "198.51.100.1", Media: []sdp.Media{{Type: "audio", Port: 4000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, a)
			for i := 0; i < 250; i++ {
				ts := uint32(160 * i)
				pkt := []byte{0x80, 0, byte(i >> 8), byte(i), byte(ts >> 24), byte(ts >> 16), byte(ts >> 8), byte(ts), 0, 0, 0, 7}
				st.Observe(&packet.Packet{TS: t0.Add(time.Duration(i)*20*time.Millisecond + tc.delay(i)), Src: a, Dst: b, Transport: packet.TransportUDP, Payload: pkt})
			}
			s := st.All()[0]
			m := analysis.Diagnose(analysis.DialogFacts{CallID: "c", Answered: true, AnsweredAt: t0}, st, analysis.Options{}).Media
			t.Logf("jitter_ms %.3f mean %.3f max %.3f", *s.JitterMs, *s.JitterMeanMs, *s.JitterMaxMs)
			if got := len(m.HighJitter) == 1; got != tc.wantHigh {
				t.Fatalf("got high_jitter %+v, want present %v", m.HighJitter, tc.wantHigh)
			}
			if tc.wantHigh && m.HighJitter[0].Value != *s.JitterMs {
				t.Errorf("got value %v, want jitter_ms %v", m.HighJitter[0].Value, *s.JitterMs)
			}
			// The last interval's jitter is the same running value.
			ivs := s.QualityIntervals
			if last := ivs[len(ivs)-1]; last.JitterMs == nil || *last.JitterMs != *s.JitterMs {
				t.Errorf("last interval jitter %v, want jitter_ms %v", last.JitterMs, *s.JitterMs)
			}
		})
	}
}

// A relay that anchors the media: the phone's SDP announces 192.168.1.10
// and an SBC's rewrite of that offer, in the same dialog, announces the
// public 203.0.113.30, which the RTP uses. Even with the media one-way, the
// private address is an observation: one_way_audio carries the failure.
func TestPrivateAddressAnchoredByARelay(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	phone := netip.MustParseAddrPort("192.168.1.10:5060")
	sbc := netip.MustParseAddrPort("203.0.113.30:5060")
	relay := netip.MustParseAddrPort("203.0.113.30:40000")
	server := netip.MustParseAddrPort("198.51.100.9:30000")
	st := media.NewStore(media.Config{})
	st.OnSDP("c", t0, &sdp.Session{Conn: "192.168.1.10", Media: []sdp.Media{{Type: "audio", Port: 4000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, phone)
	st.OnSDP("c", t0, &sdp.Session{Conn: "203.0.113.30", Media: []sdp.Media{{Type: "audio", Port: 40000, Formats: []sdp.Format{{PayloadType: 0}}}}}, true, sbc)
	st.OnSDP("c", t0, &sdp.Session{Conn: "198.51.100.9", Media: []sdp.Media{{Type: "audio", Port: 30000, Formats: []sdp.Format{{PayloadType: 0}}}}}, false, server)
	for i := 0; i < 100; i++ {
		pkt := []byte{0x80, 0, 0, byte(i), 0, 0, byte(i >> 8), byte(i), 0, 0, 0, 1}
		st.Observe(&packet.Packet{TS: t0.Add(time.Duration(i) * 20 * time.Millisecond), Src: relay, Dst: server, Transport: packet.TransportUDP, Payload: pkt})
	}
	m := analysis.Diagnose(analysis.DialogFacts{CallID: "c", Answered: true, AnsweredAt: t0}, st, analysis.Options{}).Media
	if !m.OneWayAudio || m.PrivateMediaAddress || len(m.PrivateAddresses) != 1 || len(m.Observations) != 1 ||
		!strings.Contains(m.Observations[0], "a relay anchors the media at 203.0.113.30:40000") {
		t.Errorf("got one_way %v private %v %v observations %q", m.OneWayAudio, m.PrivateMediaAddress, m.PrivateAddresses, m.Observations)
	}
}

// TestCaptureReportFromStoreEqualsCaptureReportOfTheFacts: reading a
// store's dialogs one at a time gives the report CaptureReport gives of
// FactsFromStore, finding for finding, on every public capture.
func TestCaptureReportFromStoreEqualsCaptureReportOfTheFacts(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	nonEmpty := 0
	for _, name := range names {
		st := media.NewStore(media.Config{})
		ds := dialog.New(dialog.Config{})
		if _, err := mediatest.Feed(t, testcap.Public(name), st, ds); err != nil {
			continue // an unreadable capture has no report to compare
		}
		cf := analysis.CaptureFacts{SourceExhausted: true}
		want := analysis.CaptureReport(analysis.FactsFromStore(ds), st, cf, analysis.Options{})
		got := analysis.CaptureReportFromStore(ds, st, cf, analysis.Options{})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: CaptureReportFromStore differs from CaptureReport of FactsFromStore:\n got %+v\nwant %+v", name, got, want)
		}
		if len(want.Findings) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 3 {
		t.Fatalf("only %d public captures have findings: the comparison proves little", nonEmpty)
	}
}
