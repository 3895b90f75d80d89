package dialog

import (
	"fmt"
	"testing"
	"time"
)

// TestMarkInProgress: only the row of an answered call still in progress
// (InCall, no BYE) gets ended false and its answer-to-end duration, and
// only when end is known and not before the answer. live is answered at
// 4000 ms and never hung up; done hangs up at 64000 ms; ringing never
// answers.
func TestMarkInProgress(t *testing.T) {
	s := New(Config{})
	play(t, s, basicCall("done"))
	play(t, s, basicCall("live")[:5])
	play(t, s, basicCall("ringing")[:3])
	for _, tc := range []struct {
		name string
		end  time.Time
		want string
	}{
		{"end unknown", time.Time{}, "done: absent live: absent ringing: absent"},
		{"end 10 s", t0.Add(10 * time.Second), "done: absent live: ended false 6000 ms ringing: absent"},
		{"end at the answer", t0.Add(4 * time.Second), "done: absent live: ended false 0 ms ringing: absent"},
		{"end before the answer", t0.Add(3 * time.Second), "done: absent live: absent ringing: absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			for _, id := range []string{"done", "live", "ringing"} {
				r, ok := s.Lookup(id)
				if !ok {
					t.Fatalf("no row %s", id)
				}
				s.MarkInProgress(&r, tc.end)
				v := "absent"
				if r.Ended != nil && r.DurationToCaptureEndMs != nil {
					v = fmt.Sprintf("ended %v %d ms", *r.Ended, *r.DurationToCaptureEndMs)
				} else if r.Ended != nil || r.DurationToCaptureEndMs != nil {
					v = "one field without the other"
				}
				if got != "" {
					got += " "
				}
				got += id + ": " + v
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("row not in the store", func(t *testing.T) {
		r := Summary{CallID: "gone", State: InCall.String()}
		s.MarkInProgress(&r, t0.Add(time.Hour))
		if r.Ended != nil || r.DurationToCaptureEndMs != nil {
			t.Errorf("got ended %v duration %v, want both absent", r.Ended, r.DurationToCaptureEndMs)
		}
	})
}
