package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/correlate"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

func TestThresholdsAndCorrelationLayering(t *testing.T) {
	dir := t.TempDir()
	toml := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(toml, []byte("[analysis]\npdd_threshold = 4\nloss_threshold = 2.5\nretransmit_threshold = 7\n"+
		"[correlation]\nwindow = 0.5\nx_call_id_headers = [\"X-Orig-Call-ID\", \"X-Call-ID\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(yaml, []byte("analysis:\n  jitter_threshold: 30\n  short_call_threshold: 1.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		th   filter.Thresholds
		corr correlate.Config
	}{
		{"defaults", nil, nil, filter.DefaultThresholds(),
			correlate.Config{Window: 2 * time.Second, XCallIDHeaders: []string{"X-Call-ID"}}},
		{"toml file", []string{"--config", toml}, nil,
			filter.Thresholds{PDDSeconds: 4, ShortCallSeconds: 3, LossPct: 2.5, JitterMs: 50, Retransmits: 7},
			correlate.Config{Window: 500 * time.Millisecond, XCallIDHeaders: []string{"X-Orig-Call-ID", "X-Call-ID"}}},
		{"yaml file", []string{"--config", yaml}, nil,
			filter.Thresholds{PDDSeconds: 11, ShortCallSeconds: 1.5, LossPct: 5, JitterMs: 30, Retransmits: 3},
			correlate.Config{Window: 2 * time.Second, XCallIDHeaders: []string{"X-Call-ID"}}},
		{"environment over file", []string{"--config", toml}, []string{"SIPNAB_PDD_THRESHOLD=6.5", "SIPNAB_LEG_CORRELATION_WINDOW=1"},
			filter.Thresholds{PDDSeconds: 6.5, ShortCallSeconds: 3, LossPct: 2.5, JitterMs: 50, Retransmits: 7},
			correlate.Config{Window: time.Second, XCallIDHeaders: []string{"X-Orig-Call-ID", "X-Call-ID"}}},
		{"flags over environment", []string{"--config", toml, "--pdd-threshold", "0.25", "--x-call-id-header", "X-Leg"},
			[]string{"SIPNAB_PDD_THRESHOLD=6.5"},
			filter.Thresholds{PDDSeconds: 0.25, ShortCallSeconds: 3, LossPct: 2.5, JitterMs: 50, Retransmits: 7},
			correlate.Config{Window: 500 * time.Millisecond, XCallIDHeaders: []string{"X-Leg"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(tc.args, tc.env, &strings.Builder{})
			if err != nil {
				t.Fatal(err)
			}
			if err := checkAnalysis(cfg); err != nil {
				t.Fatal(err)
			}
			if got := thresholdsOf(cfg); got != tc.th {
				t.Errorf("thresholds: got %+v, want %+v", got, tc.th)
			}
			got := correlationOf(cfg)
			if got.Window != tc.corr.Window || strings.Join(got.XCallIDHeaders, ",") != strings.Join(tc.corr.XCallIDHeaders, ",") {
				t.Errorf("correlation: got %+v, want %+v", got, tc.corr)
			}
		})
	}
}

func TestThresholdRefusalsAtStartup(t *testing.T) {
	dir := t.TempDir()
	badType := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badType, []byte("[analysis]\npdd_threshold = \"eleven\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fractional := filepath.Join(dir, "frac.toml")
	if err := os.WriteFile(fractional, []byte("[analysis]\nretransmit_threshold = 2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.toml")
	if err := os.WriteFile(unknown, []byte("[analysis]\npdd = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"negative pdd", []string{"--pdd-threshold", "-1"}, nil, "pdd seconds threshold -1"},
		{"NaN loss", []string{"--loss-threshold", "NaN"}, nil, "loss percent threshold NaN"},
		{"negative retransmits", []string{"--retransmit-threshold", "-2"}, nil, "retransmits threshold -2"},
		{"infinite jitter from the environment", nil, []string{"SIPNAB_JITTER_THRESHOLD=+Inf"}, "jitter milliseconds threshold +Inf"},
		{"not a number", []string{"--pdd-threshold", "soon"}, nil, "invalid value"},
		{"zero window", []string{"--leg-correlation-window", "0"}, nil, "--leg-correlation-window 0"},
		{"bad header", []string{"--x-call-id-header", "X Call"}, nil, "not a header name"},
		{"wrong type in the file", []string{"--config", badType}, nil, "bad.toml:2: key \"analysis.pdd_threshold\": want a number, got \"eleven\" (a string)"},
		{"fraction for an integer", []string{"--config", fractional}, nil, "frac.toml:2: key \"analysis.retransmit_threshold\": want an integer, got 2.5 (a number)"},
		{"unknown key", []string{"--config", unknown}, nil, "unknown.toml:2: unknown key \"analysis.pdd\" (did you mean \"pdd_threshold\"?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr syncBuffer
			code := Run(context.Background(), append([]string{"-N", "--mcp"}, tc.args...), []sdk.Bundle{&testBundle{id: "t"}},
				IO{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &stderr, Env: tc.env})
			if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 mentioning %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// thBundle reports the services a bundle receives.
type thBundle struct {
	th   chan filter.Thresholds
	corr chan correlate.Config
}

func (thBundle) Info() sdk.Info {
	return sdk.Info{ID: "th", Summary: "services", ByteBudget: sdk.Budget{Default: 100000, WithOutputSchemas: 100000}}
}

func (b thBundle) Provision(ctx context.Context, env sdk.Env) ([]sdk.Tool, error) {
	th, err := sdk.Service[filter.Thresholds](env)
	if err != nil {
		return nil, err
	}
	cc, err := sdk.Service[correlate.Config](env)
	if err != nil {
		return nil, err
	}
	b.th <- th
	b.corr <- cc
	return []sdk.Tool{sdk.NewTool(sdk.Descriptor{Name: "th_noop", Description: "nothing",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld}},
		func(ctx context.Context, c *sdk.Call, in emptyIn) (sizeOut, error) { return sizeOut{}, nil })}, nil
}

func TestBundlesReceiveTheRunsSettings(t *testing.T) {
	b := thBundle{th: make(chan filter.Thresholds, 1), corr: make(chan correlate.Config, 1)}
	s := startStdio(t, []string{"-N", "--mcp", "--pdd-threshold", "2", "--jitter-threshold", "20", "--leg-correlation-window", "1.5"}, []sdk.Bundle{b}, nil)
	defer s.close()
	want := filter.Thresholds{PDDSeconds: 2, ShortCallSeconds: 3, LossPct: 5, JitterMs: 20, Retransmits: 3}
	if got := <-b.th; got != want {
		t.Errorf("thresholds: got %+v, want %+v", got, want)
	}
	if got := <-b.corr; got.Window != 1500*time.Millisecond || strings.Join(got.XCallIDHeaders, ",") != "X-Call-ID" {
		t.Errorf("correlation: got %+v", got)
	}
}

func TestReadExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   engine.Status
		want int
	}{
		{"whole", engine.Status{SourceExhausted: true, Complete: true}, exitOK},
		{"stopped on request", engine.Status{StoppedOnRequest: true}, exitOK},
		{"stopped early", engine.Status{SourceStoppedEarly: true}, exitFailure},
		{"stopped early and on request", engine.Status{SourceStoppedEarly: true, StoppedOnRequest: true}, exitFailure},
		{"not read to the end", engine.Status{}, exitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readExit(tc.st); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}
