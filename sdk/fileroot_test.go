package sdk

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sandbox builds a root holding a file, a subdirectory, a symlink to a file
// inside, a symlink escaping to a file outside, a dangling symlink, a
// symlink to the root itself and a capture the server reads.
func sandbox(t *testing.T) (root, outside, input string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "a.txt"), "hello")
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "sub", "deep.txt"), "deep")
	write(filepath.Join(outside, "secret.txt"), "outside")
	link("a.txt", filepath.Join(root, "inner-link"))
	link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape"))
	link(filepath.Join(outside, "nothing-here"), filepath.Join(root, "dangling"))
	link(".", filepath.Join(root, "self"))
	input = filepath.Join(root, "input.pcap")
	write(input, "capture")
	return root, outside, input
}

func code(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func TestFileRootDisabled(t *testing.T) {
	var r FileRoot
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"open", func() error { _, err := r.Open("a.txt"); return err }},
		{"write new", func() error { _, err := r.WriteNew("a.txt", nil); return err }},
		{"read file", func() error { _, err := r.ReadFile("a.txt", 0); return err }},
		{"bad name still says disabled", func() error { _, err := r.Open("../x"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if code(err) != CodeInvalidParams || !strings.HasPrefix(err.Error(), "file tools are disabled") {
				t.Errorf("got %v (code %d), want -32602 starting \"file tools are disabled\"", err, code(err))
			}
		})
	}
	if NewEnv(EnvOptions{}).FileRoot().Enabled() {
		t.Error("an Env without a root reports one")
	}
}

func TestFileRootOpen(t *testing.T) {
	root, outside, _ := sandbox(t)
	r := NewEnv(EnvOptions{FileRoot: NewFileRoot(root, nil)}).FileRoot()
	for _, tc := range []struct {
		name, file string
		want       string // the content read, or "" for a refusal
		refusal    string
	}{
		{"plain file", "a.txt", "hello", ""},
		{"symlink inside", "inner-link", "hello", ""},
		{"missing", "none.txt", "", "no such file in the file root"},
		{"symlink escaping", "escape", "", "resolves outside the file root"},
		{"dangling symlink out of the root", "dangling", "", "resolves outside the file root"},
		{"symlink to the root", "self", "", "is a directory, not a regular file"},
		{"directory", "sub", "", "is a directory, not a regular file"},
		{"empty", "", "", "a file name is required"},
		{"dot", ".", "", "without a directory"},
		{"dotdot", "..", "", "without a directory"},
		{"parent path", "../a.txt", "", "without a directory"},
		{"subdirectory", "sub/deep.txt", "", "without a directory"},
		{"backslash", `sub\deep.txt`, "", "without a directory"},
		{"absolute", filepath.Join(outside, "secret.txt"), "", "without a directory"},
		{"drive letter", "C:secret.txt", "", "without a directory"},
		{"control character", "a\n.txt", "", "control character"},
		{"long", strings.Repeat("x", 256), "", "longer than 255 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := r.Open(tc.file)
			if tc.refusal != "" {
				if f != nil {
					f.Close()
				}
				if code(err) != CodeInvalidParams || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("got %v; want -32602 mentioning %q", err, tc.refusal)
				}
				if !strings.Contains(tc.file, outside) && (strings.Contains(err.Error(), root) || strings.Contains(err.Error(), outside)) {
					t.Errorf("error %q shows a server path", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v; want %q", err, tc.want)
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			if string(b) != tc.want {
				t.Errorf("read %q; want %q", b, tc.want)
			}
		})
	}
}

// TestFileRootNamesRefusedBeforeAnyFilesystemAccess: a root that does not
// exist still answers a bad name with the name refusal, not a filesystem
// error, because the check runs first.
func TestFileRootNamesRefusedBeforeAnyFilesystemAccess(t *testing.T) {
	r := NewFileRoot(filepath.Join(t.TempDir(), "missing"), nil)
	for _, name := range []string{"..", "../x", "/etc/passwd", "a/b", `a\b`, "C:x"} {
		if _, err := r.Open(name); err == nil || !strings.Contains(err.Error(), "without a directory") {
			t.Errorf("read %q: got %v, want the name refusal", name, err)
		}
		if _, err := r.WriteNew(name, nil); err == nil || !strings.Contains(err.Error(), "without a directory") {
			t.Errorf("write %q: got %v, want the name refusal", name, err)
		}
	}
	if _, err := r.Open("ok.txt"); code(err) != CodeInternal || strings.Contains(err.Error(), "missing") {
		t.Errorf("good name under a missing root: got %v, want -32603 without the path", err)
	}
}

func TestFileRootWriteNewRefusals(t *testing.T) {
	root, _, input := sandbox(t)
	// The input is protected by its canonical path even once the file is
	// gone (a write would recreate it).
	gone := filepath.Join(root, "gone.pcap")
	if err := os.WriteFile(gone, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := NewFileRoot(root, []string{input, gone})
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, file, refusal string }{
		{"new name", "new.xml", ""},
		{"existing file", "a.txt", "is taken"},
		{"existing directory", "sub", "is taken"},
		{"symlink inside", "inner-link", "is taken"},
		{"symlink escaping", "escape", "is taken"},
		{"dangling symlink", "dangling", "is taken"},
		{"an input", "input.pcap", "a capture this server reads"},
		{"a removed input", "gone.pcap", "a capture this server reads"},
		{"dotdot", "..", "without a directory"},
		{"path", "sub/new.xml", "without a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := r.WriteNew(tc.file, []byte("new"))
			if tc.refusal == "" {
				if b, rerr := os.ReadFile(filepath.Join(root, tc.file)); err != nil || n != 3 || string(b) != "new" {
					t.Errorf("got %d, %v (file %q, %v); want 3 bytes written", n, err, b, rerr)
				}
				return
			}
			if code(err) != CodeInvalidParams || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("got %d, %v; want -32602 mentioning %q", n, err, tc.refusal)
			}
		})
	}
	// The dangling symlink's target was not created.
	if _, err := os.Lstat(filepath.Join(filepath.Dir(root), "nothing-here")); err == nil {
		t.Error("a write followed the dangling symlink")
	}
}

func TestFileRootWriteNew(t *testing.T) {
	root, outside, _ := sandbox(t)
	r := NewFileRoot(root, nil)
	n, err := r.WriteNew("out.xml", []byte("<scenario/>"))
	if err != nil || n != 11 {
		t.Fatalf("got %d, %v; want 11 bytes written", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "out.xml")); string(b) != "<scenario/>" {
		t.Errorf("file holds %q", b)
	}
	if _, err := r.WriteNew("out.xml", []byte("again")); code(err) != CodeInvalidParams || !strings.Contains(err.Error(), "is taken") {
		t.Errorf("second write: got %v, want the taken refusal", err)
	}
	if _, err := r.WriteNew("dangling", []byte("x")); err == nil {
		t.Error("wrote through a dangling symlink")
	}
	if _, err := os.Stat(filepath.Join(outside, "nothing-here")); err == nil {
		t.Error("the dangling symlink's target was created")
	}
}

// TestFileRootWriteNewFromStreamsAndRemovesAFailedFile: the streaming
// write counts what it wrote, refuses a taken name like WriteNew, and a
// producer that fails leaves no file behind and its own error standing.
func TestFileRootWriteNewFromStreamsAndRemovesAFailedFile(t *testing.T) {
	root, _, _ := sandbox(t)
	r := NewFileRoot(root, nil)
	n, err := r.WriteNewFrom("stream.bin", func(w io.Writer) error {
		for range 3 {
			if _, err := w.Write([]byte("abcd")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || n != 12 {
		t.Fatalf("got %d, %v; want 12 bytes", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "stream.bin")); string(b) != "abcdabcdabcd" {
		t.Errorf("file holds %q", b)
	}
	if _, err := r.WriteNewFrom("stream.bin", func(io.Writer) error { return nil }); code(err) != CodeInvalidParams {
		t.Errorf("taken name: got %v", err)
	}
	_, err = r.WriteNewFrom("half.bin", func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return Internal("the producer failed")
	})
	if err == nil || !strings.Contains(err.Error(), "the producer failed") {
		t.Errorf("got %v, want the producer's error", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "half.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("half-written file left behind: %v", err)
	}
}

func TestFileRootReadFile(t *testing.T) {
	root, _, _ := sandbox(t)
	r := NewFileRoot(root, nil)
	if b, err := r.ReadFile("inner-link", 5); err != nil || string(b) != "hello" {
		t.Errorf("got %q, %v; want hello", b, err)
	}
	if _, err := r.ReadFile("a.txt", 4); code(err) != CodeInvalidParams || !strings.Contains(err.Error(), "read limit") {
		t.Errorf("over the limit: got %v, want a refusal naming the read limit", err)
	}
	if _, err := r.ReadFile("sub", 0); code(err) != CodeInvalidParams || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: got %v, want a refusal", err)
	}
	if _, err := r.ReadFile("escape", 0); code(err) != CodeInvalidParams || !strings.Contains(err.Error(), "outside the file root") {
		t.Errorf("escape: got %v, want a refusal", err)
	}
}

// TestFileRootThroughASymlinkedRoot: the root itself may be a symlink; the
// comparison is between fully resolved paths.
func TestFileRootThroughASymlinkedRoot(t *testing.T) {
	root, _, _ := sandbox(t)
	alias := filepath.Join(t.TempDir(), "root-alias")
	if err := os.Symlink(root, alias); err != nil {
		t.Fatal(err)
	}
	r := NewFileRoot(alias, nil)
	if b, err := r.ReadFile("a.txt", 0); err != nil || string(b) != "hello" {
		t.Errorf("got %q, %v; want hello", b, err)
	}
	if _, err := r.Open("escape"); err == nil {
		t.Error("escape through an aliased root accepted")
	}
}

// TestFileRootEscapeWording pins the os package's wording of a path that
// leaves an os.Root, which open turns into "resolves outside the file root".
func TestFileRootEscapeWording(t *testing.T) {
	root, _, _ := sandbox(t)
	rt, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, err = rt.Open("escape")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Err.Error() != errPathEscapes {
		t.Fatalf("os.Root on an escaping symlink: got %v, want a PathError %q", err, errPathEscapes)
	}
}
