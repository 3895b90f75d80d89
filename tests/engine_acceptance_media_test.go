package tests

// Engine II acceptance on captures written by the test: the stream fields
// of --json-run one by one against hand-computed values, RTCP kept beside the
// measurement, events, comfort noise, fax, MOS grounding per codec.

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/internal/testcap"
)

// accRTCPSR is an RTCP sender report (no report blocks).
func accRTCPSR(ssrc uint32, ntp uint64, rtpTS, packets, octets uint32) []byte {
	b := []byte{0x80, 200, 0, 6}
	b = binary.BigEndian.AppendUint32(b, ssrc)
	b = binary.BigEndian.AppendUint64(b, ntp)
	b = binary.BigEndian.AppendUint32(b, rtpTS)
	b = binary.BigEndian.AppendUint32(b, packets)
	return binary.BigEndian.AppendUint32(b, octets)
}

// accRTCPRR is a receiver report from ssrc with one report block about
// source.
func accRTCPRR(ssrc, source uint32, fraction uint8, cumLost uint32, highest, jitter uint32) []byte {
	b := []byte{0x81, 201, 0, 7}
	b = binary.BigEndian.AppendUint32(b, ssrc)
	b = binary.BigEndian.AppendUint32(b, source)
	b = binary.BigEndian.AppendUint32(b, uint32(fraction)<<24|cumLost&0xffffff)
	b = binary.BigEndian.AppendUint32(b, highest)
	b = binary.BigEndian.AppendUint32(b, jitter)
	return append(b, 0, 0, 0, 0, 0, 0, 0, 0) // LSR, DLSR
}

// accRTCPSDES is an SDES packet with one CNAME chunk.
func accRTCPSDES(ssrc uint32, cname string) []byte {
	chunk := binary.BigEndian.AppendUint32(nil, ssrc)
	chunk = append(chunk, 1, byte(len(cname)))
	chunk = append(chunk, cname...)
	chunk = append(chunk, 0)
	for len(chunk)%4 != 0 {
		chunk = append(chunk, 0)
	}
	b := []byte{0x81, 202}
	b = binary.BigEndian.AppendUint16(b, uint16(len(chunk)/4))
	return append(b, chunk...)
}

// accJitterRef is RFC 3550 §6.4.1 / A.8 in arrival order: the final,
// mean (over every packet but the first) and max interarrival jitter and
// the max interarrival delta, in ms, for arrivals (ns) and RTP timestamps
// at clock Hz.
func accJitterRef(arrivals []int64, stamps []uint32, clock float64) (final, mean, max, maxDelta float64) {
	var j, sum float64
	for i := 1; i < len(arrivals); i++ {
		dr := float64(arrivals[i]-arrivals[i-1]) / 1e6
		ds := float64(int32(stamps[i]-stamps[i-1])) * 1000 / clock
		d := math.Abs(dr - ds)
		j += (d - j) / 16
		sum += j
		max = math.Max(max, j)
		maxDelta = math.Max(maxDelta, dr)
	}
	return j, sum / float64(len(arrivals)-1), max, maxDelta
}

func accNear(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestEngineAcceptanceStreamFields: one call with rtcp-mux in both
// directions. A→B (PCMU, sequence wrapping through 65535) carries three
// duplicates, one swapped pair, two dropped packets, one RFC 4733 digit and
// comfort noise; B→A is clean but for known arrival delays; both sides send
// RTCP on the RTP ports. Plus an RTP flow on ports no SDP names (orphaned)
// and a T.38 fax call.
func TestEngineAcceptanceStreamFields(t *testing.T) {
	const (
		aSig, bSig = "192.0.2.10:5060", "192.0.2.20:5060"
		aRTP, bRTP = "192.0.2.10:16000", "192.0.2.20:20000"
		ssrcA      = uint32(0x0000abcd)
		ssrcB      = uint32(0x1234abcd)
		id         = "fields@a.example"
	)
	offer := accSDP("192.0.2.10", 16000, "0 101 13", "rtpmap:0 PCMU/8000", "rtpmap:101 telephone-event/8000", "fmtp:101 0-15", "rtpmap:13 CN/8000", "ptime:20", "rtcp-mux")
	answer := accSDP("192.0.2.20", 20000, "0 101 13", "rtpmap:0 PCMU/8000", "rtpmap:101 telephone-event/8000", "fmtp:101 0-15", "rtpmap:13 CN/8000", "ptime:20", "rtcp-mux")
	var frames []accFrame
	add := func(at time.Time, src, dst string, p []byte) {
		frames = append(frames, accFrame{at, accIPEth(accUDP(t, src, dst, p))})
	}
	add(accAt(0), aSig, bSig, accReq("INVITE", id, 1, "", offer))
	add(accAt(50), bSig, aSig, accResp(180, "Ringing", "INVITE", id, 1, ""))
	add(accAt(100), bSig, aSig, accResp(200, "OK", "INVITE", id, 1, answer))
	add(accAt(110), aSig, bSig, accReq("ACK", id, 1, "bt1", ""))

	start := accAt(200)
	pcmu := make([]byte, 160)
	// A→B: 250 packets of 20 ms from sequence 65500.
	type sent struct {
		at  time.Time
		pkt []byte
	}
	var aPkts []sent
	for i := 0; i < 250; i++ {
		seq := uint16(65500 + i)
		ts := uint32(1000 + 160*i)
		at := start.Add(time.Duration(i) * 20 * time.Millisecond)
		pt, pl, marker := uint8(0), pcmu, i == 0
		switch {
		case i >= 200 && i < 206: // digit 5: start, continuation, End ×3 (same timestamp)
			pt, ts, marker = 101, uint32(1000+160*200), i == 200
			dur := uint16(160 * (i - 199))
			flags := byte(0x0a)
			if i >= 203 {
				flags, dur = 0x8a, 160*4
			}
			pl = []byte{5, flags, byte(dur >> 8), byte(dur)}
		case i >= 220 && i < 230: // comfort noise
			pt, pl, marker = 13, []byte{40}, i == 220
		}
		if i == 150 || i == 151 {
			continue // dropped
		}
		p := accRTP(pt, marker, seq, ts, ssrcA, pl)
		aPkts = append(aPkts, sent{at, p})
		if i >= 40 && i < 43 {
			aPkts = append(aPkts, sent{at.Add(time.Millisecond), p}) // duplicate
		}
	}
	aPkts[100], aPkts[101] = sent{aPkts[100].at, aPkts[101].pkt}, sent{aPkts[101].at, aPkts[100].pkt}
	for _, s := range aPkts {
		add(s.at, aRTP, bRTP, s.pkt)
	}
	// B→A: 250 clean packets, arrival i·20 ms + ((7i) mod 11)·0.9 ms.
	var arrivals []int64
	var stamps []uint32
	for i := 0; i < 250; i++ {
		at := start.Add(time.Duration(i)*20*time.Millisecond + time.Duration((7*i)%11)*900*time.Microsecond)
		ts := uint32(5000 + 160*i)
		add(at, bRTP, aRTP, accRTP(0, i == 0, uint16(100+i), ts, ssrcB, pcmu))
		arrivals = append(arrivals, at.UnixNano())
		stamps = append(stamps, ts)
	}
	// RTCP on the RTP ports (rtcp-mux): B's SR + SDES, A's RR about B +
	// SDES; the RR claims 7 lost where B→A lost none.
	add(accAt(3000), bRTP, aRTP, append(accRTCPSR(ssrcB, 0xe1f0000000000000, 5000+160*140, 140, 140*160), accRTCPSDES(ssrcB, "bob@b.example")...))
	add(accAt(3010), aRTP, bRTP, append(accRTCPRR(ssrcA, ssrcB, 64, 7, 240, 80), accRTCPSDES(ssrcA, "alice@a.example")...))
	add(accAt(5600), aSig, bSig, accReq("BYE", id, 2, "bt1", ""))
	add(accAt(5610), bSig, aSig, accResp(200, "OK", "BYE", id, 2, ""))

	// An RTP flow no SDP names: found by its shape, orphaned.
	for i := 0; i < 50; i++ {
		add(start.Add(time.Duration(i)*20*time.Millisecond+500*time.Microsecond), "198.51.100.7:31234", "198.51.100.8:41234", accRTP(8, i == 0, uint16(7000+i), uint32(160*i), 0x0c0c0c0c, pcmu))
	}
	// A T.38 fax call: UDPTL both ways.
	fid := "fax@a.example"
	add(accAt(6000), "192.0.2.11:5060", "192.0.2.21:5060", accReq("INVITE", fid, 1, "", accSDP("192.0.2.11", 17000, "t38", "T38FaxVersion:0", "T38FaxUdpEC:t38UDPRedundancy")))
	add(accAt(6100), "192.0.2.21:5060", "192.0.2.11:5060", accResp(200, "OK", "INVITE", fid, 1, accSDP("192.0.2.21", 21000, "t38", "T38FaxVersion:0")))
	add(accAt(6110), "192.0.2.11:5060", "192.0.2.21:5060", accReq("ACK", fid, 1, "bt1", ""))
	for i := 0; i < 20; i++ {
		udptl := []byte{0, byte(i), 0x06, 0xd0, 0x00}
		add(accAt(6200+40*i), "192.0.2.11:17000", "192.0.2.21:21000", udptl)
		add(accAt(6210+40*i), "192.0.2.21:21000", "192.0.2.11:17000", udptl)
	}
	sortFrames(frames)
	p := accWrite(t, t.TempDir(), "fields.pcap", layers.LinkTypeEthernet, frames)
	_, doc := accLoad(t, p)
	bykey := map[string]media.StreamInfo{}
	var faxes []media.StreamInfo
	for _, s := range doc.Streams {
		if s.Kind == "fax" {
			faxes = append(faxes, s)
			continue
		}
		bykey[s.SSRC] = s
	}
	a, okA := bykey["0x0000abcd"]
	b, okB := bykey["0x1234abcd"]
	o, okO := bykey["0x0c0c0c0c"]
	if !okA || !okB || !okO || len(doc.Streams) != 5 {
		t.Fatalf("got streams %v and %d fax, want 0x0000abcd, 0x1234abcd, 0x0c0c0c0c and two fax flows", keys(bykey), len(faxes))
	}

	t.Run("A to B: sequence accounting", func(t *testing.T) {
		// 250 sequence numbers, 248 sent once, 3 of them twice: received
		// 251, expected 250, lost -1 (RFC 3550: negative with duplicates).
		if a.Src != aRTP || a.Dst != bRTP || a.AssociatedDialog != id || a.Orphaned {
			t.Errorf("got %s > %s dialog %q orphaned %v", a.Src, a.Dst, a.AssociatedDialog, a.Orphaned)
		}
		if a.Packets != 251 || a.Expected != 250 || a.Lost != -1 || a.Duplicates != 3 || a.OutOfOrder != 1 {
			t.Errorf("got packets %d expected %d lost %d duplicates %d out_of_order %d; want 251 250 -1 3 1",
				a.Packets, a.Expected, a.Lost, a.Duplicates, a.OutOfOrder)
		}
		// The gap of the two dropped packets, and the one the swap opened
		// before the late packet arrived.
		if a.SequenceJumps != 2 {
			t.Errorf("got sequence_jumps %d, want 2", a.SequenceJumps)
		}
		if a.Codec != "PCMU" || a.PayloadType != 0 || a.ClockRateHz != 8000 || a.Kind != "audio" {
			t.Errorf("got %s pt %d clock %d kind %s", a.Codec, a.PayloadType, a.ClockRateHz, a.Kind)
		}
		pts := map[int]uint64{}
		for _, c := range a.PayloadTypes {
			pts[c.PayloadType] = c.Packets
		}
		if pts[0] != 235 || pts[101] != 6 || pts[13] != 10 {
			t.Errorf("got payload types %v, want 0:235 101:6 13:10", pts)
		}
	})
	t.Run("A to B: lost sequence numbers are the ones never received", func(t *testing.T) {
		want := []uint16{(65500 + 150) % 65536, (65500 + 151) % 65536}
		if fmt.Sprint(a.LostSequences) != fmt.Sprint(want) {
			t.Errorf("got lost_sequences %v, want %v (the swapped packet arrived)", a.LostSequences, want)
		}
	})
	t.Run("A to B: events and comfort noise", func(t *testing.T) {
		if a.Events == nil || a.Events.Count != 1 || a.Events.Digits != "x" {
			t.Errorf("got events %+v, want one masked digit", a.Events)
		}
		if a.Silence == nil || a.Silence.CNFrames != 10 || a.Silence.Periods != 1 {
			t.Errorf("got silence %+v, want 10 CN frames in one period", a.Silence)
		}
	})
	t.Run("B to A: jitter, delta and intervals", func(t *testing.T) {
		fin, mean, max, dmax := accJitterRef(arrivals, stamps, 8000)
		if b.JitterMs == nil || b.JitterMeanMs == nil || b.JitterMaxMs == nil || b.DeltaMaxMs == nil {
			t.Fatalf("got jitter %v/%v/%v delta %v, want all measured", b.JitterMs, b.JitterMeanMs, b.JitterMaxMs, b.DeltaMaxMs)
		}
		if !accNear(*b.JitterMs, fin, 0.0011) || !accNear(*b.JitterMeanMs, mean, 0.0011) || !accNear(*b.JitterMaxMs, max, 0.0011) || !accNear(*b.DeltaMaxMs, dmax, 0.0011) {
			t.Errorf("got jitter %.4f mean %.4f max %.4f delta max %.4f; want %.4f %.4f %.4f %.4f",
				*b.JitterMs, *b.JitterMeanMs, *b.JitterMaxMs, *b.DeltaMaxMs, fin, mean, max, dmax)
		}
		if b.Packets != 250 || b.Expected != 250 || b.Lost != 0 || b.LossPct != 0 || b.Duplicates != 0 || b.OutOfOrder != 0 || b.SequenceJumps != 0 {
			t.Errorf("got %d/%d lost %d (%.3f %%) dup %d ooo %d jumps %d", b.Packets, b.Expected, b.Lost, b.LossPct, b.Duplicates, b.OutOfOrder, b.SequenceJumps)
		}
		if !b.FirstSeen.Equal(time.Unix(0, arrivals[0]).UTC()) || !b.LastSeen.Equal(time.Unix(0, arrivals[249]).UTC()) {
			t.Errorf("got first/last %v %v", b.FirstSeen, b.LastSeen)
		}
		// 5 s intervals from the capture's 5 s boundary: [0, 5 s) holds
		// the packets that arrived before accT0+5s.
		var n0 uint32
		for _, at := range arrivals {
			if at < accT0.Add(5*time.Second).UnixNano() {
				n0++
			}
		}
		if len(b.QualityIntervals) != 2 || b.QualityIntervals[0].Packets != n0 || b.QualityIntervals[1].Packets != 250-n0 {
			t.Fatalf("got %d intervals %+v, want 2 with %d and %d packets", len(b.QualityIntervals), b.QualityIntervals, n0, 250-n0)
		}
		for _, iv := range b.QualityIntervals {
			if iv.MOS == nil || !iv.MOSGrounded || iv.JitterMs == nil || iv.Verdict != "acceptable" || iv.Lost != 0 {
				t.Errorf("interval %v: mos %v grounded %v jitter %v verdict %s lost %d", iv.Timestamp, iv.MOS, iv.MOSGrounded, iv.JitterMs, iv.Verdict, iv.Lost)
			}
		}
	})
	t.Run("RTCP is the endpoint's claim, kept apart", func(t *testing.T) {
		er := b.EndpointReported
		if er == nil || er.SenderReports != 1 || er.ReceptionReports != 1 || er.SenderPacketCount == nil || *er.SenderPacketCount != 140 ||
			er.CumulativeLost == nil || *er.CumulativeLost != 7 || er.FractionLostPct == nil || *er.FractionLostPct != 25 || er.CNAME != "bob@b.example" {
			t.Fatalf("got endpoint_reported %+v", er)
		}
		// The claim of 7 lost does not touch the measurement (0 lost) or
		// the score: the MOS is the one of a lossless stream.
		if b.Lost != 0 || b.MOS == nil || *b.MOS < 4.3 {
			t.Errorf("got lost %d mos %v", b.Lost, b.MOS)
		}
		if doc.Run.Media.RTCPPackets != 2 {
			t.Errorf("got %d RTCP packets, want 2 (two compound datagrams)", doc.Run.Media.RTCPPackets)
		}
	})
	t.Run("RTP on ports no SDP names is an orphan", func(t *testing.T) {
		if !o.Orphaned || o.AssociatedDialog != "" || o.Packets != 50 || o.Codec != "PCMA" || o.Lost != 0 || o.Src != "198.51.100.7:31234" {
			t.Errorf("got orphaned %v dialog %q packets %d codec %s lost %d src %s", o.Orphaned, o.AssociatedDialog, o.Packets, o.Codec, o.Lost, o.Src)
		}
	})
	t.Run("T.38 is fax, not graded as voice", func(t *testing.T) {
		if len(faxes) != 2 {
			t.Fatalf("got %d fax flows, want 2", len(faxes))
		}
		for _, f := range faxes {
			if f.AssociatedDialog != fid || f.Packets != 20 || f.MOS != nil || f.MOSGrounded || f.JitterMs != nil {
				t.Errorf("got fax %s > %s dialog %q packets %d mos %v jitter %v", f.Src, f.Dst, f.AssociatedDialog, f.Packets, f.MOS, f.JitterMs)
			}
		}
	})
}

func keys(m map[string]media.StreamInfo) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sortFrames(fs []accFrame) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].ts.Before(fs[j-1].ts); j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// TestEngineAcceptanceMOSGrounding: G.711, G.729 and Opus are scored on
// G.113 values (mos_grounded, mos_grounding published); G.722, AMR, AMR-WB,
// EVS and an unknown codec get a placeholder flagged ungrounded with a
// note. Also on the public G.722 capture.
func TestEngineAcceptanceMOSGrounding(t *testing.T) {
	cases := []struct {
		codec    string
		pt       uint8
		rtpmap   string
		clock    uint32
		grounded bool
		ie       float64 // G.113 equipment impairment (5: the placeholder)
	}{
		{"PCMU", 0, "", 8000, true, 0},
		{"PCMA", 8, "", 8000, true, 0},
		{"G729", 18, "", 8000, true, 10},
		{"opus", 111, "opus/48000/2", 48000, true, 0},
		{"G722", 9, "", 8000, false, 5},
		{"AMR", 96, "AMR/8000", 8000, false, 5},
		{"AMR-WB", 97, "AMR-WB/16000", 16000, false, 5},
		{"EVS", 98, "EVS/16000", 16000, false, 5},
		{"X-UNKNOWN", 99, "X-UNKNOWN/8000", 8000, false, 5},
	}
	var frames []accFrame
	for k, tc := range cases {
		id := fmt.Sprintf("mos-%d@a.example", k)
		a, b := fmt.Sprintf("192.0.2.%d", 30+k), fmt.Sprintf("192.0.2.%d", 130+k)
		var attrs []string
		if tc.rtpmap != "" {
			attrs = append(attrs, fmt.Sprintf("rtpmap:%d %s", tc.pt, tc.rtpmap))
		}
		add := func(ms int, src, dst string, p []byte) {
			frames = append(frames, accFrame{accAt(ms), accIPEth(accUDP(t, src, dst, p))})
		}
		add(k, a+":5060", b+":5060", accReq("INVITE", id, 1, "", accSDP(a, 16000, fmt.Sprint(tc.pt), attrs...)))
		add(100+k, b+":5060", a+":5060", accResp(200, "OK", "INVITE", id, 1, accSDP(b, 20000, fmt.Sprint(tc.pt), attrs...)))
		step := tc.clock / 50
		for i := 0; i < 100; i++ {
			add(200+20*i+k, a+":16000", b+":20000", accRTP(tc.pt, i == 0, uint16(i), uint32(i)*step, uint32(0x5000+k), make([]byte, 40)))
		}
	}
	sortFrames(frames)
	p := accWrite(t, t.TempDir(), "codecs.pcap", layers.LinkTypeEthernet, frames)
	_, doc := accLoad(t, p)
	got := map[string]media.StreamInfo{}
	for _, s := range doc.Streams {
		got[s.AssociatedDialog] = s
	}
	for k, tc := range cases {
		t.Run(tc.codec, func(t *testing.T) {
			s, ok := got[fmt.Sprintf("mos-%d@a.example", k)]
			if !ok {
				t.Fatal("stream not found")
			}
			if s.Codec != tc.codec || s.ClockRateHz != tc.clock || s.MOS == nil {
				t.Fatalf("got codec %q clock %d mos %v, want %s %d and a score", s.Codec, s.ClockRateHz, s.MOS, tc.codec, tc.clock)
			}
			wantGrounding := "published"
			if !tc.grounded {
				wantGrounding = "unpublished"
			}
			if s.MOSGrounded != tc.grounded || s.MOSGrounding != wantGrounding || (s.MOSNote != "") == tc.grounded {
				t.Errorf("got grounded %v (%s) note %q, want %v (%s) and a note exactly when ungrounded", s.MOSGrounded, s.MOSGrounding, s.MOSNote, tc.grounded, wantGrounding)
			}
			// No loss, jitter ~0, the assumed 100 ms path: R = 93.2 − 2.4 − Ie.
			r := 93.2 - 2.4 - tc.ie
			if want := 1 + 0.035*r + r*(r-60)*(100-r)*7e-6; !accNear(*s.MOS, want, 0.005) {
				t.Errorf("clean stream: got MOS %.3f, want %.3f (Ie %v)", *s.MOS, want, tc.ie)
			}
		})
	}
	t.Run("sip-rtp-g722.pcap", func(t *testing.T) {
		_, doc := accLoad(t, testcap.Public("sip-rtp-g722.pcap"))
		if len(doc.Streams) == 0 {
			t.Fatal("no stream")
		}
		for _, s := range doc.Streams {
			if s.Codec != "G722" || s.MOSGrounded || s.MOSGrounding != "unpublished" || s.MOSNote == "" {
				t.Errorf("%s: got codec %s grounded %v (%s) note %q", s.SSRC, s.Codec, s.MOSGrounded, s.MOSGrounding, s.MOSNote)
			}
			for _, iv := range s.QualityIntervals {
				if iv.MOSGrounded {
					t.Errorf("%s: interval %v grounded", s.SSRC, iv.Timestamp)
				}
			}
		}
	})
}

// TestEngineAcceptanceSDPAssociation: streams tie to their dialog through
// an SDP inside a multipart body, an a=rtcp port, and a re-INVITE that
// moves the caller's media elsewhere.
func TestEngineAcceptanceSDPAssociation(t *testing.T) {
	const id = "assoc@a.example"
	const aSig, bSig = "192.0.2.60:5060", "192.0.2.61:5060"
	sdpA := accSDP("192.0.2.60", 16000, "0", "rtcp:16011")
	mp := "--b1\r\nContent-Type: application/sdp\r\n\r\n" + sdpA + "\r\n--b1\r\nContent-Type: application/isup;version=itu-t92+\r\n\r\n\x01\x00\x49\x00\r\n--b1--\r\n"
	var frames []accFrame
	add := func(ms int, src, dst string, p []byte) {
		frames = append(frames, accFrame{accAt(ms), accIPEth(accUDP(t, src, dst, p))})
	}
	add(0, aSig, bSig, accReq("INVITE", id, 1, "", mp, "Content-Type: multipart/mixed;boundary=b1"))
	add(100, bSig, aSig, accResp(200, "OK", "INVITE", id, 1, accSDP("192.0.2.61", 20000, "0")))
	add(110, aSig, bSig, accReq("ACK", id, 1, "bt1", ""))
	for i := 0; i < 100; i++ {
		add(200+20*i, "192.0.2.60:16000", "192.0.2.61:20000", accRTP(0, i == 0, uint16(i), uint32(160*i), 0xa0, make([]byte, 160)))
		add(201+20*i, "192.0.2.61:20000", "192.0.2.60:16000", accRTP(0, i == 0, uint16(i), uint32(160*i), 0xb0, make([]byte, 160)))
	}
	add(1500, "192.0.2.60:16011", "192.0.2.61:20001", accRTCPSR(0xa0, 0xe1f0000000000000, 160*60, 60, 60*160))
	// re-INVITE: the caller's media moves to 192.0.2.62:16500.
	add(2500, aSig, bSig, accReq("INVITE", id, 2, "bt1", accSDP("192.0.2.62", 16500, "0")))
	add(2600, bSig, aSig, accResp(200, "OK", "INVITE", id, 2, accSDP("192.0.2.61", 20000, "0")))
	add(2610, aSig, bSig, accReq("ACK", id, 2, "bt1", ""))
	for i := 0; i < 100; i++ {
		add(2700+20*i, "192.0.2.62:16500", "192.0.2.61:20000", accRTP(0, i == 0, uint16(i), uint32(160*i), 0xa2, make([]byte, 160)))
		add(2701+20*i, "192.0.2.61:20000", "192.0.2.62:16500", accRTP(0, false, uint16(100+i), uint32(160*(100+i)), 0xb0, make([]byte, 160)))
	}
	add(5000, aSig, bSig, accReq("BYE", id, 3, "bt1", ""))
	add(5010, bSig, aSig, accResp(200, "OK", "BYE", id, 3, ""))
	sortFrames(frames)
	p := accWrite(t, t.TempDir(), "assoc.pcap", layers.LinkTypeEthernet, frames)
	_, doc := accLoad(t, p)
	if doc.Run.SDPBodies != 4 {
		t.Errorf("got %d SDP bodies, want 4 (the multipart one included)", doc.Run.SDPBodies)
	}
	want := map[string]uint64{
		"0x000000a0 192.0.2.60:16000 > 192.0.2.61:20000": 100,
		"0x000000b0 192.0.2.61:20000 > 192.0.2.60:16000": 100,
		"0x000000a2 192.0.2.62:16500 > 192.0.2.61:20000": 100,
		"0x000000b0 192.0.2.61:20000 > 192.0.2.62:16500": 100,
	}
	if len(doc.Streams) != len(want) {
		t.Errorf("got %d streams, want %d", len(doc.Streams), len(want))
	}
	for _, s := range doc.Streams {
		k := accKey(s.SSRC, s.Src, s.Dst)
		n, ok := want[k]
		if !ok || s.Packets != n || s.AssociatedDialog != id {
			t.Errorf("stream %s: packets %d dialog %q; want one of the call's", k, s.Packets, s.AssociatedDialog)
		}
		if s.SSRC == "0x000000a0" && (s.EndpointReported == nil || s.EndpointReported.SenderReports != 1) {
			t.Errorf("stream %s: the SR from the a=rtcp port not kept: %+v", k, s.EndpointReported)
		}
	}
}
