package sdk

import "testing"

// TestPageEndNamesTheLastKeptRowAndWhetherRowsFollow: a page cut to k of its
// rows resumes after row k; an empty page resumes where it started; rows
// follow when the listing had more or the cut left rows of the page out.
func TestPageEndNamesTheLastKeptRowAndWhetherRowsFollow(t *testing.T) {
	keys := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name           string
		k              int
		listingHasMore bool
		wantAt         string
		wantMore       bool
	}{
		{"whole page, listing ends", 3, false, "c", false},
		{"whole page, listing goes on", 3, true, "c", true},
		{"page cut to one row", 1, false, "a", true},
		{"page cut to none", 0, false, "start", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCall(DefaultLimits())
			last, more, next := c.PageEnd("start", keys, tc.k, tc.listingHasMore)
			if got, err := c.BindCursor(last, ""); err != nil || got != tc.wantAt {
				t.Errorf("last resumes at %q (%v), want %q", got, err, tc.wantAt)
			}
			if more != tc.wantMore {
				t.Errorf("more %v, want %v", more, tc.wantMore)
			}
			if (next != "") != tc.wantMore || (next != "" && next != last) {
				t.Errorf("next %q with more %v, last %q", next, more, last)
			}
		})
	}
}
