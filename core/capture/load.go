package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// LoadOptions tune a background load. The zero value is ready to use.
type LoadOptions struct {
	// MaxFrames stops the load after this many frames (a stop on request,
	// not an early stop). 0 means no limit.
	MaxFrames uint64
	// MaxInflate is the gzip inflation ceiling per file; 0 means
	// DefaultMaxInflate.
	MaxInflate int64
	// FirstSourceID is the SourceID of the first input; the others follow
	// in order.
	FirstSourceID uint16
	// Logger receives one line per file that ends early. Nil logs nothing.
	Logger *slog.Logger
	// Now is the wall clock substituted for unusable timestamps; nil means
	// time.Now.
	Now func() time.Time
	// Mmap reads plain pcap files of at least 1 MiB through a read-only
	// memory mapping (Options.Mmap): no read calls, no copy into a buffer.
	// A mapped file that shrinks while it is read stops early with
	// ErrTruncated, as a truncated file does.
	Mmap bool
}

// FileState says how far the loader got with one input.
type FileState string

const (
	FilePending      FileState = "pending"       // not opened yet
	FileReading      FileState = "reading"       // being read now
	FileDone         FileState = "done"          // read to its end
	FileStoppedEarly FileState = "stopped_early" // ended by a fault; frames before it were delivered
	FileStopped      FileState = "stopped"       // the load was stopped on request while reading it
	FileNotRead      FileState = "not_read"      // the load was stopped on request before it
)

// FileResult is the loader's account of one input.
type FileResult struct {
	// Path and Name as in Input.
	Path string `json:"path"`
	Name string `json:"name"`
	// SourceID is the SourceID its frames carry.
	SourceID uint16 `json:"source_id"`
	// Format is "pcap" or "pcapng" once opened.
	Format string `json:"format,omitempty"`
	// Compressed is true for a gzip-compressed file.
	Compressed bool `json:"compressed,omitempty"`
	// State is how far the loader got with it.
	State FileState `json:"state"`
	// Frames and Bytes count the frames delivered from it and their
	// captured bytes.
	Frames uint64 `json:"frames"`
	Bytes  uint64 `json:"bytes"`
	// InvalidTimestamps counts frames whose timestamp was unusable and
	// replaced by the wall clock.
	InvalidTimestamps uint64 `json:"invalid_timestamps,omitempty"`
	// NamesDropped counts host names of its Name Resolution Blocks that
	// were not kept (past MaxNames, or malformed; names.go).
	NamesDropped uint64 `json:"names_dropped,omitempty"`
	// Err is why the file stopped early (nil otherwise).
	Err error `json:"-"`
	// Error is Err's text, for JSON.
	Error string `json:"error,omitempty"`

	stream io.Reader // a StdinPath input's stream
}

// Snapshot is the loader's state at one instant.
type Snapshot struct {
	// FramesRead counts frames delivered to the sink.
	FramesRead uint64 `json:"frames_read"`
	// Bytes counts the captured bytes of those frames.
	Bytes uint64 `json:"bytes"`
	// FileBytes counts bytes read from disk (compressed bytes for gzip), to
	// compare with TotalFileBytes for progress.
	FileBytes int64 `json:"file_bytes"`
	// TotalFileBytes is the sum of the inputs' sizes.
	TotalFileBytes int64 `json:"total_file_bytes"`
	// InvalidTimestamps counts frames whose unusable timestamp was replaced
	// by the wall clock.
	InvalidTimestamps uint64 `json:"invalid_timestamps"`
	// Elapsed is the time since the load started (until it finished).
	Elapsed time.Duration `json:"elapsed_ns"`
	// Done is true once the loader goroutine has finished.
	Done bool `json:"done"`
	// Exhausted is true once every input was read as far as it could be
	// read: no more frames will come. False while loading and when the load
	// was stopped on request.
	Exhausted bool `json:"source_exhausted"`
	// StoppedEarly is true when an input ended before its end: truncated,
	// malformed, unreadable, or past the inflation ceiling.
	StoppedEarly bool `json:"source_stopped_early"`
	// StoppedOnRequest is true when the context was cancelled or MaxFrames
	// was reached. It is not a fault.
	StoppedOnRequest bool `json:"stopped_on_request,omitempty"`
	// LimitReached is true when MaxFrames stopped the load.
	LimitReached bool `json:"limit_reached,omitempty"`
	// Complete is Exhausted and not StoppedEarly: everything in every
	// input was read.
	Complete bool `json:"complete"`
	// Current is the index of the input being read (-1 when none).
	Current int `json:"current"`
	// Files has one entry per input, in reading order.
	Files []FileResult `json:"files"`
	// Err joins the errors of the files that stopped early.
	Err error `json:"-"`
}

// Load is a background read of a list of inputs. Its methods are safe to
// call from any goroutine while it runs.
type Load struct {
	start time.Time
	done  chan struct{}
	total int64

	frames    atomic.Uint64
	bytes     atomic.Uint64
	invalidTS atomic.Uint64
	fileBytes atomic.Int64 // bytes of finished files
	elapsed   atomic.Int64 // set when done
	current   atomic.Int64
	reader    atomic.Pointer[Reader] // the reader in use, for FileBytes

	mu        sync.Mutex
	files     []FileResult
	early     bool
	onRequest bool
	limit     bool
	errs      []error
}

// BatchSink is a FrameSink that also hears when the loader ends a run of
// frames: after at most BatchFrames frames, and after the last frame of each
// input. A sink can hold a lock across a run (one acquisition per run
// instead of per frame), so EndBatch must release whatever HandleFrame took.
// Both are called on the loader's goroutine.
type BatchSink interface {
	packet.FrameSink
	EndBatch()
}

// BatchFrames is the longest run of frames the loader hands a BatchSink
// between two EndBatch calls. A BatchSink's frames are counted (FramesRead,
// Bytes, the files' counts) at each EndBatch.
const BatchFrames = 64

// Start reads inputs in order on a new goroutine, handing every frame to
// sink on that goroutine. It never blocks; use Wait or Done to learn the end.
func Start(ctx context.Context, inputs []Input, sink packet.FrameSink) *Load {
	return StartWith(ctx, inputs, sink, LoadOptions{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, inputs []Input, sink packet.FrameSink, opts LoadOptions) *Load {
	l := &Load{start: time.Now(), done: make(chan struct{})}
	l.current.Store(-1)
	l.files = make([]FileResult, len(inputs))
	for i, in := range inputs {
		name := in.Name
		if name == "" {
			name = filepath.Base(in.Path)
		}
		l.files[i] = FileResult{Path: in.Path, Name: name, SourceID: opts.FirstSourceID + uint16(i), State: FilePending, stream: in.Stream}
		l.total += in.Size
	}
	go l.run(ctx, sink, opts)
	return l
}

func (l *Load) run(ctx context.Context, sink packet.FrameSink, opts LoadOptions) {
	defer close(l.done)
	defer func() { l.elapsed.Store(int64(time.Since(l.start))) }()
	cancel := ctx.Done()
	for i := range l.files {
		if ctx.Err() != nil {
			l.stopRemaining(i)
			return
		}
		l.current.Store(int64(i))
		stop := l.readFile(i, cancel, sink, opts)
		if stop {
			l.current.Store(-1)
			l.stopRemaining(i + 1)
			return
		}
	}
	l.current.Store(-1)
}

// stopRemaining marks the inputs from i on as not read and the load as
// stopped on request.
func (l *Load) stopRemaining(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onRequest = true
	for ; i < len(l.files); i++ {
		l.files[i].State = FileNotRead
	}
}

// readFile reads input i to its end. It returns true when the load was
// stopped on request.
func (l *Load) readFile(i int, cancel <-chan struct{}, sink packet.FrameSink, opts LoadOptions) (stop bool) {
	fr := l.files[i]
	var r *Reader
	var err error
	var stream *streamReader
	if fr.stream != nil {
		// stdin (stdin.go): read as a stream, never mapped
		stream = &streamReader{r: fr.stream, cancel: cancel}
		r, err = NewReader(stream, Options{Name: fr.Name, SourceID: fr.SourceID, MaxInflate: opts.MaxInflate, Now: opts.Now})
		if err != nil && stopRequested(cancel) {
			// stopped while waiting for the stream's header
			l.finish(i, nil, FileStopped, nil, opts.Logger)
			return true
		}
	} else {
		r, err = OpenWith(fr.Path, Options{Name: fr.Name, SourceID: fr.SourceID, MaxInflate: opts.MaxInflate, Now: opts.Now, Mmap: opts.Mmap})
	}
	if err != nil {
		l.finish(i, nil, FileStoppedEarly, err, opts.Logger)
		return false
	}
	if r.Mapped() {
		// A fault on the mapping (the file shrank under us) ends the file
		// as a truncation instead of the program. The sink's run is ended
		// by the deferred endRun below, which runs first.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			e := recover()
			if e == nil {
				return
			}
			if fe, ok := e.(interface{ Addr() uintptr }); ok && r.faultIn(fe.Addr()) {
				err := fmt.Errorf("reading capture %s after frame %d: %w: the file shrank while it was read", r.Name(), r.Frames(), ErrTruncated)
				l.finish(i, r, FileStoppedEarly, err, opts.Logger)
				stop = false
				return
			}
			panic(e)
		}()
	}
	r.SetSourceID(fr.SourceID)
	l.reader.Store(r)
	l.mu.Lock()
	l.files[i].Format = r.Format().String()
	l.files[i].Compressed = r.Compressed()
	l.files[i].State = FileReading
	l.mu.Unlock()
	defer func() {
		l.reader.Store(nil)
		l.fileBytes.Add(r.FileBytes())
		r.Close()
	}()
	// A BatchSink hears the end of every run of frames and of the file; the
	// counters of its frames are published at the same points (one atomic
	// operation per counter and run instead of per frame). Other sinks
	// see the counters move frame by frame.
	bs, _ := sink.(BatchSink)
	var runFrames, runBytes, runInvalid uint64
	endRun := func() {
		if bs == nil {
			return
		}
		bs.EndBatch()
		if runFrames > 0 {
			l.frames.Add(runFrames)
			l.bytes.Add(runBytes)
			if runInvalid > 0 {
				l.invalidTS.Add(runInvalid)
			}
			runFrames, runBytes, runInvalid = 0, 0, 0
		}
	}
	defer endRun()
	if stream != nil {
		// A read of the stream may wait for its writer: the run ends
		// first, so nothing waits on the load meanwhile.
		stream.before = endRun
	}
	total := l.frames.Load()
	var n uint64
	for {
		if n%BatchFrames == 0 {
			if n > 0 {
				endRun()
			}
			select {
			case <-cancel:
				endRun()
				l.finish(i, r, FileStopped, nil, opts.Logger)
				return true
			default:
			}
		}
		f, err := r.Next()
		if err != nil {
			endRun()
			if err == io.EOF {
				l.finish(i, r, FileDone, nil, opts.Logger)
				return false
			}
			if errors.Is(err, errReadStopped) {
				l.finish(i, r, FileStopped, nil, opts.Logger)
				return true
			}
			l.finish(i, r, FileStoppedEarly, err, opts.Logger)
			return false
		}
		n++
		if ns := r.TakeNames(); ns != nil {
			if nsink, ok := sink.(NameSink); ok {
				nsink.HandleNames(f.Source, ns)
			}
		}
		sink.HandleFrame(f)
		total++
		if bs != nil {
			runFrames++
			runBytes += uint64(len(f.Data))
			if f.InvalidTS {
				runInvalid++
			}
		} else {
			l.bytes.Add(uint64(len(f.Data)))
			if f.InvalidTS {
				l.invalidTS.Add(1)
			}
			l.frames.Add(1)
		}
		if opts.MaxFrames > 0 && total >= opts.MaxFrames {
			endRun()
			l.mu.Lock()
			l.limit = true
			l.mu.Unlock()
			l.finish(i, r, FileStopped, nil, opts.Logger)
			return true
		}
	}
}

// stopRequested reports whether the load was asked to stop.
func stopRequested(cancel <-chan struct{}) bool {
	select {
	case <-cancel:
		return true
	default:
		return false
	}
}

func (l *Load) finish(i int, r *Reader, st FileState, err error, log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := &l.files[i]
	f.State = st
	if r != nil {
		f.Frames = r.Frames()
		f.Bytes = r.Bytes()
		f.InvalidTimestamps = r.InvalidTimestamps()
		f.NamesDropped = r.NamesDropped()
		if f.NamesDropped > 0 && log != nil {
			log.Warn("host names of the capture's name resolution blocks not kept", "file", f.Name, "dropped", f.NamesDropped, "kept_at_most", MaxNames)
		}
	}
	if st == FileStopped {
		l.onRequest = true
	}
	if err != nil {
		f.Err = err
		f.Error = err.Error()
		l.early = true
		l.errs = append(l.errs, err)
		if log != nil {
			log.Warn("capture input stopped early", "file", f.Name, "frames", f.Frames, "err", err)
		}
	}
}

// Snapshot returns the loader's state now.
func (l *Load) Snapshot() Snapshot {
	s := Snapshot{
		FramesRead:        l.frames.Load(),
		Bytes:             l.bytes.Load(),
		InvalidTimestamps: l.invalidTS.Load(),
		TotalFileBytes:    l.total,
		Current:           int(l.current.Load()),
	}
	select {
	case <-l.done:
		s.Done = true
		s.Elapsed = time.Duration(l.elapsed.Load())
	default:
		s.Elapsed = time.Since(l.start)
	}
	s.FileBytes = l.fileBytes.Load()
	if r := l.reader.Load(); r != nil {
		s.FileBytes += r.FileBytes()
	}
	l.mu.Lock()
	s.Files = make([]FileResult, len(l.files))
	copy(s.Files, l.files)
	s.StoppedEarly = l.early
	s.StoppedOnRequest = l.onRequest
	s.LimitReached = l.limit
	s.Err = errors.Join(l.errs...)
	l.mu.Unlock()
	// a reading file's frame count is only published when it finishes;
	// show the live count for it
	if s.Current >= 0 && s.Current < len(s.Files) && s.Files[s.Current].State == FileReading {
		var before uint64
		for i := 0; i < s.Current; i++ {
			before += s.Files[i].Frames
		}
		if s.FramesRead >= before {
			s.Files[s.Current].Frames = s.FramesRead - before
		}
	}
	s.Exhausted = s.Done && !s.StoppedOnRequest
	s.Complete = s.Exhausted && !s.StoppedEarly
	return s
}

// Done is closed when the loader goroutine finishes.
func (l *Load) Done() <-chan struct{} { return l.done }

// Wait blocks until the load finishes and returns its final state.
func (l *Load) Wait() Snapshot {
	<-l.done
	return l.Snapshot()
}

// FramesRead returns the frames delivered so far.
func (l *Load) FramesRead() uint64 { return l.frames.Load() }

// Bytes returns the captured bytes delivered so far.
func (l *Load) Bytes() uint64 { return l.bytes.Load() }

// Elapsed returns the load's running time (its total once finished).
func (l *Load) Elapsed() time.Duration {
	select {
	case <-l.done:
		return time.Duration(l.elapsed.Load())
	default:
		return time.Since(l.start)
	}
}

// Exhausted reports whether every input has been read as far as it could
// be (false while loading and after a stop on request).
func (l *Load) Exhausted() bool {
	select {
	case <-l.done:
	default:
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.onRequest
}

// StoppedEarly reports whether an input ended before its end.
func (l *Load) StoppedEarly() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.early
}

// Err joins the errors of the inputs that stopped early (nil if none).
func (l *Load) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.errs...)
}
