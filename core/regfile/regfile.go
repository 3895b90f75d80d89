// Package regfile opens a file that must be a regular file without ever
// blocking on one that is not. open(2) of a FIFO without a
// writer blocks until one appears, and a device may block or never end;
// Open opens with O_NONBLOCK (a regular file ignores the flag), checks the
// type with fstat on the open descriptor (not on the name, which may have
// changed since it was looked at) and refuses anything else with what it
// is. Captures (-I), suppression lists and other files sipnab reads whole
// go through it.
package regfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the refusal of a file that is not a regular file.
type NotRegularError struct {
	// Kind says what the file is ("a named pipe (FIFO)", "a socket",
	// "a device", "a directory").
	Kind string
}

func (e *NotRegularError) Error() string {
	return "is " + e.Kind + ", not a regular file"
}

// Open opens path for reading, refusing at once (never blocking) a file
// that is not a regular file: the error wraps a *NotRegularError. Other
// errors are os.Open's.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			// open(2) of a UNIX socket, or of a device without its driver.
			return nil, &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Kind: "a socket or a device"}}
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Kind: Kind(st.Mode())}}
	}
	return f, nil
}

// Kind names a file type for a refusal.
func Kind(m fs.FileMode) string {
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
	return fmt.Sprintf("not a plain file (%s)", m.Type())
}
