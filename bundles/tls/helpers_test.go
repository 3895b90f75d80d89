package tls

import (
	"os"
	"testing"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/tlspeer"
	"github.com/sipnab/sipnab/sdk"
)

// tools provisions the bundle over capture with the given opt-in flags.
func tools(t *testing.T, capture *engine.Capture, opts map[string]bool) map[string]sdk.Tool {
	t.Helper()
	return tooltest.Provision(t, Bundle{}, sdk.EnvOptions{Services: []any{capture}, Options: opts})
}

var (
	call    = tooltest.Call
	callErr = tooltest.CallErr
)

var allowed = map[string]bool{optTLSCapture: true}

// bpfObjects counts this process's BPF and perf event descriptors.
func bpfObjects(t *testing.T) int { return tlspeer.BPFDescriptors(t, os.Getpid()) }

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("attaching uprobes needs root")
	}
}

const invite = "INVITE sips:bob@example.test SIP/2.0\r\n" +
	"Via: SIP/2.0/TLS 192.0.2.10:5061;branch=z9hG4bK-tlsbundle-1\r\n" +
	"Max-Forwards: 70\r\n" +
	"From: <sips:alice@example.test>;tag=a1\r\n" +
	"To: <sips:bob@example.test>\r\n" +
	"Call-ID: tls-bundle-1@example.test\r\n" +
	"CSeq: 7 INVITE\r\n" +
	"Contact: <sips:alice@192.0.2.10:5061>\r\n" +
	"Content-Length: 0\r\n\r\n"

const ok200 = "SIP/2.0 200 OK\r\n" +
	"Via: SIP/2.0/TLS 192.0.2.10:5061;branch=z9hG4bK-tlsbundle-1\r\n" +
	"From: <sips:alice@example.test>;tag=a1\r\n" +
	"To: <sips:bob@example.test>;tag=b1\r\n" +
	"Call-ID: tls-bundle-1@example.test\r\n" +
	"CSeq: 7 INVITE\r\n" +
	"Contact: <sips:bob@192.0.2.20:5061>\r\n" +
	"Content-Length: 0\r\n\r\n"
