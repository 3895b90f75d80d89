package capture

import (
	"errors"
	"io"
)

// StdinPath is the input name that reads the capture from standard input
// (`-I -`): pcap or pcapng, plain or gzip-compressed, recognised by
// content as a file is. It is read once, as a stream: never memory-mapped,
// never probed ahead for its first timestamp, so it is read alone (Expand
// refuses it beside other inputs). A stream cut inside a record ends as a
// truncated file does (ErrTruncated: stopped early, the run incomplete).
const StdinPath = "-"

// StdinName is the source name stdin's frames carry.
const StdinName = "stdin"

// errReadStopped ends a read of a stream that a stop request interrupted.
var errReadStopped = errors.New("read stopped on request")

// streamReader reads a stream (stdin) for the load. Before each read of
// the stream, one that may block until the writer at the other end writes,
// it calls before (the load ends the sink's run there, so the capture's
// writer lock is never held while waiting); a stop request ends a blocked
// read at once with errReadStopped (the goroutine left blocked in the
// stream's Read ends with the process or the writer).
type streamReader struct {
	r      io.Reader
	cancel <-chan struct{}
	before func()

	buf      []byte
	res      chan readResult
	inFlight bool
}

type readResult struct {
	n   int
	err error
}

func (s *streamReader) Read(p []byte) (int, error) {
	if s.before != nil {
		s.before()
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !s.inFlight {
		if s.res == nil {
			s.res = make(chan readResult, 1)
		}
		if cap(s.buf) < len(p) {
			s.buf = make([]byte, len(p))
		}
		buf := s.buf[:len(p)]
		s.inFlight = true
		go func() {
			n, err := s.r.Read(buf)
			s.res <- readResult{n, err}
		}()
	}
	select {
	case r := <-s.res:
		s.inFlight = false
		// r.n <= len(p): the read was sized to p (a read in flight when a
		// stop was requested never completes here: the load has ended).
		return copy(p, s.buf[:r.n]), r.err
	case <-s.cancel:
		return 0, errReadStopped
	}
}
