package signaling

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestLadderShowsARefusedOffer renders the call of the verdict corpus's
// t38-reinvite-488-then-audio.pcap (tests/verdicts_sdpcorr_test.go
// documents it: an audio call, a T.38 re-INVITE refused with 488, then an
// audio re-INVITE answered 200) in both ladder formats and in the
// report's transactions: the refused re-INVITE's line says the offer was rejected 488 and
// T.38 refused, the next re-INVITE's line that it is the audio re-offer
// after the refused T.38 (core/sdptimeline: rejected, rejected_code, t38,
// T38Fallback).
func TestLadderShowsARefusedOffer(t *testing.T) {
	const name, id = "t38-reinvite-488-then-audio.pcap", "t38-fallback-1"
	c := crLoad(t, filepath.Join(testcap.Root(), "testdata", "verdicts", name))
	for _, tc := range []struct{ tool, format, ext string }{
		{"render_ladder", "text", "ladder.txt"},
		{"render_ladder", "markdown", "ladder.md"},
		{"get_dialog_report", "text", "report.txt"},
		{"get_dialog_report", "markdown", "report.md"},
	} {
		t.Run(tc.tool+" "+tc.format, func(t *testing.T) {
			doc := crCall(t, c, tc.tool, map[string]any{"call_id": id, "format": tc.format}, nil).Blocks[0]
			crGolden(t, name+"."+tc.ext, doc)
			// The report's INVITE transactions; the ladder's INVITE arrows
			// with their SDP notes (render_ladder writes both).
			groups := map[string][]string{}
			for _, l := range strings.Split(doc, "\n") {
				switch {
				case strings.Contains(l, "INVITE →"):
					groups["transactions"] = append(groups["transactions"], l)
				case strings.Contains(l, "INVITE") && strings.Contains(l, "SDP offer"):
					groups["ladder"] = append(groups["ladder"], l)
				}
			}
			wantGroups := 1
			if tc.tool == "render_ladder" {
				wantGroups = 2
			}
			if len(groups) != wantGroups {
				t.Errorf("got sections %v, want %d", groups, wantGroups)
			}
			for g, invites := range groups {
				if len(invites) != 3 {
					t.Errorf("%s: got %d INVITE lines, want 3 (INVITE, T.38 re-INVITE, audio re-INVITE):\n%s", g, len(invites), strings.Join(invites, "\n"))
					continue
				}
				for i, want := range []struct{ has, hasNot string }{
					{"", "rejected"},
					{"offer rejected 488 (T.38 refused)", "re-offer"},
					{"audio re-offer after refused T.38", "rejected"},
				} {
					if !strings.Contains(invites[i], want.has) || strings.Contains(invites[i], want.hasNot) {
						t.Errorf("%s: INVITE %d: got %q, want %q and no %q", g, i+1, invites[i], want.has, want.hasNot)
					}
				}
			}
		})
	}
}
