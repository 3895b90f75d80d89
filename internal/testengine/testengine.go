// Package testengine loads captures into the engine for tests: the one
// capture loader the bundle and end-to-end tests share.
package testengine

import (
	"context"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
)

// Load reads the files into a new engine with cfg and waits until the load
// ends; a refused file fails the test.
func Load(tb testing.TB, cfg engine.Config, paths ...string) *engine.Capture {
	tb.Helper()
	c := engine.New(cfg, nil)
	if err := c.LoadFiles(context.Background(), paths); err != nil {
		tb.Fatalf("loading %v: %v", paths, err)
	}
	c.Wait()
	return c
}

// Public loads one public capture (testdata/captures/public) by file name.
func Public(tb testing.TB, cfg engine.Config, name string) *engine.Capture {
	tb.Helper()
	return Load(tb, cfg, testcap.Public(name))
}
