package capture

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/sipnab/sipnab/core/packet"
)

// mappedPcap reads a plain (uncompressed) pcap file through a read-only
// memory mapping: records are handed out where they lie in the mapping,
// with no read system call and no copy into a buffer. Pages behind the
// reader are released every dropEvery bytes, so the mapping adds at most
// that much to the process's resident memory.
//
// A mapped file that shrinks while it is read makes the next access to
// the lost pages fault: Load reads mapped files on a goroutine that turns
// such a fault into an error of the file (debug.SetPanicOnFault).
type mappedPcap struct {
	pcapReader
	m        mapping
	data     []byte
	pos      int
	released int           // bytes before this offset were released
	progress *atomic.Int64 // bytes consumed, for Reader.FileBytes
}

// dropEvery is how far the reader advances between two releases of the
// pages behind it, and how often FileBytes moves.
var dropEvery = 4 << 20

// mapPcap maps f when it is a plain pcap file of at least minMapped bytes
// and the platform maps files; nil otherwise (read it the usual way).
func mapPcap(f *os.File, progress *atomic.Int64) (*mappedPcap, kind) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < minMapped || int64(int(st.Size())) != st.Size() {
		return nil, kind{}
	}
	m, err := mapFile(f, int(st.Size()))
	if err != nil {
		return nil, kind{}
	}
	data := m.bytes()
	k, err := sniff(data[:min(len(data), sniffLen)])
	if err != nil || k.gzip || k.format != FormatPcap {
		m.unmap()
		return nil, kind{}
	}
	mp := &mappedPcap{m: m, data: data, pos: 24, progress: progress}
	if err := mp.fileHeader(data[:24], k); err != nil {
		// the buffered reader reports the same fault
		m.unmap()
		return nil, kind{}
	}
	progress.Store(24)
	return mp, k
}

// minMapped is the smallest file worth mapping.
var minMapped int64 = 1 << 20

// next reads one record into f; f.Data points into the mapping and is valid
// until the next call. Errors are the buffered reader's, word for word.
func (m *mappedPcap) next(f *packet.Frame) error {
	start := m.pos
	rest := len(m.data) - start
	if rest < m.hdrLen {
		m.progress.Store(int64(len(m.data)))
		if rest == 0 {
			return io.EOF
		}
		return classify(fmt.Errorf("record header has %d of %d bytes: %w", rest, m.hdrLen, io.ErrUnexpectedEOF))
	}
	hdr := m.data[start:]
	sec, frac, caplen, origlen := m.recordHeader(hdr)
	if caplen > maxRecord {
		return fmt.Errorf("%w: record of %d bytes exceeds the %d-byte maximum", ErrMalformed, caplen, maxRecord)
	}
	total := m.hdrLen + int(caplen)
	if rest < total {
		m.progress.Store(int64(len(m.data)))
		return classify(fmt.Errorf("record has %d of %d bytes: %w", rest-m.hdrLen, caplen, io.ErrUnexpectedEOF))
	}
	m.frame(f, hdr[m.hdrLen:total:total], sec, frac, caplen, origlen)
	m.pos = start + total
	if start-m.released >= dropEvery {
		// Everything before this record has been handed out and given
		// back (frames are borrowed until the next call).
		m.released = m.m.release(m.released, start)
		m.progress.Store(int64(start))
	}
	return nil
}

func (m *mappedPcap) close() {
	if m.data != nil {
		m.m.unmap()
		m.data = nil
	}
}

// contains reports whether addr lies in the mapping (still true once it is
// unmapped: a fault is recognized while the reader is being closed).
func (m *mappedPcap) contains(addr uintptr) bool { return m.m.contains(addr) }
