package sdk

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func dirFiles(contents ...string) []NewFile {
	var out []NewFile
	for i, c := range contents {
		c := c
		out = append(out, NewFile{Name: []string{"a.md", "b.json", "c.bin"}[i], Write: func(w io.Writer) error {
			_, err := io.WriteString(w, c)
			return err
		}})
	}
	return out
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestWriteNewDirWritesTheFilesInANewFolder: the folder is made beneath the
// root and holds exactly the files given, with their bytes.
func TestWriteNewDirWritesTheFilesInANewFolder(t *testing.T) {
	dir := t.TempDir()
	got, err := NewFileRoot(dir, nil).WriteNewDir("pkg", dirFiles("hello", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (WrittenFile{"a.md", 5}) || got[1] != (WrittenFile{"b.json", 2}) {
		t.Fatalf("written %+v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pkg", "a.md")); string(b) != "hello" {
		t.Errorf("a.md holds %q", b)
	}
	if st, err := os.Lstat(filepath.Join(dir, "pkg")); err != nil || !st.IsDir() {
		t.Errorf("pkg: %v %v", st, err)
	}
}

// TestWriteNewDirRefusesATakenName: a file, a folder, a dangling symlink
// and a symlink to a folder of the root all hold the name: refused
// file_refused, nothing written anywhere.
func TestWriteNewDirRefusesATakenName(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)
	os.Mkdir(filepath.Join(dir, "victim"), 0o755)
	os.Symlink("nowhere", filepath.Join(dir, "dangling"))
	os.Symlink("victim", filepath.Join(dir, "link"))
	r := NewFileRoot(dir, nil)
	for _, name := range []string{"file", "folder", "dangling", "link"} {
		_, err := r.WriteNewDir(name, dirFiles("x"))
		if e := AsError(err); e == nil || e.StableKind() != KindFileRefused || !strings.Contains(e.Message, "taken") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := entries(t, filepath.Join(dir, "victim")); len(n) != 0 {
		t.Errorf("victim holds %v", n)
	}
	if n := entries(t, filepath.Join(dir, "folder")); len(n) != 0 {
		t.Errorf("folder holds %v", n)
	}
}

// TestWriteNewDirRemovesAHalfWrittenFolder: the second file's writer
// fails: the first file and the folder are removed, the name is free.
func TestWriteNewDirRemovesAHalfWrittenFolder(t *testing.T) {
	dir := t.TempDir()
	files := dirFiles("one", "two")
	files[1].Write = func(w io.Writer) error {
		io.WriteString(w, "partial")
		return errors.New("disk full")
	}
	_, err := NewFileRoot(dir, nil).WriteNewDir("pkg", files)
	if e := AsError(err); e == nil || e.Code != CodeInternal || strings.Contains(e.Message, dir) {
		t.Fatalf("got %v", err)
	}
	if n := entries(t, dir); len(n) != 0 {
		t.Errorf("root holds %v after the failure", n)
	}
}

// TestWriteNewDirRefusesAFolderSwappedForASymlink: between the mkdir and
// the open, the new folder is replaced by a symlink to another folder of
// the root, or to one outside it: refused, nothing written through it.
func TestWriteNewDirRefusesAFolderSwappedForASymlink(t *testing.T) {
	outside := t.TempDir()
	for _, target := range []string{"victim", outside} {
		dir := t.TempDir()
		os.Mkdir(filepath.Join(dir, "victim"), 0o755)
		afterMkdir = func() {
			os.Remove(filepath.Join(dir, "pkg"))
			os.Symlink(target, filepath.Join(dir, "pkg"))
		}
		_, err := NewFileRoot(dir, nil).WriteNewDir("pkg", dirFiles("x"))
		afterMkdir = nil
		if e := AsError(err); e == nil || e.StableKind() != KindFileRefused {
			t.Errorf("swap to %s: %v", target, err)
		}
		if n := entries(t, filepath.Join(dir, "victim")); len(n) != 0 {
			t.Errorf("victim holds %v", n)
		}
		if n := entries(t, outside); len(n) != 0 {
			t.Errorf("outside holds %v", n)
		}
	}
}

// TestWriteNewDirChecksNamesFirst: a folder or file name that is not one
// path component is refused before anything is made; a disabled root
// refuses.
func TestWriteNewDirChecksNamesFirst(t *testing.T) {
	dir := t.TempDir()
	r := NewFileRoot(dir, nil)
	bad := dirFiles("x")
	bad[0].Name = "../x"
	for _, tc := range []struct {
		name  string
		files []NewFile
	}{{"../pkg", dirFiles("x")}, {"a/b", dirFiles("x")}, {"pkg", bad}} {
		if _, err := r.WriteNewDir(tc.name, tc.files); AsError(err) == nil || AsError(err).Code != CodeInvalidParams {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if n := entries(t, dir); len(n) != 0 {
		t.Errorf("root holds %v", n)
	}
	if _, err := (FileRoot{}).WriteNewDir("pkg", dirFiles("x")); AsError(err) == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("disabled root: %v", err)
	}
}
