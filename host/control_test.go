package host

import (
	"context"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/sipnab/sipnab/sdk"
)

type idBundle string

func (b idBundle) Info() sdk.Info { return sdk.Info{ID: string(b)} }
func (idBundle) Provision(context.Context, sdk.Env) ([]sdk.Tool, error) {
	return nil, nil
}

// TestBuildInfoIsWhatVersionPrints: the bundles' build facts come from the
// function --version prints, the bundles in the order given.
func TestBuildInfoIsWhatVersionPrints(t *testing.T) {
	bi := buildInfoOf([]sdk.Bundle{idBundle("core"), idBundle("server")})
	if bi.VersionLine != versionLine() || bi.Version != Version || !slices.Equal(bi.Bundles, []string{"core", "server"}) ||
		!slices.Equal(bi.Features, []string{"mcp", "mcp-http", "hep", "hep-send"}) {
		t.Errorf("got %+v", bi)
	}
}

// TestStopperCancelsOnlyAfterTheAnswer: nothing is cancelled by messages
// written before the request; the first message written after it (the
// stopping tool's answer) cancels the serve context; a second request
// reports a stop already under way.
func TestStopperCancelsOnlyAfterTheAnswer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &stopper{log: hclog.NewNullLogger(), cancel: cancel}
	s.answered()
	if ctx.Err() != nil {
		t.Fatal("cancelled before any request")
	}
	if !s.Shutdown("test") {
		t.Fatal("first request refused")
	}
	if ctx.Err() != nil {
		t.Fatal("cancelled before the answer was written")
	}
	s.answered()
	if ctx.Err() == nil {
		t.Fatal("not cancelled after the answer")
	}
	if s.Shutdown("again") {
		t.Error("a second request was accepted")
	}
	var none *stopper
	none.answered() // a host without a stopper (tests) writes answers too
}
