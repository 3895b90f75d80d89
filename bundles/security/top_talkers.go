package security

import (
	"context"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/endpoint"
	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/core/reference"
	"github.com/sipnab/sipnab/sdk"
)

// topTalkersSchemaVersion is top_talkers' response schema version.
const topTalkersSchemaVersion = 1

type topTalkersIn struct {
	By           string `json:"by" enum:"ip|ua|prefix" desc:"ip: addresses that sent messages; ua: User-Agent on requests and Server on responses; prefix: leading digits of the dialed number (To user)"`
	Limit        int    `json:"limit,omitempty" default:"50" desc:"rows; 0 means 50, clamped to --mcp-max-rows"`
	Filter       string `json:"filter,omitempty" desc:"dialogs counted; absent: all"`
	PrefixDigits int    `json:"prefix_digits,omitempty" default:"4" min:"1" max:"15" desc:"digits of a prefix key (by prefix only)"`
}

// TalkerRow is one talker.
type TalkerRow struct {
	// Key is the address, the banner (fenced: the sender wrote it) or the
	// prefix (digits, or sipnab's "(none)" / "(non-numeric)").
	Key string `json:"key" desc:"address, banner (fenced) or prefix"`
	// Dialogs counts the matched dialogs the talker took part in.
	Dialogs int `json:"dialogs" desc:"matched dialogs the talker took part in"`
	// Messages: sent by the address, carrying the banner, or every message
	// of the dialogs for a prefix.
	Messages int `json:"messages" desc:"messages sent (ip), carrying the banner (ua), of its dialogs (prefix)"`
	// Invites, Answered (2xx) and Failed (4xx-6xx) are its INVITE dialogs.
	Invites  int `json:"invites" desc:"its INVITE dialogs"`
	Answered int `json:"answered" desc:"of those, answered 2xx"`
	Failed   int `json:"failed" desc:"of those, ended 4xx-6xx"`
	// SharePct is Dialogs over total_matched, percent (2 decimals); null
	// when nothing matched. A dialog counts for each of its talkers, so
	// ip and ua shares may sum above 100.
	SharePct *float64 `json:"share_pct" desc:"dialogs / total_matched, percent; null when nothing matched"`
}

// TopTalkers is top_talkers' answer.
type TopTalkers struct {
	By string `json:"by" desc:"dimension ranked"`
	// Talkers are busiest first: by dialogs, messages, key.
	Talkers []TalkerRow `json:"talkers" nonnull:"true" desc:"busiest first: dialogs, then messages, then key"`
	// Returned counts the rows.
	Returned int `json:"returned" desc:"rows returned"`
	// DistinctTalkers counts every talker tracked, with a row or not.
	DistinctTalkers int `json:"distinct_talkers" desc:"talkers tracked, with a row or not"`
	// TotalMatched counts the dialogs the filter matched.
	TotalMatched int `json:"total_matched" desc:"dialogs matched"`
	// Truncated: talkers beyond the rows exist; false only once the source
	// was read whole.
	Truncated *bool `json:"truncated,omitempty" desc:"more talkers than rows; false only once the source is read whole"`
	// TalkersNotTracked counts distinct talkers past the table's cap
	// (65536) and DialogCreditsNotTracked the dialog credits they had;
	// absent when none.
	TalkersNotTracked       int `json:"talkers_not_tracked,omitempty" desc:"distinct talkers past the 65536 cap"`
	DialogCreditsNotTracked int `json:"dialog_credits_not_tracked,omitempty" desc:"their dialog credits"`
	// KeysCut counts banners cut to 256 bytes before counting.
	KeysCut int `json:"keys_cut,omitempty" desc:"banners cut to 256 bytes before counting"`
	// MessagesNotRead counts messages past the per-dialog retention cap,
	// which ip and ua could not attribute.
	MessagesNotRead int `json:"messages_not_read,omitempty" desc:"messages past the per-dialog retention cap, not attributed"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

func topTalkersTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "top_talkers",
		Title: "Top talkers",
		Description: "Busiest participants by ip, ua or prefix (dialed number's leading digits). Counts participants, not dialogs: " +
			"a dialog counts for each end, so ip/ua shares may sum above 100%. One bucket per dialog: aggregate_dialogs. " +
			reference.FilterHelp,
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Addresses that sent the most", Args: map[string]any{"by": "ip"}},
			{Title: "Banners on failed calls", Args: map[string]any{"by": "ua", "filter": "state == Failed"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a filter that does not compile (the message gives the position and a caret line)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in topTalkersIn) (TopTalkers, error) {
		return topTalkers(ctx, d, c, in)
	})
}

func topTalkers(ctx context.Context, d *deps, c *sdk.Call, in topTalkersIn) (TopTalkers, error) {
	dim, digits, err := endpoint.ParseDimension(in.By, in.PrefixDigits)
	if err != nil {
		return TopTalkers{}, sdk.InvalidParams("%v", err)
	}
	limit := c.Limit(in.Limit)
	q := d.querier()
	f, err := answer.CompileFilter(q, in.Filter)
	if err != nil {
		return TopTalkers{}, err
	}
	// Status first, stores after: flags that say the source was read
	// whole describe stores read after the load ended.
	src := answer.SourceState(d.capture.Status())
	t, err := endpoint.TopTalkers(ctx, q, d.capture.Dialogs(), f, dim, digits)
	if err != nil {
		return TopTalkers{}, err
	}
	ranked := t.Ranked()
	out := TopTalkers{
		By: string(dim), Talkers: []TalkerRow{}, DistinctTalkers: t.Distinct(), TotalMatched: t.Dialogs,
		TalkersNotTracked: t.KeysDropped, DialogCreditsNotTracked: t.CreditsDropped, KeysCut: t.KeysCut,
		MessagesNotRead: t.MessagesNotRead, SourceFlags: src.Flags(), CaptureIdentity: src.Identity,
		SchemaVersion: topTalkersSchemaVersion,
	}
	for i := 0; i < len(ranked) && i < limit; i++ {
		tk := ranked[i]
		key := tk.Key
		if dim.Fenced() {
			key = c.Fence(key)
		}
		row := TalkerRow{Key: key, Dialogs: tk.Dialogs, Messages: tk.Messages, Invites: tk.Invites, Answered: tk.Answered, Failed: tk.Failed}
		if t.Dialogs > 0 {
			v := query.Round2(100 * float64(tk.Dialogs) / float64(t.Dialogs))
			row.SharePct = &v
		}
		out.Talkers = append(out.Talkers, row)
	}
	rows := out.Talkers
	build := func(k int) any {
		o := out
		o.Talkers = rows[:k]
		o.Returned = k
		more := len(ranked) > k || t.KeysDropped > 0
		o.Truncated = sdk.NewPage(k, -1, more, "", src, 0).Truncated
		return o
	}
	// The busiest rows that fit --mcp-max-response-bytes: a wide limit
	// degrades to fewer rows, truncated true.
	k, err := c.FitPage(len(rows), 0, "talker", build)
	if err != nil {
		return TopTalkers{}, err
	}
	return build(k).(TopTalkers), nil
}
