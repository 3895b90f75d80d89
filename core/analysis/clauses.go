package analysis

import (
	"math"

	"github.com/sipnab/sipnab/core/media"
)

// The clauses of a dialog's diagnosis: each detection that fired, as the
// rule, the values it measured, its threshold and its proof. Diagnose
// derives the verdict from them alone (VerdictOf).

func num[T ~int | ~int64 | ~uint8 | ~uint32 | ~uint64](v T) float64 { return float64(v) }

// round3 keeps three decimals: a measured value is shown as measured, not
// with float noise.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// signalingClauses turns the signaling detections into clauses.
func signalingClauses(d *DialogFacts, s *SignalingDiagnosis, opts Options, e *evidenceOf) {
	if s == nil {
		return
	}
	fr := d.Frames
	if ff := s.FinalFailure; ff != nil {
		c, err := NewClause("final_failure", map[string]float64{"code": num(ff.Code)})
		c = c.WithObserved("class", ff.Class).WithMessages(fr, ff.Evidence...)
		if ff.Method != "" {
			c = c.WithObserved("method", hintMethod(ff.Method))
		}
		e.add(c, err)
	}
	if a := s.AuthLoop; a != nil {
		c, err := NewClause("auth_loop", map[string]float64{
			"challenges": num(a.Challenges), "authorized_requests": num(a.AuthorizedRequests), "code": num(a.Code)})
		e.add(c.WithThreshold("challenges", AuthLoopMinChallenges).WithObserved("kind", a.Kind).WithMessages(fr, a.Evidence...), err)
	}
	for i := range s.Retransmissions {
		r := &s.Retransmissions[i]
		c, err := NewClause("retransmissions", map[string]float64{"copies": num(r.Count), "span_ms": num(r.SpanMs), "cseq": num(r.CSeq)})
		e.add(c.WithObserved("method", hintMethod(r.Method)).WithMessages(fr, r.Evidence...), err)
	}
	for i := range s.ICMPUnreachable {
		u := &s.ICMPUnreachable[i]
		v := map[string]float64{"errors": num(u.Errors + u.ErrorsNotKept), "type": num(u.Type), "code": num(u.Code)}
		if u.MTU > 0 {
			v["mtu"] = num(u.MTU)
		}
		c, err := NewClause("icmp_unreachable", v)
		c = c.WithObserved("kind", u.Kind).WithObserved("endpoint", u.Endpoint).WithObserved("reporter", u.Reporter)
		e.add(c.WithMessages(fr, u.Messages...).WithFrames(u.Frames...), err)
	}
	if a := s.AckMissing; a != nil {
		c, err := NewClause("ack_missing", map[string]float64{"waited_ms": num(a.WaitedMs), "answer_copies": num(a.AnswerCopies), "cseq": num(a.CSeq)})
		e.add(c.WithThreshold("waited_ms", num(a.TimerHMs)).WithMessages(fr, a.Evidence...), err)
	}
	if a := s.Abandoned; a != nil {
		if a.Kind == AbandonedCancelled {
			v := map[string]float64{"cseq": num(a.CSeq)}
			if a.FinalCode != 0 {
				v["final_code"] = num(a.FinalCode)
			}
			c, err := NewClause("abandoned_cancelled", v)
			e.add(c.WithMessages(fr, a.Evidence...), err)
		} else {
			c, err := NewClause("abandoned_no_final_response", map[string]float64{"waited_ms": num(a.WaitedMs), "cseq": num(a.CSeq)})
			e.add(c.WithThreshold("waited_ms", num(a.TimerCMs)).WithMessages(fr, a.Evidence...), err)
		}
	}
	if p := s.PostDialDelay; p != nil {
		c, err := NewClause("post_dial_delay", map[string]float64{"pdd_ms": p.PDDMs})
		e.add(c.WithThreshold("pdd_ms", p.ThresholdMs).WithMessages(fr, p.Evidence...), err)
	}
	if r := s.RegistrationFailure; r != nil {
		v := map[string]float64{}
		if r.Code != 0 {
			v["code"] = num(r.Code)
		}
		if r.RequestedExpirySec != nil {
			v["requested_expiry_sec"] = num(*r.RequestedExpirySec)
		}
		if r.GrantedExpirySec != nil {
			v["granted_expiry_sec"] = num(*r.GrantedExpirySec)
		}
		rule := "registration_failure"
		if r.Kind == RegistrationShortenedExpiry {
			rule = "registration_shortened_expiry"
		}
		c, err := NewClause(rule, v)
		e.add(c.WithObserved("kind", r.Kind).WithMessages(fr, r.Evidence...), err)
	}
}

// streamEvidence adds a stream's SSRC and first-packet pointer.
func streamEvidence(c Clause, prefix string, s *StreamRef, frame string) Clause {
	return c.WithObserved(prefix+"ssrc", s.SSRC).WithFrames(frame)
}

// mediaClauses turns the media findings into clauses. streams are the
// dialog's streams (for their first-packet pointers).
func mediaClauses(m *MediaDiagnosis, streams []media.StreamInfo, opts Options, captureRTP uint64, e *evidenceOf) {
	frameOf := map[string]string{}
	for i := range streams {
		frameOf[streams[i].SSRC+" "+streams[i].Src] = streams[i].Frame
	}
	firstFrames := func(ss []media.StreamInfo) []string {
		var out []string
		for i := range ss {
			if ss[i].Frame != "" {
				out = append(out, ss[i].Frame)
			}
		}
		return out
	}
	if m.NoMedia {
		c, err := NewClause("no_media", map[string]float64{
			"rtp_streams": 0, "sdp_endpoints": num(len(m.SDPMedia)), "capture_rtp_packets": num(captureRTP)})
		e.add(c.WithThreshold("capture_rtp_packets", 1), err)
	}
	if m.OneWayAudio && m.OneWayQuietPackets != nil {
		var loud uint64
		for i := range streams {
			if streams[i].Kind != "video" && streams[i].Kind != "fax" {
				loud += streams[i].Packets
			}
		}
		loud -= *m.OneWayQuietPackets
		c, err := NewClause("one_way_audio", map[string]float64{"loud_packets": num(loud), "quiet_packets": num(*m.OneWayQuietPackets)})
		c = c.WithThreshold("quiet_packets", OneWayQuietPackets).WithThreshold("loud_packets", OneWayMinPackets)
		e.add(c.WithObserved("direction", m.OneWayDirection).WithFrames(firstFrames(streams)...), err)
	}
	if m.NATMismatch {
		c, err := NewClause("nat_mismatch", map[string]float64{"streams": num(len(m.NATEvidence))})
		for i, n := range m.NATEvidence {
			if i == 0 {
				c = c.WithObserved("actual_source", n.Actual)
				if len(n.Announced) > 0 {
					c = c.WithObserved("announced", n.Announced[0])
				}
			}
			c = c.WithFrames(frameOf[n.Stream.SSRC+" "+n.Stream.Src])
		}
		e.add(c, err)
	}
	if m.PrivateMediaAddress {
		c, err := NewClause("private_media_address", map[string]float64{"private_addresses": num(len(m.PrivateAddresses))})
		if len(m.PrivateAddresses) > 0 {
			c = c.WithObserved("address", m.PrivateAddresses[0])
		}
		e.add(c, err)
	}
	fwd, rev := directions(streams)
	dirCounts := map[string]float64{"forward_streams": num(len(fwd)), "reverse_streams": num(len(rev))}
	if a := m.CodecAsymmetry; a != nil {
		c, err := NewClause("codec_asymmetry", dirCounts)
		e.add(c.WithObserved("forward", a.Forward).WithObserved("reverse", a.Reverse).WithFrames(firstFrames(streams)...), err)
	}
	if a := m.PayloadAsymmetry; a != nil {
		c, err := NewClause("payload_asymmetry", dirCounts)
		e.add(c.WithObserved("forward", a.Forward).WithObserved("reverse", a.Reverse).WithFrames(firstFrames(streams)...), err)
	}
	if a := m.PtimeAsymmetry; a != nil {
		v := map[string]float64{}
		if pf, pr, ok := ptimes(fwd, rev); ok {
			v["forward_ptime_ms"], v["reverse_ptime_ms"] = round3(pf), round3(pr)
		}
		c, err := NewClause("ptime_asymmetry", v)
		e.add(c.WithThreshold("difference_ms", PtimeAsymmetryMs).WithFrames(firstFrames(streams)...), err)
	}
	if a := m.DurationAsymmetry; a != nil {
		c, err := NewClause("duration_asymmetry", map[string]float64{"forward_ms": a.ForwardMs, "reverse_ms": a.ReverseMs})
		c = c.WithThreshold("difference_pct", DurationAsymmetryPct).WithThreshold("difference_ms", ms(DurationAsymmetryMinimum))
		e.add(c.WithFrames(firstFrames(streams)...), err)
	}
	if m.LateMediaMs != nil {
		c, err := NewClause("late_media", map[string]float64{"late_ms": *m.LateMediaMs})
		e.add(c.WithThreshold("late_ms", ms(LateMediaThreshold)).WithFrames(firstFrames(streams)...), err)
	}
	byRef := map[StreamRef]*media.StreamInfo{}
	for i := range streams {
		byRef[ref(&streams[i])] = &streams[i]
	}
	for _, q := range m.HighLoss {
		v := map[string]float64{"loss_pct": round3(q.Value)}
		frame := ""
		if s := byRef[q.Stream]; s != nil {
			v["expected"], v["lost"], v["packets"] = num(s.Expected), num(s.Lost), num(s.Packets)
			frame = s.Frame
		}
		c, err := NewClause("high_loss", v)
		e.add(streamEvidence(c.WithThreshold("loss_pct", q.Limit), "", &q.Stream, frame), err)
	}
	for _, q := range m.HighJitter {
		v := map[string]float64{"jitter_ms": round3(q.Value)}
		frame := ""
		if s := byRef[q.Stream]; s != nil {
			v["packets"] = num(s.Packets)
			frame = s.Frame
		}
		c, err := NewClause("high_jitter", v)
		e.add(streamEvidence(c.WithThreshold("jitter_ms", q.Limit), "", &q.Stream, frame), err)
	}
}
