package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// Hand-built capture bytes, independent of any writer library, so the
// reader is checked against the format documents rather than against
// another implementation.

type pcapRec struct {
	sec, frac uint32
	data      []byte
	origLen   uint32 // 0 means len(data)
}

type pcapSpec struct {
	order    binary.ByteOrder
	nano     bool
	modified bool
	linkType uint32
	snaplen  uint32
	recs     []pcapRec
}

func buildPcap(s pcapSpec) []byte {
	var b bytes.Buffer
	magic := uint32(0xa1b2c3d4)
	switch {
	case s.nano:
		magic = 0xa1b23c4d
	case s.modified:
		magic = 0xa1b2cd34
	}
	snap := s.snaplen
	if snap == 0 {
		snap = 65535
	}
	hdr := make([]byte, 24)
	s.order.PutUint32(hdr[0:], magic)
	s.order.PutUint16(hdr[4:], 2)
	s.order.PutUint16(hdr[6:], 4)
	s.order.PutUint32(hdr[16:], snap)
	s.order.PutUint32(hdr[20:], s.linkType)
	b.Write(hdr)
	for _, r := range s.recs {
		rh := make([]byte, 16)
		if s.modified {
			rh = make([]byte, 24)
		}
		orig := r.origLen
		if orig == 0 {
			orig = uint32(len(r.data))
		}
		s.order.PutUint32(rh[0:], r.sec)
		s.order.PutUint32(rh[4:], r.frac)
		s.order.PutUint32(rh[8:], uint32(len(r.data)))
		s.order.PutUint32(rh[12:], orig)
		b.Write(rh)
		b.Write(r.data)
	}
	return b.Bytes()
}

type tIface struct {
	linkType uint16
	snaplen  uint32
	tsresol  int // -1: no option (default 10^-6); else the option byte
	tsoffset int64
}

type tPkt struct {
	iface   uint32
	ts      uint64 // in the interface's units
	data    []byte
	origLen uint32
	simple  bool // simple packet block (no interface, no timestamp)
}

type tNgSpec struct {
	order  binary.ByteOrder
	ifaces []tIface
	pkts   []tPkt
	// extra is written after the interfaces, before the packets (NRB,
	// custom blocks...).
	extra [][]byte
}

// ngBlock frames a block body with type, lengths and padding.
func ngBlock(order binary.ByteOrder, typ uint32, body []byte) []byte {
	p := pad4(len(body))
	total := 12 + len(body) + p
	out := make([]byte, total)
	order.PutUint32(out[0:], typ)
	order.PutUint32(out[4:], uint32(total))
	copy(out[8:], body)
	order.PutUint32(out[total-4:], uint32(total))
	return out
}

func ngOpt(order binary.ByteOrder, code uint16, val []byte) []byte {
	out := make([]byte, 4+len(val)+pad4(len(val)))
	order.PutUint16(out[0:], code)
	order.PutUint16(out[2:], uint16(len(val)))
	copy(out[4:], val)
	return out
}

func buildPcapng(s tNgSpec) []byte {
	o := s.order
	var b bytes.Buffer
	shb := make([]byte, 16)
	o.PutUint32(shb[0:], 0x1a2b3c4d)
	o.PutUint16(shb[4:], 1)
	o.PutUint16(shb[6:], 0)
	o.PutUint64(shb[8:], ^uint64(0))
	b.Write(ngBlock(o, 0x0a0d0d0a, shb))
	for _, ifc := range s.ifaces {
		body := make([]byte, 8)
		o.PutUint16(body[0:], ifc.linkType)
		snap := ifc.snaplen
		if snap == 0 {
			snap = 65535
		}
		o.PutUint32(body[4:], snap)
		if ifc.tsresol >= 0 {
			body = append(body, ngOpt(o, 9, []byte{byte(ifc.tsresol)})...)
		}
		if ifc.tsoffset != 0 {
			v := make([]byte, 8)
			o.PutUint64(v, uint64(ifc.tsoffset))
			body = append(body, ngOpt(o, 14, v)...)
		}
		body = append(body, 0, 0, 0, 0) // opt_endofopt
		b.Write(ngBlock(o, 1, body))
	}
	for _, x := range s.extra {
		b.Write(x)
	}
	for _, p := range s.pkts {
		orig := p.origLen
		if orig == 0 {
			orig = uint32(len(p.data))
		}
		if p.simple {
			body := make([]byte, 4, 4+len(p.data)+3)
			o.PutUint32(body[0:], orig)
			body = append(body, p.data...)
			b.Write(ngBlock(o, 3, body))
			continue
		}
		body := make([]byte, 20, 20+len(p.data)+3)
		o.PutUint32(body[0:], p.iface)
		o.PutUint32(body[4:], uint32(p.ts>>32))
		o.PutUint32(body[8:], uint32(p.ts))
		o.PutUint32(body[12:], uint32(len(p.data)))
		o.PutUint32(body[16:], orig)
		body = append(body, p.data...)
		body = append(body, make([]byte, pad4(len(p.data)))...)
		b.Write(ngBlock(o, 6, body))
	}
	return b.Bytes()
}

var littleEndian = binary.LittleEndian

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// payload returns n bytes that identify frame i.
func payload(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	return b
}
