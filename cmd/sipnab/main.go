// Command sipnab reads SIP signaling and RTP media, reconstructs every call
// and serves the analysis to people (batch CLI) and agents (MCP).
package main

import (
	"os"

	"github.com/sipnab/sipnab/bundles/all"
	"github.com/sipnab/sipnab/host"
)

func main() { os.Exit(host.Main(os.Args[1:], all.Bundles())) }
