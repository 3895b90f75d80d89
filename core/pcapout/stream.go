package pcapout

import (
	"bufio"
	"fmt"
	"io"

	"github.com/sipnab/sipnab/core/packet"
)

// Stream writes one pcapng section to an io.Writer that is not a path the
// Writer could open (a file created beneath the MCP file root, a buffer):
// the section header first, then each frame as an enhanced packet block
// after an interface description block per source and link type, with the
// same block encoders as Writer. It neither splits nor rotates. Not safe
// for concurrent use.
type Stream struct {
	bw     *bufio.Writer
	ifaces map[ifaceKey]uint32
	frames uint64
	err    error
}

// NewStream writes the section header (shb_userappl app, shb_os osName) and
// returns the stream; Flush ends it.
func NewStream(w io.Writer, app, osName string) *Stream {
	s := &Stream{bw: bufio.NewWriterSize(w, 64<<10), ifaces: map[ifaceKey]uint32{}}
	s.put(shb(app, osName))
	return s
}

func (s *Stream) put(b []byte) {
	if s.err == nil {
		_, s.err = s.bw.Write(b)
	}
}

// WriteFrame writes one frame. After the first error every call returns it.
func (s *Stream) WriteFrame(f *packet.Frame) error {
	if s.err != nil {
		return s.err
	}
	if len(f.Data) > Snaplen {
		return fmt.Errorf("writing capture: frame %d of %s has %d bytes, above %d", f.Ordinal, f.Source, len(f.Data), Snaplen)
	}
	k := ifaceKey{f.Source, f.LinkType}
	id, ok := s.ifaces[k]
	if !ok {
		id = uint32(len(s.ifaces))
		s.ifaces[k] = id
		s.put(idb(f.LinkType, f.Source))
	}
	s.put(epbHeader(id, f))
	s.put(f.Data)
	s.put(epbTrailer(len(f.Data)))
	if s.err == nil {
		s.frames++
	}
	return s.err
}

// Frames counts the frames written.
func (s *Stream) Frames() uint64 { return s.frames }

// Flush writes what is buffered; the stream is complete after it.
func (s *Stream) Flush() error {
	if s.err != nil {
		return s.err
	}
	s.err = s.bw.Flush()
	return s.err
}
