package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// pcapReader reads classic libpcap records straight out of the read buffer.
type pcapReader struct {
	br       *bufio.Reader
	order    binary.ByteOrder
	fracMax  uint32 // exclusive bound of the sub-second field
	fracMul  int64  // sub-second field to nanoseconds
	hdrLen   int    // record header length: 16, or 24 for the modified format
	linkType uint16
	snaplen  uint32
	pending  int  // bytes of the previous record still to discard
	bigEnd   bool // order is big-endian (read without the interface call)
}

func newPcapReader(br *bufio.Reader, k kind) (*pcapReader, error) {
	hdr, err := br.Peek(24)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if len(hdr) < 24 {
			return nil, classify(fmt.Errorf("pcap file header has %d of 24 bytes: %w", len(hdr), err))
		}
	}
	p := &pcapReader{br: br}
	if err := p.fileHeader(hdr, k); err != nil {
		return nil, err
	}
	_, _ = br.Discard(24)
	return p, nil
}

// fileHeader reads the 24-byte pcap file header.
func (p *pcapReader) fileHeader(hdr []byte, k kind) error {
	p.order, p.fracMax, p.fracMul, p.hdrLen = binary.LittleEndian, 1000000, 1000, 16
	if k.bigEnd {
		p.order = binary.BigEndian
	}
	if k.nano {
		p.fracMax, p.fracMul = 1000000000, 1
	}
	if k.modified {
		p.hdrLen = 24
	}
	if major := p.order.Uint16(hdr[4:6]); major != 2 {
		return fmt.Errorf("%w: pcap version %d.%d is not 2.x", ErrMalformed, major, p.order.Uint16(hdr[6:8]))
	}
	p.snaplen = p.order.Uint32(hdr[16:20])
	// the low 16 bits are the LINKTYPE; the upper bits carry FCS flags
	p.linkType = uint16(p.order.Uint32(hdr[20:24]))
	p.bigEnd = k.bigEnd
	return nil
}

// next reads one record into f. f.Data points into the read buffer and is
// valid until the next call.
func (p *pcapReader) next(f *packet.Frame) error {
	if p.pending > 0 {
		_, _ = p.br.Discard(p.pending)
		p.pending = 0
	}
	hdr, err := p.br.Peek(p.hdrLen)
	if len(hdr) < p.hdrLen {
		if len(hdr) == 0 && err == io.EOF {
			return io.EOF
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return classify(fmt.Errorf("record header has %d of %d bytes: %w", len(hdr), p.hdrLen, err))
	}
	sec, frac, caplen, origlen := p.recordHeader(hdr)
	if caplen > maxRecord {
		return fmt.Errorf("%w: record of %d bytes exceeds the %d-byte maximum", ErrMalformed, caplen, maxRecord)
	}
	total := p.hdrLen + int(caplen)
	var rec []byte
	if p.br.Buffered() >= total {
		rec = hdr[:total:total] // Peek returned a window into the buffer that already holds the record
	} else if rec, err = p.br.Peek(total); len(rec) < total {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return classify(fmt.Errorf("record has %d of %d bytes: %w", len(rec)-p.hdrLen, caplen, err))
	}
	p.pending = total
	p.frame(f, rec[p.hdrLen:total:total], sec, frac, caplen, origlen)
	return nil
}

// recordHeader reads a record header's fields.
func (p *pcapReader) recordHeader(hdr []byte) (sec, frac, caplen, origlen uint32) {
	if p.bigEnd {
		b := binary.BigEndian
		return b.Uint32(hdr[0:4]), b.Uint32(hdr[4:8]), b.Uint32(hdr[8:12]), b.Uint32(hdr[12:16])
	}
	l := binary.LittleEndian
	return l.Uint32(hdr[0:4]), l.Uint32(hdr[4:8]), l.Uint32(hdr[8:12]), l.Uint32(hdr[12:16])
}

// frame fills f from a record.
func (p *pcapReader) frame(f *packet.Frame, data []byte, sec, frac, caplen, origlen uint32) {
	f.Data = data
	f.LinkType = p.linkType
	f.OrigLen = int(origlen)
	if f.OrigLen < int(caplen) {
		f.OrigLen = int(caplen)
	}
	if frac >= p.fracMax {
		f.TS = time.Time{} // unusable: replaced by the caller
	} else {
		f.TS = time.Unix(int64(sec), int64(frac)*p.fracMul).UTC()
	}
}
