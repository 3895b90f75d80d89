package tests

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// First contact, as a new user meets it: each test runs
// the binary the way a person or an MCP client first would.

// fcRun runs the binary with extra environment and the given stdin, and
// returns stdout, stderr and the exit code.
func fcRun(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

const fcInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"firstcontact","version":"1"}}}` + "\n"

// TestUnknownSipnabEnvIsIgnoredWithOneWarning: a client passing its whole
// environment (SIPNAB_TOKEN, the name an HTTP client config might use) must
// not stop a stdio server from answering initialize; the variable is named
// once on stderr with the known variable it resembles, and a known
// variable still takes effect.
func TestUnknownSipnabEnvIsIgnoredWithOneWarning(t *testing.T) {
	capture := testcap.Public("sip-register.pcap")
	for _, tc := range []struct {
		name, env, wantHint string
	}{
		{"client-side token name", "SIPNAB_TOKEN=abc", "did you mean SIPNAB_MCP_TOKEN?"},
		{"typo of a flag", "SIPNAB_MCP_MAX_RWS=5", "did you mean SIPNAB_MCP_MAX_ROWS?"},
		{"nothing close", "SIPNAB_ZZZZZZZZ=1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, _, _ := strings.Cut(tc.env, "=")
			out, errOut, code := fcRun(t, []string{tc.env}, fcInitialize, "-N", "--mcp", "-I", capture)
			if code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, errOut)
			}
			if !strings.Contains(out, `"protocolVersion"`) {
				t.Errorf("no initialize answer on stdout: %q", out)
			}
			if n := strings.Count(errOut, name); n != 1 {
				t.Errorf("stderr names %s %d times, want once:\n%s", name, n, errOut)
			}
			if !strings.Contains(errOut, "ignoring unknown environment variable "+name) {
				t.Errorf("no warning for %s:\n%s", name, errOut)
			}
			if tc.wantHint != "" && !strings.Contains(errOut, tc.wantHint) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantHint, errOut)
			}
			if tc.wantHint == "" && strings.Contains(errOut, "did you mean") {
				t.Errorf("a hint for a name close to nothing:\n%s", errOut)
			}
		})
	}
	t.Run("known variable still applies", func(t *testing.T) {
		_, errOut, code := fcRun(t, []string{"SIPNAB_MCP_MAX_ROWS=x"}, "", "-N", "--json-run", "-I", capture)
		if code != 2 || !strings.Contains(errOut, "SIPNAB_MCP_MAX_ROWS") {
			t.Errorf("a bad known variable: exit %d, stderr %q; want 2 naming it", code, errOut)
		}
	})
}

// TestVersionPrintsOnStdoutAndExitsZero: --version prints one line on
// stdout (the handshake's serverInfo.version, then the build facts) and
// exits 0, whatever else is on the command line; its Go version is the one
// `go version` reads from the binary.
func TestVersionPrintsOnStdoutAndExitsZero(t *testing.T) {
	goOut, err := exec.Command("go", "version", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(goOut)) // "<bin>: go1.x.y"
	wantGo := fields[len(fields)-1]
	for _, args := range [][]string{{"--version"}, {"-version"}, {"--version", "-N", "--mcp"}} {
		out, errOut, code := fcRun(t, nil, "", args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", args, code, errOut)
		}
		line := strings.TrimSuffix(out, "\n")
		if strings.Contains(line, "\n") || !strings.HasPrefix(line, "sipnab 0.") || !strings.HasSuffix(line, ", "+wantGo) {
			t.Errorf("%v: stdout %q; want one line 'sipnab <version>, ..., %s'", args, out, wantGo)
		}
	}
}

// TestMCPWithoutSourceSaysHowToAddOne: `--mcp` with no -I, -i or -L still
// serves (capture_status answers source "unknown", mcp-surface §3), and the
// handshake instructions and one stderr warning say how to attach a source;
// a server with a source carries no such note.
func TestMCPWithoutSourceSaysHowToAddOne(t *testing.T) {
	const note = "No source is attached"
	for _, tc := range []struct {
		name     string
		args     []string
		wantNote bool
	}{
		{"no source", []string{"-N", "--mcp"}, true},
		{"a capture file", []string{"-N", "--mcp", "-I", testcap.Public("sip-register.pcap")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := fcRun(t, nil, fcInitialize, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, errOut)
			}
			var resp struct {
				Result struct {
					Instructions string `json:"instructions"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &resp); err != nil {
				t.Fatalf("initialize answer %q: %v", out, err)
			}
			instr := resp.Result.Instructions
			if got := strings.Contains(instr, note); got != tc.wantNote {
				t.Errorf("instructions carry %q: %v, want %v:\n%s", note, got, tc.wantNote, instr)
			}
			if tc.wantNote {
				for _, want := range []string{`source "unknown"`, "-I FILE", "-i IFACE", "-L ADDR", "pcapng"} {
					if !strings.Contains(instr, want) {
						t.Errorf("instructions lack %q:\n%s", want, instr)
					}
				}
			}
			if n := strings.Count(errOut, "no source:"); n != map[bool]int{true: 1, false: 0}[tc.wantNote] {
				t.Errorf("stderr warns of no source %d times:\n%s", n, errOut)
			}
		})
	}
}

// TestStartupErrorsArePrintedOnce: a usage or startup error is one line on
// stderr, said once: not the flag package's copy, then the whole flag list,
// then sipnab's copy; not a log line and a plain line of the same error.
func TestStartupErrorsArePrintedOnce(t *testing.T) {
	dir := t.TempDir()
	text := dir + "/notes.txt"
	if err := os.WriteFile(text, []byte("# not a capture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-N", "--mcp-max-response-bytes", "abc"}, 2, `invalid value "abc" for flag -mcp-max-response-bytes`},
		{[]string{"-N", "--json-run", "-I", text, "--duration", "-1"}, 2, "--duration -1"},
		{[]string{"--mcp"}, 2, "--mcp needs -N/--no-tui"},
		{[]string{"-N", "--json-run"}, 2, "no input"},
		{[]string{"-N", "--mcp", "-I", dir + "/absent.pcap"}, 1, "no such file or directory"},
		{[]string{"-N", "--json-run", "-I", dir + "/absent.pcap"}, 1, "no such file or directory"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, errOut, code := fcRun(t, nil, "", tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d", code, tc.wantCode)
			}
			if n := strings.Count(errOut, tc.want); n != 1 {
				t.Errorf("stderr says %q %d times, want once:\n%s", tc.want, n, errOut)
			}
			if lines := strings.Count(strings.TrimSuffix(errOut, "\n"), "\n") + 1; lines != 1 {
				t.Errorf("stderr has %d lines, want 1:\n%s", lines, errOut)
			}
		})
	}
	t.Run("-h still lists the flags, on stdout", func(t *testing.T) {
		out, errOut, code := fcRun(t, nil, "", "-h")
		if code != 0 || !strings.Contains(out, "--mcp-file-root") || errOut != "" {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
}

// TestNonCaptureFileNamesTheFormatsRead: -I on a file that is no capture
// (a text file, a stub, gzip of text) says, once, what sipnab reads
// (core/capture/format.go: pcap and pcapng, plain or gzip), in batch and
// MCP modes alike.
func TestNonCaptureFileNamesTheFormatsRead(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("# notes, not packets\n"))
	_ = zw.Close()
	files := map[string][]byte{
		"notes.txt":    []byte("# notes, not packets\n"),
		"stub.pcap":    []byte("ab"),
		"notes.txt.gz": gz.Bytes(),
	}
	const want = "sipnab reads pcap and pcapng files, plain or gzip-compressed"
	for name, data := range files {
		path := dir + "/" + name
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, mode := range [][]string{{"--json-run"}, {"--mcp"}} {
			t.Run(name+" "+mode[0], func(t *testing.T) {
				_, errOut, code := fcRun(t, nil, "", append([]string{"-N", "-I", path}, mode...)...)
				if code != 1 {
					t.Errorf("exit %d, want 1", code)
				}
				if strings.Count(errOut, want) != 1 || !strings.Contains(errOut, name) {
					t.Errorf("stderr does not name %s and the formats once:\n%s", name, errOut)
				}
			})
		}
	}
}
