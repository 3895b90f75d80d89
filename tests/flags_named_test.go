package tests

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// flagMention is a --flag as prose names it: after a start, space, quote,
// backquote, bracket or parenthesis, not inside a word (a MIME boundary,
// a Via branch, a command's long option glued to a path).
var flagMention = regexp.MustCompile("(?:^|[\\s`'\"(\\[|,])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\\b")

// foreignFlags are other programs' options the docs show on a line that
// names the program; anywhere else they would be a sipnab flag.
var foreignFlags = map[string][]string{
	"transport": {"claude mcp add"},
	"header":    {"claude mcp add", "mcp-remote"},
	"strict":    {"Inspector"},
}

// acceptedFlags parses `sipnab --help`: every flag the binary defines.
func acceptedFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, _ := exec.Command(bin, "--help").Output()
	got := map[string]bool{}
	// "  -I, --input FILE" or "      --hep-allow CIDR"
	re := regexp.MustCompile(`^ +(?:-([A-Za-z]), )?--([a-z][a-z0-9-]*)`)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			if m[1] != "" {
				got[m[1]] = true
			}
			got[m[2]] = true
		}
	}
	if len(got) < 40 || !got["mcp-file-root"] {
		t.Fatalf("--help listed %d flags (mcp-file-root: %v):\n%s", len(got), got["mcp-file-root"], out)
	}
	return got
}

type mention struct{ flag, where string }

// TestEveryFlagNamedExists: every --flag named in README.md, docs/ and the
// Go string literals of the product (messages, tool descriptions and struct
// tags, the core/reference pages) is a flag the binary accepts.
// A message that sends an operator to a flag that does not
// exist is a dead end.
func TestEveryFlagNamedExists(t *testing.T) {
	ok := acceptedFlags(t)
	root := testcap.Root()
	var found []mention
	scanText := func(where, text string) {
		for i, line := range strings.Split(text, "\n") {
			for _, m := range flagMention.FindAllStringSubmatch(line, -1) {
				if ctx, foreign := foreignFlags[m[1]]; foreign {
					named := false
					for _, c := range ctx {
						named = named || strings.Contains(line, c)
					}
					if named {
						continue
					}
				}
				found = append(found, mention{m[1], where + ":" + strconv.Itoa(i+1)})
			}
		}
	}
	// Docs: README.md and every Markdown file under docs/.
	docs := []string{filepath.Join(root, "README.md")}
	_ = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return nil
	})
	for _, p := range docs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		scanText(rel, string(b))
	}
	// Go string literals of the product (not tests, not testdata).
	goFiles := 0
	fset := token.NewFileSet()
	for _, dir := range []string{"core", "host", "sdk", "bundles", "cmd"} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Errorf("parsing %s: %v", p, err)
				return nil
			}
			goFiles++
			rel, _ := filepath.Rel(root, p)
			ast.Inspect(f, func(n ast.Node) bool {
				lit, isLit := n.(*ast.BasicLit)
				if !isLit || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				scanText(rel+":"+strconv.Itoa(fset.Position(lit.Pos()).Line), s)
				return true
			})
			return nil
		})
	}
	if goFiles < 100 || len(docs) < 5 {
		t.Fatalf("scanned %d Go files and %d docs: the walk is broken", goFiles, len(docs))
	}
	missing := map[string][]string{}
	for _, m := range found {
		if !ok[m.flag] {
			missing[m.flag] = append(missing[m.flag], m.where)
		}
	}
	names := make([]string, 0, len(missing))
	for f := range missing {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		w := missing[f]
		if len(w) > 5 {
			w = append(w[:5:5], "…")
		}
		t.Errorf("--%s is named but the binary does not accept it: %s", f, strings.Join(w, ", "))
	}
	t.Logf("%d mentions of %d accepted flags checked", len(found), len(ok))
}

// TestBundlesOpenFilesOnlyThroughTheFileRoot: a bundle never opens,
// creates or stats a file by name itself: every file a tool
// names goes through sdk.FileRoot (Open, ReadFile, WriteNew), the one
// function that opens beneath the root and checks the open descriptor.
func TestBundlesOpenFilesOnlyThroughTheFileRoot(t *testing.T) {
	banned := map[string]bool{"Open": true, "OpenFile": true, "ReadFile": true, "WriteFile": true, "Create": true,
		"Stat": true, "Lstat": true, "ReadDir": true, "Readlink": true, "OpenRoot": true, "Remove": true, "Rename": true}
	fset := token.NewFileSet()
	files := 0
	_ = filepath.WalkDir(filepath.Join(testcap.Root(), "bundles"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("parsing %s: %v", p, err)
			return nil
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && banned[sel.Sel.Name] {
				t.Errorf("%s: os.%s in a bundle; name files through sdk.FileRoot", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if files < 20 {
		t.Fatalf("scanned %d bundle files: the walk is broken", files)
	}
}
