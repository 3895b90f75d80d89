package tests

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// Sender-written text carrying invisible characters: a RIGHT-TO-LEFT
// OVERRIDE (U+202E), C1 controls (U+0085, U+009B: a CSI on a terminal
// that reads C1), terminal escapes (ESC "[2J" clears the screen, ESC "]0;"
// retitles the window), a zero-width space and a byte-order mark.
const (
	hostileDisplay = "Ali\u202ece\x1b[2J\u0085 \u200bAdmin\ufeff"
	hostileUser    = "ev\u202eil\u009b"
	hostileUA      = "Soft\u202ephone\x1b]0;pwned\x07 \u0090x"
	hostileReason  = "Busy\u202e Here\x1b[2J\u009b31m"
	hostileCallID  = "evil\u202eid\x1b[2J@a.example"
)

// writeHostileCapture writes two declined INVITE dialogs whose From display
// name and user, User-Agent and reason phrase carry hostile characters; the
// second's Call-ID does too.
func writeHostileCapture(t *testing.T) string {
	t.Helper()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var frames []accFrame
	for i, id := range []string{"hostile-1@a.example", hostileCallID} {
		at := t0.Add(time.Duration(i) * time.Second)
		from := "From: \"" + hostileDisplay + "\" <sip:" + hostileUser + "@a.example>;tag=at1"
		via := "Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-h" + string(rune('0'+i))
		inv := accSIP("INVITE sip:bob@b.example SIP/2.0", via, "Max-Forwards: 70", from,
			"To: <sip:bob@b.example>", "Call-ID: "+id, "CSeq: 1 INVITE",
			"Contact: <sip:alice@192.0.2.10>", "User-Agent: "+hostileUA)
		busy := accSIP("SIP/2.0 486 "+hostileReason, via, from, "To: <sip:bob@b.example>;tag=bt1",
			"Call-ID: "+id, "CSeq: 1 INVITE", "Server: "+hostileUA)
		ack := accSIP("ACK sip:bob@b.example SIP/2.0", via, "Max-Forwards: 70", from,
			"To: <sip:bob@b.example>;tag=bt1", "Call-ID: "+id, "CSeq: 1 ACK")
		frames = append(frames,
			accFrame{at, accIPEth(accUDP(t, "192.0.2.10:5060", "192.0.2.20:5060", inv))},
			accFrame{at.Add(40 * time.Millisecond), accIPEth(accUDP(t, "192.0.2.20:5060", "192.0.2.10:5060", busy))},
			accFrame{at.Add(80 * time.Millisecond), accIPEth(accUDP(t, "192.0.2.10:5060", "192.0.2.20:5060", ack))})
	}
	return accWrite(t, t.TempDir(), "hostile-text.pcap", layers.LinkTypeEthernet, frames)
}

func runStdout(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%v: exit %d; stderr %s", args, code, errb.String())
	}
	return out.String()
}

// invisibleIn lists the invisible characters (controls other than the
// line break, bidi and other format characters) a document holds.
func invisibleIn(doc string) []string {
	var bad []string
	for _, r := range doc {
		switch {
		case r == '\n':
		case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
			r == 0x200e, r == 0x200f, r == 0x061c, r >= 0x200b && r <= 0x200d, r == 0xfeff, r == 0x2060:
			bad = append(bad, string(r))
		}
	}
	return bad
}

// TestRenderersSanitizeSenderText: --report (core/report) and
// --call-report in text and Markdown (core/callreport, the renderer of
// render_ladder and get_dialog_report) print a capture whose display name,
// user, User-Agent, reason phrase and Call-ID carry U+202E, C1 controls and
// terminal escapes without any of them, the sender text cleaned the same
// way in both (internal/textsafe.Line) and the Call-ID escaped visibly
// (internal/textsafe.ID).
func TestRenderersSanitizeSenderText(t *testing.T) {
	path := writeHostileCapture(t)
	report := runStdout(t, "-N", "-I", path, "--report")
	docs := map[string]string{
		"--report":                 report,
		"--call-report":            runStdout(t, "-N", "-I", path, "--call-report", "hostile-1@a.example"),
		"--call-report --markdown": runStdout(t, "-N", "-I", path, "--call-report", "hostile-1@a.example", "--markdown"),
		"--call-report hostile id": runStdout(t, "-N", "-I", path, "--call-report", hostileCallID),
	}
	for name, doc := range docs {
		if bad := invisibleIn(doc); len(bad) > 0 {
			t.Errorf("%s prints %d invisible characters %q:\n%s", name, len(bad), bad, doc)
		}
	}
	// the sender text, cleaned alike by both renderers
	for _, tc := range []struct{ doc, want string }{
		{"--report", " evil  bob  Failed"},              // hostileUser: U+202E and the CSI dropped
		{"--report", "Busy Here"},                       // hostileReason in the findings, escapes dropped whole
		{"--report", `evil\u202eid\u001b[2J@a.example`}, // hostileCallID, escaped
		{"--call-report", "486 Busy Here"},
		{"--call-report", `"Alice  Admin" <sip:evil@a.example>`},
		{"--call-report --markdown", `final 486 Busy Here`},
		{"--call-report hostile id", `evil\u202eid\u001b[2J@a.example`},
	} {
		if !strings.Contains(docs[tc.doc], tc.want) {
			t.Errorf("%s lacks %q:\n%s", tc.doc, tc.want, docs[tc.doc])
		}
	}
	// a terminal escape sequence is dropped whole: no "[2J" or "31m" residue
	// outside an escaped identifier
	for name, doc := range docs {
		for _, residue := range []string{"Here[2J", `Here\[2J`, "31m", "Alice[2J", "]0;pwned"} {
			if strings.Contains(doc, residue) {
				t.Errorf("%s keeps the escape residue %q:\n%s", name, residue, doc)
			}
		}
	}
}
