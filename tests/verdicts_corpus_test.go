package tests

// The verdict corpus: testdata/verdicts/ holds one small capture per class of
// traffic whose conclusions (states, call metrics, verdicts) have a known
// right answer. Each capture is made by a generator registered here from a
// file tests/verdicts_<class>_test.go, so the bytes in testdata/ are
// reproducible: TestVerdictCorpusMatchesGenerators rebuilds every capture and
// fails when a file differs from its generator (go test ./tests -run
// VerdictCorpus -update rewrites them), and testdata/verdicts/README.md is
// generated from the registrations below.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// verdictCapture is one capture of the corpus.
type verdictCapture struct {
	// Name is the file name under testdata/verdicts/.
	Name string
	// Class is the class of traffic, one line.
	Class string
	// Doc says what the capture holds and what a right answer says of it.
	Doc string
	// Build writes the capture to path (pcap or pcapng, deterministic bytes).
	Build func(t *testing.T, path string)
}

// verdictCorpus is filled by the init functions of tests/verdicts_*_test.go.
var verdictCorpus []verdictCapture

func registerVerdictCapture(c verdictCapture) { verdictCorpus = append(verdictCorpus, c) }

// verdictPath returns the path of a corpus capture in the repository.
func verdictPath(name string) string {
	return filepath.Join(testcap.Root(), "testdata", "verdicts", name)
}

func sortedVerdictCorpus() []verdictCapture {
	out := append([]verdictCapture(nil), verdictCorpus...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func verdictReadme() []byte {
	var b strings.Builder
	b.WriteString("# Verdict corpus\n\n")
	b.WriteString("One small capture per class of traffic whose states, call metrics and verdicts\n")
	b.WriteString("have a known right answer. Generated: each file is written by the generator\n")
	b.WriteString("registered in `tests/verdicts_*_test.go` (`go test ./tests -run VerdictCorpus -update`\n")
	b.WriteString("rewrites the files and this page; the test fails when either drifts).\n\n")
	for _, c := range sortedVerdictCorpus() {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n%s\n\n", c.Name, c.Class, strings.TrimSpace(c.Doc))
	}
	return []byte(b.String())
}

func TestVerdictCorpusMatchesGenerators(t *testing.T) {
	dir := filepath.Join(testcap.Root(), "testdata", "verdicts")
	seen := map[string]bool{}
	for _, c := range sortedVerdictCorpus() {
		if seen[c.Name] {
			t.Fatalf("two generators write %s", c.Name)
		}
		seen[c.Name] = true
		if c.Class == "" || c.Doc == "" || c.Build == nil {
			t.Fatalf("%s: class, doc and generator are required", c.Name)
		}
		tmp := filepath.Join(t.TempDir(), c.Name)
		c.Build(t, tmp)
		got, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, c.Name))
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, c.Name), got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v (go test ./tests -run VerdictCorpus -update writes it)", c.Name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/verdicts/%s differs from its generator (go test ./tests -run VerdictCorpus -update)", c.Name)
		}
	}
	readme := filepath.Join(dir, "README.md")
	if *update && len(verdictCorpus) > 0 {
		if err := os.WriteFile(readme, verdictReadme(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if len(verdictCorpus) == 0 {
		return
	}
	have, err := os.ReadFile(readme)
	if err != nil || !bytes.Equal(have, verdictReadme()) {
		t.Errorf("testdata/verdicts/README.md is stale (go test ./tests -run VerdictCorpus -update)")
	}
	// No file in the folder without a generator.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "README.md" && !seen[e.Name()] {
			t.Errorf("testdata/verdicts/%s has no generator", e.Name())
		}
	}
}
