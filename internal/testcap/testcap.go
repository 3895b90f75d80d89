// Package testcap locates the public captures and their tshark reference
// answers for tests. They live in the repository, in testdata/captures
// (public/ and truth/, provenance in testdata/captures/README.md), so a fresh
// clone runs every test with nothing beside it.
package testcap

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
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
