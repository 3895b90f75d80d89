package sdk

import (
	"errors"
	"io"
	"os"
)

// NewFile is one file WriteNewDir writes: its name in the new directory
// (one path component, CheckName) and its content, produced as it is
// written.
type NewFile struct {
	Name  string
	Write func(io.Writer) error
}

// WrittenFile is one file WriteNewDir wrote.
type WrittenFile struct {
	Name  string
	Bytes int64
}

// afterMkdir, when set (tests only), runs between the directory's creation
// and its opening: a test swaps the new directory for a symlink there.
var afterMkdir func()

// WriteNewDir creates the new directory name directly beneath the root and
// writes files into it, all or nothing. The name is checked (CheckName, no
// filesystem access first) and may not be a capture the server reads; the
// directory is made with mkdirat(2) beneath the root's descriptor
// ([os.Root.Mkdir]), which fails on any name already taken, a dangling
// symlink included (mkdir never follows a link). The directory is then
// opened as a root of its own and checked to be the one just made: a
// directory (never a symlink, by lstat beneath the root), the same file
// as the one opened, and empty; a name swapped for a symlink or for another
// directory meanwhile is refused. Each file is created beneath it with
// O_CREATE|O_EXCL (a link is never followed). When anything fails, the
// files written and the directory are removed, so no half-written
// directory holds the name or reads as complete. It returns the files
// written, in the order given.
func (r FileRoot) WriteNewDir(name string, files []NewFile) ([]WrittenFile, error) {
	if !r.Enabled() {
		return nil, r.disabled()
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := CheckName(f.Name); err != nil {
			return nil, err
		}
	}
	if err := r.protectedPath(name); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, Internal("opening the file root: %s", hidePath(err, r.dir, "the file root"))
	}
	defer root.Close()
	if err := root.Mkdir(name, 0o755); err != nil {
		return nil, r.openErr(name, os.O_EXCL, err)
	}
	if afterMkdir != nil {
		afterMkdir()
	}
	var written []WrittenFile
	fail := func(sub *os.Root, err error) ([]WrittenFile, error) {
		if sub != nil {
			for _, w := range written {
				_ = sub.Remove(w.Name)
			}
		}
		// Only an empty directory goes: one holding anything else (a name
		// swapped meanwhile) is left alone.
		if st, lerr := root.Lstat(name); lerr == nil && st.IsDir() {
			_ = root.Remove(name)
		}
		return nil, err
	}
	sub, err := root.OpenRoot(name)
	if err != nil {
		return fail(nil, fileRefused("folder %q: %s", clip(name), hidePath(err, name, name)))
	}
	defer sub.Close()
	lst, lerr := root.Lstat(name)
	ost, oerr := sub.Stat(".")
	if lerr != nil || oerr != nil || !lst.IsDir() || !os.SameFile(lst, ost) {
		return fail(nil, fileRefused("folder %q changed while it was created (a symlink or another folder in its place): nothing written", clip(name)))
	}
	if d, err := sub.Open("."); err == nil {
		ents, _ := d.ReadDir(1)
		d.Close()
		if len(ents) > 0 {
			return fail(nil, fileRefused("folder %q is not the empty folder just made: nothing written", clip(name)))
		}
	}
	for _, nf := range files {
		f, err := sub.OpenFile(nf.Name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, 0o644)
		if err != nil {
			return fail(sub, r.openErr(nf.Name, os.O_EXCL, err))
		}
		written = append(written, WrittenFile{Name: nf.Name})
		cw := &countingWriter{w: f}
		werr := nf.Write(cw)
		cerr := f.Close()
		if werr != nil || cerr != nil {
			if e, ok := werr.(*Error); ok && cerr == nil {
				return fail(sub, e)
			}
			return fail(sub, Internal("writing %q in folder %q: %s", clip(nf.Name), clip(name), hidePath(errors.Join(werr, cerr), f.Name(), nf.Name)))
		}
		written[len(written)-1].Bytes = cw.n
	}
	return written, nil
}
