package query

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
)

// The three dimensions group_dialogs adds to aggregate_dialogs' nine.
const (
	// DimToDomain is the host of the To URI of the dialog's first retained
	// message, lower-cased (DNS names compare without case). Sender-written.
	DimToDomain Dimension = "to_domain"
	// DimHour is the UTC hour the dialog started in (created_at), written
	// as the RFC 3339 start of that hour ("2025-03-03T09:00:00Z"). Hours are
	// aligned to the epoch, like timeline's buckets, so two captures of the
	// same hour group alike; traffic of different days never merges.
	DimHour Dimension = "hour"
	// DimNextHop is where the dialog's opening request was last sent: the
	// destination ip:port of the last out-of-dialog request (no To tag) of
	// the dialog's opening method, in capture order. Through a proxy seen on
	// both sides that is the downstream hop (the gateway the proxy chose),
	// after a failover the hop tried last, and for a single capture point
	// the address the request went to. Retransmissions go to the same
	// address and change nothing. Absent when no such request was retained
	// (a capture that began mid-call).
	DimNextHop Dimension = "next_hop"
)

// GroupDimensions lists group_dialogs' twelve dimensions: aggregate's nine
// (a strict superset, so an agent never has to learn a second vocabulary)
// then to_domain, hour and next_hop.
func GroupDimensions() []Dimension {
	return append(Dimensions(), DimToDomain, DimHour, DimNextHop)
}

// ParseGroupDimension reads a group_dialogs dimension name (exact,
// lowercase).
func ParseGroupDimension(s string) (Dimension, error) {
	names := make([]string, 0, 12)
	for _, d := range GroupDimensions() {
		if string(d) == s {
			return d, nil
		}
		names = append(names, string(d))
	}
	return "", fmt.Errorf("unknown dimension %q; valid dimensions: %s", clip(s), strings.Join(names, ", "))
}

// GroupValue returns a dialog's value in one of the twelve group
// dimensions; ok is false when the value is absent (the None group).
func (r *Record) GroupValue(d Dimension) (string, bool) {
	switch d {
	case DimToDomain:
		e, ok := r.Extra()
		if !ok || e.ToHost == "" {
			return "", false
		}
		return strings.ToLower(e.ToHost), true
	case DimHour:
		if r.Row.CreatedAt.IsZero() {
			return "", false
		}
		return r.Row.CreatedAt.UTC().Truncate(time.Hour).Format(time.RFC3339), true
	case DimNextHop:
		return r.nextHop()
	}
	return r.Value(d)
}

// nextHop implements DimNextHop.
func (r *Record) nextHop() (string, bool) {
	e, ok := r.Extra()
	if !ok || !e.NextHop.IsValid() {
		return "", false
	}
	hop := e.NextHop
	return netip.AddrPortFrom(hop.Addr().Unmap(), hop.Port()).String(), true
}

// Metric is one carrier metric of group_dialogs.
type Metric string

// The eight metrics, in documentation order.
const (
	// MetricCount is the number of dialogs in the group.
	MetricCount Metric = "count"
	// MetricASR is the answer-seizure ratio: 100 × answered / seizures.
	MetricASR Metric = "asr"
	// MetricNER is the network effectiveness ratio: 100 × delivered /
	// seizures.
	MetricNER Metric = "ner"
	// MetricACD is the average call duration: the mean conversation time
	// (2xx to BYE) of the answered calls that ended with a BYE, seconds.
	// Not the dialog span: that would bill the caller for ring-back.
	MetricACD Metric = "acd"
	// MetricPDDP50 and MetricPDDP95 are the nearest-rank median and 95th
	// percentile of the post-dial delay (INVITE to first 18x), ms.
	MetricPDDP50 Metric = "pdd_p50"
	MetricPDDP95 Metric = "pdd_p95"
	// MetricMOSP10 is the nearest-rank 10th percentile of the dialogs'
	// MOS, each dialog scored by its worst stream with a grounded MOS.
	MetricMOSP10 Metric = "mos_p10"
	// MetricRetransmitRate is retransmitted messages per dialog.
	MetricRetransmitRate Metric = "retransmit_rate"
)

// Metrics lists the eight metrics in documentation order (the default
// set).
func Metrics() []Metric {
	return []Metric{MetricCount, MetricASR, MetricNER, MetricACD, MetricPDDP50, MetricPDDP95, MetricMOSP10, MetricRetransmitRate}
}

// Unit returns the unit a metric's value is expressed in.
func (m Metric) Unit() string {
	switch m {
	case MetricCount:
		return "dialogs"
	case MetricASR, MetricNER:
		return "percent"
	case MetricACD:
		return "s"
	case MetricPDDP50, MetricPDDP95:
		return "ms"
	case MetricMOSP10:
		return "MOS (1-5)"
	case MetricRetransmitRate:
		return "retransmits per dialog"
	}
	return ""
}

// ParseMetrics reads a metric list. Empty means every metric. Duplicates
// are dropped; the order given is kept. An unknown name is an error naming
// the valid ones.
func ParseMetrics(names []string) ([]Metric, error) {
	if len(names) == 0 {
		return Metrics(), nil
	}
	out := make([]Metric, 0, len(names))
	for _, n := range names {
		m := Metric(n)
		if !slices.Contains(Metrics(), m) {
			valid := make([]string, 0, 8)
			for _, v := range Metrics() {
				valid = append(valid, string(v))
			}
			return nil, fmt.Errorf("unknown metric %q; valid metrics: %s", clip(n), strings.Join(valid, ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// DeliveredCodes are the final INVITE responses that count as delivered
// for NER besides an answer: the call reached the called party, who was
// unavailable (480), busy (486), did not answer before the caller gave up
// (487) or declined (600, 603). 408 is not among them: a proxy emits it
// both for a silent phone and for an unreachable next hop, so crediting it
// would credit the network for calls that may never have arrived.
var DeliveredCodes = []int{480, 486, 487, 600, 603}

// Outcome classifies one dialog for the carrier metrics.
type Outcome struct {
	// Invite: the dialog was opened by an INVITE (a capture that began
	// mid-call, seeded by an ACK, BYE or CANCEL, is not).
	Invite bool
	// Seizure: an INVITE whose opening transaction reached an outcome in
	// the capture: a final response (2xx or 3xx-6xx), a CANCEL, or a
	// timeout (TimedOut). An INVITE still ringing at capture end (no final
	// response yet, and not silent for longer than its timer) is not a
	// seizure: counting it as failed would report a live capture as an
	// outage that looks worse the earlier you look.
	Seizure bool
	// TimedOut: an INVITE with no final response whose dialog went silent
	// long before the capture's last message: longer than Timer B (32 s,
	// RFC 3261 §17.1.1.2) without an 18x, or than Timer C (180 s, §16.6)
	// after one. It is not ringing any more; it failed, and counts as a
	// seizure neither answered nor delivered, so an outage where nothing
	// answers reads as ASR 0, not as "no seizure".
	TimedOut bool
	// Answered: the opening INVITE got a 2xx.
	Answered bool
	// Delivered: answered, or finally refused with one of DeliveredCodes,
	// or cancelled by the caller (a CANCEL whose 487 was not captured is
	// still a 487: RFC 3261 §9.2 makes it mandatory).
	Delivered bool
}

// The silences after which an INVITE without a final response is no longer
// ringing (see Outcome.TimedOut).
const (
	// TimerB is RFC 3261's INVITE transaction timeout, 64·T1.
	TimerB = 32 * time.Second
	// TimerC is RFC 3261's proxy INVITE timeout once a provisional came
	// (greater than 3 minutes; 180 s as sipnab's abandoned detection).
	TimerC = 180 * time.Second
)

// Classify returns a row's outcome. end is the capture's last message (the
// latest updated_at of the store); a zero end never judges a silence, so
// every INVITE without a final response counts as still ringing.
func Classify(row *dialog.Summary, end time.Time) Outcome {
	var o Outcome
	if row.Method != "INVITE" {
		return o
	}
	o.Invite = true
	code := row.FinalStatusCode
	cancelled := row.State == dialog.Cancelled.String()
	o.Answered = (code >= 200 && code < 300) || (code == 0 && row.Timing.SetupMs != nil)
	if !o.Answered && code < 300 && !cancelled && !end.IsZero() {
		timer := TimerB
		if row.Timing.PDDMs != nil {
			timer = TimerC
		}
		o.TimedOut = end.Sub(row.UpdatedAt) > timer
	}
	o.Seizure = o.Answered || code >= 300 || cancelled || o.TimedOut
	o.Delivered = o.Answered || slices.Contains(DeliveredCodes, code) || (cancelled && code == 0)
	return o
}

// Population is what a group's metrics are computed over.
type Population struct {
	// Dialogs in the group.
	Dialogs int
	// Seizures, Answered and Delivered are the INVITE outcomes (see
	// Outcome).
	Seizures, Answered, Delivered int
	// CompletedCalls counts answered calls whose conversation time was
	// measured (2xx to BYE): ACD's population.
	CompletedCalls int
	// PDDMeasured counts INVITEs whose post-dial delay was measured.
	PDDMeasured int
	// MOSGroundedDialogs counts dialogs with at least one stream whose MOS
	// is grounded; nil when mos_p10 was not asked for (not computed).
	MOSGroundedDialogs *int
	// Retransmits counts retransmitted messages over the group.
	Retransmits int
}

// Group is one value of the dimension and its metrics.
type Group struct {
	// Value is the dimension's value, or None when Absent.
	Value string
	// Absent: the group of the dialogs without a value (a sender may
	// write the text "(none)" itself).
	Absent bool
	// Count is the number of dialogs in the group.
	Count int
	// Metrics holds every requested metric: a value rounded to 2 decimals,
	// or nil when it cannot be computed for this group (never 0).
	Metrics map[Metric]*float64
	// NotGrounded says why each nil metric could not be computed.
	NotGrounded map[Metric]string
	// Population is what the metrics were computed over.
	Population Population
}

// GroupOptions select a group_dialogs answer.
type GroupOptions struct {
	// Filter keeps the matching dialogs; nil keeps all.
	Filter *filter.Filter
	// By is one of GroupDimensions.
	By Dimension
	// Metrics to compute; empty means every metric.
	Metrics []Metric
	// TopN keeps the TopN largest groups; <= 0 keeps all.
	TopN int
}

// Grouping is group_dialogs' answer before it is shaped for the wire.
type Grouping struct {
	By      Dimension
	Metrics []Metric
	// Groups are the TopN largest groups, largest first (ties by value).
	// Ranked by count, never by a metric, so the cut against OtherCount is
	// the same whatever the metrics.
	Groups []Group
	// OtherCount counts the dialogs of the groups past TopN. It carries no
	// metrics: an average over the smallest groups would be an average of
	// averages.
	OtherCount int
	// DistinctValues counts every group, None included.
	DistinctValues int
	// TotalMatched counts the matching dialogs: the groups plus OtherCount.
	TotalMatched int
}

// groupAcc accumulates one group. Dialogs are added and (by the
// maintained state) taken away again, so every value is a count or a
// histogram.
type groupAcc struct {
	pop     Population
	convSum int64           // conversation ms of completed calls, summed
	pdd     map[int64]int   // measured PDDs, ms: how many of each
	mos     map[float64]int // dialogs' worst grounded MOS: how many of each
	mosN    int
	invites int // dialogs opened by an INVITE
	// pending are the slots of the INVITEs whose seizure depends on the
	// capture's end (Classify's TimedOut), judged when the answer is made
	// (maintained state only).
	pending map[int32]struct{}
}

func newGroupAcc() *groupAcc {
	return &groupAcc{pdd: map[int64]int{}, mos: map[float64]int{}}
}

// clone copies the counts (not pending).
func (a *groupAcc) clone() *groupAcc {
	c := *a
	c.pending = nil
	return &c
}

// Group computes carrier metrics per value of one dimension over the
// dialogs matching o.Filter. It returns ctx's error if ctx ends first.
func (q *Querier) Group(ctx context.Context, o GroupOptions) (Grouping, error) {
	metrics := o.Metrics
	if len(metrics) == 0 {
		metrics = Metrics()
	}
	wantMOS := slices.Contains(metrics, MetricMOSP10)
	out := Grouping{By: o.By, Metrics: metrics}
	if m := q.maintained(); m != nil {
		accs, total, err := m.group(ctx, o)
		if err != nil {
			return Grouping{}, err
		}
		out.TotalMatched = total
		return groupAnswer(out, accs, o, metrics, wantMOS), nil
	}
	accs := map[bucketKey]*groupAcc{}
	snap := q.snapshot(dialog.ByCreated)
	rows := snap.rows
	// The capture's last message: an INVITE silent long before it is no
	// longer ringing.
	var end time.Time
	for i := range rows {
		if rows[i].UpdatedAt.After(end) {
			end = rows[i].UpdatedAt
		}
	}
	rec := &Record{q: q}
	for i := range rows {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return Grouping{}, ctx.Err()
		}
		row := &rows[i]
		rec.resetAt(snap, i)
		if o.Filter != nil && !o.Filter.Match(rec) {
			continue
		}
		out.TotalMatched++
		v, ok := rec.GroupValue(o.By)
		if !ok {
			v = None
		}
		k := bucketKey{v, !ok}
		a := accs[k]
		if a == nil {
			a = newGroupAcc()
			accs[k] = a
		}
		a.count(row, rec, Classify(row, end), 1, wantMOS)
	}
	return groupAnswer(out, accs, o, metrics, wantMOS), nil
}

// groupAnswer ranks the accumulated groups, cuts them at TopN and
// computes the metrics of the groups kept.
func groupAnswer(out Grouping, accs map[bucketKey]*groupAcc, o GroupOptions, metrics []Metric, wantMOS bool) Grouping {
	all := make([]Group, 0, len(accs))
	for k, a := range accs {
		all = append(all, Group{Value: k.v, Absent: k.absent, Count: a.pop.Dialogs, Population: a.pop})
	}
	slices.SortFunc(all, func(a, b Group) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Value, b.Value); c != 0 {
			return c
		}
		switch {
		case a.Absent == b.Absent:
			return 0
		case a.Absent:
			return -1
		}
		return 1
	})
	out.DistinctValues = len(all)
	if o.TopN > 0 && len(all) > o.TopN {
		for _, g := range all[o.TopN:] {
			out.OtherCount += g.Count
		}
		all = all[:o.TopN]
	}
	// Metrics only for the groups kept: the rest carry none.
	for i := range all {
		g := &all[i]
		a := accs[bucketKey{g.Value, g.Absent}]
		if wantMOS {
			n := a.mosN
			g.Population.MOSGroundedDialogs = &n
		}
		g.Metrics, g.NotGrounded = a.metrics(metrics)
	}
	out.Groups = all
	return out
}

// count adds (delta 1) or takes away (delta -1) one dialog with its
// outcome.
func (a *groupAcc) count(row *dialog.Summary, rec *Record, oc Outcome, delta int, mos bool) {
	a.pop.Dialogs += delta
	a.pop.Retransmits += delta * row.Timing.Retransmits
	if oc.Seizure {
		a.pop.Seizures += delta
	}
	if oc.Answered {
		a.pop.Answered += delta
		if row.Timing.DurationMs != nil && *row.Timing.DurationMs >= 0 {
			a.pop.CompletedCalls += delta
			a.convSum += int64(delta) * *row.Timing.DurationMs
		}
	}
	if oc.Delivered {
		a.pop.Delivered += delta
	}
	if oc.Invite && row.Timing.PDDMs != nil && *row.Timing.PDDMs >= 0 {
		a.pop.PDDMeasured += delta
		hist(a.pdd, *row.Timing.PDDMs, delta)
	}
	if !mos {
		// not asked for: the streams are not read
	} else if v, ok := rec.Num(filter.FieldRTPMOS); ok {
		a.mosN += delta
		hist(a.mos, v, delta)
	}
	if oc.Invite {
		a.invites += delta
	}
}

// move counts one dialog of the maintained state in or out: its outcome
// without the capture's end, and a pending INVITE noted for the answer.
func (a *groupAcc) move(slot int32, rec *Record, delta int) {
	row := rec.Row
	oc := Classify(row, time.Time{})
	a.count(row, rec, oc, delta, true)
	if pendingInvite(row) {
		if delta > 0 {
			if a.pending == nil {
				a.pending = map[int32]struct{}{}
			}
			a.pending[slot] = struct{}{}
		} else {
			delete(a.pending, slot)
		}
	}
}

// pendingInvite: an INVITE whose Classify outcome depends on the capture's
// end (no answer, no final response of 300 or more, not cancelled: it is a
// seizure only once timed out).
func pendingInvite(row *dialog.Summary) bool {
	if row.Method != "INVITE" {
		return false
	}
	code := row.FinalStatusCode
	answered := (code >= 200 && code < 300) || (code == 0 && row.Timing.SetupMs != nil)
	return !answered && code < 300 && row.State != dialog.Cancelled.String()
}

// hist adds delta to a histogram's count of v, deleting a count that
// falls to zero.
func hist[K comparable](h map[K]int, v K, delta int) {
	if n := h[v] + delta; n > 0 {
		h[v] = n
	} else {
		delete(h, v)
	}
}

// histRank returns the value at 0-based index i of a histogram's n values
// in ascending order.
func histRank[K cmp.Ordered](h map[K]int, i int) K {
	keys := make([]K, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	cum := 0
	for _, k := range keys {
		cum += h[k]
		if i < cum {
			return k
		}
	}
	var zero K
	return zero
}

// Reasons a metric is not computable.
const (
	reasonNoInvite  = "no dialog of this group was opened by an INVITE: %s is a call metric"
	reasonNoSeizure = "no seizure: every INVITE of this group is still ringing at capture end (no final response, silent for less than Timer B/C) or its opening transaction was not captured"
	reasonNoAnswer  = "no call of this group was answered"
	reasonNoEnd     = "no answered call of this group ended with a BYE in the capture, so no conversation time was measured"
	reasonNoPDD     = "no INVITE of this group received an 18x, so no post-dial delay was measured"
	reasonNoMOS     = "no dialog of this group has a stream with a grounded MOS (no RTP reached the capture point, or its codec has no published impairment values)"
)

func (a *groupAcc) metrics(ms []Metric) (map[Metric]*float64, map[Metric]string) {
	vals := make(map[Metric]*float64, len(ms))
	why := map[Metric]string{}
	p := &a.pop
	invites := a.invites
	set := func(m Metric, v float64) { r := Round2(v); vals[m] = &r }
	null := func(m Metric, reason string) { vals[m] = nil; why[m] = reason }
	for _, m := range ms {
		switch m {
		case MetricCount:
			set(m, float64(p.Dialogs))
		case MetricASR, MetricNER:
			switch {
			case invites == 0:
				null(m, fmt.Sprintf(reasonNoInvite, strings.ToUpper(string(m))))
			case p.Seizures == 0:
				null(m, reasonNoSeizure)
			case m == MetricASR:
				set(m, 100*float64(p.Answered)/float64(p.Seizures))
			default:
				set(m, 100*float64(p.Delivered)/float64(p.Seizures))
			}
		case MetricACD:
			switch {
			case invites == 0:
				null(m, fmt.Sprintf(reasonNoInvite, "ACD"))
			case p.Answered == 0:
				null(m, reasonNoAnswer)
			case p.CompletedCalls == 0:
				null(m, reasonNoEnd)
			default:
				set(m, float64(a.convSum)/float64(p.CompletedCalls)/1000)
			}
		case MetricPDDP50, MetricPDDP95:
			switch {
			case invites == 0:
				null(m, fmt.Sprintf(reasonNoInvite, "PDD"))
			case p.PDDMeasured == 0:
				null(m, reasonNoPDD)
			default:
				pct := 50
				if m == MetricPDDP95 {
					pct = 95
				}
				set(m, float64(histRank(a.pdd, NearestRank(p.PDDMeasured, pct))))
			}
		case MetricMOSP10:
			if a.mosN == 0 {
				null(m, reasonNoMOS)
				continue
			}
			set(m, histRank(a.mos, NearestRank(a.mosN, 10)))
		case MetricRetransmitRate:
			set(m, float64(p.Retransmits)/float64(p.Dialogs))
		}
	}
	return vals, why
}

// NearestRank returns the 0-based index of the p-th percentile (0 < p <=
// 100) of n sorted values by the nearest-rank method: the smallest value
// such that at least p percent of the values are at or below it, i.e. the
// value of rank ceil(p·n/100). Every percentile is a value some call
// actually had, never an interpolation. It computes in integers, so a rank
// that is a whole number (p = 95, n = 20: rank 19) is never pushed up by a
// rounding error.
func NearestRank(n, p int) int {
	if n <= 0 {
		return 0
	}
	rank := (p*n + 99) / 100
	return min(max(rank, 1), n) - 1
}

// Round2 rounds to two decimal places, half away from zero: a ratio over
// three dialogs is not accurate to fourteen.
func Round2(v float64) float64 { return math.Round(v*100) / 100 }
