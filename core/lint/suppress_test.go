package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSuppression(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{"comments and separators",
			"# carrier rewrites Contact\nSIP-3261-19.1.1-URI-PARAM-DEMOTED\n\nOBS-*, SDP-3264-6.1-ANSWER-EXTRA-FORMAT  SIP-7989-* # trailing\n",
			[]string{"SIP-3261-19.1.1-URI-PARAM-DEMOTED", "OBS-*", "SDP-3264-6.1-ANSWER-EXTRA-FORMAT", "SIP-7989-*"}, ""},
		{"CRLF and repeats", "OBS-*\r\nOBS-*\r\n", []string{"OBS-*"}, ""},
		{"empty", "# nothing\n", nil, ""},
		{"lower case refused", "sip-3261-*\n", nil, "line 1"},
		{"star inside refused", "OK\nSIP-*-X\n", nil, "line 2"},
		{"punctuation refused", "SIP_3261\n", nil, "line 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSuppression([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		big := strings.Repeat("OBS-*\n", MaxSuppressionBytes/6+10)
		if _, err := ParseSuppression([]byte(big)); err == nil {
			t.Errorf("got no error for %d bytes, want one", len(big))
		}
	})
	t.Run("too many patterns", func(t *testing.T) {
		var b strings.Builder
		for i := 0; i <= MaxPatterns; i++ {
			b.WriteString("SIP-" + strings.Repeat("1", 1) + "-" + itoaPad(i) + "\n")
		}
		if _, err := ParseSuppression([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "patterns") {
			t.Errorf("got %v, want a pattern-count error", err)
		}
	})
}

func itoaPad(i int) string {
	s := ""
	for j := 0; j < 5; j++ {
		s = string(rune('0'+i%10)) + s
		i /= 10
	}
	return s
}

func TestSuppressionMatches(t *testing.T) {
	s := &Suppression{Patterns: []string{"OBS-*", "SIP-3261-20-URI-BRACKETS"}}
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"OBS-3264-6.1-PT-UNDECLARED", true},
		{"SIP-3261-20-URI-BRACKETS", true},
		{"SIP-3261-20.22-MAX-FORWARDS-RANGE", false},
		{"SDP-3264-8.4-HOLD-CONNECTION-ZERO", false},
	} {
		if got := s.Matches(tc.id); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.id, got, tc.want)
		}
	}
	var none *Suppression
	if none.Matches("OBS-3264-6.1-PT-UNDECLARED") {
		t.Errorf("a nil suppression matched")
	}
}

// mkTree builds files and directories under a temporary root: entries
// ending in "/" are directories.
func mkTree(t *testing.T, entries map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range entries {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDiscoverSuppression(t *testing.T) {
	cases := []struct {
		name    string
		tree    map[string]string
		capture string
		want    string // relative to the tree root; "" none
	}{
		{"beside the capture", map[string]string{"proj/.git/": "", "proj/caps/.sipnablint": "OBS-*", "proj/caps/a.pcap": ""},
			"proj/caps/a.pcap", "proj/caps/.sipnablint"},
		{"walks up to the project root", map[string]string{"proj/.git/": "", "proj/.sipnablint": "OBS-*", "proj/caps/deep/a.pcap": ""},
			"proj/caps/deep/a.pcap", "proj/.sipnablint"},
		{"nearest wins", map[string]string{"proj/.git/": "", "proj/.sipnablint": "OBS-*", "proj/caps/.sipnablint": "SDP-*", "proj/caps/a.pcap": ""},
			"proj/caps/a.pcap", "proj/caps/.sipnablint"},
		{"never beyond the project root", map[string]string{".sipnablint": "OBS-*", "proj/.git/": "", "proj/caps/a.pcap": ""},
			"proj/caps/a.pcap", ""},
		{"outside any project adopts nothing", map[string]string{".sipnablint": "OBS-*", "caps/.sipnablint": "OBS-*", "caps/a.pcap": ""},
			"caps/a.pcap", ""},
		{"a .git file (worktree) marks the root", map[string]string{"wt/.git": "gitdir: elsewhere", "wt/.sipnablint": "OBS-*", "wt/c/a.pcap": ""},
			"wt/c/a.pcap", "wt/.sipnablint"},
		{"nested project stops at the inner root", map[string]string{"outer/.git/": "", "outer/.sipnablint": "OBS-*", "outer/inner/.git/": "", "outer/inner/a.pcap": ""},
			"outer/inner/a.pcap", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := mkTree(t, tc.tree)
			got, err := DiscoverSuppression(filepath.Join(root, filepath.FromSlash(tc.capture)))
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if tc.want != "" {
				want = filepath.Join(root, filepath.FromSlash(tc.want))
			}
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	t.Run("a directory named .sipnablint is an error", func(t *testing.T) {
		root := mkTree(t, map[string]string{"p/.git/": "", "p/.sipnablint/": "", "p/a.pcap": ""})
		if _, err := DiscoverSuppression(filepath.Join(root, "p", "a.pcap")); err == nil {
			t.Errorf("got no error, want one")
		}
	})
}

func TestReadSuppression(t *testing.T) {
	root := mkTree(t, map[string]string{"good": "OBS-*\n", "bad": "obs\n"})
	s, err := ReadSuppression(filepath.Join(root, "good"))
	if err != nil || s.File != filepath.Join(root, "good") || strings.Join(s.Patterns, ",") != "OBS-*" {
		t.Errorf("got %+v %v, want the file and its one pattern", s, err)
	}
	if _, err := ReadSuppression(filepath.Join(root, "bad")); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Errorf("got %v, want an error naming the file", err)
	}
	if _, err := ReadSuppression(filepath.Join(root, "missing")); err == nil {
		t.Errorf("got no error for a missing file")
	}
}
