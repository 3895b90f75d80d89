package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// pcapng is read by our own block reader rather than gopacket's NgReader:
// frames are handed out as sub-slices of the read buffer (no copy), every
// interface keeps its own link type (NgReader drops packets of a second link
// type unless told otherwise), binary timestamp resolutions (2^-n) convert
// exactly (NgReader's integer scale factor is off by up to 0.05% for 2^-20),
// a gzip stream cut at a block boundary is reported as truncated rather than
// as a clean end, and metadata blocks (name resolution, decryption secrets,
// statistics, custom) are skipped without being held in memory.

const (
	ngSHB    = 0x0a0d0d0a
	ngIDB    = 0x00000001
	ngPB     = 0x00000002 // obsolete packet block
	ngSPB    = 0x00000003
	ngNRB    = 0x00000004
	ngEPB    = 0x00000006
	ngBOM    = 0x1a2b3c4d
	ngMaxIfs = 65536 // interfaces per section; more means a hostile file
	// ngMaxMeta bounds the blocks that are parsed in place (section and
	// interface headers): they must fit in the read buffer.
	ngMaxMeta = bufSize
)

type ngIface struct {
	linkType uint16
	snaplen  uint32
	units    uint64 // timestamp ticks per second
	offset   int64  // seconds added to every timestamp
}

type ngReader struct {
	br      *bufio.Reader
	order   binary.ByteOrder
	ifaces  []ngIface
	pending int  // bytes of the current block still to discard
	inSect  bool // a section header has been read
	names   nameTable
}

func newNgReader(br *bufio.Reader) (*ngReader, error) {
	r := &ngReader{br: br, order: binary.LittleEndian}
	// the first block must be a section header
	if err := r.readSection(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *ngReader) discardPending() error {
	if r.pending <= 0 {
		return nil
	}
	n, err := r.br.Discard(r.pending)
	r.pending -= n
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return classify(fmt.Errorf("block ends %d bytes early: %w", r.pending, err))
	}
	return nil
}

// readSection reads a section header block at the current position.
func (r *ngReader) readSection() error {
	head, err := r.br.Peek(12)
	if len(head) < 12 {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return classify(fmt.Errorf("section header has %d of 12 bytes: %w", len(head), err))
	}
	switch binary.LittleEndian.Uint32(head[8:12]) {
	case ngBOM:
		r.order = binary.LittleEndian
	default:
		if binary.BigEndian.Uint32(head[8:12]) != ngBOM {
			return fmt.Errorf("%w: section header has a bad byte-order magic", ErrMalformed)
		}
		r.order = binary.BigEndian
	}
	total := r.order.Uint32(head[4:8])
	if total < 28 || total%4 != 0 || total > ngMaxMeta {
		return fmt.Errorf("%w: section header length %d", ErrMalformed, total)
	}
	blk, err := r.br.Peek(int(total))
	if len(blk) < int(total) {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return classify(fmt.Errorf("section header has %d of %d bytes: %w", len(blk), total, err))
	}
	if major := r.order.Uint16(blk[12:14]); major != 1 {
		return fmt.Errorf("%w: pcapng version %d.%d is not 1.x", ErrMalformed, major, r.order.Uint16(blk[14:16]))
	}
	if trail := r.order.Uint32(blk[total-4:]); trail != total {
		return fmt.Errorf("%w: section header lengths differ (%d, %d)", ErrMalformed, total, trail)
	}
	r.ifaces = r.ifaces[:0]
	r.inSect = true
	_, _ = r.br.Discard(int(total))
	return nil
}

// next reads blocks until a packet and fills f.
func (r *ngReader) next(f *packet.Frame) error {
	if err := r.discardPending(); err != nil {
		return err
	}
	for {
		head, err := r.br.Peek(8)
		if len(head) < 8 {
			if len(head) == 0 && err == io.EOF {
				return io.EOF
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return classify(fmt.Errorf("block header has %d of 8 bytes: %w", len(head), err))
		}
		typ := r.order.Uint32(head[0:4])
		if typ == ngSHB {
			if err := r.readSection(); err != nil {
				return err
			}
			continue
		}
		total := r.order.Uint32(head[4:8])
		if total < 12 || total%4 != 0 {
			return fmt.Errorf("%w: block of type 0x%08x has length %d", ErrMalformed, typ, total)
		}
		switch typ {
		case ngIDB:
			if err := r.readIDB(int(total)); err != nil {
				return err
			}
		case ngEPB, ngPB, ngSPB:
			return r.readPacket(typ, int(total), f)
		case ngNRB:
			// name resolution: its names are read (names.go), then the
			// block is skipped like the others
			if int(total) <= ngMaxMeta {
				blk, err := r.peekBlock(int(total), "name resolution block")
				if err != nil {
					return err
				}
				r.names.parseNRB(r.order, blk[8:total-4])
			}
			r.pending = int(total)
			if err := r.discardPending(); err != nil {
				return err
			}
		default:
			// statistics, decryption secrets, custom and unknown blocks:
			// skipped without being held
			r.pending = int(total)
			if err := r.discardPending(); err != nil {
				return err
			}
		}
	}
}

func (r *ngReader) peekBlock(total int, what string) ([]byte, error) {
	blk, err := r.br.Peek(total)
	if len(blk) < total {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, classify(fmt.Errorf("%s has %d of %d bytes: %w", what, len(blk), total, err))
	}
	if trail := r.order.Uint32(blk[total-4:]); trail != uint32(total) {
		return nil, fmt.Errorf("%w: %s lengths differ (%d, %d)", ErrMalformed, what, total, trail)
	}
	return blk, nil
}

func (r *ngReader) readIDB(total int) error {
	if total < 20 || total > ngMaxMeta {
		return fmt.Errorf("%w: interface description length %d", ErrMalformed, total)
	}
	if len(r.ifaces) >= ngMaxIfs {
		return fmt.Errorf("%w: more than %d interfaces in one section", ErrMalformed, ngMaxIfs)
	}
	blk, err := r.peekBlock(total, "interface description")
	if err != nil {
		return err
	}
	ifc := ngIface{linkType: r.order.Uint16(blk[8:10]), snaplen: r.order.Uint32(blk[12:16]), units: 1000000}
	opts := blk[16 : total-4]
	for len(opts) >= 4 {
		code := r.order.Uint16(opts[0:2])
		n := int(r.order.Uint16(opts[2:4]))
		if code == 0 {
			break
		}
		if 4+n > len(opts) {
			return fmt.Errorf("%w: interface option %d overruns its block", ErrMalformed, code)
		}
		val := opts[4 : 4+n]
		switch {
		case code == 9 && n >= 1: // if_tsresol
			res := val[0]
			exp := uint(res & 0x7f)
			if res&0x80 != 0 {
				if exp > 63 {
					return fmt.Errorf("%w: timestamp resolution 2^-%d", ErrMalformed, exp)
				}
				ifc.units = 1 << exp
			} else {
				if exp > 19 {
					return fmt.Errorf("%w: timestamp resolution 10^-%d", ErrMalformed, exp)
				}
				ifc.units = 1
				for i := uint(0); i < exp; i++ {
					ifc.units *= 10
				}
			}
		case code == 14 && n >= 8: // if_tsoffset
			ifc.offset = int64(r.order.Uint64(val[:8]))
		}
		adv := 4 + n + pad4(n)
		if adv > len(opts) {
			break // the last option's padding is missing: tolerated
		}
		opts = opts[adv:]
	}
	r.ifaces = append(r.ifaces, ifc)
	_, _ = r.br.Discard(total)
	return nil
}

func pad4(n int) int { return (4 - n&3) & 3 }

func (r *ngReader) readPacket(typ uint32, total int, f *packet.Frame) error {
	fixed := 28 // 8 block header + 20
	if typ == ngSPB {
		fixed = 12
	}
	if total < fixed+4 {
		return fmt.Errorf("%w: packet block length %d", ErrMalformed, total)
	}
	head, err := r.br.Peek(fixed)
	if len(head) < fixed {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return classify(fmt.Errorf("packet block header has %d of %d bytes: %w", len(head), fixed, err))
	}
	var iface int
	var caplen, origlen uint32
	var tsHi, tsLo uint32
	haveTS := true
	switch typ {
	case ngEPB:
		iface = int(r.order.Uint32(head[8:12]))
		tsHi, tsLo = r.order.Uint32(head[12:16]), r.order.Uint32(head[16:20])
		caplen, origlen = r.order.Uint32(head[20:24]), r.order.Uint32(head[24:28])
	case ngPB:
		iface = int(r.order.Uint16(head[8:10]))
		tsHi, tsLo = r.order.Uint32(head[12:16]), r.order.Uint32(head[16:20])
		caplen, origlen = r.order.Uint32(head[20:24]), r.order.Uint32(head[24:28])
	case ngSPB:
		haveTS = false
		origlen = r.order.Uint32(head[8:12])
		caplen = uint32(total - 16)
		if origlen < caplen {
			caplen = origlen
		}
	}
	if iface < 0 || iface >= len(r.ifaces) {
		return fmt.Errorf("%w: packet for interface %d, but the section describes %d", ErrMalformed, iface, len(r.ifaces))
	}
	ifc := &r.ifaces[iface]
	if typ == ngSPB && ifc.snaplen != 0 && caplen > ifc.snaplen {
		caplen = ifc.snaplen
	}
	if caplen > maxRecord {
		return fmt.Errorf("%w: packet of %d bytes exceeds the %d-byte maximum", ErrMalformed, caplen, maxRecord)
	}
	if fixed+int(caplen)+4 > total {
		return fmt.Errorf("%w: packet of %d bytes overruns its %d-byte block", ErrMalformed, caplen, total)
	}
	// the whole block when it fits the buffer (to check the trailing
	// length), else the header and data; the rest is discarded next call
	need := fixed + int(caplen)
	var blk []byte
	if total <= bufSize {
		blk, err = r.peekBlock(total, "packet block")
		if err != nil {
			return err
		}
	} else {
		blk, err = r.br.Peek(need)
		if len(blk) < need {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return classify(fmt.Errorf("packet block has %d of %d bytes: %w", len(blk), need, err))
		}
	}
	r.pending = total
	f.Data = blk[fixed:need:need]
	f.LinkType = ifc.linkType
	f.OrigLen = int(origlen)
	if f.OrigLen < int(caplen) {
		f.OrigLen = int(caplen)
	}
	if haveTS {
		f.TS = ngTime(uint64(tsHi)<<32|uint64(tsLo), ifc)
	} else {
		f.TS = time.Time{}
	}
	return nil
}

// ngTime converts a timestamp in interface ticks exactly.
func ngTime(ticks uint64, ifc *ngIface) time.Time {
	sec := ticks / ifc.units
	frac := ticks % ifc.units
	hi, lo := bits.Mul64(frac, 1e9)
	nanos, _ := bits.Div64(hi, lo, ifc.units) // hi < units because frac < units
	if sec > 1<<40 {
		return time.Time{} // beyond year 9999: unusable
	}
	s := int64(sec) + ifc.offset
	if (ifc.offset > 0 && s < int64(sec)) || (ifc.offset < 0 && s > int64(sec)) {
		return time.Time{}
	}
	return time.Unix(s, int64(nanos)).UTC()
}
