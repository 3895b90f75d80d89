package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFileRootListListsRegularFilesOnly: the sandbox holds a.txt and
// input.pcap (regular files), a directory, and four symlinks (one to a file
// inside, one escaping, one dangling, one to the root): only the two
// regular files are listed, with their sizes, sorted; the four links and the
// directory are counted, never followed (the escaping link's target is not
// stat'ed through), and the file in the subdirectory is not listed.
func TestFileRootListListsRegularFilesOnly(t *testing.T) {
	root, _, _ := sandbox(t)
	l, err := NewFileRoot(root, nil).List(0)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileEntry{{Name: "a.txt", Size: 5}, {Name: "input.pcap", Size: 7}}
	if !slices.Equal(l.Files, want) || l.Symlinks != 4 || l.Other != 1 || l.Truncated {
		t.Errorf("List = %+v, want files %v, 4 symlinks, 1 other, not truncated", l, want)
	}
}

// TestFileRootListIsBounded: past max regular files the listing stops and
// says so; what it holds is sorted.
func TestFileRootListIsBounded(t *testing.T) {
	root := t.TempDir()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", 4-i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := NewFileRoot(root, nil)
	l, err := r.List(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files) != 3 || !l.Truncated || !slices.IsSortedFunc(l.Files, func(a, b FileEntry) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	}) {
		t.Errorf("List(3) = %+v, want 3 sorted files, truncated", l)
	}
	if l, _ := r.List(5); len(l.Files) != 5 || l.Truncated {
		t.Errorf("List(5) = %+v, want all 5, not truncated", l)
	}
}

// TestFileRootListDisabled: without a root, List refuses like every method.
func TestFileRootListDisabled(t *testing.T) {
	if _, err := (FileRoot{}).List(0); code(err) != CodeInvalidParams {
		t.Errorf("List without a root: %v, want -32602", err)
	}
}
