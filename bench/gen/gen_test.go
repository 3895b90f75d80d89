package gen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/mos"
)

var update = flag.Bool("update", false, "rewrite testdata/*.sha256 golden checksums")

func generate(t *testing.T, cfg Config) ([]byte, *Answers) {
	t.Helper()
	var buf bytes.Buffer
	a, err := Generate(cfg, &buf)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return buf.Bytes(), a
}

func TestDeterministic(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"small seed 1", Small(1)},
		{"small seed 7", Small(7)},
		{"odd mix", Config{Seed: 3, Calls: 27, Duration: 1500 * time.Millisecond, Spacing: 40 * time.Millisecond, Registers: 5}},
		{"registers only", Config{Seed: 4, Registers: 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b1, a1 := generate(t, tc.cfg)
			b2, a2 := generate(t, tc.cfg)
			if !bytes.Equal(b1, b2) {
				t.Fatalf("two runs differ: %d and %d bytes", len(b1), len(b2))
			}
			sum := sha256.Sum256(b1)
			if got, want := a1.Capture.SHA256, hex.EncodeToString(sum[:]); got != want {
				t.Errorf("answers sha256 = %s, want %s (sha256 of the bytes written)", got, want)
			}
			if a1.Capture.SHA256 != a2.Capture.SHA256 {
				t.Errorf("answer checksums differ between runs")
			}
			other := tc.cfg
			other.Seed++
			b3, _ := generate(t, other)
			if bytes.Equal(b1, b3) {
				t.Errorf("seed %d and %d gave the same bytes", tc.cfg.Seed, other.Seed)
			}
		})
	}
}

// TestGoldenChecksum pins the bytes of the small preset: a change to the
// generator that moves them must be deliberate (go test -update).
func TestGoldenChecksum(t *testing.T) {
	_, a := generate(t, Small(1))
	path := filepath.Join("testdata", "small-seed1.sha256")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(a.Capture.SHA256+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden checksum (run go test -update once): %v", err)
	}
	if got := a.Capture.SHA256; got != strings.TrimSpace(string(want)) {
		t.Errorf("small seed 1 sha256 = %s, want %s (if the change is deliberate: go test ./bench/gen -run TestGoldenChecksum -update)", got, strings.TrimSpace(string(want)))
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"small", Small(1), true},
		{"carrier", Carrier(1), true},
		{"memory", Memory(1), true},
		{"negative calls", Config{Calls: -1, Duration: time.Second}, false},
		{"too many calls", Config{Calls: MaxCalls + 1, Duration: time.Second}, false},
		{"short duration", Config{Calls: 1, Duration: time.Millisecond}, false},
		{"long duration", Config{Calls: 1, Duration: 2 * time.Hour}, false},
		{"negative spacing", Config{Calls: 1, Duration: time.Second, Spacing: -1}, false},
		{"nothing", Config{}, false},
		{"registers only", Config{Registers: 1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if _, err := Preset("nope", 1); err == nil {
		t.Errorf("Preset(nope) succeeded, want an error")
	}
}

// TestSmallMix checks the small preset holds every kind of dialog exactly
// once and the answers derived from them.
func TestSmallMix(t *testing.T) {
	_, a := generate(t, Small(1))
	wantKinds := map[Kind]int{
		KindNormal: 7, KindLightLoss: 2, KindJitter: 2, KindBusy: 1, KindUnavailable: 1,
		KindCancelled: 1, KindOneWay: 1, KindSlowPDD: 1, KindLateMedia: 1, KindHeavyLoss: 1,
		KindJitterSpike: 1, KindInCallAtEnd: 1, KindRegisterChallenged: 3, KindRegister: 1,
	}
	for k, want := range wantKinds {
		if got := a.Counts.DialogsByKind[k]; got != want {
			t.Errorf("dialogs of kind %s = %d, want %d", k, got, want)
		}
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"call ids", a.Counts.CallIDs, 24},
		{"streams", len(a.Streams), 33}, // 16 two-way calls + 1 one-way
		{"failed calls", len(a.FailedCalls), 2},
		{"degraded streams", len(a.DegradedStreams), 1},
		{"problem calls", len(a.ProblemCalls), 7},
		{"INVITE messages", a.Counts.MessagesByMethod["INVITE"], 20},
		{"ACK messages", a.Counts.MessagesByMethod["ACK"], 20},
		{"BYE messages", a.Counts.MessagesByMethod["BYE"], 16},
		{"CANCEL messages", a.Counts.MessagesByMethod["CANCEL"], 1},
		{"REGISTER messages", a.Counts.MessagesByMethod["REGISTER"], 7},
		{"401 responses", a.Counts.ResponsesByCode["401"], 3},
		{"200 responses", a.Counts.ResponsesByCode["200"], 17 + 16 + 1 + 4},
		{"ASR", *a.ByMethod["INVITE"].ASR, 85.0},
		{"NER", *a.ByMethod["INVITE"].NER, 95.0},
		{"seizures", a.ByMethod["INVITE"].Seizures, 20},
		{"state InCall", a.Counts.DialogsByState["InCall"], 1},
		{"state Completed", a.Counts.DialogsByState["Completed"], 16},
		{"state Registered", a.Counts.DialogsByState["Registered"], 4},
		{"final (none)", a.Counts.DialogsByFinalStatus["(none)"], 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

// TestAnswersSelfConsistent checks each answer against the others and
// against the generator's intent, on several configurations.
func TestAnswersSelfConsistent(t *testing.T) {
	cfgs := []Config{Small(1), Small(2), {Seed: 9, Calls: 60, Duration: 2 * time.Second, Spacing: 30 * time.Millisecond, Registers: 9}}
	for _, cfg := range cfgs {
		t.Run(cfgName(cfg), func(t *testing.T) {
			_, a := generate(t, cfg)
			checkSelfConsistent(t, a)
		})
	}
}

func cfgName(c Config) string {
	return strings.NewReplacer(" ", "_").Replace(
		"seed" + strconv.FormatUint(c.Seed, 10) + "_calls" + strconv.Itoa(c.Calls) + "_" + c.Duration.String())
}

func checkSelfConsistent(t *testing.T, a *Answers) {
	t.Helper()
	streams := map[StreamKey]*Stream{}
	ssrcs := map[string]bool{}
	for i := range a.Streams {
		s := &a.Streams[i]
		streams[s.StreamKey] = s
		if ssrcs[s.SSRC] {
			t.Errorf("ssrc %s used twice", s.SSRC)
		}
		ssrcs[s.SSRC] = true
		if len(s.SSRC) != 10 || strings.ToLower(s.SSRC) != s.SSRC {
			t.Errorf("ssrc %q: want 0x + 8 lowercase hex digits", s.SSRC)
		}
		if got, want := s.Lost, len(s.LostSeqs); got != want {
			t.Errorf("%s: lost %d, want %d (dropped sequence numbers)", s.StreamKey, got, want)
		}
		if got, want := s.Packets+s.Lost, s.Expected; got != want {
			t.Errorf("%s: packets+lost = %d, want expected %d", s.StreamKey, got, want)
		}
		if got, want := s.Octets, s.Packets*160; got != want {
			t.Errorf("%s: octets %d, want %d", s.StreamKey, got, want)
		}
		if s.Duplicates != 0 || s.OutOfOrder != 0 {
			t.Errorf("%s: %d duplicates, %d out of order; the generator makes none", s.StreamKey, s.Duplicates, s.OutOfOrder)
		}
		if s.JitterMs > s.JitterMaxMs || s.JitterMeanMs > s.JitterMaxMs {
			t.Errorf("%s: jitter %.3f / mean %.3f above max %.3f", s.StreamKey, s.JitterMs, s.JitterMeanMs, s.JitterMaxMs)
		}
		// Each impairment shows exactly in the measurement.
		switch s.Impairment {
		case ImpNone:
			if s.Lost != 0 || s.JitterMaxMs > 0.3 {
				t.Errorf("%s clean: lost %d, max jitter %.3f ms", s.StreamKey, s.Lost, s.JitterMaxMs)
			}
		case ImpLightLoss:
			if s.LossPct <= 0 || s.LossPct > 1.5 || s.JitterMaxMs > 0.3 {
				t.Errorf("%s light loss: loss %.2f %%, max jitter %.3f ms", s.StreamKey, s.LossPct, s.JitterMaxMs)
			}
		case ImpHeavyLoss:
			if s.LossPct < 11.5 || s.LossPct > 18.5 {
				t.Errorf("%s heavy loss: loss %.2f %%, want 12-18 %%", s.StreamKey, s.LossPct)
			}
		case ImpJitter:
			if s.Lost != 0 || s.JitterMaxMs < 2 || s.JitterMaxMs > 15 {
				t.Errorf("%s jitter: lost %d, max jitter %.3f ms, want 2-15", s.StreamKey, s.Lost, s.JitterMaxMs)
			}
		case ImpJitterTail:
			if s.JitterMs <= ProblemJitterMs || s.JitterMaxMs <= ProblemJitterMs || s.JitterMaxMs+AssumedOneWayDelayMs >= 177.3 {
				t.Errorf("%s jitter tail: final %.3f, max %.3f ms; want both > 50 and 100 ms + max < 177.3", s.StreamKey, s.JitterMs, s.JitterMaxMs)
			}
		}
		// The degraded set does not depend on the jitter statistic or the Bpl.
		g113Worst, _ := EModel(s.LossPct, s.JitterMaxMs, AssumedOneWayDelayMs, G711Ie, G711PLCBpl)
		lo, hi := min(s.MOS, s.MOSWorst, s.MOSG113, g113Worst), max(s.MOS, s.MOSWorst, s.MOSG113, g113Worst)
		if s.Degraded != (s.Impairment == ImpHeavyLoss) {
			t.Errorf("%s: degraded %v with impairment %s", s.StreamKey, s.Degraded, s.Impairment)
		}
		if s.Degraded && hi > DegradedMOSBelow-0.4 || !s.Degraded && lo < DegradedMOSBelow+0.3 {
			t.Errorf("%s: MOS %.3f..%.3f too close to the %.1f threshold", s.StreamKey, lo, hi, DegradedMOSBelow)
		}
	}
	var degraded []StreamKey
	for _, s := range a.Streams {
		if s.Degraded {
			degraded = append(degraded, s.StreamKey)
		}
	}
	if !slices.Equal(degraded, a.DegradedStreams) {
		t.Errorf("degraded_streams %v, want %v", a.DegradedStreams, degraded)
	}

	msgs, reqs, resps := 0, 0, 0
	var failed []string
	var problemIDs []string
	for _, d := range a.Dialogs {
		n := 0
		for _, c := range d.Requests {
			n += c
			reqs += c
		}
		for _, c := range d.Responses {
			n += c
			resps += c
		}
		if n != d.Messages {
			t.Errorf("%s: %d messages, want %d (requests + responses)", d.CallID, d.Messages, n)
		}
		msgs += d.Messages
		want := map[Kind]int{KindBusy: 5, KindUnavailable: 4, KindCancelled: 7, KindInCallAtEnd: 5,
			KindRegisterChallenged: 4, KindRegister: 2}[d.Kind]
		if want == 0 {
			want = 7
		}
		if d.Messages != want {
			t.Errorf("%s (%s): %d messages, want %d", d.CallID, d.Kind, d.Messages, want)
		}
		if d.State == "Failed" {
			failed = append(failed, d.CallID)
			if d.FinalStatus != 486 && d.FinalStatus != 503 {
				t.Errorf("%s failed with %d", d.CallID, d.FinalStatus)
			}
		}
		if len(d.Problems) > 0 {
			problemIDs = append(problemIDs, d.CallID)
		}
		wantProblems := map[Kind][]string{
			KindBusy: {ReasonFailed}, KindUnavailable: {ReasonFailed}, KindOneWay: {ReasonOneWay},
			KindHeavyLoss: {ReasonHighLoss}, KindJitterSpike: {ReasonHighJitter},
			KindSlowPDD: {ReasonSlowSetup}, KindLateMedia: {ReasonLateMedia},
		}[d.Kind]
		if !slices.Equal(d.Problems, wantProblems) {
			t.Errorf("%s (%s): problems %v, want %v", d.CallID, d.Kind, d.Problems, wantProblems)
		}
		for _, k := range d.Streams {
			s, ok := streams[k]
			if !ok || s.CallID != d.CallID {
				t.Errorf("%s: stream %s not in streams or not tied back", d.CallID, k)
			}
		}
		if d.Method == "INVITE" {
			if d.PDDMs != nil && d.SetupMs != nil && *d.PDDMs >= *d.SetupMs {
				t.Errorf("%s: pdd %.3f not before setup %.3f", d.CallID, *d.PDDMs, *d.SetupMs)
			}
			if (d.Kind == KindSlowPDD) != (d.PDDMs != nil && *d.PDDMs > ProblemPDDMs) {
				t.Errorf("%s (%s): pdd %v", d.CallID, d.Kind, d.PDDMs)
			}
			if d.FinalStatus == 200 && d.SetupMs == nil {
				t.Errorf("%s answered without setup_ms", d.CallID)
			}
		} else if d.FinalStatus != 0 || d.PDDMs != nil || d.TryingMs != nil {
			t.Errorf("%s: REGISTER dialog carries INVITE timings or a final status", d.CallID)
		}
	}
	if msgs != a.Capture.SIPMessages || reqs != a.Counts.SIPRequests || resps != a.Counts.SIPResponses {
		t.Errorf("messages %d/%d/%d, want %d/%d/%d", msgs, reqs, resps, a.Capture.SIPMessages, a.Counts.SIPRequests, a.Counts.SIPResponses)
	}
	if got, want := a.Capture.Frames, a.Capture.SIPMessages+a.Capture.RTPPackets; got != want {
		t.Errorf("frames %d, want SIP + RTP = %d", got, want)
	}
	slices.Sort(failed)
	if !slices.Equal(failed, a.FailedCalls) {
		t.Errorf("failed_calls %v, want %v", a.FailedCalls, failed)
	}
	slices.Sort(problemIDs)
	var got []string
	for _, p := range a.ProblemCalls {
		got = append(got, p.CallID)
	}
	if !slices.Equal(got, problemIDs) {
		t.Errorf("problem_calls %v, want %v", got, problemIDs)
	}
	inv := a.ByMethod["INVITE"]
	if inv.Dialogs > 0 {
		if got, want := *inv.ASR, math.Round(10000*float64(inv.Answered)/float64(inv.Seizures))/100; got != want {
			t.Errorf("ASR %.2f, want %.2f", got, want)
		}
	}
}

func TestEModel(t *testing.T) {
	// MOS(R) reference points of ITU-T G.107 (Figure B.1 / Table B.1) and
	// G.109's category boundaries.
	ref := []struct {
		r, mos float64
	}{
		{93.2, 4.41}, {90, 4.34}, {80, 4.03}, {70, 3.60}, {60, 3.10}, {50, 2.58}, {100, 4.5}, {0, 1}, {-5, 1}, {120, 4.5},
	}
	for _, tc := range ref {
		t.Run("R="+strconv.FormatFloat(tc.r, 'g', -1, 64), func(t *testing.T) {
			// G.109 prints 4.03 for R = 80 where the formula gives 4.024.
			if got := MOSFromR(tc.r); math.Abs(got-tc.mos) > 0.01 {
				t.Errorf("MOSFromR(%v) = %.4f, want %.2f", tc.r, got, tc.mos)
			}
		})
	}
	tests := []struct {
		name                         string
		loss, jitter, delay, ie, bpl float64
		wantR                        float64
	}{
		{"default R0, no delay", 0, 0, 0, 0, SpecBpl, 93.2},
		{"100 ms path, G.711", 0, 0, 100, 0, SpecBpl, 93.2 - 2.4},
		{"1 % loss, Bpl 10", 1, 0, 100, 0, SpecBpl, 93.2 - 2.4 - 95.0/11},
		{"5 % loss, Bpl 10", 5, 0, 100, 0, SpecBpl, 93.2 - 2.4 - 95.0*5/15},
		{"5 % loss, Bpl 25.1", 5, 0, 100, 0, G711PLCBpl, 93.2 - 2.4 - 95.0*5/30.1},
		{"G.729 Ie 10, Bpl 19", 2, 0, 100, 10, 19, 93.2 - 2.4 - 10 - 85.0*2/21},
		{"delay above 177.3", 0, 100, 100, 0, SpecBpl, 93.2 - (0.024*200 + 0.11*22.7)},
		{"delay capped at 3000", 0, 5000, 0, 0, SpecBpl, 93.2 - (0.024*3000 + 0.11*(3000-177.3))},
		// 250 ms: the square root knee gave R 19 (MOS 1.2); G.107 gives 79.
		{"250 ms", 0, 150, 100, 0, SpecBpl, 93.2 - (0.024*250 + 0.11*72.7)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mos, r := EModel(tc.loss, tc.jitter, tc.delay, tc.ie, tc.bpl)
			if math.Abs(r-tc.wantR) > 1e-9 {
				t.Errorf("R = %.6f, want %.6f", r, tc.wantR)
			}
			if want := MOSFromR(tc.wantR); math.Abs(mos-want) > 1e-9 {
				t.Errorf("MOS = %.6f, want %.6f", mos, want)
			}
		})
	}
	// The generator's answers and sipnab score alike: EModel equals
	// core/mos at every delay 0-400 ms (both sides of the 177.3 ms knee)
	// and a spread of losses, for G.711 with concealment and the
	// placeholder codec.
	for _, imp := range []mos.Impairment{mos.ImpairmentFor("PCMU", nil), mos.ImpairmentFor("G722", nil)} {
		for d := 0.0; d <= 400; d += 0.5 {
			for _, loss := range []float64{0, 0.5, 3, 20} {
				want := mos.Estimate(imp, loss, d, AssumedOneWayDelayMs)
				gotMOS, gotR := EModel(loss, d, AssumedOneWayDelayMs, imp.Ie, imp.Bpl)
				if math.Abs(gotR-want.R) > 1e-9 || math.Abs(gotMOS-want.MOS) > 1e-9 {
					t.Fatalf("Ie %v Bpl %v jitter %v loss %v: got R %.6f MOS %.6f, core/mos R %.6f MOS %.6f", imp.Ie, imp.Bpl, d, loss, gotR, gotMOS, want.R, want.MOS)
				}
			}
		}
	}
	// The placeholder check from engine.md §9: Ie 5 at 10 ms jitter, no loss.
	if mos, _ := EModel(0, 10, AssumedOneWayDelayMs, 5, SpecBpl); math.Abs(mos-4.216) > 0.0005 {
		t.Errorf("placeholder MOS = %.4f, want 4.216", mos)
	}
}
