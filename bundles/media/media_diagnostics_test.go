package media

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// TestMediaDiagnosticsMatchesTshark checks each stream's facts against
// tshark on the same capture:
//
//   - DSCP and comfort-noise frames: tshark -r X -o rtp.heuristic_rtp:TRUE
//     -Y rtp -T fields -e rtp.ssrc -e ip.dsfield.dscp -e rtp.p_type | sort |
//     uniq -c. rtp-protocol.pcap: 0x44c61afb 39 PT 8 and 8 PT 13, DSCP 46;
//     0x06c156fd 196 PT 8 and 5 PT 13, DSCP 46. sip-over-tcp.pcap:
//     0x5a3361b3 4 PT 13, 0x42f433d4 2 PT 13, DSCP 46. SIP_CALL_RTP_G711:
//     DSCP 0 on both streams of 12013223@200.57.7.195.
//   - Silence periods and time: the same field list with frame.time_epoch,
//     a period opening at a CN packet after a non-CN one and lasting until
//     the next non-CN packet (or the stream's last packet): 0x44c61afb 2
//     periods, 3680.221 ms; 0x06c156fd 5 periods, 436.214 ms.
//   - RTCP: tshark -Y rtcp.pt==200 -e rtcp.senderssrc -e
//     rtcp.sender.packetcount: one SR each in rtp-protocol.pcap and
//     sip-over-tcp.pcap, 1 packet and 160 octets; the last SR of
//     SIP_CALL_RTP_G711's 0xd2bd4e3e says 548 packets,
//     87680 octets; 0x58f33dea's 749 and 117455 (the stream sipnab saw
//     carried 891: the claim stays apart).
func TestMediaDiagnosticsMatchesTshark(t *testing.T) {
	type want struct {
		ssrc                  string
		dscp                  uint8
		name                  string
		ef                    bool
		cn, periods           uint64
		silenceMs             float64
		delaySource           string
		srPackets, srOctets   uint32 // 0: no sender report
		clockBasis            string
		clockHz               uint32
		packets               uint64
		remarked, endpointRep bool
	}
	tests := []struct {
		name, file, callID string
		streams            []want
	}{
		{
			name: "comfort noise and EF marking", file: "rtp-protocol.pcap", callID: "1907983263271201083544@10.33.6.101",
			streams: []want{
				{ssrc: "0x44c61afb", dscp: 46, name: "EF", ef: true, cn: 8, periods: 2, silenceMs: 3680.221, delaySource: "assumed", srPackets: 1, srOctets: 160, clockBasis: "rtpmap", clockHz: 8000, packets: 47, endpointRep: true},
				{ssrc: "0x06c156fd", dscp: 46, name: "EF", ef: true, cn: 5, periods: 5, silenceMs: 436.214, delaySource: "assumed", srPackets: 1, srOctets: 160, clockBasis: "rtpmap", clockHz: 8000, packets: 201, endpointRep: true},
			},
		},
		{
			name: "comfort noise over a TCP-signaled call", file: "sip-over-tcp.pcap", callID: "",
			streams: []want{
				{ssrc: "0x5a3361b3", dscp: 46, name: "EF", ef: true, cn: 4, srPackets: 1, srOctets: 160, clockBasis: "rtpmap", clockHz: 8000, packets: 24, endpointRep: true},
				{ssrc: "0x42f433d4", dscp: 46, name: "EF", ef: true, cn: 2, srPackets: 1, srOctets: 160, clockBasis: "rtpmap", clockHz: 8000, packets: 42, endpointRep: true},
			},
		},
		{
			name: "RTCP claims kept apart, delay from the SR echo", file: "SIP_CALL_RTP_G711", callID: "12013223@200.57.7.195",
			streams: []want{
				{ssrc: "0xd2bd4e3e", dscp: 0, name: "CS0", delaySource: "sender_report_echo", srPackets: 548, srOctets: 87680, clockBasis: "rtpmap", clockHz: 8000, packets: 548, endpointRep: true},
				{ssrc: "0x58f33dea", dscp: 0, name: "CS0", delaySource: "assumed", srPackets: 749, srOctets: 117455, clockBasis: "rtpmap", clockHz: 8000, packets: 891, endpointRep: true},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.file)
			id := tc.callID
			if id == "" {
				ids := c.Dialogs().CallIDs()
				if len(ids) != 1 {
					t.Fatalf("want one dialog, got %v", ids)
				}
				id = ids[0]
			}
			var got MediaDiagnostics
			call(t, mediaDiagnosticsTool(&deps{capture: c}), `{"call_id":`+quote(id)+`}`, &got)
			if !got.Applicable || got.Reason != "" {
				t.Fatalf("applicable %v reason %q, want applicable", got.Applicable, got.Reason)
			}
			if !got.SourceExhausted || got.CaptureIdentity.Instance == "" {
				t.Errorf("source flags or identity missing: %+v %+v", got.SourceFlags, got.CaptureIdentity)
			}
			bySSRC := map[string]StreamDiagnostics{}
			for _, s := range got.Streams {
				bySSRC[s.SSRC] = s
			}
			if len(got.Streams) != len(tc.streams) {
				t.Fatalf("got %d streams, want %d", len(got.Streams), len(tc.streams))
			}
			for _, w := range tc.streams {
				s, ok := bySSRC[w.ssrc]
				if !ok {
					t.Fatalf("no stream %s", w.ssrc)
				}
				q := s.QoS
				if !q.MarkingObserved || q.DSCP == nil || *q.DSCP != w.dscp || q.Name != w.name || q.Expedited == nil || *q.Expedited != w.ef || (q.RemarkedTo != nil) != w.remarked {
					t.Errorf("%s: qos %+v, want dscp %d %s ef %v", w.ssrc, q, w.dscp, w.name, w.ef)
				}
				if s.Silence == nil || s.Silence.CNFrames != w.cn || (w.periods > 0 && (s.Silence.Periods != w.periods || s.Silence.TotalMs != w.silenceMs)) {
					t.Errorf("%s: silence %+v, want %d frames, %d periods, %g ms", w.ssrc, s.Silence, w.cn, w.periods, w.silenceMs)
				}
				if s.Jitter == nil || !s.Jitter.Grounded || s.Jitter.ClockBasis != w.clockBasis || s.Jitter.ClockRateHz != w.clockHz || s.Jitter.MeasuredMs == nil {
					t.Errorf("%s: jitter %+v, want grounded %s %d", w.ssrc, s.Jitter, w.clockBasis, w.clockHz)
				}
				if w.delaySource != "" && (s.Delay == nil || string(s.Delay.Source) != w.delaySource || s.Delay.Assumed != (w.delaySource == "assumed")) {
					t.Errorf("%s: delay %+v, want source %s", w.ssrc, s.Delay, w.delaySource)
				}
				if s.Packets != w.packets || unfence(s.Codec) != "PCMA" && unfence(s.Codec) != "PCMU" {
					t.Errorf("%s: %d packets codec %q, want %d", w.ssrc, s.Packets, s.Codec, w.packets)
				}
				er := s.EndpointReported
				if (er != nil) != w.endpointRep {
					t.Fatalf("%s: endpoint_reported %+v, want present %v", w.ssrc, er, w.endpointRep)
				}
				if w.srPackets > 0 && (er.SenderPacketCount == nil || *er.SenderPacketCount != w.srPackets || *er.SenderOctetCount != w.srOctets) {
					t.Errorf("%s: RTCP sender counts %+v, want %d and %d", w.ssrc, er, w.srPackets, w.srOctets)
				}
				if er != nil && er.CNAME != "" && !strings.HasPrefix(er.CNAME, sdk.FenceOpen) {
					t.Errorf("%s: CNAME %q is not fenced", w.ssrc, er.CNAME)
				}
			}
		})
	}
}

// TestMediaDiagnosticsWithoutMediaIsNotApplicable: a call with no stream is
// applicable false with the media diagnosis' reason, and the answer has no
// streams key at all (an empty list would read "checked, fine"). The
// reasons are SIP_CALL_RTP_G711's: 46E1C3CB...@Verso.com is a REGISTER-like
// dialog without SDP; 12015624@200.57.7.195 is an INVITE with SDP
// (tshark frame 2964) that was never answered.
func TestMediaDiagnosticsWithoutMediaIsNotApplicable(t *testing.T) {
	c := load(t, "SIP_CALL_RTP_G711")
	for _, tc := range []struct{ callID, reason string }{
		{"46E1C3CB36304F84A020CF6DD3F96461@Verso.com", "no SDP was seen for this dialog and no RTP reached the capture point"},
		{"12015624@200.57.7.195", "the call was never answered and no RTP reached the capture point"},
	} {
		t.Run(tc.callID, func(t *testing.T) {
			var got MediaDiagnostics
			r := call(t, mediaDiagnosticsTool(&deps{capture: c}), `{"call_id":`+quote(tc.callID)+`}`, &got)
			if got.Applicable || got.Reason != tc.reason {
				t.Errorf("applicable %v reason %q, want false and %q", got.Applicable, got.Reason, tc.reason)
			}
			var raw map[string]json.RawMessage
			_ = json.Unmarshal([]byte(r.Blocks[0]), &raw)
			if _, ok := raw["streams"]; ok {
				t.Errorf("a call without media carries a streams key: %s", r.Blocks[0])
			}
		})
	}
}

// TestMediaDiagnosticsOneWayDelayIsDeclared: with --one-way-delay the delay
// behind every stream is the operator's, source declared, not assumed.
func TestMediaDiagnosticsOneWayDelayIsDeclared(t *testing.T) {
	c := loadWith(t, engine.Config{Node: "test", Media: media.Config{OneWayDelayMs: 150, HasOneWayDelay: true}}, "sip-rtp-g711.pcap")
	var got MediaDiagnostics
	call(t, mediaDiagnosticsTool(&deps{capture: c}), `{"call_id":`+quote(sampleCallID)+`}`, &got)
	if len(got.Streams) != 1 {
		t.Fatalf("got %d streams, want 1", len(got.Streams))
	}
	if d := got.Streams[0].Delay; d == nil || d.Source != "declared" || d.Assumed || d.OneWayMs != 150 {
		t.Errorf("delay %+v, want declared 150 ms", d)
	}
}

// TestMediaDiagnosticsRemarkedOnlyOnAChange: a stream whose DSCP changes
// mid-stream (EF, then best effort) carries remarked_to 0; a steady one
// carries none. Crafted: an INVITE naming 192.0.2.10:4000, then 10 RTP
// packets each way, the first direction remarked after its fifth.
func TestMediaDiagnosticsRemarkedOnlyOnAChange(t *testing.T) {
	c := engine.New(engine.Config{Node: "test"}, nil)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const id = "remark-1@192.0.2.10"
	c.HandlePacket(testengine.SIP(t0, "192.0.2.10:5060", "198.51.100.20:5060", invite(id)))
	for i := range 10 {
		at := t0.Add(time.Duration(i+1) * 20 * time.Millisecond)
		dscp := uint8(46)
		if i >= 5 {
			dscp = 0
		}
		c.HandlePacket(rtpPacket(at, "198.51.100.20:5000", "192.0.2.10:4000", 0, uint16(100+i), uint32(160*i), 0xaaaa0001, dscp))
		c.HandlePacket(rtpPacket(at, "192.0.2.10:4000", "198.51.100.20:5000", 0, uint16(200+i), uint32(160*i), 0xbbbb0002, 46))
	}
	var got MediaDiagnostics
	call(t, mediaDiagnosticsTool(&deps{capture: c}), `{"call_id":`+quote(id)+`}`, &got)
	if len(got.Streams) != 2 {
		t.Fatalf("got %d streams, want 2", len(got.Streams))
	}
	for _, s := range got.Streams {
		q := s.QoS
		switch s.SSRC {
		case "0xaaaa0001":
			if q.DSCP == nil || *q.DSCP != 46 || q.RemarkedTo == nil || *q.RemarkedTo != 0 {
				t.Errorf("remarked stream: qos %s, want dscp 46 remarked_to 0", fmtQoS(q))
			}
		case "0xbbbb0002":
			if q.DSCP == nil || *q.DSCP != 46 || q.RemarkedTo != nil {
				t.Errorf("steady stream: qos %s, want dscp 46 and no remarked_to", fmtQoS(q))
			}
		default:
			t.Errorf("unexpected stream %s", s.SSRC)
		}
	}
}

func fmtQoS(q QoS) string {
	b, _ := json.Marshal(q)
	return string(b)
}

// TestMediaDiagnosticsRefusals: an empty call_id is missing_argument, a
// Call-ID with neither dialog nor stream unknown_id, both -32602.
func TestMediaDiagnosticsRefusals(t *testing.T) {
	testCallIDRefusals(t, mediaDiagnosticsTool)
}

// TestMediaDiagnosticsFitsTheByteCap: under --mcp-max-response-bytes 3000
// rtp-protocol.pcap's call answers with its first stream and counts the
// other (an answer with one stream is 2624 bytes on the wire, with both
// over 4000); under 2000 not even one fits and the call is refused.
func TestMediaDiagnosticsFitsTheByteCap(t *testing.T) {
	c := load(t, "rtp-protocol.pcap")
	lim := sdk.DefaultLimits()
	lim.MaxResponseBytes = 3000
	var got MediaDiagnostics
	callWith(t, mediaDiagnosticsTool(&deps{capture: c}), `{"call_id":"1907983263271201083544@10.33.6.101"}`, lim, &got)
	if len(got.Streams) != 1 || got.Streams[0].SSRC != "0x44c61afb" || got.StreamsOmitted != 1 || got.Truncated == nil || !*got.Truncated {
		t.Errorf("3000 bytes: %d streams, %d omitted, truncated %v; want the first, one omitted", len(got.Streams), got.StreamsOmitted, got.Truncated)
	}
	lim.MaxResponseBytes = 2000
	_, err := mediaDiagnosticsTool(&deps{capture: c}).Invoke(context.Background(), json.RawMessage(`{"call_id":"1907983263271201083544@10.33.6.101"}`), lim)
	if e := sdk.AsError(err); e == nil || e.Kind != sdk.KindTooLarge {
		t.Errorf("2000 bytes: got %v, want response_too_large", err)
	}
}
