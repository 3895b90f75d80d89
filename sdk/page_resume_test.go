package sdk

import "testing"

// TestPageResumeAt: the last page of a listing read while a file load runs
// carries the cursor to continue from; a page with more rows keeps its own
// cursor; once the load has ended, when the source stopped early, and for a
// live source or a HEP listener (never loading) the last page's cursor is
// null.
func TestPageResumeAt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		more   bool
		next   string
		src    SourceState
		resume string
		want   string // "" = null
	}{
		{"loading, end of what is loaded: resume", false, "", SourceState{Loading: true}, "r", "r"},
		{"loading, more rows: its own cursor", true, "n", SourceState{Loading: true}, "r", "n"},
		{"loading, nothing to resume from", false, "", SourceState{Loading: true}, "", ""},
		{"live source, not loading: null", false, "", SourceState{}, "r", ""},
		{"read whole: null", false, "", SourceState{Exhausted: true}, "r", ""},
		{"stopped early: null", false, "", SourceState{Loading: true, StoppedEarly: true}, "r", ""},
		{"read whole, more rows: its own cursor", true, "n", SourceState{Exhausted: true}, "r", "n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPage(1, 1, tc.more, tc.next, tc.src, 1)
			p.ResumeAt(tc.src, tc.resume)
			got := ""
			if p.NextCursor != nil {
				got = *p.NextCursor
			}
			if got != tc.want {
				t.Errorf("next_cursor: got %q, want %q", got, tc.want)
			}
			if !tc.more && p.Truncated != nil && *p.Truncated {
				t.Errorf("a resumed last page says truncated: true")
			}
		})
	}
}
