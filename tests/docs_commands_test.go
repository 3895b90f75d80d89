package tests

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/internal/testcap"
)

// docBlocks returns the fenced code blocks of a Markdown file by language.
func docBlocks(t *testing.T, name string) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	re := regexp.MustCompile("(?s)```(\\w+)\n(.*?)```")
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = append(out[m[1]], m[2])
	}
	return out
}

// docFiles is the working directory a documented command runs in: the
// placeholder files the docs name (capture.pcap, token.txt, signing.key)
// exist there by those names, configs/ holds the example configs (their
// machine paths, /etc/sipnab/... and /var/log/sipnab/..., pointed into the
// directory), and testdata/ is the repository's.
type docFiles struct {
	dir, token, key, hepPort string
}

func newDocFiles(t *testing.T) docFiles {
	dir := sharedDir(t)
	f := docFiles{dir: dir, token: "doc-static-token-0123456789abcdef", key: strings.Repeat("d", 48)}
	writeFile(t, dir, "token.txt", f.token+"\n")
	writeFile(t, dir, "signing.key", f.key+"\n")
	writeFile(t, dir, "key", f.key+"\n")
	raw, err := os.ReadFile(sampleCapture())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "capture.pcap", string(raw))
	if err := os.Symlink(filepath.Join(testcap.Root(), "testdata"), filepath.Join(dir, "testdata")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "configs"), 0o755); err != nil {
		t.Fatal(err)
	}
	confs, err := filepath.Glob(filepath.Join(testcap.Root(), "configs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	machinePath := regexp.MustCompile(`"/(?:etc|var)/[^"]*/([^"/]+)"`)
	for _, c := range confs {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		text := machinePath.ReplaceAllStringFunc(string(b), func(m string) string {
			return strconv.Quote(filepath.Join(dir, machinePath.FindStringSubmatch(m)[1]))
		})
		text = strings.ReplaceAll(text, ":8731", ":0")
		writeFile(t, filepath.Join(dir, "configs"), filepath.Base(c), text)
	}
	// -L binds UDP and TCP on the port: free for both.
	_, f.hepPort, _ = net.SplitHostPort(heptest.FreeAddr(t))
	return f
}

// pathFlags take a file or directory: a relative one is read from the
// command's working directory.
var pathFlags = map[string]bool{"-I": true, "--input": true, "--config": true, "--mcp-token-file": true,
	"--mcp-signing-key-file": true, "--mcp-audit-file": true, "--mcp-file-root": true, "--mcp-revoked-file": true,
	"--mcp-tls-cert": true, "--mcp-tls-key": true, "-O": true, "--output": true, "--fail2ban-log": true}

// argsOf turns a documented command line into the arguments the test runs,
// as the command would run in f.dir: a relative path after a path flag is
// joined to f.dir (so ./work must be made first, as the docs say), a
// machine path (/captures/capture.pcap, /etc/sipnab/key) names the file of
// that name in f.dir; port 8731 becomes a free one.
func (f docFiles) argsOf(line string) []string {
	var args []string
	fields := strings.Fields(line)
	for i, a := range fields {
		prev := ""
		if i > 0 {
			prev = fields[i-1]
		}
		switch {
		case pathFlags[prev] && filepath.IsAbs(a):
			a = filepath.Join(f.dir, filepath.Base(a))
		case pathFlags[prev]:
			a = filepath.Join(f.dir, a)
		case strings.HasSuffix(a, ":8731"):
			a = strings.TrimSuffix(a, "8731") + "0"
		case strings.HasSuffix(a, ":9060"):
			a = strings.TrimSuffix(a, "9060") + f.hepPort
		}
		args = append(args, a)
	}
	return args
}

// docCommand is one sipnab command the docs show: the file it is in, the
// line, its stdout redirection (> calls.json) and the directories the lines
// before it in its block make (mkdir -p work).
type docCommand struct {
	where, line, redirect string
	mkdirs                []string
}

// documentedCommands returns every sipnab command line of README.md,
// docs/*.md and docs/bundles/*.md (sh blocks; go run ./cmd/sipnab counts as
// sipnab, and claude mcp add ... -- sipnab registers one), and the one each
// example config's comment shows.
func documentedCommands(t *testing.T) []docCommand {
	t.Helper()
	root := testcap.Root()
	files := []string{filepath.Join(root, "README.md")}
	for _, pat := range []string{"docs/*.md", "docs/bundles/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	block := regexp.MustCompile("(?s)```(?:sh|bash|shell)\n(.*?)```")
	var out []docCommand
	add := func(where, l string, mkdirs []string) {
		c := docCommand{where: where, mkdirs: mkdirs}
		if before, after, ok := strings.Cut(l, " > "); ok {
			l, c.redirect = before, strings.TrimSpace(after)
		}
		c.line = strings.TrimSpace(l)
		out = append(out, c)
	}
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range block.FindAllStringSubmatch(string(raw), -1) {
			var mkdirs []string
			for _, l := range strings.Split(m[1], "\n") {
				l = strings.TrimSpace(l)
				switch {
				case strings.HasPrefix(l, "mkdir -p "):
					mkdirs = append(mkdirs, strings.Fields(l)[2:]...)
				case strings.HasPrefix(l, "sipnab "):
					add(rel, l, mkdirs)
				case strings.HasPrefix(l, "go run ./cmd/sipnab "):
					add(rel, "sipnab "+strings.TrimPrefix(l, "go run ./cmd/sipnab "), mkdirs)
				case strings.HasPrefix(l, "claude mcp add") && strings.Contains(l, " -- sipnab "):
					_, after, _ := strings.Cut(l, " -- sipnab ")
					add(rel, "sipnab "+after, mkdirs)
				}
			}
		}
	}
	confs, err := filepath.Glob(filepath.Join(root, "configs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile(`(?m)^#\s+(sipnab .*)$`)
	for _, c := range confs {
		raw, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		m := comment.FindStringSubmatch(string(raw))
		if m == nil {
			t.Errorf("configs/%s: no comment shows the command that starts it", filepath.Base(c))
			continue
		}
		add("configs/"+filepath.Base(c), m[1], nil)
	}
	if len(out) < 20 {
		t.Fatalf("found %d documented sipnab commands", len(out))
	}
	return out
}

func stdioStatus(t *testing.T, args []string, before func()) map[string]any {
	return stdioStatusUntil(t, args, before, func(st map[string]any) bool {
		return st["source_exhausted"] == true || st["dialog_count"].(float64) > 0
	})
}

func stdioStatusUntil(t *testing.T, args []string, before func(), done func(map[string]any) bool) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := transport.NewStdioWithOptions(bin, os.Environ(), args)
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s := connectMCPGo(t, ctx, tr, eraLegacy)
	if before != nil {
		before()
	}
	var st map[string]any
	for i := 0; i < 100; i++ {
		texts, _, err := s.call(ctx, "capture_status", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(texts[0]), &st)
		if done(st) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return st
}

// sendHEP sends one HEP3 datagram carrying a SIP INVITE.
func sendHEP(t *testing.T, port string) {
	t.Helper()
	invite := "INVITE sip:bob@example.net SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK-doc\r\n" +
		"From: <sip:alice@example.net>;tag=a1\r\nTo: <sip:bob@example.net>\r\nCall-ID: doc-hep-1@example.net\r\n" +
		"CSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
	m := &hep.Message{Version: 3, Family: 2, Protocol: 17, Src: netip.MustParseAddrPort("192.0.2.1:5060"),
		Dst: netip.MustParseAddrPort("192.0.2.2:5060"), TS: time.Now(), HasTS: true,
		ProtoType: hep.ProtoSIP, HasProtoType: true, Payload: []byte(invite)}
	b, err := hep.Encode(m)
	if err != nil {
		t.Fatalf("encoding HEP: %v", err)
	}
	c, err := net.Dial("udp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestDocumentedCommandLinesRun runs every sipnab command of README.md,
// docs/ and the example configs' comments as written, in a directory
// holding the files they name, and checks what each one serves or prints.
func TestDocumentedCommandLinesRun(t *testing.T) {
	for _, c := range documentedCommands(t) {
		t.Run(c.where+": "+c.line, func(t *testing.T) {
			f := newDocFiles(t)
			for _, d := range c.mkdirs {
				if err := os.MkdirAll(filepath.Join(f.dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			args := f.argsOf(strings.TrimPrefix(c.line, "sipnab "))
			joined := " " + strings.Join(args, " ") + " "
			// A config file's settings count as the command's.
			if i := slices.Index(args, "--config"); i >= 0 && i+1 < len(args) {
				raw, err := os.ReadFile(args[i+1])
				if err != nil {
					t.Fatalf("%s: %v", c.line, err)
				}
				joined += string(raw)
			}
			mcp := strings.Contains(joined, " --mcp ") || strings.Contains(joined, "enabled = true")
			switch {
			case strings.Contains(joined, " --call-report "):
				out := runOut(t, args)
				if !strings.HasPrefix(out, "sipnab call report: ") || !strings.Contains(out, "LADDER") {
					t.Errorf("--call-report printed %q", out)
				}
			case strings.Contains(joined, " --mint-token "):
				out := runOut(t, args)
				if !strings.HasPrefix(out, "s2.") {
					t.Errorf("minted %q", out)
				}
			case !mcp:
				docBatch(t, f, c, args)
			case strings.Contains(joined, " --mcp-transport http ") || strings.Contains(joined, `transport = "http"`) || strings.Contains(joined, "transport: http"):
				srv := startHTTP(t, nil, args...)
				url := strings.Replace(srv.URL, "0.0.0.0", "127.0.0.1", 1)
				url = strings.Replace(url, "[::]", "127.0.0.1", 1)
				hdr := map[string]string{}
				token := f.token
				if strings.Contains(joined, "signing_key") || strings.Contains(joined, "--mcp-signing-key-file") {
					token = mint(t, f.key, "doc-agent", "full")
				}
				hdr["Authorization"] = "Bearer " + token
				if strings.Contains(joined, "mcp.example.net") {
					hdr["Host"] = "mcp.example.net"
				}
				resp, body := rawPost(t, url, initBody, hdr)
				if resp.StatusCode != 200 {
					t.Fatalf("initialize: %d %s", resp.StatusCode, body)
				}
				if strings.Contains(joined, "audit") {
					if audits, _ := filepath.Glob(filepath.Join(f.dir, "*audit.jsonl")); len(audits) != 1 {
						t.Errorf("audit file not created in %s", f.dir)
					}
				}
			case strings.Contains(joined, " -i "):
				if os.Geteuid() != 0 {
					t.Skip("live capture needs root")
				}
				st := stdioStatusUntil(t, args, nil, func(map[string]any) bool { return true })
				if st["source"] != "live" || st["unsaved"] != true || st["source_exhausted"] != false {
					t.Errorf("capture_status: %v", st)
				}
			case strings.Contains(joined, " -L "):
				st := stdioStatus(t, args, func() { sendHEP(t, f.hepPort) })
				if st["source"] != "hep" || st["dialog_count"] != float64(1) {
					t.Errorf("capture_status: %v", st)
				}
			default:
				// the file -I names: a machine path's capture.pcap, or a
				// shipped capture under testdata/
				want := "capture.pcap"
				for i, a := range args[:len(args)-1] {
					if a == "-I" && strings.HasPrefix(args[i+1], filepath.Join(f.dir, "testdata")+"/") {
						want = filepath.Base(args[i+1])
					}
				}
				st := stdioStatus(t, args, nil)
				if st["source"] != "file" || st["name"] != want {
					t.Errorf("capture_status: %v, want file %s", st, want)
				}
			}
		})
	}
}

// docBatch runs a documented batch command (--json-run or --report, to stdout
// or to the file the docs redirect to). A live or HEP source runs until a
// SIGINT, as the README says to stop it; a HEP source is sent one INVITE
// first. The document must cover what was read.
func docBatch(t *testing.T, f docFiles, c docCommand, args []string) {
	t.Helper()
	joined := " " + strings.Join(args, " ") + " "
	live, hepIn := strings.Contains(joined, " -i "), strings.Contains(joined, " -L ")
	if live && os.Geteuid() != 0 {
		t.Skip("live capture needs root")
	}
	cmd := exec.Command(bin, args...)
	// stderr is polled while the command runs: a locked buffer.
	var stdout strings.Builder
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if live || hepIn {
		if hepIn {
			for i := 0; i < 50 && !strings.Contains(stderr.String(), "receiving HEP"); i++ {
				time.Sleep(100 * time.Millisecond)
			}
			sendHEP(t, f.hepPort)
		}
		time.Sleep(time.Second)
		_ = cmd.Process.Signal(os.Interrupt)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%v: %v; stderr:\n%s", args, err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("%v did not finish; stderr:\n%s", args, stderr.String())
	}
	out := stdout.String()
	if c.redirect != "" {
		// What the shell would have written to the file.
		if err := os.WriteFile(filepath.Join(f.dir, c.redirect), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	switch {
	case strings.Contains(joined, " --json-run "):
		var doc struct {
			Dialogs []struct {
				CallID string `json:"call_id"`
			} `json:"dialogs"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("--json-run printed no JSON document: %v\n%s", err, out)
		}
		if !live && len(doc.Dialogs) == 0 {
			t.Errorf("--json-run document has no dialogs:\n%s", out)
		}
		if hepIn && (len(doc.Dialogs) != 1 || doc.Dialogs[0].CallID != "doc-hep-1@example.net") {
			t.Errorf("HEP run: dialogs %+v, want the INVITE sent", doc.Dialogs)
		}
	case strings.Contains(joined, " --report "):
		if !strings.Contains(out, "sipnab") || (!live && !strings.Contains(out, "1-1966@10.0.2.20")) {
			t.Errorf("--report printed %q", out)
		}
	case strings.Contains(joined, " --json ") || strings.Contains(joined, " --json-dialogs "):
		// NDJSON (docs/cli-output.md): one object a line, each naming a
		// Call-ID, or the trailing run line.
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for i, l := range lines {
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("line %d is not a JSON object: %v\n%s", i+1, err, l)
			}
			if v["call_id"] == nil && v["sipnab_run"] == nil {
				t.Errorf("line %d names no call_id: %s", i+1, l)
			}
		}
		if !live && len(lines) < 2 {
			t.Errorf("%d NDJSON lines:\n%s", len(lines), out)
		}
	case strings.Contains(joined, " --json-analyze "):
		var doc struct {
			Findings []any `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Findings == nil {
			t.Fatalf("--json-analyze printed no analysis document (%v):\n%s", err, out)
		}
	case strings.Contains(joined, " --analyze "):
		if !strings.HasPrefix(out, "sipnab capture report: ") {
			t.Errorf("--analyze printed %q", out)
		}
	case strings.Contains(joined, " -O "):
		// docs/egress.md: the frames read, re-emitted; the summary on
		// stderr counts them and names the files, which exist.
		m := regexp.MustCompile(`-O: (\d+) frames, \d+ bytes in \d+ file\(s\) \(([^)]*)\)`).FindStringSubmatch(stderr.String())
		if m == nil || m[1] == "0" {
			t.Fatalf("-O wrote no summary or no frames; stderr:\n%s", stderr.String())
		}
		for _, p := range strings.Split(m[2], ", ") {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("-O names %s: %v", p, err)
			}
		}
	default:
		// The per-message text: -N with sources and no output flag.
		if !live && !strings.Contains(out, " -> ") {
			t.Errorf("%v: per-message text printed %q", args, out)
		}
	}
}

// TestDocumentedToolSelectionsLoadWhatTheySay: every --mcp-tools list the
// docs show (inline or in a command) starts, and each of its entries adds
// tools the entries before it did not load: "--mcp-tools core,X adds a
// single tool" is false if core already holds X.
func TestDocumentedToolSelectionsLoadWhatTheySay(t *testing.T) {
	root := testcap.Root()
	files := []string{filepath.Join(root, "README.md")}
	for _, pat := range []string{"docs/*.md", "docs/bundles/*.md"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		files = append(files, m...)
	}
	re := regexp.MustCompile("--mcp-tools ([a-z0-9_,]+)")
	lists := map[string]string{}
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
			lists[m[1]] = filepath.Base(p)
		}
	}
	if len(lists) < 3 {
		t.Fatalf("found %d --mcp-tools lists in the docs", len(lists))
	}
	count := map[string]int{}
	tools := func(sel string) int {
		if n, ok := count[sel]; ok {
			return n
		}
		n := len(liveToolsList(t, "--mcp-tools", sel))
		count[sel] = n
		return n
	}
	for list, where := range lists {
		t.Run(where+": "+list, func(t *testing.T) {
			entries := strings.Split(list, ",")
			prev := 0
			for i := range entries {
				n := tools(strings.Join(entries[:i+1], ","))
				if n <= prev {
					t.Errorf("--mcp-tools %s: %q adds no tool to %s (%d tools either way)", list, entries[i], strings.Join(entries[:i], ","), n)
				}
				prev = n
			}
		})
	}
}

func runOut(t *testing.T, args []string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestDocumentedClientConfigsStartSipnab parses the JSON client
// configurations of docs/mcp.md: every stdio entry runs sipnab with args
// that serve the capture, and every HTTP entry names the documented
// endpoint with a bearer header.
func TestDocumentedClientConfigsStartSipnab(t *testing.T) {
	f := newDocFiles(t)
	type server struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Type    string            `json:"type"`
	}
	stdio, httpEntries := 0, 0
	for _, block := range docBlocks(t, "mcp.md")["json"] {
		var doc struct {
			MCPServers map[string]server `json:"mcpServers"`
			Servers    map[string]server `json:"servers"`
		}
		if err := json.Unmarshal([]byte(block), &doc); err != nil {
			t.Fatalf("docs/mcp.md JSON block does not parse: %v\n%s", err, block)
		}
		for _, all := range []map[string]server{doc.MCPServers, doc.Servers} {
			for _, s := range all {
				switch {
				case s.Command == "sipnab":
					stdio++
					st := stdioStatus(t, f.argsOf(strings.Join(s.Args, " ")), nil)
					if st["source"] != "file" {
						t.Errorf("%v: capture_status %v", s.Args, st)
					}
				case s.Command == "npx":
					httpEntries++
					if len(s.Args) < 4 || s.Args[1] != "http://127.0.0.1:8731/mcp" || !strings.HasPrefix(s.Args[3], "Authorization: Bearer ") {
						t.Errorf("mcp-remote entry %v", s.Args)
					}
				case s.URL != "":
					httpEntries++
					if s.URL != "http://127.0.0.1:8731/mcp" || !strings.HasPrefix(s.Headers["Authorization"], "Bearer ") {
						t.Errorf("HTTP entry %+v", s)
					}
				default:
					t.Errorf("entry %+v is neither stdio nor HTTP", s)
				}
			}
		}
	}
	if stdio != 3 || httpEntries != 3 {
		t.Errorf("found %d stdio and %d HTTP client entries, want 3 and 3", stdio, httpEntries)
	}
}
