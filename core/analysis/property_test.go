package analysis_test

// The evidence property, over every readable public capture: no verdict without
// evidence, and no problem from a rule whose inputs were not measured. It reads
// the diagnosis and the capture report as their JSON (what triage_call,
// get_dialog_report and get_capture_report serve), and checks each clause
// against the stores themselves, not against what the clause says of itself.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/internal/testcap"
)

type propClause struct {
	Rule      string             `json:"rule"`
	Values    map[string]float64 `json:"values"`
	Threshold map[string]float64 `json:"threshold"`
	Observed  map[string]string  `json:"observed"`
	Messages  []int              `json:"messages"`
	Frames    []string           `json:"frames"`
}

type propDiag struct {
	Verdict   string                     `json:"verdict"`
	Evidence  *[]propClause              `json:"evidence"`
	Signaling map[string]json.RawMessage `json:"signaling_diagnosis"`
	Media     map[string]json.RawMessage `json:"media"`
}

// detections maps a fired detection (a field of the diagnosis that is not
// null, false, [] or absent) to the rule its clause must name, and to the
// half of the verdict it makes a problem.
var signalingDetections = map[string]string{
	"final_failure": "final_failure", "auth_loop": "auth_loop", "retransmissions": "retransmissions",
	"ack_missing": "ack_missing", "abandoned": "abandoned_", "post_dial_delay": "post_dial_delay",
	"registration_failure": "registration_", "slow_setup": "post_dial_delay",
}

var mediaDetections = map[string]string{
	"one_way_audio": "one_way_audio", "no_media": "no_media", "nat_mismatch": "nat_mismatch",
	"private_media_address": "private_media_address", "codec_asymmetry": "codec_asymmetry",
	"ptime_asymmetry": "ptime_asymmetry", "payload_asymmetry": "payload_asymmetry",
	"duration_asymmetry": "duration_asymmetry", "late_media_ms": "late_media",
	"high_loss": "high_loss", "high_jitter": "high_jitter",
}

// fired reports whether a JSON value says a detection fired.
func fired(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case "", "null", "false", "[]", "{}", "0":
		return false
	}
	return true
}

func hasClause(cs []propClause, prefix string) *propClause {
	for i := range cs {
		if cs[i].Rule == prefix || (strings.HasSuffix(prefix, "_") && strings.HasPrefix(cs[i].Rule, prefix)) {
			return &cs[i]
		}
	}
	return nil
}

func hints(m map[string]json.RawMessage) int {
	var h []string
	_ = json.Unmarshal(m["hints"], &h)
	return len(h)
}

// TestPropertyNoVerdictWithoutEvidence: on every readable public capture,
// every dialog's verdict other than none carries clauses; every fired
// detection has the clause of its rule, with a rule id and at least one
// measured value or frame, and a hint in its half; every message and frame
// a clause names is a retained message of the dialog whose pointer it is;
// and no clause rests on inputs the capture did not measure (no_media on a
// capture without RTP, loss or jitter of a stream that has no packets or
// no jitter, a PDD without its 18x, one-way audio or an asymmetry without
// the streams). Every capture finding names its rule and carries evidence.
func TestPropertyNoVerdictWithoutEvidence(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	judged := 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			st := media.NewStore(media.Config{})
			ds := dialog.New(dialog.Config{})
			if _, err := mediatest.Feed(t, testcap.Public(name), st, ds); err != nil {
				if strings.Contains(err.Error(), "unsupported capture format") {
					t.Skipf("%s: %v", name, err)
				}
				t.Fatalf("reading %s: %v", name, err)
			}
			opts := analysis.Options{CaptureEnd: analysis.CaptureEnd(ds, st)}
			captureRTP := st.Stats().RTPPackets
			facts := analysis.FactsFromStore(ds)
			for _, f := range facts {
				det, _ := ds.Get(f.CallID)
				b, err := json.Marshal(analysis.Diagnose(f, st, opts))
				if err != nil {
					t.Fatal(err)
				}
				var d propDiag
				if err := json.Unmarshal(b, &d); err != nil {
					t.Fatal(err)
				}
				judged++
				for _, problem := range checkDiagnosis(&d, &det, st.StreamsFor(f.CallID), captureRTP) {
					t.Errorf("%s: %s", f.CallID, problem)
				}
			}
			rep := analysis.CaptureReport(facts, st, analysis.CaptureFacts{SourceExhausted: true}, analysis.Options{})
			b, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			for _, problem := range checkReport(b) {
				t.Errorf("capture report: %s", problem)
			}
		})
	}
	if judged == 0 {
		t.Fatal("no dialog judged: the public captures are missing")
	}
}

func checkDiagnosis(d *propDiag, det *dialog.Detail, streams []media.StreamInfo, captureRTP uint64) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if d.Evidence == nil {
		if d.Verdict != "none" {
			bad("verdict %s carries no evidence", d.Verdict)
		}
		d.Evidence = &[]propClause{}
	}
	cs := *d.Evidence
	if d.Verdict != "none" && len(cs) == 0 {
		bad("verdict %s with no clause", d.Verdict)
	}
	for half, table := range map[string]map[string]string{"signaling": signalingDetections, "media": mediaDetections} {
		m := d.Signaling
		if half == "media" {
			m = d.Media
		}
		any := false
		for field, rule := range table {
			if !fired(m[field]) {
				continue
			}
			any = true
			if field == "one_way_audio" && !hasAudio(streams) {
				bad("one_way_audio fired on a dialog whose streams are all video or fax: its input was not measured")
			}
			if field == "no_media" && captureRTP == 0 {
				bad("no_media fired on a capture that holds no RTP at all: its input was not measured")
			}
			if hasClause(cs, rule) == nil {
				bad("%s fired (%s) with no %s clause", field, m[field], rule)
			}
		}
		if any && hints(m) == 0 {
			bad("a %s problem with no hint", half)
		}
	}
	msgs := det.Messages
	for _, c := range cs {
		if c.Rule == "" {
			bad("a clause without a rule: %+v", c)
		}
		if len(c.Values) == 0 && len(c.Frames) == 0 {
			bad("%s: no measured value and no frame", c.Rule)
		}
		for _, i := range c.Messages {
			if i < 0 || i >= len(msgs) {
				bad("%s: message %d not retained (%d messages)", c.Rule, i, len(msgs))
			}
		}
		// frames are the pointers of the named messages, or of the
		// dialog's streams' first packets
		own := map[string]bool{}
		for _, i := range c.Messages {
			if i >= 0 && i < len(msgs) && !msgs[i].Frame.IsZero() {
				own[msgs[i].Frame.String()] = true
			}
		}
		for i := range streams {
			own[streams[i].Frame] = true
		}
		for _, fr := range c.Frames {
			if !own[fr] {
				bad("%s: frame %s is neither a named message's nor a stream's", c.Rule, fr)
			}
		}
		out = append(out, measuredInputs(&c, det, streams, captureRTP)...)
	}
	return out
}

// measuredInputs checks, against the stores, that a clause's rule had its
// inputs measured.
func measuredInputs(c *propClause, det *dialog.Detail, streams []media.StreamInfo, captureRTP uint64) []string {
	var out []string
	bad := func(format string, a ...any) {
		out = append(out, fmt.Sprintf("%s: ", c.Rule)+fmt.Sprintf(format, a...))
	}
	stream := func(ssrc string) *media.StreamInfo {
		for i := range streams {
			if streams[i].SSRC == ssrc {
				return &streams[i]
			}
		}
		return nil
	}
	msg := func(i int) (code int, method string) {
		if i < 0 || i >= len(det.Messages) || det.Messages[i].Msg == nil {
			return 0, ""
		}
		m := det.Messages[i].Msg
		return m.StatusCode, m.Method
	}
	switch c.Rule {
	case "no_media":
		if captureRTP == 0 {
			bad("the capture holds no RTP at all: the capture point could not see this call's media")
		}
		if len(streams) > 0 {
			bad("the dialog has %d streams", len(streams))
		}
	case "high_loss", "high_jitter":
		s := stream(c.Observed["ssrc"])
		switch {
		case s == nil:
			bad("stream %q is not the dialog's", c.Observed["ssrc"])
		case s.Packets == 0:
			bad("stream %s has no packets", s.SSRC)
		case c.Rule == "high_jitter" && (s.JitterMs == nil || s.Packets < 2):
			bad("stream %s has no jitter measured", s.SSRC)
		case c.Rule == "high_loss" && s.Expected <= 0:
			bad("stream %s expected no packets", s.SSRC)
		}
	case "one_way_audio", "codec_asymmetry", "payload_asymmetry", "ptime_asymmetry", "duration_asymmetry", "late_media":
		if len(streams) == 0 {
			bad("the dialog has no RTP stream")
		}
		if c.Rule == "one_way_audio" {
			audio := 0
			for i := range streams {
				if streams[i].Kind != "video" && streams[i].Kind != "fax" {
					audio++
				}
			}
			if audio == 0 {
				bad("no stream that can carry audio (%d video/fax streams only)", len(streams))
			}
		}
		if c.Rule == "ptime_asymmetry" {
			n := 0
			for i := range streams {
				if streams[i].PtimeMs != nil {
					n++
				}
			}
			if n < 2 {
				bad("%d stream(s) with a measured ptime", n)
			}
		}
	case "post_dial_delay":
		ringing := false
		for _, i := range c.Messages {
			if code, _ := msg(i); code >= 180 && code < 190 {
				ringing = true
			}
		}
		if !ringing {
			bad("no 18x among messages %v", c.Messages)
		}
	case "final_failure", "registration_failure":
		if code := c.Values["code"]; code < 400 && c.Rule == "final_failure" {
			bad("code %v is not a failure", code)
		}
	case "ack_missing":
		ok := false
		for _, i := range c.Messages {
			if code, _ := msg(i); code >= 200 && code < 300 {
				ok = true
			}
		}
		if !ok {
			bad("no 2xx among messages %v", c.Messages)
		}
	case "retransmissions":
		for _, i := range c.Messages {
			if code, m := msg(i); code != 0 || m == "" {
				bad("message %d is not a request", i)
			}
		}
	}
	return out
}

// checkReport: every finding names its rule, carries rows (or counts
// them omitted), and every row carries measured counts or frames.
func checkReport(b []byte) []string {
	var rep struct {
		Findings []struct {
			Kind        string `json:"kind"`
			Rule        string `json:"rule"`
			Severity    string `json:"severity"`
			Occurrences int64  `json:"occurrences"`
			Evidence    []struct {
				Counts    map[string]int64 `json:"counts"`
				Frames    []string         `json:"frames"`
				Endpoints []string         `json:"endpoints"`
			} `json:"evidence"`
			EvidenceOmitted int64 `json:"evidence_omitted"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, f := range rep.Findings {
		if f.Rule == "" {
			out = append(out, fmt.Sprintf("%s: no rule", f.Kind))
		}
		if f.Occurrences > 0 && len(f.Evidence) == 0 && f.EvidenceOmitted == 0 {
			out = append(out, fmt.Sprintf("%s: %d occurrences and no evidence row", f.Kind, f.Occurrences))
		}
		for i, e := range f.Evidence {
			if len(e.Counts) == 0 && len(e.Frames) == 0 {
				out = append(out, fmt.Sprintf("%s: row %d measures nothing (counts and frames empty)", f.Kind, i))
			}
		}
	}
	return out
}

func hasAudio(streams []media.StreamInfo) bool {
	for i := range streams {
		if streams[i].Kind != "video" && streams[i].Kind != "fax" {
			return true
		}
	}
	return false
}
