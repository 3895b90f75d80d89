package report

import (
	"fmt"
	"io"
	"os"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/lint"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/internal/textsafe"
)

// IsTerminal reports whether w is a terminal: the per-message text's
// --color auto colors only then.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// LintGate is `--lint-fail-on SEVERITY` (docs/cli-output.md): every
// dialog of the capture linted with every rule (core/lint, as lint_dialog
// does, with the .sipnablint found beside the first input file, media
// rules over the streams attributed to the dialog), tripped when any
// finding reported is at or above sev. It writes what it found to w (the
// count by severity and by rule, the first few findings, what the
// suppression list and the per-rule cap withheld) and returns whether the
// gate tripped.
func LintGate(w io.Writer, c *engine.Capture, sev lint.Severity) (bool, error) {
	var supp *lint.Suppression
	if files := c.Status().Files; len(files) > 0 {
		path, err := lint.DiscoverSuppression(files[0].Path)
		if err != nil {
			return false, fmt.Errorf("discovering the suppression list: %w", err)
		}
		if path != "" {
			if supp, err = lint.ReadSuppression(path); err != nil {
				return false, err
			}
		}
	}
	var qi = media.DefaultQualityInterval
	if m := c.Media(); m != nil {
		qi = m.Config().QualityInterval
	}
	byRule := map[string]int{}
	var counts lint.Counts
	dialogs, suppressed, capped := 0, 0, 0
	var first []string
	for _, id := range c.Dialogs().CallIDs() {
		det, ok := c.Dialogs().Get(id)
		if !ok {
			continue
		}
		var streams []media.StreamInfo
		if m := c.Media(); m != nil {
			streams = m.StreamsFor(id)
		}
		res := lint.Lint(lint.Input{Messages: det.Messages, Streams: streams, QualityInterval: qi},
			lint.Options{SeverityMin: sev, Suppression: supp})
		suppressed += res.Withheld.Suppressed
		capped += res.Withheld.Capped
		if len(res.Findings) == 0 {
			continue
		}
		dialogs++
		counts.Error += res.Counts.Error
		counts.Warning += res.Counts.Warning
		counts.Notice += res.Counts.Notice
		counts.Info += res.Counts.Info
		for _, f := range res.Findings {
			byRule[f.RuleID]++
			if len(first) < 5 {
				first = append(first, fmt.Sprintf("%s %s in %s message %d", f.Severity, f.RuleID, textsafe.ID(id, 60), f.MessageIndex))
			}
		}
	}
	where := "no suppression list"
	if supp != nil {
		where = fmt.Sprintf("%d suppressed by %s", suppressed, textsafe.Line(supp.File, 200))
	}
	if capped > 0 {
		where += fmt.Sprintf("; at least %d more past the per-rule cap of %d per dialog", capped, lint.DefaultCap)
	}
	n := counts.Error + counts.Warning + counts.Notice + counts.Info
	if n == 0 {
		fmt.Fprintf(w, "sipnab: lint gate passed: no finding at or above %s (%d dialogs; %s)\n", sev, c.Dialogs().Len(), where)
		return false, nil
	}
	fmt.Fprintf(w, "sipnab: lint gate tripped (--lint-fail-on %s): %d findings in %d dialogs (error %d, warning %d, notice %d, info %d; %s)\n",
		sev, n, dialogs, counts.Error, counts.Warning, counts.Notice, counts.Info, where)
	ids := make([]string, 0, len(byRule))
	for id := range byRule {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if byRule[ids[i]] != byRule[ids[j]] {
			return byRule[ids[i]] > byRule[ids[j]]
		}
		return ids[i] < ids[j]
	})
	for _, id := range ids {
		fmt.Fprintf(w, "  %6d %s\n", byRule[id], id)
	}
	for _, f := range first {
		fmt.Fprintf(w, "  e.g. %s\n", f)
	}
	return true, nil
}
