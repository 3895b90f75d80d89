package sdk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// FileRoot is the one file sandbox (--mcp-file-root) of every tool argument
// and resource naming a file (mcp-surface §2.8). The host builds it once and
// hands the same value to every bundle ([Env.FileRoot]) and to the file
// resources, so there is one sandbox, not two that can drift apart.
//
// A name is one path component: a separator, "..", a root prefix or a drive
// letter is refused before any filesystem access. Every read and write goes
// through one function (open) that opens the name beneath the root with
// [os.Root] (openat(2) with O_NOFOLLOW on each step, a symlink resolved
// inside the root and refused when it leaves it) and O_NONBLOCK, then checks
// the open descriptor: only a regular file is read. No path is checked and
// then opened by name, so a name swapped for a symlink meanwhile cannot
// escape. A write refuses any name already taken in the root, a dangling
// symlink included, and never lands on a capture the server reads (-I
// inputs, compared by canonical path).
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
	return NotEnabled("", "file tools are disabled: this server was started without --mcp-file-root")
}

// CheckName refuses a name that is not one plain path component: empty, ".",
// "..", a separator (/ or \), a root prefix, a drive letter, a control
// character, or longer than MaxFileNameBytes. It touches no filesystem.
func CheckName(name string) error {
	switch {
	case name == "":
		return fileRefused("a file name is required")
	case name == "." || name == "..",
		strings.ContainsAny(name, `/\`),
		filepath.IsAbs(name),
		filepath.VolumeName(name) != "",
		len(name) >= 2 && name[1] == ':':
		return fileRefused("file %q: name one file in the file root, without a directory", clip(name))
	case len(name) > MaxFileNameBytes:
		return fileRefused("file name is longer than %d bytes", MaxFileNameBytes)
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return fileRefused("file %q: the name holds a control character", clip(name))
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

// realRoot resolves the root fully (for the protected-input comparison
// only: files are opened through [os.Root], never by this path).
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

// errPathEscapes is how [os.Root] words a path that leaves the root (an
// absolute symlink, or one climbing out with ".."). The os package does not
// export it; TestFileRootEscapeWording pins the wording.
const errPathEscapes = "path escapes from parent"

// openFlags are the flags of every open beneath the root: O_NONBLOCK so a
// FIFO without a writer, or a device, cannot block open(2) (the type is
// checked on the open descriptor next; a regular file ignores the flag).
const openFlags = syscall.O_NONBLOCK | syscall.O_CLOEXEC

// open is the one place a file of the root is opened, to read or to create.
// The name is checked first (CheckName, no filesystem
// access); the root directory is opened as an [os.Root] and name is opened
// beneath it: every path step is an openat(2) relative to a directory
// descriptor with O_NOFOLLOW, a symlink is resolved by the os package
// against the root and one leaving it is refused, so a name swapped between
// a file and a symlink pointing out of the root can never be opened outside
// it (there is no check-then-open by name). A file opened to read must be a
// regular file, checked with fstat on the descriptor: a FIFO, a socket, a
// device or a directory is refused without reading.
func (r FileRoot) open(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if !r.Enabled() {
		return nil, r.disabled()
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, Internal("opening the file root: %s", hidePath(err, r.dir, "the file root"))
	}
	defer root.Close()
	f, err := root.OpenFile(name, flag|openFlags, perm)
	if err != nil {
		return nil, r.openErr(name, flag, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Internal("file %q: %s", clip(name), hidePath(err, f.Name(), name))
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fileRefused("file %q is %s, not a regular file: only regular files are read", clip(name), kindOf(st.Mode()))
	}
	return f, nil
}

// openErr words a refused open by the caller's name.
func (r FileRoot) openErr(name string, flag int, err error) error {
	var pe *fs.PathError
	errors.As(err, &pe)
	switch {
	case pe != nil && pe.Err.Error() == errPathEscapes:
		return fileRefused("file %q: resolves outside the file root", clip(name))
	case flag&os.O_EXCL != 0 && errors.Is(err, fs.ErrExist):
		return fileRefused("file %q is taken in the file root: an existing name is never overwritten", clip(name))
	case errors.Is(err, fs.ErrNotExist):
		return fileRefused("file %q: no such file in the file root", clip(name))
	case errors.Is(err, syscall.ENXIO):
		// open(2) of a UNIX socket, or of a device without its driver.
		return fileRefused("file %q is a socket or a device, not a regular file: only regular files are read", clip(name))
	case errors.Is(err, syscall.ELOOP):
		// A symlink loop, or a name swapped while it was resolved.
		return fileRefused("file %q: too many levels of symbolic links, or the name changed while it was opened", clip(name))
	}
	return fileRefused("file %q: %s", clip(name), hidePath(err, name, name))
}

// kindOf names a file type for a refusal.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file (" + m.Type().String() + ")"
}

// Open opens an existing regular file of the root for reading (see open:
// beneath the root, never blocking, type checked on the descriptor). It is
// the only way to read a caller-named file; the caller closes it. Errors
// are -32602 refusals (-32603 for a broken root) that never show the
// server's paths.
func (r FileRoot) Open(name string) (*os.File, error) {
	return r.open(name, os.O_RDONLY, 0)
}

// protectedPath refuses a name that is a capture the server reads (by
// canonical path, so a removed input is protected too: a write would
// recreate it).
func (r FileRoot) protectedPath(name string) error {
	if len(r.protected) == 0 {
		return nil
	}
	root, err := r.realRoot()
	if err != nil {
		return err
	}
	path := filepath.Join(root, name)
	for _, p := range r.protected {
		if p == path {
			return fileRefused("file %q is taken in the file root: it is a capture this server reads, and inputs are never overwritten", clip(name))
		}
	}
	return nil
}

// WriteNew creates the new file name in the root and writes data to it:
// the name is checked (CheckName), may not be a capture the server reads,
// and is created through open with O_CREATE|O_EXCL, which fails on any name
// already taken (a dangling symlink included: O_EXCL never follows a link).
// A half-written file is removed. It returns the bytes written.
func (r FileRoot) WriteNew(name string, data []byte) (int, error) {
	n, err := r.WriteNewFrom(name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return int(n), err
}

// WriteNewFrom is WriteNew for content produced as it is written (a capture
// file too large to build in memory first): write receives the new file,
// created with the same checks as WriteNew, and the file is removed when
// write or the close fails. It returns the bytes written.
func (r FileRoot) WriteNewFrom(name string, write func(io.Writer) error) (int64, error) {
	if !r.Enabled() {
		return 0, r.disabled()
	}
	if err := CheckName(name); err != nil {
		return 0, err
	}
	if err := r.protectedPath(name); err != nil {
		return 0, err
	}
	f, err := r.open(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: f}
	werr := write(cw)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		if root, err := os.OpenRoot(r.dir); err == nil {
			_ = root.Remove(name)
			root.Close()
		}
		if e, ok := werr.(*Error); ok && cerr == nil {
			return 0, e // the producer's own refusal or failure, as it said it
		}
		return 0, Internal("writing %q in the file root: %s", clip(name), hidePath(errors.Join(werr, cerr), f.Name(), name))
	}
	return cw.n, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadFile reads a regular file of the root through Open, refusing one
// larger than max bytes (max <= 0: no bound). The size is checked on the
// open file and the read is bounded, so a file growing meanwhile cannot
// exceed max.
func (r FileRoot) ReadFile(name string, max int64) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, Internal("file %q: %s", clip(name), hidePath(err, f.Name(), name))
	}
	if max > 0 && st.Size() > max {
		return nil, fileRefused("file %q is %d bytes, over the %d-byte read limit", clip(name), st.Size(), max)
	}
	rd := io.Reader(f)
	if max > 0 {
		rd = io.LimitReader(f, max+1)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, Internal("reading %q: %s", clip(name), hidePath(err, f.Name(), name))
	}
	if max > 0 && int64(len(b)) > max {
		return nil, fileRefused("file %q is over the %d-byte read limit", clip(name), max)
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

// fileRefused is the sandbox's refusal of a file name (kind file_refused).
func fileRefused(format string, a ...any) error {
	return Refuse(KindFileRefused, "", format, a...)
}

// MaxListFiles bounds the regular files one List returns.
const MaxListFiles = 10000

// FileEntry is one regular file directly beneath the root.
type FileEntry struct {
	Name string
	Size int64
}

// Listing is what List found directly beneath the root.
type Listing struct {
	// Files are the regular files, sorted by name (at most the bound).
	Files []FileEntry
	// Symlinks counts the symbolic links not listed: a link is never
	// followed by a listing, so it is neither listed nor stat'ed through
	// (open it by name, which resolves it inside the root, to read it).
	Symlinks int
	// Other counts the entries that are neither regular files nor links
	// (directories, FIFOs, sockets, devices): never listed.
	Other int
	// Truncated is true when the root holds more regular files than the
	// bound: Files then holds the first ones the directory returned.
	Truncated bool
}

// List lists the regular files directly beneath the root, at most max of
// them (max <= 0 or above MaxListFiles: MaxListFiles), sorted by name. The
// directory is read through [os.Root] (the root itself, never a path
// below it), each entry's type and size come from [os.Root.Lstat]
// (fstatat with AT_SYMLINK_NOFOLLOW beneath the root's descriptor), so a symbolic link is counted in
// Symlinks and never followed; directories and special files are counted
// in Other. Nothing is skipped silently. Without a root it refuses like
// every method ("file tools are disabled").
func (r FileRoot) List(max int) (Listing, error) {
	if !r.Enabled() {
		return Listing{}, r.disabled()
	}
	if max <= 0 || max > MaxListFiles {
		max = MaxListFiles
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return Listing{}, Internal("opening the file root: %s", hidePath(err, r.dir, "the file root"))
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return Listing{}, Internal("listing the file root: %s", hidePath(err, r.dir, "the file root"))
	}
	defer d.Close()
	var l Listing
	for !l.Truncated {
		ents, err := d.ReadDir(256)
		for _, e := range ents {
			switch t := e.Type(); {
			case t&fs.ModeSymlink != 0:
				l.Symlinks++
				continue
			case !t.IsRegular():
				l.Other++
				continue
			}
			st, err := root.Lstat(e.Name()) // beneath the root, never following: a name swapped for a link meanwhile is not followed
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed since the directory was read
				}
				return Listing{}, Internal("listing the file root: %s", hidePath(err, r.dir, "the file root"))
			}
			switch m := st.Mode(); {
			case m&fs.ModeSymlink != 0:
				l.Symlinks++
				continue
			case !m.IsRegular():
				l.Other++
				continue
			}
			if len(l.Files) == max {
				l.Truncated = true
				break
			}
			l.Files = append(l.Files, FileEntry{Name: e.Name(), Size: st.Size()})
		}
		if err == io.EOF || (err == nil && len(ents) == 0) {
			break
		}
		if err != nil {
			return Listing{}, Internal("listing the file root: %s", hidePath(err, r.dir, "the file root"))
		}
	}
	slices.SortFunc(l.Files, func(a, b FileEntry) int { return strings.Compare(a.Name, b.Name) })
	return l, nil
}
