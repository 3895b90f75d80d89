package provision

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

// TestCaptureNamesTheBundleWithoutAnEngine: a host that provides no engine
// stops the bundle's provisioning with its id; one that does hands it over.
func TestCaptureNamesTheBundleWithoutAnEngine(t *testing.T) {
	if _, err := Capture(sdk.NewEnv(sdk.EnvOptions{}), "media"); err == nil || !strings.HasPrefix(err.Error(), "media bundle needs the capture engine: ") {
		t.Errorf("no engine: %v", err)
	}
	c := engine.New(engine.Config{}, nil)
	defer c.Close()
	if got, err := Capture(sdk.NewEnv(sdk.EnvOptions{Services: []any{c}}), "media"); err != nil || got != c {
		t.Errorf("with the engine: %p %v, want %p", got, err, c)
	}
}

// TestThresholdsAreTheRunsOrFiltersDefaults: the host's thresholds when it
// provides them (--pdd-threshold 5), filter's defaults (11 s) otherwise.
func TestThresholdsAreTheRunsOrFiltersDefaults(t *testing.T) {
	if got := Thresholds(sdk.NewEnv(sdk.EnvOptions{})); got != filter.DefaultThresholds() {
		t.Errorf("no service: %+v", got)
	}
	run := filter.DefaultThresholds()
	run.PDDSeconds = 5
	if got := Thresholds(sdk.NewEnv(sdk.EnvOptions{Services: []any{run}})); got.PDDSeconds != 5 {
		t.Errorf("with the run's: %+v", got)
	}
}
