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
// written before the request, nor after it by another call's answer or a
// notification; the stopping call's own answer (its id from the call's
// context, number or string) cancels the serve context; a second request
// reports a stop already under way; an HTTP request answered whole (nil)
// cancels once the stop is requested.
func TestStopperCancelsOnlyAfterTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, id, other, own string
	}{
		{"number id", "7", `{"jsonrpc":"2.0","id":6,"result":{}}`, `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{"string id", "stop-1", `{"jsonrpc":"2.0","id":"stop-2","result":{}}`, `{"jsonrpc":"2.0","id":"stop-1","result":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &stopper{log: hclog.NewNullLogger(), cancel: cancel}
			s.answered([]byte(tc.own))
			if ctx.Err() != nil {
				t.Fatal("cancelled before any request")
			}
			if !s.Shutdown(context.WithValue(context.Background(), callIDKey{}, tc.id), "test") {
				t.Fatal("first request refused")
			}
			s.answered([]byte(tc.other))
			s.answered([]byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}`))
			if ctx.Err() != nil {
				t.Fatal("cancelled by another message")
			}
			s.answered([]byte(tc.own))
			if ctx.Err() == nil {
				t.Fatal("not cancelled after the answer")
			}
			if s.Shutdown(context.Background(), "again") {
				t.Error("a second request was accepted")
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &stopper{log: hclog.NewNullLogger(), cancel: cancel}
	s.Shutdown(context.Background(), "http")
	s.answered(nil)
	if ctx.Err() == nil {
		t.Error("an HTTP request answered whole did not cancel")
	}
	var none *stopper
	none.answered(nil) // a host without a stopper (tests) writes answers too
}
