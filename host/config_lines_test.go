package host

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// TestKeyLinesFindWhereEachKeyIsSet: the line of a key, as koanf flattens
// it, in TOML (tables, dotted and quoted keys, inline tables, multi-line
// arrays and strings, comments) and YAML (nested mappings, flow mappings,
// lists and block scalars skipped).
func TestKeyLinesFindWhereEachKeyIsSet(t *testing.T) {
	toml := `# a comment with key = 1
no_tui = true
analysis.pdd_threshold = 4   # dotted at the top

[mcp]
tools = [
  "core",          # a member
  "x = y",
]
token = "a # not a comment"
"quoted.key" = 1
notes = """
fake = 1
"""
limits = { deep = 3, other = "a,b" }

[mcp.bundles]
voice = ["core"]

[ correlation ]
window = 2
`
	yaml := `# top
no_tui: true
mcp:
  tools:
    - core
    - "x: y"
  text: |
    fake: 1
  token: "a # b"   # comment
  inline: {deep: 3, other: 4}
analysis:

  pdd_threshold: 4
`
	for _, tc := range []struct {
		format, text, key string
		want              int
	}{
		{"toml", toml, "no_tui", 2},
		{"toml", toml, "analysis.pdd_threshold", 3},
		{"toml", toml, "mcp", 5},
		{"toml", toml, "mcp.tools", 6},
		{"toml", toml, "mcp.token", 10},
		{"toml", toml, "mcp.quoted.key", 11},
		{"toml", toml, "mcp.notes", 12},
		{"toml", toml, "mcp.fake", 0}, // inside a multi-line string
		{"toml", toml, "mcp.limits.deep", 15},
		{"toml", toml, "mcp.limits.other", 15},
		{"toml", toml, "mcp.bundles.voice", 18},
		{"toml", toml, "correlation.window", 21},
		{"toml", toml, "mcp.x", 0}, // inside an array
		{"yaml", yaml, "no_tui", 2},
		{"yaml", yaml, "mcp", 3},
		{"yaml", yaml, "mcp.tools", 4},
		{"yaml", yaml, "mcp.text", 7},
		{"yaml", yaml, "mcp.fake", 0}, // inside a block scalar
		{"yaml", yaml, "mcp.token", 9},
		{"yaml", yaml, "mcp.inline.deep", 10},
		{"yaml", yaml, "mcp.inline.other", 10},
		{"yaml", yaml, "analysis.pdd_threshold", 13},
		{"yaml", yaml, "pdd_threshold", 0},
	} {
		t.Run(tc.format+"/"+tc.key, func(t *testing.T) {
			got, ok := keyLines([]byte(tc.text), tc.format)[tc.key]
			if tc.want == 0 {
				if ok {
					t.Errorf("found %q at line %d; it is not a key of the file", tc.key, got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("%s: line %d, want %d", tc.key, got, tc.want)
			}
		})
	}
	t.Run("an unset key falls back to its table's line", func(t *testing.T) {
		f := &configFile{path: "c.toml", format: "toml", data: []byte(toml)}
		if got := f.line("correlation.nope.deeper"); got != 20 {
			t.Errorf("line %d, want 20 ([ correlation ])", got)
		}
		if got := f.line("nothing.here"); got != 0 {
			t.Errorf("line %d, want 0", got)
		}
	})
}

// TestConfigFileMistakesNameTheKeyAndLine: each unknown key or value of
// the wrong type in a config file is a startup error (exit 2) reading
// "file:line: ...", all of them, in file order.
func TestConfigFileMistakesNameTheKeyAndLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, file, text string
		want             []string
	}{
		{"misspelt key in a table", "a.toml", "[mcp]\ntools = [\"core\"]\n\n[analysis]\npdd_treshold = 4\n",
			[]string{`a.toml:5: unknown key "analysis.pdd_treshold" (did you mean "pdd_threshold"?)`}},
		{"key in the wrong table", "b.toml", "[mcp]\nmcp_max_rows = 5\n",
			[]string{`b.toml:2: unknown key "mcp.mcp_max_rows" (did you mean "limits.mcp_max_rows"?)`}},
		{"dotted key", "c.toml", "mcp.max_concurent = 3\n",
			[]string{`c.toml:1: unknown key "mcp.max_concurent" (did you mean "max_concurrent"?)`}},
		{"every mistake, in file order", "d.toml", "[mcp]\nmax_concurrent = \"7\"\nbind = 8731\n[limits]\nmcp_max_rows = true\n",
			[]string{`d.toml:2: key "mcp.max_concurrent": want an integer, got "7" (a string)`,
				`d.toml:3: key "mcp.bind": want a string, got 8731 (an integer)`,
				`d.toml:5: key "limits.mcp_max_rows": want an integer, got true (a boolean)`}},
		{"list of the wrong type", "e.toml", "[mcp]\ntools = [\"core\", 3]\n",
			[]string{`e.toml:2: key "mcp.tools": want a list of strings, got 3 (an integer) in the list`}},
		{"command-line only key", "f.toml", "json_run = true\n",
			[]string{`f.toml:1: key "json_run" is command-line only (--json-run), not a config key`}},
		{"custom bundle not a list", "g.toml", "[mcp.bundles]\nvoice = \"core\"\n",
			[]string{`g.toml:2: key "mcp.bundles.voice": want a list of tool or bundle names, got "core" (a string)`}},
		{"yaml nesting", "h.yaml", "mcp:\n  tools: [core]\n  transprot: http\nanalysis:\n  loss_threshold: high\n",
			[]string{`h.yaml:3: unknown key "mcp.transprot" (did you mean "transport"?)`,
				`h.yaml:5: key "analysis.loss_threshold": want a number, got "high" (a string)`}},
		{"yaml whole section misspelt", "i.yml", "analysys:\n  pdd_threshold: 3\n",
			[]string{`i.yml:2: unknown key "analysys.pdd_threshold" (did you mean "analysis.pdd_threshold"?)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(tc.file, tc.text)
			_, err := loadConfig([]string{"--config", path}, nil, &bytes.Buffer{})
			if err == nil {
				t.Fatal("loaded; want a usage error")
			}
			if _, ok := err.(usageError); !ok {
				t.Errorf("%T is not a usage error (exit 2)", err)
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = filepath.Join(dir, w)
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

// TestBundleSectionMistakesNameTheFileLine: [bundles.<id>] decodes through
// env.Decode strictly; an unknown key or a wrong type there fails startup
// with the key and its line, the valid keys listed.
func TestBundleSectionMistakesNameTheFileLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.toml")
	text := "[mcp]\ntools = [\"t\"]\n\n[bundles.t]\ngreeting = \"hi\"\ngreetng = \"typo\"\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig([]string{"--config", path}, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var into struct {
		Greeting string `json:"greeting"`
		Count    int    `json:"count"`
	}
	err = cfg.BundleDecoder("t")(&into)
	want := path + `:6: unknown key "bundles.t.greetng" (did you mean "greeting"?); [bundles.t] reads count, greeting`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}

	typed := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(typed, []byte("bundles:\n  t:\n    count: many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = loadConfig([]string{"--config", typed}, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.BundleDecoder("t")(&into)
	want = typed + `:3: key "bundles.t.count": want an integer, got string`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}

	// Through Run: the bundle's refusal is a startup error, exit 2.
	var stderr syncBuffer
	code := Run(context.Background(), []string{"-N", "--mcp", "--config", path}, []sdk.Bundle{&testBundle{id: "t"}},
		IO{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &stderr})
	if code != exitUsage || !strings.Contains(stderr.String(), path+`:6: unknown key "bundles.t.greetng"`) {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}

	// A section for a bundle that is not compiled in would be ignored.
	orphan := filepath.Join(dir, "o.toml")
	if err := os.WriteFile(orphan, []byte("[mcp]\ntools = [\"t\"]\n[bundles.tt]\ngreeting = \"hi\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr2 syncBuffer
	code = Run(context.Background(), []string{"-N", "--mcp", "--config", orphan}, []sdk.Bundle{&testBundle{id: "t"}},
		IO{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &stderr2})
	want = orphan + `:3: [bundles.tt]: no bundle "tt" is compiled in (did you mean "t"?); the bundles are t`
	if code != exitUsage || !strings.Contains(stderr2.String(), want) {
		t.Errorf("exit %d, stderr %q; want %s", code, stderr2.String(), want)
	}
}

// TestSettingsHoldEveryOption: every option's key is a Settings field of
// the option's type, and every Settings leaf but the free sections is an
// option, so a setting cannot be read from a file and then ignored.
func TestSettingsHoldEveryOption(t *testing.T) {
	byKey := map[string]bool{}
	for _, o := range options {
		if byKey[o.key] {
			t.Errorf("key %s is two options", o.key)
		}
		byKey[o.key] = true
	}
	for key := range settingsFields {
		if key == "bundles" || key == "mcp.bundles" || key == codecIeSection {
			continue
		}
		if !byKey[key] {
			t.Errorf("Settings field %s has no option (no flag, default or help)", key)
		}
	}
	cfg, err := loadConfig(nil, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MCP.MaxConcurrent != 100 || cfg.Analysis.PDDThreshold != 11 || cfg.MCP.Transport != "stdio" ||
		len(cfg.MCP.Tools) != 1 || cfg.MCP.Tools[0] != "full" || cfg.Media.OneWayDelay != -1 {
		t.Errorf("defaults not in Settings: %+v", cfg.Settings)
	}
}
