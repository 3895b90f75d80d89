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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/sipnab/sipnab/core/hep"
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

// docFiles are the real files behind the placeholder names of docs/mcp.md.
type docFiles struct {
	dir, token, key, hepPort string
}

func newDocFiles(t *testing.T) docFiles {
	dir := sharedDir(t)
	f := docFiles{dir: dir, token: "doc-static-token-0123456789abcdef", key: strings.Repeat("d", 48)}
	writeFile(t, dir, "token.txt", f.token+"\n")
	writeFile(t, dir, "signing.key", f.key+"\n")
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.hepPort = strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
	pc.Close()
	return f
}

// argsOf turns a documented command line into the arguments the test runs:
// placeholder files become real ones, port 8731 a free one.
func (f docFiles) argsOf(line string) []string {
	var args []string
	for _, a := range strings.Fields(line) {
		switch {
		case a == "capture.pcap" || a == "/captures/capture.pcap":
			a = sampleCapture()
		case a == "token.txt" || a == "signing.key" || a == "audit.jsonl":
			a = filepath.Join(f.dir, a)
		case a == "./work":
			a = f.dir
		case strings.HasPrefix(a, "configs/"):
			a = filepath.Join(testcap.Root(), a)
		case strings.HasSuffix(a, ":8731"):
			a = strings.TrimSuffix(a, "8731") + "0"
		case strings.HasSuffix(a, ":9060"):
			a = strings.TrimSuffix(a, "9060") + f.hepPort
		}
		args = append(args, a)
	}
	return args
}

// sipnabLines returns the documented sipnab command lines (and the
// commands registered through `claude mcp add ... -- sipnab ...`).
func sipnabLines(t *testing.T) []string {
	var lines []string
	for _, block := range docBlocks(t, "mcp.md")["sh"] {
		for _, l := range strings.Split(block, "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "sipnab ") {
				lines = append(lines, l)
			}
			if _, after, ok := strings.Cut(l, " -- sipnab "); ok && strings.HasPrefix(l, "claude mcp add") {
				lines = append(lines, "sipnab "+after)
			}
		}
	}
	if len(lines) < 8 {
		t.Fatalf("found %d sipnab command lines in docs/mcp.md", len(lines))
	}
	return lines
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

// TestDocumentedCommandLinesRun runs every sipnab command line of
// docs/mcp.md and checks what each one serves.
func TestDocumentedCommandLinesRun(t *testing.T) {
	f := newDocFiles(t)
	for _, line := range sipnabLines(t) {
		t.Run(line, func(t *testing.T) {
			args := f.argsOf(strings.TrimPrefix(line, "sipnab "))
			joined := " " + strings.Join(args, " ") + " "
			switch {
			case strings.Contains(joined, " --call-report "):
				out := runOut(t, args)
				if !strings.HasPrefix(out, "sipnab call report: 1-1966@10.0.2.20") || !strings.Contains(out, "LADDER") {
					t.Errorf("--call-report printed %q", out)
				}
			case strings.Contains(joined, " --mint-token "):
				out := runOut(t, args)
				if !strings.HasPrefix(out, "s2.") {
					t.Errorf("minted %q", out)
				}
			case strings.Contains(joined, " --mcp-transport http "):
				srv := startHTTP(t, nil, args...)
				url := strings.Replace(srv.URL, "0.0.0.0", "127.0.0.1", 1)
				url = strings.Replace(url, "[::]", "127.0.0.1", 1)
				hdr := map[string]string{}
				token := f.token
				if strings.Contains(joined, "--mcp-signing-key-file") {
					token = mint(t, f.key, "doc-agent", "full")
				}
				hdr["Authorization"] = "Bearer " + token
				if strings.Contains(joined, "--mcp-allowed-host mcp.example.net") {
					hdr["Host"] = "mcp.example.net"
				}
				resp, body := rawPost(t, url, initBody, hdr)
				if resp.StatusCode != 200 {
					t.Fatalf("initialize: %d %s", resp.StatusCode, body)
				}
				if strings.Contains(joined, "--mcp-audit-file") {
					if _, err := os.Stat(filepath.Join(f.dir, "audit.jsonl")); err != nil {
						t.Errorf("audit file not created: %v", err)
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
				st := stdioStatus(t, args, nil)
				if st["source"] != "file" || st["name"] != "sip-rtp-g711.pcap" {
					t.Errorf("capture_status: %v", st)
				}
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
