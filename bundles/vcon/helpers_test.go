package vcon

import (
	"context"
	"testing"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// loaded reads a public capture whole and provisions the bundle over it.
func loaded(t *testing.T, name string) (*engine.Capture, map[string]sdk.Tool) {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	return c, tooltest.Provision(t, Bundle{}, sdk.EnvOptions{Services: []any{c}})
}

var (
	call    = tooltest.Call
	callErr = tooltest.CallErr
)
