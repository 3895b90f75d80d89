package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// guideFile is a file the guide tells the author to write: a line
// "File `<path>`...:" then a fenced block (``` or ~~~).
var guideFile = regexp.MustCompile("(?s)File `([^`]+)`[^\n]*:\n\n(```|~~~)[a-z]*\n(.*?)\n(?:```|~~~)\n")

// guideCommand is a command block of the guide's walk-through (a fence with
// no language).
var guideCommand = regexp.MustCompile("(?s)\n```\n(go [^\n]*)\n```\n")

// TestAddingABundleAsTheGuideSays follows the walk-through of
// docs/adding-a-bundle.md in a copy of the repository's tracked files: it
// writes the files the guide shows, adds the bundle to bundles/all as the
// guide says, runs the guide's commands (generate, then build and test),
// and fails if they fail or if anything changed outside the new bundle's
// folder (its page included: bundles/<id>/README.md) and
// bundles/all/all.go.
func TestAddingABundleAsTheGuideSays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a copy of the repository")
	}
	root := testcap.Root()
	guide, err := os.ReadFile(filepath.Join(root, "docs", "adding-a-bundle.md"))
	if err != nil {
		t.Fatal(err)
	}
	walk := string(guide)
	if i := strings.Index(walk, "\n## Walk-through: a one-tool bundle\n"); i >= 0 {
		walk = walk[i:]
	} else {
		t.Fatal("docs/adding-a-bundle.md has no section \"## Walk-through: a one-tool bundle\"")
	}
	files := guideFile.FindAllStringSubmatch(walk, -1)
	cmds := guideCommand.FindAllStringSubmatch(walk, -1)
	if len(files) < 2 || len(cmds) != 2 {
		t.Fatalf("the walk-through shows %d files and %d commands, want a bundle's files and its page, and two commands", len(files), len(cmds))
	}

	// A copy of the tracked files, committed so that git names what the
	// walk-through changed.
	dir := t.TempDir()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			continue // deleted in the worktree
		}
		info, _ := os.Stat(filepath.Join(root, rel))
		writeGuideFile(t, filepath.Join(dir, rel), data, info.Mode().Perm())
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=walk", "-c", "user.email=walk@example.invalid", "-C", dir}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "base")

	// 1. The bundle's files, as the guide shows them.
	var bundle string
	for _, f := range files {
		rel := f[1]
		if strings.HasPrefix(rel, "bundles/") && bundle == "" {
			bundle = strings.Split(rel, "/")[1]
		}
		writeGuideFile(t, filepath.Join(dir, rel), []byte(f[3]+"\n"), 0o644)
	}
	if bundle == "" {
		t.Fatal("the walk-through writes no file under bundles/")
	}
	// 2. The bundle in bundles/all: its import and, last, its Bundle.
	allGo := filepath.Join(dir, "bundles", "all", "all.go")
	src, err := os.ReadFile(allGo)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	imp := "\t\"github.com/sipnab/sipnab/bundles/" + bundle + "\"\n"
	if i := strings.LastIndex(s, "\t\"github.com/sipnab/sipnab/bundles/"); i >= 0 {
		j := i + strings.Index(s[i:], "\n") + 1
		s = s[:j] + imp + s[j:]
	}
	last := strings.LastIndex(s, "\t}\n}")
	if last < 0 || !strings.Contains(s, imp) {
		t.Fatal("bundles/all/all.go is not the list the guide describes")
	}
	s = s[:last] + "\t\t" + bundle + ".Bundle{},\n" + s[last:]
	writeGuideFile(t, allGo, []byte(s), 0o644)

	// 3 and 4. The guide's commands.
	for _, c := range cmds {
		cmd := exec.Command("sh", "-c", c[1])
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c[1], err, b)
		}
	}

	// Nothing changed but the bundle's folder and the one list.
	var changed []string
	for _, line := range strings.Split(strings.TrimRight(git("status", "--porcelain", "--untracked-files=all"), "\n"), "\n") {
		if len(line) > 3 {
			changed = append(changed, line[3:])
		}
	}
	sort.Strings(changed)
	var outside []string
	for _, p := range changed {
		switch {
		case strings.HasPrefix(p, "bundles/"+bundle+"/"), p == "bundles/all/all.go":
		default:
			outside = append(outside, p)
		}
	}
	if len(outside) > 0 {
		t.Errorf("adding the bundle as the guide says changed %v; want only bundles/%s/ and bundles/all/all.go", outside, bundle)
	}
	golden := false
	for _, p := range changed {
		golden = golden || strings.HasPrefix(p, "bundles/"+bundle+"/testdata/transcripts/")
	}
	t.Logf("the walk-through changed %v", changed)
	if !golden {
		t.Errorf("no golden transcript was recorded in bundles/%s/testdata/transcripts (changed: %v)", bundle, changed)
	}
}

func writeGuideFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}
