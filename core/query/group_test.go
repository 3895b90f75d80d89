package query

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// grpT0 is the start of the crafted stores (an hour boundary).
var grpT0 = time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)

const (
	grpCaller = "192.0.2.10:5060"
	grpProxy  = "192.0.2.1:5060"
	grpGW     = "198.51.100.20:5060"
	grpGW2    = "198.51.100.21:5070"
	grpReg    = "203.0.113.10:5060"
)

// grpBuilder applies crafted SIP messages to a dialog store.
type grpBuilder struct {
	tb testing.TB
	s  *dialog.Store
}

func newGrpBuilder(tb testing.TB) *grpBuilder {
	return &grpBuilder{tb: tb, s: dialog.New(dialog.Config{})}
}

func (b *grpBuilder) apply(at time.Time, src, dst, text string) {
	b.tb.Helper()
	m, err := sip.Parse([]byte(text))
	if err != nil {
		b.tb.Fatalf("crafted message: %v\n%s", err, text)
	}
	b.s.Apply(dialog.Observation{Msg: m, TS: at, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Transport: packet.TransportUDP, Origin: packet.OriginWire})
}

// grpMsg renders a request (start "INVITE sip:...") or a response (start
// "SIP/2.0 200 OK") of dialog id; toTag "" leaves the To tag out.
func grpMsg(start, id, method string, cseq int, toDomain, toTag, branch string) string {
	var b strings.Builder
	b.WriteString(start + "\r\n")
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK%s\r\n", branch)
	b.WriteString("From: <sip:alice@example.com>;tag=f-" + id + "\r\n")
	to := "To: <sip:bob@" + toDomain + ">"
	if toTag != "" {
		to += ";tag=" + toTag
	}
	b.WriteString(to + "\r\n")
	fmt.Fprintf(&b, "Call-ID: %s\r\nCSeq: %d %s\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n", id, cseq, method)
	return b.String()
}

// call is a crafted INVITE dialog: what the far end answers and when.
type call struct {
	id       string
	at       time.Duration // INVITE time after grpT0
	domain   string        // To host ("example.net" when empty)
	pdd      time.Duration // 180 after the INVITE; 0 = no 18x
	final    int           // final status; 0 = none (still ringing or trying)
	setup    time.Duration // final response after the INVITE
	conv     time.Duration // BYE after the 200; 0 = no BYE
	cancel   bool          // CANCEL before the final (final should be 487 or 0)
	retrans  int           // INVITE retransmissions before any response
	hops     []string      // destinations of the INVITE copies, in order (default grpGW)
	register bool          // a REGISTER dialog instead (answered 200)
}

func (b *grpBuilder) add(c call) {
	b.tb.Helper()
	t0 := grpT0.Add(c.at)
	dom := c.domain
	if dom == "" {
		dom = "example.net"
	}
	if c.register {
		b.apply(t0, grpCaller, grpReg, grpMsg("REGISTER sip:example.com SIP/2.0", c.id, "REGISTER", 1, dom, "", c.id))
		b.apply(t0.Add(5*time.Millisecond), grpReg, grpCaller, grpMsg("SIP/2.0 200 OK", c.id, "REGISTER", 1, dom, "r-"+c.id, c.id))
		return
	}
	hops := c.hops
	if len(hops) == 0 {
		hops = []string{grpGW}
	}
	src, from := grpCaller, grpCaller
	for i, h := range hops {
		from = src
		b.apply(t0.Add(time.Duration(i)*time.Millisecond), from, h, grpMsg("INVITE sip:bob@"+dom+" SIP/2.0", c.id, "INVITE", 1, dom, "", c.id))
		src = grpProxy
	}
	far := hops[len(hops)-1]
	for i := 0; i < c.retrans; i++ {
		b.apply(t0.Add(time.Duration(500*(i+1))*time.Millisecond), from, far, grpMsg("INVITE sip:bob@"+dom+" SIP/2.0", c.id, "INVITE", 1, dom, "", c.id))
	}
	tt := "t-" + c.id
	if c.pdd > 0 {
		b.apply(t0.Add(c.pdd), far, grpCaller, grpMsg("SIP/2.0 180 Ringing", c.id, "INVITE", 1, dom, tt, c.id))
	}
	if c.cancel {
		at := t0.Add(c.setup - time.Millisecond)
		b.apply(at, grpCaller, far, grpMsg("CANCEL sip:bob@"+dom+" SIP/2.0", c.id, "CANCEL", 1, dom, "", c.id))
	}
	if c.final == 0 {
		return
	}
	b.apply(t0.Add(c.setup), far, grpCaller, grpMsg(fmt.Sprintf("SIP/2.0 %d Final", c.final), c.id, "INVITE", 1, dom, tt, c.id))
	b.apply(t0.Add(c.setup+time.Millisecond), grpCaller, far, grpMsg("ACK sip:bob@"+dom+" SIP/2.0", c.id, "ACK", 1, dom, tt, c.id+"a"))
	if c.final == 200 && c.conv > 0 {
		bye := t0.Add(c.setup + c.conv)
		b.apply(bye, grpCaller, far, grpMsg("BYE sip:bob@"+dom+" SIP/2.0", c.id, "BYE", 2, dom, tt, c.id+"b"))
		b.apply(bye.Add(2*time.Millisecond), far, grpCaller, grpMsg("SIP/2.0 200 OK", c.id, "BYE", 2, dom, tt, c.id+"b"))
	}
}

func (b *grpBuilder) querier() *Querier { return New(b.s, nil, filter.DefaultThresholds()) }

// carrierCalls is a crafted population with a hand-computed answer:
//
//	seizures 10: c1 c2 c3 c4 c5 c8 c9 c10 c11 c12 (c6 ringing, c7 trying: not seizures)
//	answered 2:  c1 c2                      ASR = 20.00
//	delivered 8: c1 c2 c3(486) c8(487) c9(480) c10(600) c11(603) c12(cancel, 487 not captured)
//	             c4 (408) and c5 (503) are not delivered      NER = 80.00
//	ACD: c1 only ended with a BYE, 30 s of conversation (not its 32.5 s span)
//	PDD: c1 1000, c2 2000, c3 3000, c6 4000 ms (c8 5000 too) -> nearest rank
//	     sorted 1000 2000 3000 4000 5000: p50 rank 3 = 3000, p95 rank 5 = 5000
//	retransmits: c4 sent its INVITE 3 times (2 retransmissions) over 12 dialogs
var carrierCalls = []call{
	{id: "c1", at: 0, pdd: time.Second, final: 200, setup: 2500 * time.Millisecond, conv: 30 * time.Second},
	{id: "c2", at: time.Second, pdd: 2 * time.Second, final: 200, setup: 3 * time.Second},
	{id: "c3", at: 2 * time.Second, pdd: 3 * time.Second, final: 486, setup: 4 * time.Second},
	{id: "c4", at: 3 * time.Second, final: 408, setup: 32 * time.Second, retrans: 2},
	{id: "c5", at: 4 * time.Second, final: 503, setup: 100 * time.Millisecond},
	{id: "c6", at: 5 * time.Second, pdd: 4 * time.Second},
	{id: "c7", at: 6 * time.Second},
	{id: "c8", at: 7 * time.Second, pdd: 5 * time.Second, cancel: true, final: 487, setup: 9 * time.Second},
	{id: "c9", at: 8 * time.Second, final: 480, setup: time.Second},
	{id: "c10", at: 9 * time.Second, final: 600, setup: time.Second},
	{id: "c11", at: 10 * time.Second, final: 603, setup: time.Second},
	{id: "c12", at: 11 * time.Second, cancel: true, setup: 2 * time.Second},
	{id: "r1", at: 12 * time.Second, register: true},
	{id: "r2", at: 13 * time.Second, register: true},
}

func carrierQuerier(t *testing.T) *Querier {
	b := newGrpBuilder(t)
	for _, c := range carrierCalls {
		b.add(c)
	}
	return b.querier()
}

func metric(t *testing.T, g Group, m Metric) (float64, bool) {
	t.Helper()
	v, ok := g.Metrics[m]
	if !ok {
		t.Fatalf("group %q: metric %s missing from %v", g.Value, m, g.Metrics)
	}
	if v == nil {
		return 0, false
	}
	return *v, true
}

func TestGroupCarrierMetricsByMethod(t *testing.T) {
	q := carrierQuerier(t)
	got, err := q.Group(context.Background(), GroupOptions{By: DimMethod})
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalMatched != 14 || got.DistinctValues != 2 || got.OtherCount != 0 || len(got.Groups) != 2 {
		t.Fatalf("got total %d distinct %d other %d groups %d, want 14 2 0 2", got.TotalMatched, got.DistinctValues, got.OtherCount, len(got.Groups))
	}
	inv, reg := got.Groups[0], got.Groups[1]
	if inv.Value != "INVITE" || reg.Value != "REGISTER" {
		t.Fatalf("groups %q %q, want INVITE then REGISTER (ranked by count)", inv.Value, reg.Value)
	}
	wantPop := Population{Dialogs: 12, Seizures: 10, Answered: 2, Delivered: 8, CompletedCalls: 1, PDDMeasured: 5,
		MOSGroundedDialogs: inv.Population.MOSGroundedDialogs, Retransmits: 2}
	if inv.Population != wantPop {
		t.Errorf("INVITE population %+v, want %+v", inv.Population, wantPop)
	}
	if n := inv.Population.MOSGroundedDialogs; n == nil || *n != 0 {
		t.Errorf("mos_grounded_dialogs %v, want 0 (mos_p10 asked for, no media)", n)
	}
	for _, tc := range []struct {
		m    Metric
		want float64
	}{
		{MetricCount, 12},
		{MetricASR, 20},
		{MetricNER, 80},
		{MetricACD, 30},
		{MetricPDDP50, 3000},
		{MetricPDDP95, 5000},
		{MetricRetransmitRate, 0.17},
	} {
		t.Run("INVITE/"+string(tc.m), func(t *testing.T) {
			v, ok := metric(t, inv, tc.m)
			if !ok || v != tc.want {
				t.Errorf("got %v (computed %v, reason %q), want %v", v, ok, inv.NotGrounded[tc.m], tc.want)
			}
		})
	}
	if _, ok := metric(t, inv, MetricMOSP10); ok || !strings.Contains(inv.NotGrounded[MetricMOSP10], "grounded MOS") {
		t.Errorf("mos_p10 without media: got a value or reason %q, want null with a reason", inv.NotGrounded[MetricMOSP10])
	}
	// REGISTER: the call metrics are null with a reason, never 0.
	for _, m := range []Metric{MetricASR, MetricNER, MetricACD, MetricPDDP50, MetricPDDP95, MetricMOSP10} {
		if v, ok := metric(t, reg, m); ok {
			t.Errorf("REGISTER %s = %v, want null", m, v)
		}
		if reg.NotGrounded[m] == "" {
			t.Errorf("REGISTER %s: no not_grounded reason", m)
		}
	}
	if v, ok := metric(t, reg, MetricCount); !ok || v != 2 {
		t.Errorf("REGISTER count %v, want 2", v)
	}
	if v, ok := metric(t, reg, MetricRetransmitRate); !ok || v != 0 {
		t.Errorf("REGISTER retransmit_rate %v %v, want 0 (measured: no retransmission)", v, ok)
	}
	if !strings.Contains(reg.NotGrounded[MetricASR], "INVITE") {
		t.Errorf("REGISTER asr reason %q should say it is a call metric", reg.NotGrounded[MetricASR])
	}
}

// TestGroupMetricRules isolates each rule on a store holding only the
// dialogs it is about.
func TestGroupMetricRules(t *testing.T) {
	cases := []struct {
		name   string
		calls  []call
		m      Metric
		want   float64
		null   bool   // want null
		reason string // substring of the not_grounded reason
	}{
		{name: "408 is not delivered", m: MetricNER, want: 50, calls: []call{
			{id: "a", final: 408, setup: 32 * time.Second}, {id: "b", final: 486, setup: time.Second}}},
		{name: "480 486 487 600 603 are delivered", m: MetricNER, want: 100, calls: []call{
			{id: "a", final: 480, setup: time.Second}, {id: "b", final: 486, setup: time.Second},
			{id: "c", final: 487, cancel: true, setup: time.Second}, {id: "d", final: 600, setup: time.Second},
			{id: "e", final: 603, setup: time.Second}}},
		{name: "ringing at capture end is not a seizure", m: MetricASR, want: 100, calls: []call{
			{id: "a", pdd: time.Second, final: 200, setup: 2 * time.Second}, {id: "b", pdd: time.Second}}},
		{name: "only ringing: no seizure, null not 0", m: MetricASR, null: true, reason: "still ringing", calls: []call{
			{id: "a", pdd: time.Second}, {id: "b"}}},
		{name: "ACD is conversation time, not span", m: MetricACD, want: 15, calls: []call{
			{id: "a", pdd: time.Second, final: 200, setup: 10 * time.Second, conv: 10 * time.Second},
			{id: "b", final: 200, setup: 5 * time.Second, conv: 20 * time.Second}}},
		{name: "ACD without a BYE is null", m: MetricACD, null: true, reason: "BYE", calls: []call{
			{id: "a", final: 200, setup: time.Second}}},
		{name: "ACD without an answer is null", m: MetricACD, null: true, reason: "answered", calls: []call{
			{id: "a", final: 503, setup: time.Second}}},
		{name: "PDD median is nearest rank, not interpolated", m: MetricPDDP50, want: 2000, calls: []call{
			{id: "a", pdd: 1000 * time.Millisecond}, {id: "b", pdd: 2000 * time.Millisecond},
			{id: "c", pdd: 3000 * time.Millisecond}, {id: "d", pdd: 4000 * time.Millisecond}}},
		{name: "PDD without an 18x is null", m: MetricPDDP95, null: true, reason: "18x", calls: []call{
			{id: "a", final: 503, setup: time.Second}}},
		{name: "ASR rounds to 2 decimals", m: MetricASR, want: 33.33, calls: []call{
			{id: "a", final: 200, setup: time.Second}, {id: "b", final: 503, setup: time.Second},
			{id: "c", final: 503, setup: time.Second}}},
		{name: "retransmit rate per dialog", m: MetricRetransmitRate, want: 1.5, calls: []call{
			{id: "a", final: 503, setup: 4 * time.Second, retrans: 3}, {id: "b", final: 503, setup: time.Second}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newGrpBuilder(t)
			for i, c := range tc.calls {
				c.at = time.Duration(i) * time.Minute
				b.add(c)
			}
			got, err := b.querier().Group(context.Background(), GroupOptions{By: DimMethod, Metrics: []Metric{tc.m}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Groups) != 1 {
				t.Fatalf("got %d groups, want 1", len(got.Groups))
			}
			g := got.Groups[0]
			if len(g.Metrics) != 1 {
				t.Errorf("got metrics %v, want only %s", g.Metrics, tc.m)
			}
			v, ok := metric(t, g, tc.m)
			switch {
			case tc.null && ok:
				t.Errorf("got %v, want null", v)
			case tc.null && !strings.Contains(g.NotGrounded[tc.m], tc.reason):
				t.Errorf("got reason %q, want one mentioning %q", g.NotGrounded[tc.m], tc.reason)
			case !tc.null && (!ok || v != tc.want):
				t.Errorf("got %v (computed %v, reason %q), want %v", v, ok, g.NotGrounded[tc.m], tc.want)
			}
			if !tc.null && len(g.NotGrounded) != 0 {
				t.Errorf("not_grounded %v on a computed metric", g.NotGrounded)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	at := grpT0
	// Outcome{Invite, Seizure, TimedOut, Answered, Delivered}
	cases := []struct {
		name string
		row  dialog.Summary
		end  time.Time
		want Outcome
	}{
		{"answered", dialog.Summary{Method: "INVITE", State: "Completed", FinalStatusCode: 200}, at, Outcome{true, true, false, true, true}},
		{"answered, code not retained", dialog.Summary{Method: "INVITE", State: "InCall", Timing: dialog.Timing{SetupMs: ms(900)}}, at, Outcome{true, true, false, true, true}},
		{"busy", dialog.Summary{Method: "INVITE", State: "Failed", FinalStatusCode: 486}, at, Outcome{true, true, false, false, true}},
		{"request timeout", dialog.Summary{Method: "INVITE", State: "Failed", FinalStatusCode: 408}, at, Outcome{true, true, false, false, false}},
		{"redirected", dialog.Summary{Method: "INVITE", State: "Redirected", FinalStatusCode: 302}, at, Outcome{true, true, false, false, false}},
		{"challenged only", dialog.Summary{Method: "INVITE", State: "Failed", FinalStatusCode: 407}, at, Outcome{true, true, false, false, false}},
		{"cancelled, 487 not captured", dialog.Summary{Method: "INVITE", State: "Cancelled"}, at, Outcome{true, true, false, false, true}},
		{"ringing at capture end", dialog.Summary{Method: "INVITE", State: "Ringing", UpdatedAt: at, Timing: dialog.Timing{PDDMs: ms(800)}},
			at.Add(TimerC), Outcome{Invite: true}},
		{"ringing, silent past Timer C", dialog.Summary{Method: "INVITE", State: "Ringing", UpdatedAt: at, Timing: dialog.Timing{PDDMs: ms(800)}},
			at.Add(TimerC + time.Millisecond), Outcome{true, true, true, false, false}},
		{"trying at capture end", dialog.Summary{Method: "INVITE", State: "Trying", UpdatedAt: at}, at.Add(TimerB), Outcome{Invite: true}},
		{"no response, silent past Timer B", dialog.Summary{Method: "INVITE", State: "Trying", UpdatedAt: at},
			at.Add(TimerB + time.Millisecond), Outcome{true, true, true, false, false}},
		{"no capture end: never timed out", dialog.Summary{Method: "INVITE", State: "Trying", UpdatedAt: at}, time.Time{}, Outcome{Invite: true}},
		{"mid-call capture (seeded by BYE)", dialog.Summary{Method: "BYE", State: "Completed"}, at, Outcome{}},
		{"register", dialog.Summary{Method: "REGISTER", State: "Registered"}, at, Outcome{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(&tc.row, tc.end); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGroupOutageIsNotNull: INVITEs nobody answers, silent past Timer B
// before the capture's last message, are failed seizures: ASR 0 over the
// seizures, not a null that hides the outage. The last INVITE, sent a
// second before the end, is still in its transaction and not counted.
func TestGroupOutageIsNotNull(t *testing.T) {
	b := newGrpBuilder(t)
	b.add(call{id: "o1", at: 0, retrans: 3})
	b.add(call{id: "o2", at: 10 * time.Second, retrans: 3})
	b.add(call{id: "o3", at: 59 * time.Second})
	b.add(call{id: "r1", at: 60 * time.Second, register: true})
	f, _ := b.querier().Compile("method == INVITE")
	got, err := b.querier().Group(context.Background(), GroupOptions{By: DimMethod, Filter: f, Metrics: []Metric{MetricASR, MetricNER}})
	if err != nil {
		t.Fatal(err)
	}
	g := got.Groups[0]
	if g.Population.Seizures != 2 || g.Population.Answered != 0 || g.Population.Delivered != 0 {
		t.Errorf("population %+v, want 2 seizures (o1, o2), none answered or delivered", g.Population)
	}
	for _, m := range []Metric{MetricASR, MetricNER} {
		if v, ok := metric(t, g, m); !ok || v != 0 {
			t.Errorf("%s = %v (computed %v), want 0", m, v, ok)
		}
	}
}

func TestNearestRank(t *testing.T) {
	cases := []struct{ n, p, want int }{
		{1, 10, 0}, {1, 50, 0}, {1, 95, 0},
		{4, 50, 1},   // rank 2: 2000 of 1000..4000, not 2500
		{10, 10, 0},  // rank 1
		{11, 10, 1},  // rank ceil(1.1) = 2
		{20, 95, 18}, // rank 19 exactly: no rounding push to 20
		{20, 50, 9},
		{100, 95, 94},
		{101, 95, 95}, // rank ceil(95.95) = 96
		{3, 100, 2},
		{0, 50, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("n%d_p%d", tc.n, tc.p), func(t *testing.T) {
			if got := NearestRank(tc.n, tc.p); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestGroupDimensions(t *testing.T) {
	b := newGrpBuilder(t)
	// Through a proxy seen on both sides: caller -> proxy -> gateway.
	b.add(call{id: "p1", at: 0, domain: "Carrier.Example", hops: []string{grpProxy, grpGW}, final: 200, setup: time.Second})
	// Failover: the proxy tried grpGW, then grpGW2.
	b.add(call{id: "p2", at: 30 * time.Minute, domain: "carrier.example", hops: []string{grpProxy, grpGW, grpGW2}, final: 503, setup: time.Second})
	b.add(call{id: "p3", at: 70 * time.Minute, domain: "other.example", final: 486, setup: time.Second})
	b.add(call{id: "r1", at: 71 * time.Minute, register: true})
	q := b.querier()
	cases := []struct {
		by   Dimension
		want map[string]int // value -> count ("(none)" for absent)
	}{
		{DimToDomain, map[string]int{"carrier.example": 2, "other.example": 1, "example.net": 1}},
		{DimHour, map[string]int{"2025-03-03T09:00:00Z": 2, "2025-03-03T10:00:00Z": 2}},
		{DimNextHop, map[string]int{grpGW: 2, grpGW2: 1, grpReg: 1}},
		{DimMethod, map[string]int{"INVITE": 3, "REGISTER": 1}},
		{DimResponseCode, map[string]int{"200": 1, "503": 1, "486": 1, "(none)": 1}},
	}
	for _, tc := range cases {
		t.Run(string(tc.by), func(t *testing.T) {
			got, err := q.Group(context.Background(), GroupOptions{By: tc.by, Metrics: []Metric{MetricCount}})
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]int{}
			for _, g := range got.Groups {
				m[g.Value] = g.Count
			}
			if fmt.Sprint(m) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", m, tc.want)
			}
			if got.DistinctValues != len(tc.want) || got.TotalMatched != 4 {
				t.Errorf("distinct %d total %d, want %d 4", got.DistinctValues, got.TotalMatched, len(tc.want))
			}
		})
	}
}

func TestGroupTopNAndFilter(t *testing.T) {
	q := carrierQuerier(t)
	f, err := q.Compile("method == INVITE")
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Group(context.Background(), GroupOptions{By: DimResponseCode, TopN: 2, Filter: f, Metrics: []Metric{MetricASR}})
	if err != nil {
		t.Fatal(err)
	}
	// Codes: 200 x2, (none) x3 (c6 c7 c12), 486 480 408 503 487 600 603 x1.
	if got.TotalMatched != 12 || got.DistinctValues != 9 {
		t.Fatalf("total %d distinct %d, want 12 9", got.TotalMatched, got.DistinctValues)
	}
	if len(got.Groups) != 2 || got.Groups[0].Value != None || !got.Groups[0].Absent || got.Groups[1].Value != "200" {
		t.Fatalf("groups %+v, want (none) then 200", got.Groups)
	}
	sum := got.OtherCount
	for _, g := range got.Groups {
		sum += g.Count
	}
	if sum != got.TotalMatched || got.OtherCount != 7 {
		t.Errorf("groups + other = %d (other %d), want %d (other 7)", sum, got.OtherCount, got.TotalMatched)
	}
	// (none): c6 c7 ringing/trying, c12 cancelled: one seizure, not answered.
	if v, ok := metric(t, got.Groups[0], MetricASR); !ok || v != 0 {
		t.Errorf("(none) ASR %v %v, want 0 (one seizure, c12, unanswered)", v, ok)
	}
}

func TestParseGroupVocabulary(t *testing.T) {
	if len(GroupDimensions()) != 12 {
		t.Fatalf("got %d dimensions, want 12", len(GroupDimensions()))
	}
	for _, d := range Dimensions() {
		if _, err := ParseGroupDimension(string(d)); err != nil {
			t.Errorf("aggregate dimension %s refused: %v", d, err)
		}
	}
	if _, err := ParseGroupDimension("carrier"); err == nil || !strings.Contains(err.Error(), "next_hop") {
		t.Errorf("unknown dimension: got %v, want an error listing next_hop", err)
	}
	if _, err := ParseMetrics([]string{"asr", "mos"}); err == nil || !strings.Contains(err.Error(), "mos_p10") {
		t.Errorf("unknown metric: got %v, want an error listing mos_p10", err)
	}
	got, err := ParseMetrics([]string{"ner", "asr", "ner"})
	if err != nil || fmt.Sprint(got) != "[ner asr]" {
		t.Errorf("got %v %v, want [ner asr]", got, err)
	}
	if all, _ := ParseMetrics(nil); len(all) != 8 {
		t.Errorf("default metrics %v, want all 8", all)
	}
	for _, m := range Metrics() {
		if m.Unit() == "" {
			t.Errorf("metric %s has no unit", m)
		}
	}
}

// TestGroupManyDistinctValues floods one dimension with 50,000 distinct
// sender-written values (one To domain per dialog): the answer keeps top_n
// groups, counts the rest in other_count and every value in
// distinct_values; the per-call map is bounded by the dialog store's cap,
// never by the sender.
//
// It runs on 5,000 dialogs; BenchmarkGroupManyDistinctValues groups 50,000.
func TestGroupManyDistinctValues(t *testing.T) {
	const n = 5000
	q := grpManyDistinct(t, n)
	got, err := q.Group(context.Background(), GroupOptions{By: DimToDomain, TopN: 50})
	if err != nil {
		t.Fatal(err)
	}
	if got.DistinctValues != n || len(got.Groups) != 50 || got.OtherCount != n-50 || got.TotalMatched != n {
		t.Errorf("distinct %d groups %d other %d total %d, want %d 50 %d %d", got.DistinctValues, len(got.Groups), got.OtherCount, got.TotalMatched, n, n-50, n)
	}
	// Ties in count rank by value: the first group is the smallest domain.
	if got.Groups[0].Value != "d00000.example" || got.Groups[49].Value != "d00049.example" {
		t.Errorf("groups %q .. %q, want d00000.example .. d00049.example", got.Groups[0].Value, got.Groups[49].Value)
	}
}

// grpManyDistinct is a store of n REGISTER dialogs, each to its own domain.
func grpManyDistinct(tb testing.TB, n int) *Querier {
	tb.Helper()
	b := newGrpBuilder(tb)
	for i := 0; i < n; i++ {
		b.add(call{id: fmt.Sprintf("flood%05d", i), at: time.Duration(i) * time.Millisecond, domain: fmt.Sprintf("d%05d.example", i), register: true})
	}
	return b.querier()
}
