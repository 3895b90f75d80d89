// Package testengine loads captures into the engine for tests: the one
// capture loader the bundle and end-to-end tests share.
package testengine

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
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

// SIP builds a UDP packet carrying one SIP message written with "\n" line
// ends (sent as CRLF), for tests that route crafted messages through
// Capture.HandlePacket.
func SIP(ts time.Time, src, dst, msg string) *packet.Packet {
	return &packet.Packet{
		TS: ts, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Transport: packet.TransportUDP, Origin: packet.OriginWire,
		Payload: []byte(strings.ReplaceAll(msg, "\n", "\r\n")),
	}
}
