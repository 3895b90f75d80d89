package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// probeFrames is how many leading frames FirstPacketTime looks through for
// one with a usable timestamp.
const probeFrames = 64

// FirstPacketTime returns the timestamp of the first frame of a capture
// whose timestamp is usable. ok is false when the file has no such frame
// among its first frames (empty, or only unusable timestamps). An error is
// returned when the file cannot be opened or is not a capture; a file cut
// or damaged after its first frame is not an error here (the load reports
// it).
func FirstPacketTime(path string) (ts time.Time, ok bool, err error) {
	r, err := OpenWith(path, Options{})
	if err != nil {
		return time.Time{}, false, err
	}
	defer r.Close()
	return firstTS(r)
}

func firstTS(r *Reader) (time.Time, bool, error) {
	for i := 0; i < probeFrames; i++ {
		f, err := r.Next()
		if err != nil {
			if err == io.EOF || errors.Is(err, ErrTruncated) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrInflateLimit) {
				return time.Time{}, false, nil
			}
			return time.Time{}, false, err
		}
		if !f.InvalidTS {
			return f.TS, true, nil
		}
	}
	return time.Time{}, false, nil
}

// ExpandOptions control how directories are searched.
type ExpandOptions struct {
	// Recursive searches subdirectories of a directory input.
	Recursive bool
	// Glob keeps only files found in directories whose base name matches
	// this pattern (path.Match syntax, e.g. "*.pcap*"). Empty keeps all.
	Glob string
	// Stdin is what the input StdinPath ("-") reads (stdin.go); nil
	// refuses "-".
	Stdin io.Reader
}

// Input is one capture file to read.
type Input struct {
	// Path is the file's path.
	Path string `json:"path"`
	// Name is the source name its frames carry: the base name, or a longer
	// path suffix when two inputs share a base name.
	Name string `json:"name"`
	// Format is the file's format.
	Format Format `json:"-"`
	// Compressed is true for a gzip-compressed file.
	Compressed bool `json:"compressed,omitempty"`
	// FirstTS is the timestamp of the first frame with a usable timestamp.
	// It is the zero time when HasFirstTS is false.
	FirstTS time.Time `json:"first_ts,omitzero"`
	// HasFirstTS is false for a file without a frame with a usable
	// timestamp near its start; such files are read after the others.
	HasFirstTS bool `json:"-"`
	// Size is the file size in bytes.
	Size int64 `json:"size"`
	// Discovered is true for a file found by searching a directory or
	// expanding a glob, false for a file named by the user.
	Discovered bool `json:"discovered,omitempty"`
	// Stream is what a StdinPath input reads (nil for a file).
	Stream io.Reader `json:"-"`
}

// Warning is a discovered file that was skipped.
type Warning struct {
	Path string
	Err  error
}

func (w Warning) String() string { return fmt.Sprintf("skipping %s: %v", w.Path, w.Err) }

// Expand turns the user's inputs (files, directories, globs) into the list of
// capture files to read, in first-packet-timestamp order (ties keep the
// order given; files without a usable timestamp come last). A named file
// that cannot be opened or is not a capture is an error; a discovered one is
// a warning and is skipped. A file named twice is read once.
func Expand(inputs []string, opts ExpandOptions) ([]Input, []Warning, error) {
	if opts.Glob != "" {
		if _, err := filepath.Match(opts.Glob, ""); err != nil {
			return nil, nil, fmt.Errorf("expanding inputs: bad name pattern %q: %w", opts.Glob, err)
		}
	}
	var out []Input
	var warns []Warning
	seen := map[string]bool{}
	add := func(path string, discovered bool) error {
		key := path
		if abs, err := filepath.Abs(path); err == nil {
			key = abs
		}
		if seen[key] {
			return nil
		}
		seen[key] = true
		in, err := probe(path)
		if err != nil {
			if discovered {
				warns = append(warns, Warning{Path: path, Err: err})
				return nil
			}
			return err
		}
		in.Discovered = discovered
		out = append(out, in)
		return nil
	}
	if slices.Contains(inputs, StdinPath) {
		// A stream is read once: it cannot be probed for its first
		// timestamp and ordered among files, nor read twice.
		if len(inputs) > 1 {
			return nil, nil, fmt.Errorf("expanding inputs: -I %s (standard input) is read alone: it cannot be ordered by first packet among other inputs without reading it twice", StdinPath)
		}
		if opts.Stdin == nil {
			return nil, nil, fmt.Errorf("expanding inputs: -I %s: no standard input to read", StdinPath)
		}
		return []Input{{Path: StdinPath, Name: StdinName, Stream: opts.Stdin}}, nil, nil
	}
	for _, arg := range inputs {
		st, err := os.Stat(arg)
		if err != nil && errors.Is(err, fs.ErrNotExist) && hasMeta(arg) {
			matches, gerr := filepath.Glob(arg)
			if gerr != nil {
				return nil, warns, fmt.Errorf("expanding %s: %w", arg, gerr)
			}
			if len(matches) == 0 {
				return nil, warns, fmt.Errorf("expanding %s: no file matches", arg)
			}
			for _, m := range matches {
				if mst, err := os.Stat(m); err == nil && mst.IsDir() {
					continue
				}
				if err := add(m, true); err != nil {
					return nil, warns, err
				}
			}
			continue
		}
		if err != nil {
			return nil, warns, fmt.Errorf("opening capture %s: %w", arg, err)
		}
		if !st.IsDir() {
			if err := add(arg, false); err != nil {
				return nil, warns, err
			}
			continue
		}
		files, err := listDir(arg, opts, &warns)
		if err != nil {
			return nil, warns, err
		}
		for _, p := range files {
			if err := add(p, true); err != nil {
				return nil, warns, err
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.HasFirstTS != b.HasFirstTS {
			return a.HasFirstTS
		}
		return a.HasFirstTS && a.FirstTS.Before(b.FirstTS)
	})
	nameInputs(out)
	return out, warns, nil
}

func hasMeta(p string) bool { return strings.ContainsAny(p, "*?[") }

func listDir(dir string, opts ExpandOptions, warns *[]Warning) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return fmt.Errorf("reading directory %s: %w", dir, err)
			}
			*warns = append(*warns, Warning{Path: p, Err: err})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != dir && !opts.Recursive {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if opts.Glob != "" {
			if ok, _ := filepath.Match(opts.Glob, d.Name()); !ok {
				return nil
			}
		}
		files = append(files, p)
		return nil
	})
	return files, err
}

// probe opens a file, identifies it and reads its first timestamp.
func probe(path string) (Input, error) {
	r, err := OpenWith(path, Options{})
	if err != nil {
		return Input{}, err
	}
	defer r.Close()
	in := Input{Path: path, Name: filepath.Base(path), Format: r.Format(), Compressed: r.Compressed()}
	if st, err := os.Stat(path); err == nil {
		in.Size = st.Size()
	}
	ts, ok, err := firstTS(r)
	if err != nil {
		return Input{}, err
	}
	in.FirstTS, in.HasFirstTS = ts, ok
	return in, nil
}

// nameInputs gives every input a distinct source name: the base name, or
// enough trailing path elements to tell inputs with the same base name apart.
func nameInputs(ins []Input) {
	for depth := 1; depth <= 8; depth++ {
		count := map[string]int{}
		for i := range ins {
			count[ins[i].Name]++
		}
		dup := false
		for i := range ins {
			if count[ins[i].Name] > 1 {
				dup = true
				ins[i].Name = tail(ins[i].Path, depth+1)
			}
		}
		if !dup {
			return
		}
	}
}

func tail(p string, n int) string {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")
	if len(parts) > n {
		parts = parts[len(parts)-n:]
	}
	return strings.Join(parts, "/")
}
