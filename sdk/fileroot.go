package sdk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FileRoot is the one file sandbox (--mcp-file-root) of every tool argument
// and resource naming a file (mcp-surface §2.8). The host builds it once and
// hands the same value to every bundle ([Env.FileRoot]) and to the file
// resources, so there is one sandbox, not two that can drift apart.
//
// A name is one path component: a separator, "..", a root prefix or a drive
// letter is refused before any filesystem access. The fully resolved path
// (symlinks followed) must stay inside the fully resolved root. A write
// refuses any name already taken in the root, a dangling symlink included,
// and never lands on a capture the server reads (-I inputs, compared by
// canonical path).
//
// The zero FileRoot is disabled: every method refuses with -32602 "file
// tools are disabled…". Errors never show the server's paths.
type FileRoot struct {
	dir       string
	protected []string
}

// MaxFileNameBytes bounds a file name (the common filesystem limit).
const MaxFileNameBytes = 255

// NewFileRoot returns the sandbox rooted at dir ("" disables it). protected
// are the paths of the captures the server reads (-I inputs and the files
// found under them): a write never lands on one of them.
func NewFileRoot(dir string, protected []string) FileRoot {
	r := FileRoot{dir: dir}
	for _, p := range protected {
		if c := canonical(p); c != "" {
			r.protected = append(r.protected, c)
		}
	}
	return r
}

// canonical returns p absolute with every symlink resolved, or cleaned and
// absolute when it cannot be resolved (it may not exist any more).
func canonical(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// Enabled reports whether the server was started with a file root.
func (r FileRoot) Enabled() bool { return r.dir != "" }

// Dir returns the root directory as configured ("" when disabled).
func (r FileRoot) Dir() string { return r.dir }

func (r FileRoot) disabled() error {
	return InvalidParams("file tools are disabled: this server was started without --mcp-file-root")
}

// CheckName refuses a name that is not one plain path component: empty, ".",
// "..", a separator (/ or \), a root prefix, a drive letter, a control
// character, or longer than MaxFileNameBytes. It touches no filesystem.
func CheckName(name string) error {
	switch {
	case name == "":
		return InvalidParams("a file name is required")
	case name == "." || name == "..",
		strings.ContainsAny(name, `/\`),
		filepath.IsAbs(name),
		filepath.VolumeName(name) != "",
		len(name) >= 2 && name[1] == ':':
		return InvalidParams("file %q: name one file in the file root, without a directory", clip(name))
	case len(name) > MaxFileNameBytes:
		return InvalidParams("file name is longer than %d bytes", MaxFileNameBytes)
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return InvalidParams("file %q: the name holds a control character", clip(name))
		}
	}
	return nil
}

// clip bounds a caller-given name echoed in an error.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// realRoot resolves the root fully.
func (r FileRoot) realRoot() (string, error) {
	abs, err := filepath.Abs(r.dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", Internal("resolving the file root: %v", hidePath(err, r.dir, "the file root"))
	}
	return abs, nil
}

// hidePath words a filesystem error without the server's path.
func hidePath(err error, path, as string) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + " " + as + ": " + pe.Err.Error()
	}
	return strings.ReplaceAll(err.Error(), path, as)
}

// inside reports whether path lies inside root (both fully resolved).
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// ResolveInRoot resolves a caller-named existing file for reading: the name
// is checked first (CheckName), then the fully resolved path must exist and
// stay inside the fully resolved root. It returns the resolved path.
func (r FileRoot) ResolveInRoot(name string) (string, error) {
	if !r.Enabled() {
		return "", r.disabled()
	}
	if err := CheckName(name); err != nil {
		return "", err
	}
	root, err := r.realRoot()
	if err != nil {
		return "", err
	}
	joined := filepath.Join(root, name)
	real, err := filepath.EvalSymlinks(joined)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", InvalidParams("file %q: no such file in the file root", clip(name))
		}
		return "", InvalidParams("file %q: %s", clip(name), hidePath(err, joined, name))
	}
	if !inside(root, real) {
		return "", InvalidParams("file %q: resolves outside the file root", clip(name))
	}
	return real, nil
}

// ResolveInRootForWrite resolves a caller-named new file: the name is
// checked first (CheckName); any name already taken in the root is refused,
// a dangling symlink included (lstat: a link is never followed); and the
// path may not be a capture the server reads. It returns the path to create;
// create it with O_CREATE|O_EXCL (or use WriteNew) so a name taken in the
// meantime still fails.
func (r FileRoot) ResolveInRootForWrite(name string) (string, error) {
	if !r.Enabled() {
		return "", r.disabled()
	}
	if err := CheckName(name); err != nil {
		return "", err
	}
	root, err := r.realRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, name)
	if filepath.Dir(path) != root {
		return "", InvalidParams("file %q: resolves outside the file root", clip(name))
	}
	if _, err := os.Lstat(path); err == nil {
		return "", InvalidParams("file %q is taken in the file root: an existing name is never overwritten", clip(name))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", InvalidParams("file %q: %s", clip(name), hidePath(err, path, name))
	}
	for _, p := range r.protected {
		if p == path {
			return "", InvalidParams("file %q is a capture this server reads: inputs are never overwritten", clip(name))
		}
	}
	return path, nil
}

// WriteNew creates the new file name in the root and writes data to it,
// with ResolveInRootForWrite's checks and an exclusive create (O_EXCL never
// follows a link and fails on any existing name). A half-written file is
// removed. It returns the bytes written.
func (r FileRoot) WriteNew(name string, data []byte) (int, error) {
	path, err := r.ResolveInRootForWrite(name)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return 0, InvalidParams("file %q is taken in the file root: an existing name is never overwritten", clip(name))
		}
		return 0, Internal("creating %q in the file root: %s", clip(name), hidePath(err, path, name))
	}
	n, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(path)
		return 0, Internal("writing %q in the file root: %s", clip(name), hidePath(errors.Join(werr, cerr), path, name))
	}
	return n, nil
}

// ReadFile reads a file of the root through ResolveInRoot, refusing one
// that is not a regular file or is larger than max bytes (max <= 0: no
// bound). The size is checked on the open file and the read is bounded, so
// a file growing meanwhile cannot exceed max.
func (r FileRoot) ReadFile(name string, max int64) ([]byte, error) {
	path, err := r.ResolveInRoot(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, InvalidParams("file %q: %s", clip(name), hidePath(err, path, name))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, Internal("file %q: %s", clip(name), hidePath(err, path, name))
	}
	if !st.Mode().IsRegular() {
		return nil, InvalidParams("file %q is not a regular file", clip(name))
	}
	if max > 0 && st.Size() > max {
		return nil, InvalidParams("file %q is %d bytes, over the %d-byte read limit", clip(name), st.Size(), max)
	}
	rd := io.Reader(f)
	if max > 0 {
		rd = io.LimitReader(f, max+1)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, Internal("reading %q: %s", clip(name), hidePath(err, path, name))
	}
	if max > 0 && int64(len(b)) > max {
		return nil, InvalidParams("file %q is over the %d-byte read limit", clip(name), max)
	}
	return b, nil
}

// String describes the root for logs.
func (r FileRoot) String() string {
	if !r.Enabled() {
		return "disabled"
	}
	return fmt.Sprintf("%s (%d protected inputs)", r.dir, len(r.protected))
}
