// Package provision holds what every bundle's Provision asks the host for
// the same way (docs/adding-a-bundle.md, "Env"): the capture engine, and
// the run's analysis thresholds with filter's defaults when the host gives
// none (a bundle unit test).
package provision

import (
	"fmt"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/filter"
	"github.com/sipnab/sipnab/sdk"
)

// Capture fetches the host's capture engine for the bundle id; without one
// provisioning stops with "<id> bundle needs the capture engine".
func Capture(env sdk.Env, id string) (*engine.Capture, error) {
	c, err := sdk.Service[*engine.Capture](env)
	if err != nil {
		return nil, fmt.Errorf("%s bundle needs the capture engine: %w", id, err)
	}
	return c, nil
}

// Thresholds are the run's analysis thresholds (--pdd-threshold and its
// siblings: the host's filter.Thresholds service), filter's defaults when
// the host provides none.
func Thresholds(env sdk.Env) filter.Thresholds {
	if th, err := sdk.Service[filter.Thresholds](env); err == nil {
		return th
	}
	return filter.DefaultThresholds()
}
