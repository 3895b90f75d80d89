package server

import (
	"context"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

// tools provisions the bundle over capture with the given services and
// opt-in flags, and returns its tools by name.
func tools(t *testing.T, capture *engine.Capture, opts map[string]bool, root sdk.FileRoot, services ...any) map[string]sdk.Tool {
	t.Helper()
	return tooltest.Provision(t, Bundle{}, sdk.EnvOptions{Services: append([]any{capture}, services...), Options: opts, FileRoot: root})
}

// call and callErr invoke a tool through the sdk's public path.
var (
	call    = tooltest.Call
	callErr = tooltest.CallErr
)

// noWait replaces the sample window's sleep for the test: during runs
// inside the window (between the tool's two readings) and the window the
// tool asked for is recorded.
func noWait(t *testing.T, during func()) *[]int {
	t.Helper()
	asked := &[]int{}
	old := wait
	wait = func(ctx context.Context, d time.Duration) error {
		*asked = append(*asked, int(d.Seconds()))
		if during != nil {
			during()
		}
		return nil
	}
	t.Cleanup(func() { wait = old })
	return asked
}
