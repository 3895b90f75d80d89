package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/internal/testcap"
)

// mediaGolden compares got with testdata/media-<name> (rewritten with -update).
func mediaGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "media-"+name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run with -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; review and run go test -update\n--- got ---\n%s", path, got)
	}
}

// TestRenderFindingsGolden renders the capture analysis of captures with
// findings, with shed frames, and read partially, as text and Markdown.
func TestRenderFindingsGolden(t *testing.T) {
	cases := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"sip-488-codec-reject.pcapng", func(*testing.T) string { return testcap.Public("sip-488-codec-reject.pcapng") }},
		{"SIP_CALL_RTP_G711", func(*testing.T) string { return testcap.Public("SIP_CALL_RTP_G711") }},
		{"Asterisk_ZFONE_XLITE.pcap", func(*testing.T) string { return testcap.Public("Asterisk_ZFONE_XLITE.pcap") }},
		{"truncated-sip-routing-error.pcapng", func(t *testing.T) string { return truncated(t, "sip-routing-error.pcapng") }},
		{"sip-register.pcap", func(*testing.T) string { return testcap.Public("sip-register.pcap") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.path(t))
			rep, st := Analyze(c, analysis.Options{})
			if rep.SourceExhausted != st.SourceExhausted || rep.FramesRead != st.FramesRead {
				t.Errorf("report flags %v/%d differ from the status it was gated on %v/%d",
					rep.SourceExhausted, rep.FramesRead, st.SourceExhausted, st.FramesRead)
			}
			name := filepath.Base(st.Name)
			mediaGolden(t, tc.name+".findings.txt", []byte(RenderFindings(rep, name, FindingsText)))
			mediaGolden(t, tc.name+".findings.md", []byte(RenderFindings(rep, name, FindingsMarkdown)))
		})
	}
}

// TestWriteMediaTextGolden renders the WORST STREAMS and FINDINGS blocks of
// --report for captures with degraded, clean and no streams.
func TestWriteMediaTextGolden(t *testing.T) {
	// b2bua-asterisk.pcapng: two streams shared by both legs (+1), one-way
	// on both legs with one packet back.
	for _, name := range []string{"Asterisk_ZFONE_XLITE.pcap", "sip-rtp-opus-hybrid.pcap", "codec-negotiation.pcap", "sip-proxy.pcap", "b2bua-asterisk.pcapng"} {
		t.Run(name, func(t *testing.T) {
			c := load(t, testcap.Public(name))
			rep, _ := Analyze(c, analysis.Options{})
			doc := Build(c)
			var b bytes.Buffer
			WriteMediaText(&b, &doc, rep)
			mediaGolden(t, name+".media.txt", b.Bytes())
		})
	}
}

func f64(v float64) *float64 { return &v }

func TestWorstStreams(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// jit is jitter_ms (the RFC 3550 value at the last packet, the value
	// judged); jmean its mean, which judges nothing.
	mk := func(ssrc string, mos *float64, grounded bool, loss float64, jit, jmean float64, r *float64, at int) media.StreamInfo {
		return media.StreamInfo{SSRC: ssrc, MOS: mos, MOSGrounded: grounded, LossPct: loss, JitterMs: f64(jit), JitterMeanMs: f64(jmean),
			JitterMaxMs: f64(max(jit, jmean) * 2), RFactor: r, FirstSeen: t0.Add(time.Duration(at) * time.Second)}
	}
	streams := []media.StreamInfo{
		mk("good", f64(4.4), true, 0, 1, 1, f64(93), 0),
		mk("placeholder-lossy", f64(4.2), false, 8, 1, 1, f64(80), 1), // degraded by loss, score not grounded
		mk("low-mos", f64(3.1), true, 3, 5, 5, f64(60), 2),            // degraded by R
		mk("jittery", f64(4.0), true, 0, 60, 40, f64(80), 3),          // degraded by jitter_ms 60 (mean 40)
		mk("ok-lossy", f64(4.1), true, 1, 1, 1, f64(85), 4),
		mk("video", nil, false, 0, 0, 0, nil, 5),
		mk("mean-jittery", f64(4.3), true, 0, 20, 60, f64(90), 6), // jitter_ms 20: not degraded (mean 60)
	}
	got := WorstStreams(streams, 10)
	want := []string{"low-mos", "jittery", "placeholder-lossy", "ok-lossy", "mean-jittery", "good", "video"}
	if len(got) != len(want) {
		t.Fatalf("got %d streams, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].SSRC != want[i] {
			t.Errorf("rank %d: got %s, want %s", i, got[i].SSRC, want[i])
		}
	}
	if p := StreamProblems(&streams[3]); len(p) != 1 || p[0] != "jitter 60.0 ms > 50 ms" {
		t.Errorf("jittery: got problems %q, want [jitter 60.0 ms > 50 ms]", p)
	}
	if p := StreamProblems(&streams[6]); len(p) != 0 {
		t.Errorf("mean-jittery: got problems %q, want none", p)
	}
	if n := len(WorstStreams(streams, 2)); n != 2 {
		t.Errorf("n=2: got %d", n)
	}
	if len(StreamProblems(&streams[0])) != 0 || len(StreamProblems(&streams[2])) != 1 || len(StreamProblems(&streams[1])) != 1 {
		t.Errorf("problems: %v / %v / %v", StreamProblems(&streams[0]), StreamProblems(&streams[2]), StreamProblems(&streams[1]))
	}
}

// TestRenderFindingsKeepsCaptureTextInert: sender-chosen Call-IDs and
// reason phrases cannot format the Markdown document or break lines.
func TestRenderFindingsKeepsCaptureTextInert(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rep := analysis.Report{
		SchemaVersion: 1, DialogsExamined: 1, FramesRead: 10, SourceExhausted: true, Complete: true,
		Findings: []analysis.Finding{{
			Kind: "final_failure", Severity: "medium", Occurrences: 1, Unit: "dialogs", Summary: "s",
			Evidence: []analysis.Evidence{{
				CallID: "`x`\n# Heading", At: &at,
				Note: "Busy [click](http://evil.example) <img src=x>\r\n## injected *bold*",
			}},
		}},
	}
	md := RenderFindings(rep, "cap\n# title", FindingsMarkdown)
	for _, bad := range []string{"\n# Heading", "\n## injected", "[click](", " <img", "*bold*", "\n# title"} {
		if strings.Contains(md, bad) {
			t.Errorf("markdown keeps %q:\n%s", bad, md)
		}
	}
	if !strings.Contains(md, "`` `x`\\u000a# Heading ``") {
		t.Errorf("Call-ID not in a code span that holds its backticks:\n%s", md)
	}
	txt := RenderFindings(rep, "cap", FindingsText)
	if strings.Contains(txt, "\r") || strings.Contains(txt, "\n## injected") {
		t.Errorf("text keeps control characters:\n%q", txt)
	}
}

func TestMarkdownHelpers(t *testing.T) {
	for _, tc := range []struct{ in, code, esc string }{
		{"abc@host", "`abc@host`", "abc@host"},
		{"a`b", "``a`b``", "a\\`b"},
		{"`a``", "``` `a`` ```", "\\`a\\`\\`"},
		{"x_y*z", "`x_y*z`", "x\\_y\\*z"},
		{"[l](u) <b> #|~&", "`[l](u) <b> #|~&`", "\\[l\\](u) \\<b\\> \\#\\|\\~\\&"},
	} {
		if got := mdCode(tc.in); got != tc.code {
			t.Errorf("mdCode(%q): got %q, want %q", tc.in, got, tc.code)
		}
		if got := mdEscape(tc.in); got != tc.esc {
			t.Errorf("mdEscape(%q): got %q, want %q", tc.in, got, tc.esc)
		}
	}
	for _, tc := range []struct {
		n    int64
		unit string
		want string
	}{{1, "dialogs", "1 dialog"}, {2, "dialogs", "2 dialogs"}, {1, "entries", "1 entry"}, {0, "frames", "0 frames"}} {
		if got := count(tc.n, tc.unit); got != tc.want {
			t.Errorf("count(%d, %s): got %q, want %q", tc.n, tc.unit, got, tc.want)
		}
	}
}

// TestJSONStreamsAgreeWithTshark: the streams of `--json-run` (the rtp_stats
// stream shape) hold every stream tshark ties to SDP, with its packets and
// loss, and max jitter within max(0.05 ms, 2 %).
func TestJSONStreamsAgreeWithTshark(t *testing.T) {
	type tstream struct {
		SSRC, Src, Dst string
		Packets, Lost  int64
		MinJitterMs    float64 `json:"min_jitter_ms"`
		MaxJitterMs    float64 `json:"max_jitter_ms"`
	}
	for _, name := range []string{"sip-rtp-g711.pcap", "SIP_CALL_RTP_G711", "Asterisk_ZFONE_XLITE.pcap", "rtp-protocol.pcap", "codec-negotiation.pcap", "SIP_DTMF2.cap"} {
		t.Run(name, func(t *testing.T) {
			tr := testcap.LoadTruth[struct {
				RTP struct {
					Default struct{ Streams []tstream } `json:"default"`
				} `json:"rtp"`
			}](t, name)
			var out bytes.Buffer
			if err := WriteJSON(&out, load(t, testcap.Public(name))); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Streams []media.StreamInfo `json:"streams"`
			}
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			got := map[string]media.StreamInfo{}
			for _, s := range doc.Streams {
				got[s.SSRC+"@"+s.Src+">"+s.Dst] = s
			}
			if len(tr.RTP.Default.Streams) == 0 {
				t.Fatal("no tshark streams to compare")
			}
			for _, w := range tr.RTP.Default.Streams {
				k := w.SSRC + "@" + w.Src + ">" + w.Dst
				s, ok := got[k]
				if !ok {
					t.Errorf("%s missing", k)
					continue
				}
				if int64(s.Packets) != w.Packets || s.Lost != w.Lost {
					t.Errorf("%s: packets/lost %d/%d, tshark %d/%d", k, s.Packets, s.Lost, w.Packets, w.Lost)
				}
				switch {
				case w.MinJitterMs < 0:
					if s.JitterMaxMs != nil && *s.JitterMaxMs != 0 {
						t.Errorf("%s: jitter where tshark measured none", k)
					}
				case s.JitterMaxMs == nil || math.Abs(*s.JitterMaxMs-w.MaxJitterMs) > math.Max(0.05, 0.02*w.MaxJitterMs):
					t.Errorf("%s: jitter_max_ms %v, tshark %v", k, s.JitterMaxMs, w.MaxJitterMs)
				}
				if s.SchemaVersion != media.SchemaVersion || s.QualityIntervals == nil {
					t.Errorf("%s: not the rtp_stats stream shape: schema %d, intervals %v", k, s.SchemaVersion, s.QualityIntervals)
				}
			}
		})
	}
}

// TestRenderFindingsIdentifiersAndBidi: in the rendered findings (the
// get_capture_report markdown and text, the FINDINGS block of --report) a
// Call-ID is an identifier, shown whole with invisible characters escaped
// visibly (textsafe.ID: U+202E as \u202e, never dropped), and a
// note is sender text, printed without bidi controls or fence code points.
func TestRenderFindingsIdentifiersAndBidi(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rep := analysis.Report{
		SchemaVersion: 1, DialogsExamined: 1, FramesRead: 10, SourceExhausted: true, Complete: true,
		Findings: []analysis.Finding{{
			Kind: "final_failure_declined", Severity: "low", Occurrences: 1, Unit: "dialogs", Summary: "s",
			Evidence: []analysis.Evidence{{CallID: "busy-\u202ebidi@evil", At: &at, Note: "Busy \u202eHere \u27e7now\u27e6"}},
		}},
	}
	for _, tc := range []struct {
		name        string
		f           FindingsFormat
		id, note    string
		notContains string
	}{
		{"markdown", FindingsMarkdown, "`busy-\\u202ebidi@evil`", "Busy Here \\]now\\[", "\u202e"},
		{"text", FindingsText, "busy-\\u202ebidi@evil", "Busy Here ]now[", "\u202e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := RenderFindings(rep, "cap", tc.f)
			if !strings.Contains(doc, tc.id) || !strings.Contains(doc, tc.note) || strings.ContainsAny(doc, "\u202e\u27e6\u27e7") {
				t.Errorf("want Call-ID %q and note %q, no bidi or fence code point:\n%s", tc.id, tc.note, doc)
			}
		})
	}
}

// TestRenderFindingsQuotedMarksOnlyReasonPhrases: the quote reaches the
// notes the sender wrote whole (a final failure's reason phrase), after the
// note is one clean line and escaped, and no other note or sipnab's words.
func TestRenderFindingsQuotedMarksOnlyReasonPhrases(t *testing.T) {
	rep := analysis.Report{
		SchemaVersion: 1, DialogsExamined: 2, FramesRead: 10, SourceExhausted: true, Complete: true,
		Findings: []analysis.Finding{
			{Kind: "final_failure_declined", Severity: "low", Occurrences: 1, Unit: "dialogs", Summary: "declined",
				Evidence: []analysis.Evidence{{CallID: "a@x", Note: "Busy \u202eHere\x1b[2J *now*"}}},
			{Kind: "retransmissions", Severity: "medium", Occurrences: 1, Unit: "requests", Summary: "retransmitted",
				Evidence: []analysis.Evidence{{CallID: "b@x", Note: "OPTIONS"}}},
		},
	}
	quote := func(s string) string { return "<<" + s + ">>" }
	for _, tc := range []struct {
		f          FindingsFormat
		want, lack string
	}{
		{FindingsText, "<<Busy Here *now*>>", "<<OPTIONS>>"},
		{FindingsMarkdown, `<<Busy Here \*now\*>>`, "<<OPTIONS>>"},
	} {
		doc := RenderFindingsQuoted(rep, "cap", tc.f, quote)
		if !strings.Contains(doc, tc.want) || strings.Contains(doc, tc.lack) || !strings.Contains(doc, "OPTIONS") {
			t.Errorf("format %v: want %q quoted and the method note not:\n%s", tc.f, tc.want, doc)
		}
		if plain := RenderFindings(rep, "cap", tc.f); strings.Contains(plain, "<<") {
			t.Errorf("format %v: RenderFindings quotes:\n%s", tc.f, plain)
		}
	}
}
