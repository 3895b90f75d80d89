// Package testcap locates the public captures and their tshark reference
// answers for tests. They live in the repository, in testdata/captures
// (public/ and truth/, provenance in testdata/captures/README.md), so a fresh
// clone runs every test with nothing beside it.
package testcap

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// Root returns the repository root (the directory holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Dir returns testdata/captures under the repository root.
func Dir() string { return filepath.Join(Root(), "testdata", "captures") }

// Public returns the path of a public capture by file name.
func Public(name string) string { return filepath.Join(Dir(), "public", name) }

// Truth returns the path of the tshark reference answer for a capture.
func Truth(name string) string { return filepath.Join(Dir(), "truth", name+".json") }

// PublicNames lists every file in the public capture directory, sorted.
func PublicNames() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(Dir(), "public"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// LoadTruth decodes the tshark reference answer for a capture (see Truth)
// into a T, the subset of testdata/captures/truth/*.json a test reads; it
// fails the test when the file is missing or does not decode.
func LoadTruth[T any](tb testing.TB, name string) T {
	tb.Helper()
	var v T
	b, err := os.ReadFile(Truth(name))
	if err != nil {
		tb.Fatalf("reading the truth of %s: %v", name, err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("decoding the truth of %s: %v", name, err)
	}
	return v
}

// DefaultParallel raises how many parallel tests (t.Parallel) run at once
// to n, unless -parallel was given or GOMAXPROCS is already n or more. Call
// it from TestMain before m.Run, in a package whose parallel tests mostly
// wait on another process (sipnab, tshark): go test's default, GOMAXPROCS,
// leaves a 2-core machine idle while they wait.
func DefaultParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	f := flag.Lookup("test.parallel")
	if given || f == nil {
		return
	}
	if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur >= n {
		return
	}
	_ = f.Value.Set(strconv.Itoa(n))
}
