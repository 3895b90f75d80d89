package analysis

import (
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/packet"
)

// FactsFrom reads the facts diagnosis needs from a dialog store detail. A
// detail read with its messages gives every signaling detection its facts;
// one read with NoMessages leaves ack_missing, abandoned and
// registration_failure not judged.
func FactsFrom(d dialog.Detail) DialogFacts {
	f := DialogFacts{
		CallID:      d.CallID,
		Method:      d.Method,
		State:       d.State,
		CreatedAt:   d.CreatedAt,
		LastAt:      d.UpdatedAt,
		FinalCode:   d.FinalStatusCode,
		FinalReason: d.FinalReason,
		HasFinal:    d.FinalStatusCode != 0,
		InfoDTMF:    len(d.InfoDTMF),
		Signaling:   dialog.SignalingFactsOf(&d),
		Unanswered:  d.RetransmittedNoResponse,
		ICMP:        d.ICMPErrors,
		ICMPCount:   d.ICMPErrorCount,
	}
	if t := d.TimingDetail.AnsweredAt; t != nil {
		f.Answered, f.AnsweredAt = true, *t
	}
	if t := d.TimingDetail.InviteAt; t != nil {
		f.InviteAt = *t
	}
	if p := d.TimingDetail.PDDMs; p != nil {
		f.PDD, f.HasPDD = time.Duration(*p)*time.Millisecond, true
	}
	if len(d.Messages) > 0 {
		f.Frames = make([]packet.FrameRef, len(d.Messages))
		for i := range d.Messages {
			f.Frames[i] = d.Messages[i].Frame
		}
	}
	f.Legs = make([]LegFacts, 0, len(d.Legs))
	for _, l := range d.Legs {
		f.Legs = append(f.Legs, LegFacts{Family: l.Family, Method: l.Method, State: l.State})
	}
	return f
}

// FactsFromStore reads the facts of every dialog, oldest first, messages
// included.
func FactsFromStore(s *dialog.Store) []DialogFacts {
	ids := s.CallIDs()
	out := make([]DialogFacts, 0, len(ids))
	for _, id := range ids {
		if d, ok := s.Get(id); ok {
			out = append(out, FactsFrom(d))
		}
	}
	return out
}

// CaptureEnd is the end of a capture as diagnosis measures timers against
// it: the latest SIP message the dialog store holds, or the latest packet
// the stream store saw when it can say so cheaply (a LastPacketAt method);
// Diagnose adds the dialog's own RTP. Zero when nothing was read.
// CaptureReport computes the same end, so triage_call and
// get_capture_report judge a timer alike.
func CaptureEnd(ds *dialog.Store, src MediaSource) time.Time {
	return later(ds.LastMessageAt(), lastPacket(src))
}

// lastPacketer is a stream store that tracks its latest packet.
type lastPacketer interface{ LastPacketAt() time.Time }

func lastPacket(src MediaSource) time.Time {
	if lp, ok := src.(lastPacketer); ok {
		return lp.LastPacketAt()
	}
	return time.Time{}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
