package tls

import (
	"context"

	"github.com/sipnab/sipnab/sdk"
)

var _ = addTool(func(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:        "stop_tls_capture",
		Title:       "Stop the TLS uprobe capture",
		Description: "Detach every uprobe start_tls_capture attached; answers the capture's final counts. The messages read stay in the capture.",
		Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.Idempotent, World: sdk.ClosedWorld},
		Examples:    []sdk.Example{{Title: "Detach the probes"}},
	}, func(ctx context.Context, c *sdk.Call, in struct{}) (Capture, error) {
		return stop(d)
	})
})

// stop detaches the running capture (nothing to do when none runs: the
// last capture's account, or an empty one, is the answer).
func stop(d *deps) (Capture, error) {
	d.mu.Lock()
	s := d.cur
	d.mu.Unlock()
	if s == nil {
		return Capture{Targets: []Target{}, Summary: "no TLS capture was started"}, nil
	}
	_ = s.stop() // its error is the answer's error
	return s.state(), nil
}
