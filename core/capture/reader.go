// Package capture reads capture files: pcap (microsecond, nanosecond and the
// modified variant, either byte order) and pcapng (any number of sections and
// interfaces, each interface with its own link type and timestamp
// resolution), each plain or gzip-compressed. The format is recognized by its
// leading bytes, never by the file name; a file in another format is refused
// with an error naming it.
//
// A Reader yields frames one at a time. Several files, or directories of
// them, are expanded with Expand (ordered by first packet timestamp, so a call
// spanning two files of a ring buffer reads as one) and loaded in the
// background with Start, whose counters are readable while it runs.
//
// Frames are borrowed: a Reader reuses the Frame and its Data buffer on the
// next call to Next, exactly as packet.FrameSink's contract says.
package capture

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/regfile"
)

// DefaultMaxInflate is the gzip inflation ceiling: a compressed capture that
// inflates past 1 GiB is cut there with ErrInflateLimit.
const DefaultMaxInflate int64 = 1 << 30

// maxRecord is the largest captured frame accepted (libpcap's
// MAXIMUM_SNAPLEN); a longer record means a corrupt file.
const maxRecord = 262144

// bufSize is the read buffer: a whole maximal record fits, so frames are
// handed out as sub-slices of it without a copy.
const bufSize = maxRecord + 64*1024

// Options tune a Reader. The zero value is ready to use.
type Options struct {
	// Name is the source name frames carry (Frame.Source). Empty means the
	// file's base name (Open), or "capture" (NewReader).
	Name string
	// SourceID is the index of this source within the run (Frame.SourceID).
	SourceID uint16
	// MaxInflate is the gzip inflation ceiling in bytes; 0 means
	// DefaultMaxInflate.
	MaxInflate int64
	// Now returns the wall clock substituted for unusable timestamps; nil
	// means time.Now.
	Now func() time.Time
	// Mmap reads a plain (uncompressed) pcap file of at least 1 MiB through
	// a read-only memory mapping instead of read calls (other files are
	// read as usual). The frames are the same. A mapped file that shrinks
	// while it is read faults on the next access to the lost bytes, which
	// crashes the program unless the reading goroutine runs with
	// debug.SetPanicOnFault and recovers: Load does (LoadOptions.Mmap).
	Mmap bool
}

// Reader reads the frames of one capture file.
type Reader struct {
	name    string
	kind    kind
	closer  io.Closer
	counter *countingReader
	pcap    *pcapReader
	mapped  *mappedPcap
	ng      *ngReader
	now     func() time.Time

	frame     packet.Frame
	bytes     uint64
	invalidTS uint64
	err       error // sticky: io.EOF or the error that ended the file
}

// Open opens a capture file and reads its file header.
func Open(path string) (*Reader, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*Reader, error) {
	// regfile.Open never blocks and refuses what is not a regular file:
	// a FIFO without a writer would block open(2) forever,
	// and a stream could not be probed and then loaded (Expand reads the
	// first frames of every input to order them, then Load opens it again).
	f, err := regfile.Open(path)
	if err != nil {
		var nr *regfile.NotRegularError
		if errors.As(err, &nr) {
			return nil, fmt.Errorf("opening capture %s: %w: sipnab reads capture files, not streams; save the stream to a file first, or give it on standard input (-I -)", filepath.Base(path), nr)
		}
		return nil, fmt.Errorf("opening capture %s: %w", filepath.Base(path), err)
	}
	if o.Name == "" {
		o.Name = filepath.Base(path)
	}
	if o.Mmap {
		r := &Reader{name: o.Name, now: o.Now, counter: &countingReader{}}
		if r.now == nil {
			r.now = time.Now
		}
		if mp, k := mapPcap(f, &r.counter.n); mp != nil {
			r.mapped, r.kind, r.closer = mp, k, f
			return r, nil
		}
	}
	r, err := newReader(f, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads a capture from r (for stdin, archives and tests). Close
// does not close r.
func NewReader(r io.Reader, o Options) (*Reader, error) {
	if o.Name == "" {
		o.Name = "capture"
	}
	return newReader(r, o)
}

func newReader(src io.Reader, o Options) (*Reader, error) {
	r := &Reader{name: o.Name, now: o.Now}
	if r.now == nil {
		r.now = time.Now
	}
	maxInflate := o.MaxInflate
	if maxInflate <= 0 {
		maxInflate = DefaultMaxInflate
	}
	r.counter = &countingReader{r: src}
	br := bufio.NewReaderSize(r.counter, bufSize)
	head, _ := br.Peek(sniffLen)
	k, err := sniff(head)
	if err != nil {
		return nil, r.openErr(err)
	}
	if k.gzip {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, r.openErr(classify(err))
		}
		br = bufio.NewReaderSize(&limitReader{r: gz, n: maxInflate}, bufSize)
		head, perr := br.Peek(sniffLen)
		inner, err := sniff(head)
		if err != nil {
			var fe *FormatError
			if len(head) < 4 && perr != nil && perr != io.EOF {
				return nil, r.openErr(classify(perr))
			}
			if errors.As(err, &fe) {
				fe.Compressed = true
			}
			return nil, r.openErr(err)
		}
		if inner.gzip {
			return nil, r.openErr(&FormatError{Name: "gzip inside gzip", Compressed: true})
		}
		inner.gzip = true
		k = inner
	}
	r.kind = k
	switch k.format {
	case FormatPcap:
		p, err := newPcapReader(br, k)
		if err != nil {
			return nil, r.openErr(err)
		}
		r.pcap = p
	case FormatPcapNG:
		ng, err := newNgReader(br)
		if err != nil {
			return nil, r.openErr(err)
		}
		r.ng = ng
	}
	return r, nil
}

func (r *Reader) openErr(err error) error {
	return fmt.Errorf("opening capture %s: %w", r.name, err)
}

// Next returns the next frame. It returns io.EOF at the clean end of the
// file, and an error wrapping ErrTruncated, ErrMalformed, ErrInflateLimit or
// the read error when the file ends otherwise; every frame before the fault
// has been returned. The Frame and its Data are reused by the next call.
func (r *Reader) Next() (*packet.Frame, error) {
	if r.err != nil {
		return nil, r.err
	}
	f := &r.frame
	var err error
	switch {
	case r.mapped != nil:
		err = r.mapped.next(f)
	case r.pcap != nil:
		err = r.pcap.next(f)
	default:
		err = r.ng.next(f)
	}
	if err != nil {
		if err != io.EOF {
			err = fmt.Errorf("reading capture %s after frame %d: %w", r.name, r.frame.Ordinal, err)
		}
		r.err = err
		return nil, err
	}
	f.Source = r.name
	f.Ordinal++
	f.InvalidTS = false
	if !usableTS(f.TS) {
		f.TS = r.now()
		f.InvalidTS = true
		r.invalidTS++
	}
	r.bytes += uint64(len(f.Data))
	return f, nil
}

// SetSourceID sets the SourceID carried by the frames returned from now on.
func (r *Reader) SetSourceID(id uint16) { r.frame.SourceID = id }

// Name returns the source name frames carry.
func (r *Reader) Name() string { return r.name }

// Format returns the file's format.
func (r *Reader) Format() Format { return r.kind.format }

// Compressed reports whether the file is gzip-compressed.
func (r *Reader) Compressed() bool { return r.kind.gzip }

// Frames returns how many frames have been returned.
func (r *Reader) Frames() uint64 { return r.frame.Ordinal }

// Bytes returns the captured bytes of the frames returned so far.
func (r *Reader) Bytes() uint64 { return r.bytes }

// InvalidTimestamps returns how many frames had an unusable timestamp
// replaced by the wall clock.
func (r *Reader) InvalidTimestamps() uint64 { return r.invalidTS }

// FileBytes returns how many bytes have been read from the underlying file
// (compressed bytes for a gzip file). It is safe to call from any goroutine.
func (r *Reader) FileBytes() int64 { return r.counter.n.Load() }

// LinkType returns the file-wide link type of a pcap file. pcapng files have
// one link type per interface (see Frame.LinkType) and report false.
func (r *Reader) LinkType() (uint16, bool) {
	switch {
	case r.mapped != nil:
		return r.mapped.linkType, true
	case r.pcap != nil:
		return r.pcap.linkType, true
	}
	return 0, false
}

// Mapped reports whether the file is read through a memory mapping.
func (r *Reader) Mapped() bool { return r.mapped != nil }

// faultIn reports whether a faulting address lies in the reader's mapping.
func (r *Reader) faultIn(addr uintptr) bool { return r.mapped != nil && r.mapped.contains(addr) }

// Close closes the file opened by Open.
func (r *Reader) Close() error {
	if r.mapped != nil {
		r.mapped.close()
	}
	if r.closer != nil {
		c := r.closer
		r.closer = nil
		return c.Close()
	}
	return nil
}

// usableTS reports whether a capture timestamp can be trusted: present (a
// pcapng simple packet has none), with an in-range sub-second field, not
// before 1970 and representable (year <= 9999). The epoch itself is usable:
// some real captures count from 0.
func usableTS(t time.Time) bool {
	s := t.Unix()
	return s >= 0 && s <= 253402300799
}

// classify maps a low-level read error to the package's sentinel errors.
func classify(err error) error {
	var ce flate.CorruptInputError
	switch {
	case err == nil || err == io.EOF:
		return err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %v", ErrTruncated, err)
	case errors.Is(err, ErrInflateLimit), errors.Is(err, ErrTruncated), errors.Is(err, ErrMalformed):
		return err
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &ce):
		return fmt.Errorf("%w: gzip stream: %v", ErrMalformed, err)
	}
	return err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// limitReader fails with ErrInflateLimit once more than n bytes were read.
type limitReader struct {
	r io.Reader
	n int64 // bytes still allowed
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		// allow reading one byte to tell "exactly at the ceiling" from "past it"
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n == 0 {
			return 0, err
		}
		return 0, ErrInflateLimit
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
