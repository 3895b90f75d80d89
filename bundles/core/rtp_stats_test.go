package core

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testgen"
	"github.com/sipnab/sipnab/sdk"
)

// rptTruthStream is one stream of tshark's `-z rtp,streams`.
type rptTruthStream struct {
	SSRC        string  `json:"ssrc"`
	Src         string  `json:"src"`
	Dst         string  `json:"dst"`
	Packets     int64   `json:"packets"`
	Lost        int64   `json:"lost"`
	MaxJitterMs float64 `json:"max_jitter_ms"`
	// MinJitterMs is -1 when tshark measured no jitter (one packet).
	MinJitterMs float64 `json:"min_jitter_ms"`
}

// jitterAgrees compares a stream's max jitter with tshark's: within
// max(0.05 ms, 2 %), or absent where tshark measured none (a one-packet
// stream has no jitter; absent is not zero).
func (w rptTruthStream) jitterAgrees(got *float64) bool {
	if w.MinJitterMs < 0 {
		return got == nil || *got == 0
	}
	return got != nil && rptJitterClose(*got, w.MaxJitterMs)
}

type rptTruth struct {
	RTP struct {
		Default   struct{ Streams []rptTruthStream } `json:"default"`
		Heuristic struct{ Streams []rptTruthStream } `json:"heuristic"`
	} `json:"rtp"`
}

// rptNotPcap are public captures in Microsoft NetMon 2.x format: sipnab
// refuses them at load (core/capture tests that), so they have no streams
// to compare.
var rptNotPcap = map[string]bool{"c07-sip-r2.cap": true, "rtsp-packets.cap": true}

// rptStream is the part of a stream row the tests compare.
type rptStream struct {
	SSRC             string   `json:"ssrc"`
	Src              string   `json:"src"`
	Dst              string   `json:"dst"`
	Codec            string   `json:"codec"`
	Packets          int64    `json:"packets"`
	Lost             int64    `json:"lost"`
	JitterMaxMs      *float64 `json:"jitter_max_ms"`
	MOS              *float64 `json:"mos"`
	MOSGrounded      bool     `json:"mos_grounded"`
	Orphaned         bool     `json:"orphaned"`
	AssociatedDialog string   `json:"associated_dialog"`
	FirstSeen        string   `json:"first_seen"`
}

func (s rptStream) key() string { return s.SSRC + "@" + s.Src + ">" + s.Dst }

type rptPage struct {
	Streams            []rptStream `json:"streams"`
	Returned           int         `json:"returned"`
	TotalMatched       *int        `json:"total_matched"`
	UngroundedExcluded *int        `json:"ungrounded_excluded"`
	Truncated          *bool       `json:"truncated"`
	NextCursor         *string     `json:"next_cursor"`
	SourceExhausted    bool        `json:"source_exhausted"`
}

func rptDecodePage(t testing.TB, r sdk.Reply) rptPage {
	t.Helper()
	var p rptPage
	if err := json.Unmarshal([]byte(r.Blocks[0]), &p); err != nil {
		t.Fatalf("decoding page: %v", err)
	}
	return p
}

// rptSweep pages an rtp_stats sweep to its end and returns every row in
// order, checking the envelope of each page.
func rptSweep(t testing.TB, c *engine.Capture, args map[string]any, l sdk.Limits) ([]rptStream, rptPage) {
	t.Helper()
	var all []rptStream
	var last rptPage
	cursor := ""
	for pages := 0; ; pages++ {
		a := map[string]any{}
		for k, v := range args {
			a[k] = v
		}
		if cursor != "" {
			a["cursor"] = cursor
		}
		r, err := rptInvokeWith(t, c, "rtp_stats", a, l)
		if err != nil {
			t.Fatalf("rtp_stats %v: %v", a, err)
		}
		p := rptDecodePage(t, r)
		if p.Returned != len(p.Streams) {
			t.Fatalf("returned %d, rows %d", p.Returned, len(p.Streams))
		}
		if p.TotalMatched == nil || p.UngroundedExcluded == nil || p.Truncated == nil {
			t.Fatalf("page envelope incomplete after the load: %s", r.Blocks[0])
		}
		all = append(all, p.Streams...)
		last = p
		if p.NextCursor == nil {
			if *p.Truncated {
				t.Fatalf("truncated true without next_cursor")
			}
			return all, last
		}
		if !*p.Truncated {
			t.Fatalf("next_cursor %q with truncated false", *p.NextCursor)
		}
		if pages > 100000 {
			t.Fatal("sweep does not end")
		}
		cursor = *p.NextCursor
	}
}

func rptJitterClose(got, want float64) bool {
	return math.Abs(got-want) <= math.Max(0.05, 0.02*want)
}

// TestRTPStatsSweepAgreesWithTshark sweeps every public capture: each stream
// tshark ties to SDP is there with its packets and loss, and its max jitter
// within max(0.05 ms, 2 %); every stream tshark finds only heuristically is
// there as an orphan. Paging one row at a time returns the same rows, each
// exactly once, in first_seen order.
func TestRTPStatsSweepAgreesWithTshark(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if rptNotPcap[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tr := testcap.LoadTruth[rptTruth](t, name)
			c := rptLoad(t, testcap.Public(name))
			rows, last := rptSweep(t, c, map[string]any{"limit": 1000}, sdk.DefaultLimits())
			if *last.TotalMatched != len(rows) {
				t.Errorf("total_matched %d, rows %d", *last.TotalMatched, len(rows))
			}
			byKey := map[string]rptStream{}
			for _, s := range rows {
				byKey[s.key()] = s
			}
			for _, want := range tr.RTP.Default.Streams {
				k := want.SSRC + "@" + want.Src + ">" + want.Dst
				got, ok := byKey[k]
				if !ok {
					t.Errorf("stream %s (tshark, %d packets) not in the sweep", k, want.Packets)
					continue
				}
				if got.Packets != want.Packets || got.Lost != want.Lost {
					t.Errorf("%s: packets/lost got %d/%d, want %d/%d", k, got.Packets, got.Lost, want.Packets, want.Lost)
				}
				if !want.jitterAgrees(got.JitterMaxMs) {
					t.Errorf("%s: jitter_max_ms got %v, want %v within max(0.05 ms, 2%%)", k, got.JitterMaxMs, want.MaxJitterMs)
				}
			}
			def := map[string]bool{}
			for _, s := range tr.RTP.Default.Streams {
				def[s.SSRC+"@"+s.Src+">"+s.Dst] = true
			}
			for _, h := range tr.RTP.Heuristic.Streams {
				k := h.SSRC + "@" + h.Src + ">" + h.Dst
				if def[k] {
					continue
				}
				if got, ok := byKey[k]; !ok || got.Packets != h.Packets {
					t.Errorf("heuristic stream %s (%d packets): got %+v (found %v)", k, h.Packets, got, ok)
				}
			}
			one, _ := rptSweep(t, c, map[string]any{"limit": 1}, sdk.DefaultLimits())
			if len(one) != len(rows) {
				t.Fatalf("paging by one: got %d rows, want %d", len(one), len(rows))
			}
			seen := map[string]bool{}
			for i := range one {
				if one[i].key() != rows[i].key() {
					t.Errorf("row %d: paging by one got %s, one page got %s", i, one[i].key(), rows[i].key())
				}
				if seen[one[i].key()] {
					t.Errorf("row %s returned twice", one[i].key())
				}
				seen[one[i].key()] = true
				if i > 0 && one[i].FirstSeen < one[i-1].FirstSeen {
					t.Errorf("row %d out of first_seen order", i)
				}
			}
		})
	}
}

func TestRTPStatsPerCall(t *testing.T) {
	c := rptLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	tr := testcap.LoadTruth[rptTruth](t, "sip-rtp-g711.pcap")
	want := map[string]rptTruthStream{}
	for _, s := range tr.RTP.Default.Streams {
		want[s.SSRC] = s
	}
	cases := []struct {
		callID, ssrc, codec string
	}{
		{"1-1966@10.0.2.20", "0x343da99b", "PCMU"},
		{"1-1968@10.0.2.20", "0x343ffa34", "PCMA"},
	}
	for _, tc := range cases {
		t.Run(tc.callID, func(t *testing.T) {
			m, r := rptCall(t, c, "rtp_stats", map[string]any{"call_id": tc.callID, "quality_intervals": true})
			p := rptDecodePage(t, r)
			if m["call_id"] != tc.callID {
				t.Errorf("call_id: got %v", m["call_id"])
			}
			if len(p.Streams) != 1 {
				t.Fatalf("streams: got %d, want 1", len(p.Streams))
			}
			s := p.Streams[0]
			w := want[tc.ssrc]
			if s.SSRC != tc.ssrc || s.Packets != w.Packets || s.Lost != w.Lost || !w.jitterAgrees(s.JitterMaxMs) {
				t.Errorf("stream: got %+v, want %+v", s, w)
			}
			if s.Codec != rptFenced(tc.codec) {
				t.Errorf("codec: got %q, want %q fenced", s.Codec, tc.codec)
			}
			if s.AssociatedDialog != tc.callID || s.Orphaned {
				t.Errorf("association: got %q orphaned %v", s.AssociatedDialog, s.Orphaned)
			}
			if !r.Fenced {
				t.Error("codec names are fenced but no provenance note is arranged")
			}
			for _, k := range []string{"diagnosis.one_way_audio", "diagnosis.nat_mismatch", "diagnosis.no_media", "diagnosis.private_media_address", "diagnosis.hints", "diagnosis.sdp_media", "diagnosis.actual_media"} {
				if rptPath(m, k) == nil {
					t.Errorf("%s missing", k)
				}
			}
			if p.TotalMatched == nil || *p.TotalMatched != 1 || p.NextCursor != nil || p.Truncated == nil || *p.Truncated {
				t.Errorf("envelope: %s", r.Blocks[0])
			}
			ivs, _ := rptPath(m, "streams").([]any)[0].(map[string]any)["quality_intervals"].([]any)
			if len(ivs) == 0 {
				t.Errorf("quality_intervals empty")
			}
		})
	}
}

// TestRTPStatsMOSBounds: MOS bounds never select a placeholder score and
// count what they skipped; the orphaned filter is independent of them.
func TestRTPStatsMOSBounds(t *testing.T) {
	cases := []struct {
		capture    string
		args       map[string]any
		want       int // rows
		ungrounded int
	}{
		// Two G.722 streams score 4.22 from the placeholder and would
		// otherwise fall under 4.5; the two G.711 streams are grounded.
		{"codec-negotiation.pcap", map[string]any{}, 4, 0},
		{"codec-negotiation.pcap", map[string]any{"max_mos": 4.5}, 2, 2},
		{"codec-negotiation.pcap", map[string]any{"min_mos": 1}, 2, 2},
		{"codec-negotiation.pcap", map[string]any{"min_mos": 4.4, "max_mos": 4.5}, 0, 2},
		{"sip-rtp-g722.pcap", map[string]any{"max_mos": 4.5}, 0, 1},
		// One heuristic PCMU stream, tied to no dialog.
		{"speech_8k_ulaw.pcap", map[string]any{"orphaned": true}, 1, 0},
		{"speech_8k_ulaw.pcap", map[string]any{"orphaned": false}, 0, 0},
		{"speech_8k_ulaw.pcap", map[string]any{"orphaned": true, "max_mos": 4.5}, 1, 0},
		{"SIP_CALL_RTP_G711", map[string]any{"orphaned": true}, 3, 0},
		{"SIP_CALL_RTP_G711", map[string]any{"orphaned": false}, 2, 0},
	}
	for _, tc := range cases {
		b, _ := json.Marshal(tc.args)
		t.Run(tc.capture+string(b), func(t *testing.T) {
			c := rptLoad(t, testcap.Public(tc.capture))
			rows, last := rptSweep(t, c, tc.args, sdk.DefaultLimits())
			if len(rows) != tc.want || *last.TotalMatched != tc.want {
				t.Errorf("rows: got %d (total_matched %d), want %d", len(rows), *last.TotalMatched, tc.want)
			}
			if *last.UngroundedExcluded != tc.ungrounded {
				t.Errorf("ungrounded_excluded: got %d, want %d", *last.UngroundedExcluded, tc.ungrounded)
			}
			lo, hasLo := tc.args["min_mos"].(float64)
			hi, hasHi := tc.args["max_mos"].(float64)
			if v, ok := tc.args["min_mos"].(int); ok {
				lo, hasLo = float64(v), true
			}
			for _, s := range rows {
				if hasLo || hasHi {
					if !s.MOSGrounded || s.MOS == nil || (hasLo && *s.MOS < lo) || (hasHi && *s.MOS > hi) {
						t.Errorf("%s: mos %v grounded %v outside the bounds", s.key(), s.MOS, s.MOSGrounded)
					}
				}
				if o, ok := tc.args["orphaned"].(bool); ok && s.Orphaned != o {
					t.Errorf("%s: orphaned %v", s.key(), s.Orphaned)
				}
				if s.Orphaned != (s.AssociatedDialog == "") {
					t.Errorf("%s: orphaned %v but associated_dialog %q", s.key(), s.Orphaned, s.AssociatedDialog)
				}
			}
		})
	}
}

// rptGenerated writes the bench generator's small capture into a temporary
// directory and returns its path and exact answers.
func rptGenerated(t testing.TB) (string, *gen.Answers) {
	t.Helper()
	return testgen.Capture(t, gen.Small(1))
}

// TestRTPStatsFindsTheGeneratedDegradedStreams: max_mos under the
// generator's degraded threshold returns exactly its degraded streams, and
// min_mos at it every other stream.
func TestRTPStatsFindsTheGeneratedDegradedStreams(t *testing.T) {
	p, ans := rptGenerated(t)
	c := rptLoad(t, p)
	degraded := map[string]bool{}
	for _, k := range ans.DegradedStreams {
		degraded[k.SSRC+"@"+k.Src+">"+k.Dst] = true
	}
	if len(degraded) == 0 {
		t.Fatal("the generator made no degraded stream")
	}
	cases := []struct {
		name string
		args map[string]any
		want func(k string) bool
	}{
		{"max_mos", map[string]any{"max_mos": gen.DegradedMOSBelow}, func(k string) bool { return degraded[k] }},
		{"min_mos", map[string]any{"min_mos": gen.DegradedMOSBelow}, func(k string) bool { return !degraded[k] }},
		{"no bound", map[string]any{}, func(string) bool { return true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows, last := rptSweep(t, c, tc.args, sdk.DefaultLimits())
			got := map[string]bool{}
			for _, s := range rows {
				got[s.key()] = true
			}
			want := 0
			for _, s := range ans.Streams {
				k := s.SSRC + "@" + s.Src + ">" + s.Dst
				if !tc.want(k) {
					continue
				}
				want++
				if !got[k] {
					t.Errorf("stream %s (mos %.2f) missing", k, s.MOSG113)
				}
			}
			if len(rows) != want {
				t.Errorf("rows: got %d, want %d", len(rows), want)
			}
			if *last.UngroundedExcluded != 0 {
				t.Errorf("ungrounded_excluded: got %d, want 0 (all G.711)", *last.UngroundedExcluded)
			}
		})
	}
}

func TestRTPStatsRefusals(t *testing.T) {
	c := rptLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	cases := []struct {
		name string
		args map[string]any
	}{
		{"min_mos with call_id", map[string]any{"call_id": "1-1966@10.0.2.20", "min_mos": 3}},
		{"max_mos with call_id", map[string]any{"call_id": "1-1966@10.0.2.20", "max_mos": 3}},
		{"cursor with call_id", map[string]any{"call_id": "1-1966@10.0.2.20", "cursor": "eyJ2IjoxfQ.AAAAAAAAAAAAAAAA"}},
		{"unknown call", map[string]any{"call_id": "nobody@nowhere"}},
		{"min above max", map[string]any{"min_mos": 4, "max_mos": 3}},
		{"malformed cursor", map[string]any{"cursor": "yesterday|0x1"}},
		{"wrong type", map[string]any{"max_mos": "low"}},
		{"integer cursor", map[string]any{"cursor": 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rptInvoke(t, c, "rtp_stats", tc.args)
			if got := rptCode(err); got != sdk.CodeInvalidParams {
				t.Errorf("got code %d (%v), want %d", got, err, sdk.CodeInvalidParams)
			}
		})
	}
}

// TestRTPStatsCursors: the cursor of a page continues after its last row,
// ties included, and holds to the sweep's filters: the same cursor with
// other MOS bounds or another orphaned filter is refused, never read as a
// position in another row set.
func TestRTPStatsCursors(t *testing.T) {
	c := rptLoad(t, testcap.Public("SIP_CALL_RTP_G711"))
	rows, _ := rptSweep(t, c, map[string]any{}, sdk.DefaultLimits())
	if len(rows) < 3 {
		t.Fatalf("want at least 3 streams, got %d", len(rows))
	}
	r, err := rptInvoke(t, c, "rtp_stats", map[string]any{"limit": 1})
	if err != nil {
		t.Fatal(err)
	}
	p := rptDecodePage(t, r)
	if p.NextCursor == nil || strings.Contains(*p.NextCursor, rows[0].SSRC) {
		t.Fatalf("next_cursor: got %v, want an opaque cursor", p.NextCursor)
	}
	m, r := rptCall(t, c, "rtp_stats", map[string]any{"cursor": *p.NextCursor})
	rest := rptDecodePage(t, r)
	if len(rest.Streams) != len(rows)-1 {
		t.Fatalf("rows after the first page: got %d, want %d (%v)", len(rest.Streams), len(rows)-1, m["streams"])
	}
	for i := range rest.Streams {
		if rest.Streams[i].key() != rows[i+1].key() {
			t.Errorf("row %d: got %s, want %s", i, rest.Streams[i].key(), rows[i+1].key())
		}
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"other MOS bounds", map[string]any{"cursor": *p.NextCursor, "max_mos": 3.5},
			`cursor belongs to rtp_stats with max_mos absent; this call asks max_mos "3.5"`},
		{"another orphaned filter", map[string]any{"cursor": *p.NextCursor, "orphaned": true},
			`cursor belongs to rtp_stats with orphaned absent; this call asks orphaned "true"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rptInvoke(t, c, "rtp_stats", tc.args)
			if rptCode(err) != sdk.CodeInvalidParams || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want -32602 containing %q", err, tc.want)
			}
		})
	}
}

// TestRTPStatsTrimsToTheResponseCeiling: under a small
// --mcp-max-response-bytes a page holds fewer rows, says truncated, and
// paging still returns every stream exactly once.
func TestRTPStatsTrimsToTheResponseCeiling(t *testing.T) {
	c := rptLoad(t, testcap.Public("SIP_CALL_RTP_G711"))
	all, _ := rptSweep(t, c, map[string]any{"limit": 1000}, sdk.DefaultLimits())
	l := sdk.DefaultLimits()
	l.MaxResponseBytes = 6000
	r, err := rptInvokeWith(t, c, "rtp_stats", map[string]any{"limit": 1000}, l)
	if err != nil {
		t.Fatal(err)
	}
	p := rptDecodePage(t, r)
	if p.Returned >= len(all) || p.Returned == 0 || p.Truncated == nil || !*p.Truncated || p.NextCursor == nil {
		t.Fatalf("want a trimmed, truncated first page: returned %d of %d, truncated %v", p.Returned, len(all), p.Truncated)
	}
	if n := r.WireBytes(); n > l.MaxResponseBytes {
		t.Errorf("page is %d bytes on the wire, over the %d ceiling", n, l.MaxResponseBytes)
	}
	trimmed, _ := rptSweep(t, c, map[string]any{"limit": 1000}, l)
	if len(trimmed) != len(all) {
		t.Fatalf("trimmed sweep: got %d rows, want %d", len(trimmed), len(all))
	}
	for i := range all {
		if trimmed[i].key() != all[i].key() {
			t.Errorf("row %d: got %s, want %s", i, trimmed[i].key(), all[i].key())
		}
	}
}

// TestRTPStatsNeverClaimsAWholeAnswerMidLoad sweeps while a capture loads:
// until the source is exhausted no page says truncated false; once loaded,
// the sweep is whole.
func TestRTPStatsNeverClaimsAWholeAnswerMidLoad(t *testing.T) {
	p, ans := rptGenerated(t)
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(t.Context(), []string{p}); err != nil {
		t.Fatal(err)
	}
	midLoad := 0
	for {
		r, err := rptInvoke(t, c, "rtp_stats", map[string]any{"limit": 1000})
		if err != nil {
			t.Fatal(err)
		}
		pg := rptDecodePage(t, r)
		if !pg.SourceExhausted {
			midLoad++
			if pg.Truncated != nil && !*pg.Truncated {
				t.Fatalf("truncated false while the source is not exhausted: %s", r.Blocks[0])
			}
			continue
		}
		if pg.Truncated == nil || *pg.Truncated || pg.Returned != len(ans.Streams) {
			t.Errorf("after the load: returned %d of %d, truncated %v", pg.Returned, len(ans.Streams), pg.Truncated)
		}
		break
	}
	t.Logf("%d answers during the load", midLoad)
}

// TestRTPStatsFencesSenderText: codec names (from the SDP) are fenced on
// every stream and payload type; the rest of the row is not.
func TestRTPStatsFencesSenderText(t *testing.T) {
	c := rptLoad(t, testcap.Public("invite-opus-bye.pcap"))
	r, err := rptInvoke(t, c, "rtp_stats", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Streams []struct {
			Codec        string `json:"codec"`
			SSRC         string `json:"ssrc"`
			PayloadTypes []struct {
				Codec string `json:"codec"`
			} `json:"payload_types"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(r.Blocks[0]), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Streams) != 2 {
		t.Fatalf("streams: got %d, want 2", len(page.Streams))
	}
	for _, s := range page.Streams {
		if s.Codec != rptFenced("opus") {
			t.Errorf("%s codec: got %q, want opus fenced", s.SSRC, s.Codec)
		}
		for _, pt := range s.PayloadTypes {
			if pt.Codec != "" && !strings.HasPrefix(pt.Codec, sdk.FenceOpen) {
				t.Errorf("%s payload type codec %q not fenced", s.SSRC, pt.Codec)
			}
		}
		if strings.HasPrefix(s.SSRC, sdk.FenceOpen) {
			t.Errorf("ssrc fenced: identifiers stay verbatim")
		}
	}
	if !r.Fenced {
		t.Error("no provenance note")
	}
	// Without any fenced value, no note.
	c2 := rptLoad(t, testcap.Public("sip-register.pcap"))
	r2, err := rptInvoke(t, c2, "rtp_stats", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Fenced || strings.Contains(r2.Blocks[0], sdk.FenceOpen) {
		t.Errorf("no streams, yet fenced %v: %s", r2.Fenced, r2.Blocks[0])
	}
}

// TestRTPStatsFencesTheRTCPCName: the CNAME an endpoint sent in RTCP SDES
// is sender text; the counters beside it are not.
func TestRTPStatsFencesTheRTCPCName(t *testing.T) {
	c := rptLoad(t, testcap.Public("SIP_CALL_RTP_G711"))
	r, err := rptInvoke(t, c, "rtp_stats", map[string]any{"limit": 1000})
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Streams []struct {
			SSRC             string `json:"ssrc"`
			EndpointReported *struct {
				CNAME         string `json:"cname"`
				SenderReports int    `json:"sender_reports"`
			} `json:"endpoint_reported"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(r.Blocks[0]), &page); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0xd2bd4e3e": "unknown@200.57.7.204", "0x58f33dea": "ACLTP ChannelHandle 30"}
	seen := 0
	for _, s := range page.Streams {
		w, ok := want[s.SSRC]
		if !ok || s.EndpointReported == nil {
			continue
		}
		seen++
		if s.EndpointReported.CNAME != rptFenced(w) {
			t.Errorf("%s cname: got %q, want %q fenced", s.SSRC, s.EndpointReported.CNAME, w)
		}
		if s.EndpointReported.SenderReports == 0 {
			t.Errorf("%s: sender_reports 0", s.SSRC)
		}
	}
	if seen != 4 {
		t.Errorf("streams with RTCP claims: got %d, want 4", seen)
	}
}

// BenchmarkRTPStatsSweep pages the carrier capture's 330 streams: the first
// page of 50, a page deep behind a cursor, and a MOS-bounded sweep.
func BenchmarkRTPStatsSweep(b *testing.B) {
	p, _ := testgen.Capture(b, gen.Carrier(1))
	c := rptLoad(b, p)
	all, _ := rptSweep(b, c, map[string]any{"limit": 1000}, sdk.DefaultLimits())
	tool := rptTool(b, c, "rtp_stats")
	half, err := tool.Invoke(b.Context(), json.RawMessage(fmt.Sprintf(`{"limit":%d}`, len(all)/2+1)), sdk.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	deep := rptDecodePage(b, half).NextCursor
	if deep == nil {
		b.Fatal("no cursor half way")
	}
	for _, bc := range []struct {
		name string
		args string
	}{
		{"first-page", `{}`},
		{"deep-cursor", `{"cursor":"` + *deep + `"}`},
		{"max-mos", `{"max_mos":3.6}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tool.Invoke(b.Context(), json.RawMessage(bc.args), sdk.DefaultLimits()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRTPStatsQualityIntervalsAreOptIn: a stream row carries no
// quality_intervals unless quality_intervals: true (or the field is named
// in fields); asked for, they are there.
func TestRTPStatsQualityIntervalsAreOptIn(t *testing.T) {
	c := rptLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	cases := []struct {
		name string
		args map[string]any
		want bool
	}{
		{"call default omits them", map[string]any{"call_id": "1-1966@10.0.2.20"}, false},
		{"call opted in has them", map[string]any{"call_id": "1-1966@10.0.2.20", "quality_intervals": true}, true},
		{"sweep default omits them", map[string]any{}, false},
		{"sweep opted in has them", map[string]any{"quality_intervals": true}, true},
		{"naming the field opts in", map[string]any{"fields": []string{"mos", "quality_intervals"}}, true},
		{"fields with the flag keep them", map[string]any{"fields": []string{"mos"}, "quality_intervals": true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := rptCall(t, c, "rtp_stats", tc.args)
			streams, _ := m["streams"].([]any)
			if len(streams) == 0 {
				t.Fatalf("no streams: %v", m)
			}
			for _, s := range streams {
				ivs, has := s.(map[string]any)["quality_intervals"]
				if has != tc.want {
					t.Fatalf("quality_intervals present %v, want %v", has, tc.want)
				}
				if has && len(ivs.([]any)) == 0 {
					t.Error("quality_intervals asked for but empty")
				}
			}
		})
	}
}

// TestRTPStatsFieldsProjectStreamRows: fields keeps the named stream
// fields (and ssrc) and nothing else; an unknown name is refused with the
// valid ones listed.
func TestRTPStatsFieldsProjectStreamRows(t *testing.T) {
	c := rptLoad(t, testcap.Public("sip-rtp-g711.pcap"))
	m, _ := rptCall(t, c, "rtp_stats", map[string]any{"fields": []string{"mos", "lost"}})
	streams := m["streams"].([]any)
	if len(streams) != 2 {
		t.Fatalf("streams: got %d, want 2", len(streams))
	}
	for _, s := range streams {
		row := s.(map[string]any)
		keys := []string{}
		for k := range row {
			keys = append(keys, k)
		}
		if _, ok := row["ssrc"]; !ok || len(row) > 3 {
			t.Errorf("row keys %v, want ssrc, lost and mos (if scored)", keys)
		}
		if _, ok := row["lost"]; !ok {
			t.Errorf("lost missing: %v", keys)
		}
	}
	_, err := rptInvoke(t, c, "rtp_stats", map[string]any{"fields": []string{"moss"}})
	if err == nil || !strings.Contains(err.Error(), `unknown field "moss"`) || !strings.Contains(err.Error(), "jitter_max_ms") {
		t.Fatalf("unknown field: got %v, want a refusal listing the valid fields", err)
	}
}

// TestRTPStatsMaxResponseBytesBoundsTheWire: max_response_bytes lowers the
// server's ceiling; each page's wire size stays under it and paging still
// returns every stream once. In call_id mode (no cursor) the streams that
// do not fit are counted in streams_omitted with truncated true.
func TestRTPStatsMaxResponseBytesBoundsTheWire(t *testing.T) {
	c := rptLoad(t, testcap.Public("SIP_CALL_RTP_G711"))
	all, _ := rptSweep(t, c, map[string]any{"limit": 1000}, sdk.DefaultLimits())
	const budget = 8000
	r, err := rptInvoke(t, c, "rtp_stats", map[string]any{"limit": 1000, "max_response_bytes": budget})
	if err != nil {
		t.Fatal(err)
	}
	p := rptDecodePage(t, r)
	if n := r.WireBytes(); n > budget || p.Returned == 0 || p.Returned >= len(all) {
		t.Fatalf("first page: %d bytes on the wire, %d of %d streams; want under %d and trimmed", n, p.Returned, len(all), budget)
	}
	paged, _ := rptSweep(t, c, map[string]any{"limit": 1000, "max_response_bytes": budget}, sdk.DefaultLimits())
	if len(paged) != len(all) {
		t.Fatalf("paged sweep: got %d rows, want %d", len(paged), len(all))
	}

	m, _ := rptCall(t, c, "rtp_stats", map[string]any{})
	call := ""
	for _, s := range m["streams"].([]any) {
		if a, _ := s.(map[string]any)["associated_dialog"].(string); a != "" {
			call = a
			break
		}
	}
	whole, _ := rptCall(t, c, "rtp_stats", map[string]any{"call_id": call})
	n := len(whole["streams"].([]any))
	if n < 2 {
		t.Skipf("call %s has %d streams; need two to cut", call, n)
	}
	one := 0
	for size := 1500; size < 20000 && one == 0; size += 250 {
		r, err := rptInvoke(t, c, "rtp_stats", map[string]any{"call_id": call, "max_response_bytes": size})
		if err != nil {
			continue
		}
		var got map[string]any
		_ = json.Unmarshal([]byte(r.Blocks[0]), &got)
		k := len(got["streams"].([]any))
		if k > 0 && k < n {
			one = k
			if got["streams_omitted"] != float64(n-k) || got["truncated"] != true || r.WireBytes() > size {
				t.Errorf("cut call answer: omitted %v truncated %v wire %d (budget %d), want omitted %d truncated true", got["streams_omitted"], got["truncated"], r.WireBytes(), size, n-k)
			}
		}
	}
	if one == 0 {
		t.Errorf("no budget cut the call's %d streams", n)
	}
}
