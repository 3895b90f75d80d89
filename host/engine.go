package host

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

// engineHandle is the running capture engine as the host holds it. Its
// services are handed to every bundle (sdk.Service).
type engineHandle struct {
	svc []any
}

func (e *engineHandle) services() serviceList {
	if e == nil {
		return nil
	}
	return e.svc
}

// startEngine starts the capture engine on the configured inputs.
func startEngine(ctx context.Context, cfg *Config, log hclog.Logger) (*engineHandle, error) {
	inputs := cfg.Strings("input")
	if len(inputs) == 1 && inputs[0] == "" {
		inputs = nil
	}
	if len(inputs) > 0 {
		return nil, usagef("reading captures needs the analysis engine (core/engine), which this build does not have yet")
	}
	return &engineHandle{}, nil
}

// runBatch is the batch CLI: -N -I FILE --json|--report.
func runBatch(ctx context.Context, cfg *Config, sio IO, log hclog.Logger) int {
	if !cfg.Bool("json") && !cfg.Bool("report") {
		log.Error("nothing to do: give --mcp, --json or --report")
		return exitUsage
	}
	log.Error("the batch analysis needs the analysis engine (core/engine, core/report), which this build does not have yet")
	return exitFailure
}
