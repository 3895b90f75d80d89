package signaling

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

type sgTail struct {
	Dialogs []struct {
		CallID    string    `json:"call_id"`
		UpdatedAt time.Time `json:"updated_at"`
		FromUser  string    `json:"from_user"`
	} `json:"dialogs"`
	NextCursor      *string `json:"next_cursor"`
	Truncated       *bool   `json:"truncated"`
	SourceExhausted bool    `json:"source_exhausted"`
}

// TestTailDialogsPagesWithoutLossOrRepetition follows sipp-branch-
// scenario.pcapng's 1334 dialogs in updated_at order at several page sizes.
func TestTailDialogsPagesWithoutLossOrRepetition(t *testing.T) {
	c := sgLoad(t, testcap.Public("sipp-branch-scenario.pcapng"))
	for _, limit := range []int{3, 50, 1000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			seen := map[string]bool{}
			args := map[string]any{"limit": limit}
			var last time.Time
			var lastCursor string
			for {
				var pg sgTail
				r := sgCall(t, c, "tail_dialogs", args, &pg)
				k := sgKeys(t, r)
				for _, absent := range []string{"returned", "total_matched"} {
					if _, ok := k[absent]; ok {
						t.Fatalf("tail_dialogs carries %s", absent)
					}
				}
				for _, d := range pg.Dialogs {
					if seen[d.CallID] {
						t.Fatalf("%s served twice", d.CallID)
					}
					if d.UpdatedAt.Before(last) {
						t.Fatalf("%s out of updated_at order", d.CallID)
					}
					seen[d.CallID], last = true, d.UpdatedAt
					if !strings.HasPrefix(d.FromUser, sdk.FenceOpen) {
						t.Fatalf("from_user %q not fenced", d.FromUser)
					}
				}
				if pg.NextCursor == nil {
					t.Fatal("next_cursor is null: a tail must hand back where to resume")
				}
				if len(pg.Dialogs) == 0 {
					// Caught up: the cursor stays where it was.
					if *pg.NextCursor != lastCursor || pg.Truncated == nil || *pg.Truncated {
						t.Errorf("caught up: next_cursor %q (want %q), truncated %v", *pg.NextCursor, lastCursor, pg.Truncated)
					}
					break
				}
				lastCursor = *pg.NextCursor
				args["cursor"] = lastCursor
			}
			if len(seen) != 1334 {
				t.Errorf("got %d dialogs, want 1334", len(seen))
			}
		})
	}
}

// TestTailDialogsCursorContinuesAfterItsPage: the cursor of a page of 5
// continues with the 7 dialogs changed after them; a timestamp built by
// hand is not a cursor this server issued and is refused, where it used to
// page strictly after that instant and lose or repeat tied dialogs.
func TestTailDialogsCursorContinuesAfterItsPage(t *testing.T) {
	c := sgLoad(t, testcap.Public("b2bua-asterisk.pcapng"))
	var all sgTail
	sgCall(t, c, "tail_dialogs", map[string]any{"limit": 100}, &all)
	if len(all.Dialogs) != 12 {
		t.Fatalf("got %d dialogs, want 12", len(all.Dialogs))
	}
	var first, got sgTail
	sgCall(t, c, "tail_dialogs", map[string]any{"limit": 5}, &first)
	sgCall(t, c, "tail_dialogs", map[string]any{"cursor": *first.NextCursor, "limit": 100}, &got)
	if len(got.Dialogs) != 7 || got.Dialogs[0].CallID != all.Dialogs[5].CallID {
		t.Errorf("after the first 5: got %d dialogs, want 7 from %s", len(got.Dialogs), all.Dialogs[5].CallID)
	}
	_, err := sgInvoke(t, c, "tail_dialogs", map[string]any{"cursor": all.Dialogs[4].UpdatedAt.Format(time.RFC3339Nano)}, sdk.DefaultLimits())
	if sgCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), "not a next_cursor this server issued") {
		t.Errorf("hand-built timestamp: got %v, want -32602 saying it is not a next_cursor", err)
	}
}

func TestTailDialogsRefusalsAndProjection(t *testing.T) {
	c := sgLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"bad cursor", map[string]any{"cursor": "42"}, "cursor"},
		{"unknown field", map[string]any{"fields": []string{"caller"}}, "from_user"},
		{"negative limit", map[string]any{"limit": -5}, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sgInvoke(t, c, "tail_dialogs", tc.args, sdk.Limits{})
			if sgCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want -32602 mentioning %q", err, tc.want)
			}
		})
	}
	r, err := sgInvoke(t, c, "tail_dialogs", map[string]any{"fields": []string{"state", "final_status_code"}}, sdk.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Blocks[0], `"method"`) || !strings.Contains(r.Blocks[0], `"call_id"`) || !strings.Contains(r.Blocks[0], `"next_cursor"`) {
		t.Errorf("projection: %s", r.Blocks[0])
	}
}
