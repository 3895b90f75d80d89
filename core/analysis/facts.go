package analysis

import (
	"time"

	"github.com/sipnab/sipnab/core/dialog"
)

// FactsFrom reads the facts diagnosis needs from a dialog store detail.
func FactsFrom(d dialog.Detail) DialogFacts {
	f := DialogFacts{
		CallID:      d.CallID,
		Method:      d.Method,
		State:       d.State,
		CreatedAt:   d.CreatedAt,
		FinalCode:   d.FinalStatusCode,
		FinalReason: d.FinalReason,
		HasFinal:    d.FinalStatusCode != 0,
		InfoDTMF:    len(d.InfoDTMF),
	}
	if t := d.TimingDetail.AnsweredAt; t != nil {
		f.Answered, f.AnsweredAt = true, *t
	}
	if p := d.TimingDetail.PDDMs; p != nil {
		f.PDD, f.HasPDD = time.Duration(*p)*time.Millisecond, true
	}
	return f
}

// FactsFromStore reads the facts of every dialog, oldest first.
func FactsFromStore(s *dialog.Store) []DialogFacts {
	sums := s.Summaries(dialog.ByCreated)
	out := make([]DialogFacts, 0, len(sums))
	for _, sum := range sums {
		if d, ok := s.GetWith(sum.CallID, dialog.Options{NoMessages: true}); ok {
			out = append(out, FactsFrom(d))
		}
	}
	return out
}
