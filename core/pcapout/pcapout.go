// Package pcapout re-emits the frames sipnab reads (-O FILE) as a classic
// pcap or a pcapng file, optionally split by size or capture time into a
// numbered set, optionally as a ring that keeps only the newest files.
//
// Both formats keep nanosecond timestamps: classic pcap with the nanosecond
// magic 0xa1b23c4d, pcapng with if_tsresol=9 on every interface
// (draft-ietf-opsawg-pcapng §4.2). A pcapng section header names the
// application and the operating system (shb_userappl, shb_os); each source
// (a file's base name, an interface) becomes an Interface Description Block
// named after it (if_name), one per source and link type; host names the
// caller knows are written as Name Resolution Blocks. Classic pcap has one
// link type per file, so a frame of another link type than the file's first
// is not written and is counted (Stats.SkippedLinkType), never dropped
// silently.
//
// Safety: the writer never writes over one of the run's inputs (Create
// refuses), a file of a split set is created exclusively (a file already
// at its name is never replaced: the write stops with an error), and ring
// rotation deletes only files this Writer created, after checking the file
// at that name is still the one it created.
package pcapout

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// Format is the file format written.
type Format int

const (
	// FormatAuto picks pcapng for a name ending in .pcapng (or .ntar),
	// classic pcap otherwise.
	FormatAuto Format = iota
	FormatPcap
	FormatPcapNG
)

func (f Format) String() string {
	switch f {
	case FormatPcap:
		return "pcap"
	case FormatPcapNG:
		return "pcapng"
	}
	return "auto"
}

// Snaplen is the snapshot length written in the file and interface headers:
// the largest frame sipnab reads (core/capture refuses larger records).
const Snaplen = 262144

// MaxSetFiles bounds the files of one split set (the numbered suffix has
// five digits).
const MaxSetFiles = 99999

// Options sets up a Writer.
type Options struct {
	// Path is the file written, or the name a split set is numbered from
	// (out.pcapng → out-00001.pcapng, out-00002.pcapng, ...).
	Path string
	// Format is the format; FormatAuto decides by Path's extension.
	Format Format
	// SplitBytes starts a new file before a record would take the current
	// one past this many bytes (0: no size split). A file always holds at
	// least one record.
	SplitBytes int64
	// SplitDuration starts a new file when a frame's capture time is this
	// far past the first frame of the current file (0: no time split).
	SplitDuration time.Duration
	// Ring keeps at most this many files of the set, deleting the oldest
	// this Writer created (0: keep every file). Needs a split.
	Ring int
	// Inputs are the paths the run reads: Create refuses to write over
	// any of them.
	Inputs []string
	// Application and OS go into the pcapng section header (shb_userappl,
	// shb_os).
	Application, OS string
	// Names are host names known for addresses, written as a pcapng Name
	// Resolution Block at the start of every file (nothing in classic
	// pcap, which has no such block).
	Names []Name
}

// Name is one name resolution record.
type Name struct {
	Addr netip.Addr
	Name string
}

// Stats are the writer's counts.
type Stats struct {
	Frames          uint64   // records written
	Bytes           uint64   // bytes written (headers included)
	Files           int      // files created
	Deleted         int      // files the ring deleted
	SkippedLinkType uint64   // classic pcap: frames of another link type than the file's
	RingKept        []string // files the ring did not delete because the file at the name changed
	Current         string   // the file being written
}

// Writer writes frames. It is not safe for concurrent use.
type Writer struct {
	o      Options
	format Format

	f        *os.File
	bw       *bufio.Writer
	size     int64
	start    time.Time // capture time of the current file's first frame
	hasStart bool
	linkType int // classic pcap: the file's link type, -1 before the first frame
	ifaces   map[ifaceKey]uint32
	seq      int
	err      error

	own   []ownFile // files created, oldest first (the ring's candidates)
	known map[Name]bool
	stats Stats
}

type ifaceKey struct {
	source   string
	linkType uint16
}

type ownFile struct {
	path string
	info os.FileInfo
}

// Create checks the options and opens the first file.
func Create(o Options) (*Writer, error) {
	if o.Path == "" {
		return nil, errors.New("writing capture: no file named")
	}
	if o.SplitBytes < 0 || o.SplitDuration < 0 || o.Ring < 0 {
		return nil, errors.New("writing capture: split size, split duration and ring must not be negative")
	}
	if o.Ring > 0 && o.SplitBytes == 0 && o.SplitDuration == 0 {
		return nil, errors.New("writing capture: a ring needs a split by size or duration")
	}
	if o.Ring > MaxSetFiles {
		return nil, fmt.Errorf("writing capture: ring of %d files exceeds %d", o.Ring, MaxSetFiles)
	}
	if o.SplitBytes > 0 && o.SplitBytes < 1024 {
		return nil, fmt.Errorf("writing capture: split size %d bytes is below 1024", o.SplitBytes)
	}
	w := &Writer{o: o, format: o.Format, linkType: -1}
	if w.format == FormatAuto {
		w.format = FormatPcap
		switch strings.ToLower(filepath.Ext(o.Path)) {
		case ".pcapng", ".ntar":
			w.format = FormatPcapNG
		}
	}
	if err := w.checkInputs(o.Path); err != nil {
		return nil, err
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// Format is the format being written.
func (w *Writer) Format() Format { return w.format }

// split reports whether the output is a numbered set.
func (w *Writer) split() bool { return w.o.SplitBytes > 0 || w.o.SplitDuration > 0 }

// name is the path of the n-th file of a split set.
func (w *Writer) name(n int) string {
	ext := filepath.Ext(w.o.Path)
	return fmt.Sprintf("%s-%05d%s", strings.TrimSuffix(w.o.Path, ext), n, ext)
}

// checkInputs refuses a path that is one of the run's inputs (the same file
// by device and inode, so another spelling or a link is caught too).
func (w *Writer) checkInputs(path string) error {
	out, err := os.Stat(path)
	if err != nil {
		return nil // nothing there yet: it cannot be an input
	}
	for _, in := range w.o.Inputs {
		if fi, err := os.Stat(in); err == nil && os.SameFile(fi, out) {
			return fmt.Errorf("writing capture: %s is an input of this run (%s); sipnab never writes over an input", path, in)
		}
	}
	return nil
}

// open creates the next file and writes its headers.
func (w *Writer) open() error {
	path := w.o.Path
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if w.split() {
		if w.seq >= MaxSetFiles {
			return fmt.Errorf("writing capture: the set %s reached %d files", w.o.Path, MaxSetFiles)
		}
		w.seq++
		path = w.name(w.seq)
		// A split set never replaces a file: one at its name was not
		// written by this run (or is an input).
		flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	}
	if err := w.checkInputs(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("writing capture: %s already exists; a split set never replaces a file it did not write in this run", path)
		}
		return fmt.Errorf("writing capture: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("writing capture: %w", err)
	}
	w.f, w.bw, w.size, w.hasStart, w.linkType = f, bufio.NewWriterSize(f, 64<<10), 0, false, -1
	w.ifaces = map[ifaceKey]uint32{}
	w.own = append(w.own, ownFile{path: path, info: info})
	w.stats.Files++
	w.stats.Current = path
	if w.format == FormatPcapNG {
		w.put(shb(w.o.Application, w.o.OS))
		if nrb := nrb(w.o.Names); nrb != nil {
			w.put(nrb)
		}
	}
	// A classic pcap header waits for the first frame's link type.
	if w.err != nil {
		return w.err
	}
	return w.prune()
}

// prune deletes the oldest files of the ring past Ring, only files this
// Writer created and only while the file at the name is still the one it
// created.
func (w *Writer) prune() error {
	if w.o.Ring <= 0 {
		return nil
	}
	for len(w.own) > w.o.Ring {
		old := w.own[0]
		w.own = w.own[1:]
		fi, err := os.Lstat(old.path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // someone else removed it
			}
			return fmt.Errorf("writing capture: ring: %w", err)
		}
		if !os.SameFile(fi, old.info) {
			w.stats.RingKept = append(w.stats.RingKept, old.path)
			continue
		}
		if err := os.Remove(old.path); err != nil {
			return fmt.Errorf("writing capture: ring: %w", err)
		}
		w.stats.Deleted++
	}
	return nil
}

func (w *Writer) put(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.bw.Write(b)
	w.size += int64(n)
	w.stats.Bytes += uint64(n)
	if err != nil {
		w.err = fmt.Errorf("writing capture %s: %w", w.stats.Current, err)
	}
}

// closeFile flushes and closes the current file.
func (w *Writer) closeFile() error {
	if w.f == nil {
		return nil
	}
	if w.err == nil {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("writing capture %s: %w", w.stats.Current, err)
		}
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("writing capture %s: %w", w.stats.Current, err)
	}
	w.f, w.bw = nil, nil
	return w.err
}

// WriteFrame writes one frame. After the first error every call returns
// it: a write error stops the output, it is never skipped over.
func (w *Writer) WriteFrame(f *packet.Frame) error {
	if w.err != nil {
		return w.err
	}
	if w.f == nil {
		return errors.New("writing capture: writer closed")
	}
	if len(f.Data) > Snaplen {
		return fmt.Errorf("writing capture: frame %d of %s has %d bytes, above %d", f.Ordinal, f.Source, len(f.Data), Snaplen)
	}
	rec := w.recordLen(f)
	if w.split() && w.stats.Frames > 0 && w.hasStart {
		next := (w.o.SplitBytes > 0 && w.size+rec > w.o.SplitBytes) ||
			(w.o.SplitDuration > 0 && f.TS.Sub(w.start) >= w.o.SplitDuration)
		if next {
			if err := w.closeFile(); err != nil {
				return err
			}
			if err := w.open(); err != nil {
				w.err = err
				return err
			}
		}
	}
	if !w.hasStart {
		w.start, w.hasStart = f.TS, true
	}
	switch w.format {
	case FormatPcapNG:
		id, ok := w.ifaces[ifaceKey{f.Source, f.LinkType}]
		if !ok {
			id = uint32(len(w.ifaces))
			w.ifaces[ifaceKey{f.Source, f.LinkType}] = id
			w.put(idb(f.LinkType, f.Source))
		}
		w.put(epbHeader(id, f))
		w.put(f.Data)
		w.put(epbTrailer(len(f.Data)))
	default:
		if w.linkType < 0 {
			w.linkType = int(f.LinkType)
			w.put(pcapHeader(f.LinkType))
		}
		if int(f.LinkType) != w.linkType {
			w.stats.SkippedLinkType++
			return nil
		}
		w.put(pcapRecord(f))
		w.put(f.Data)
	}
	if w.err != nil {
		return w.err
	}
	w.stats.Frames++
	return nil
}

// recordLen is the bytes a frame's record takes (for the size split).
func (w *Writer) recordLen(f *packet.Frame) int64 {
	n := int64(len(f.Data))
	if w.format == FormatPcapNG {
		return 32 + pad4(n)
	}
	return 16 + n
}

// AddNames adds host names learned while writing (a pcapng input's Name
// Resolution Blocks): a pcapng file gets a Name Resolution Block with the
// new ones at once, before the frames that follow, and every later file
// of a set starts with all of them. Names already known, and names past
// the bound of one block (4096), are ignored. Classic pcap has no such
// block.
func (w *Writer) AddNames(names []Name) {
	if w.known == nil {
		w.known = map[Name]bool{}
		for _, n := range w.o.Names {
			w.known[n] = true
		}
	}
	var fresh []Name
	for _, n := range names {
		if w.known[n] || len(w.known) >= maxNRB {
			continue
		}
		w.known[n] = true
		fresh = append(fresh, n)
	}
	if len(fresh) == 0 {
		return
	}
	w.o.Names = append(w.o.Names, fresh...)
	if w.format == FormatPcapNG && w.f != nil {
		if b := nrb(fresh); b != nil {
			w.put(b)
		}
	}
}

// Close flushes and closes the current file.
func (w *Writer) Close() error {
	return w.closeFile()
}

// Stats returns the writer's counts.
func (w *Writer) Stats() Stats {
	s := w.stats
	s.RingKept = append([]string(nil), s.RingKept...)
	return s
}

// Files lists the files of the output that are still on disk as this
// Writer left them (created, not deleted by the ring), oldest first.
func (w *Writer) Files() []string {
	out := make([]string, len(w.own))
	for i, f := range w.own {
		out[i] = f.path
	}
	return out
}

func pad4(n int64) int64 { return (n + 3) &^ 3 }

var le = binary.LittleEndian

// pcapHeader is the classic pcap file header, nanosecond variant (magic
// 0xa1b23c4d), version 2.4.
func pcapHeader(lt uint16) []byte {
	b := make([]byte, 24)
	le.PutUint32(b[0:], 0xa1b23c4d)
	le.PutUint16(b[4:], 2)
	le.PutUint16(b[6:], 4)
	le.PutUint32(b[16:], Snaplen)
	le.PutUint32(b[20:], uint32(lt))
	return b
}

// tsNanos is a frame's capture time in nanoseconds since the epoch (0 for a
// time before it, which neither format can write).
func tsNanos(t time.Time) uint64 {
	n := t.UnixNano()
	if n < 0 {
		return 0
	}
	return uint64(n)
}

func origLen(f *packet.Frame) int {
	if f.OrigLen > len(f.Data) {
		return f.OrigLen
	}
	return len(f.Data)
}

func pcapRecord(f *packet.Frame) []byte {
	var b [16]byte
	ns := tsNanos(f.TS)
	le.PutUint32(b[0:], uint32(ns/1e9))
	le.PutUint32(b[4:], uint32(ns%1e9))
	le.PutUint32(b[8:], uint32(len(f.Data)))
	le.PutUint32(b[12:], uint32(origLen(f)))
	return b[:]
}

// pcapng option encoding: code, length, value padded to 4 bytes.
func opt(b []byte, code uint16, v []byte) []byte {
	b = le.AppendUint16(b, code)
	b = le.AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	for i := len(v); i%4 != 0; i++ {
		b = append(b, 0)
	}
	return b
}

// block wraps a body into a pcapng block of type typ.
func block(typ uint32, body []byte) []byte {
	total := 12 + len(body)
	b := make([]byte, 0, total)
	b = le.AppendUint32(b, typ)
	b = le.AppendUint32(b, uint32(total))
	b = append(b, body...)
	return le.AppendUint32(b, uint32(total))
}

// cut bounds a UTF-8 string option to fit its 16-bit length with room.
func cut(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// shb is a section header block: byte-order magic, version 1.0, section
// length unknown (-1), shb_os (3) and shb_userappl (4).
func shb(app, osName string) []byte {
	body := le.AppendUint32(nil, 0x1a2b3c4d)
	body = le.AppendUint16(body, 1)
	body = le.AppendUint16(body, 0)
	body = le.AppendUint64(body, ^uint64(0))
	if osName != "" {
		body = opt(body, 3, []byte(cut(osName, 1024)))
	}
	if app != "" {
		body = opt(body, 4, []byte(cut(app, 1024)))
	}
	body = le.AppendUint32(body, 0) // opt_endofopt
	return block(0x0a0d0d0a, body)
}

// idb is an interface description block: link type, snaplen, if_name (2)
// and if_tsresol (9) = 9 (nanoseconds).
func idb(lt uint16, name string) []byte {
	body := le.AppendUint16(nil, lt)
	body = le.AppendUint16(body, 0)
	body = le.AppendUint32(body, Snaplen)
	if name != "" {
		body = opt(body, 2, []byte(cut(name, 1024)))
	}
	body = opt(body, 9, []byte{9})
	body = le.AppendUint32(body, 0)
	return block(0x00000001, body)
}

// epbHeader is an enhanced packet block up to its packet data; the data
// and epbTrailer follow.
func epbHeader(id uint32, f *packet.Frame) []byte {
	total := 32 + pad4(int64(len(f.Data)))
	b := make([]byte, 28)
	le.PutUint32(b[0:], 0x00000006)
	le.PutUint32(b[4:], uint32(total))
	le.PutUint32(b[8:], id)
	ns := tsNanos(f.TS)
	le.PutUint32(b[12:], uint32(ns>>32))
	le.PutUint32(b[16:], uint32(ns))
	le.PutUint32(b[20:], uint32(len(f.Data)))
	le.PutUint32(b[24:], uint32(origLen(f)))
	return b
}

func epbTrailer(n int) []byte {
	p := int(pad4(int64(n))) - n
	total := 32 + pad4(int64(n))
	b := make([]byte, p, p+4)
	return le.AppendUint32(b, uint32(total))
}

// maxNRB bounds the names written into one Name Resolution Block.
const maxNRB = 4096

// nrb is a name resolution block of IPv4 (1) and IPv6 (2) records, or nil
// without names.
func nrb(names []Name) []byte {
	var body []byte
	n := 0
	for _, nm := range names {
		if !nm.Addr.IsValid() || nm.Name == "" || strings.IndexByte(nm.Name, 0) >= 0 || n >= maxNRB {
			continue
		}
		name := cut(nm.Name, 255)
		var v []byte
		typ := uint16(1)
		if a := nm.Addr.Unmap(); a.Is4() {
			a4 := a.As4()
			v = append(v, a4[:]...)
		} else {
			a16 := nm.Addr.As16()
			v, typ = append(v, a16[:]...), 2
		}
		v = append(append(v, name...), 0)
		body = opt(body, typ, v)
		n++
	}
	if n == 0 {
		return nil
	}
	body = le.AppendUint32(body, 0) // nrb_record_end
	return block(0x00000004, body)
}
