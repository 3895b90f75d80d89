package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Format is a capture file format this package reads.
type Format uint8

const (
	// FormatUnknown is a format this package does not read.
	FormatUnknown Format = iota
	// FormatPcap is the classic libpcap format (microsecond, nanosecond and
	// the "modified" variant, either byte order).
	FormatPcap
	// FormatPcapNG is pcapng (any number of sections and interfaces).
	FormatPcapNG
)

func (f Format) String() string {
	switch f {
	case FormatPcap:
		return "pcap"
	case FormatPcapNG:
		return "pcapng"
	}
	return "unknown"
}

// Errors a reader reports. Match them with errors.Is: the returned errors
// wrap them with the file name and the position of the fault.
var (
	// ErrUnsupportedFormat: the file is not pcap or pcapng (plain or gzip).
	// The error is a *FormatError naming the format when it is recognized.
	ErrUnsupportedFormat = errors.New("unsupported capture format")
	// ErrTruncated: the file ends in the middle of a header or a record.
	// Every frame before the cut was delivered.
	ErrTruncated = errors.New("capture file is truncated")
	// ErrMalformed: a header or record is invalid (impossible lengths,
	// unknown interface, bad version). Frames before it were delivered.
	ErrMalformed = errors.New("capture file is malformed")
	// ErrInflateLimit: a gzip-compressed capture inflates past the ceiling
	// (a gzip bomb guard). Frames before the ceiling were delivered.
	ErrInflateLimit = errors.New("decompressed capture exceeds the inflation ceiling")
)

// FormatError is returned for a file in a format this package does not
// read. It matches ErrUnsupportedFormat with errors.Is.
type FormatError struct {
	// Name is the recognized format ("Microsoft NetMon 2.x", "snoop", ...),
	// empty when the leading bytes match nothing known.
	Name string
	// Magic is the file's first four bytes, big-endian.
	Magic uint32
	// Short is how many leading bytes the file had when it was shorter
	// than four bytes (0 otherwise).
	Short int
	// Compressed is true when the unsupported content was inside gzip.
	Compressed bool
}

func (e *FormatError) Error() string {
	inner := ""
	if e.Compressed {
		inner = "gzip-compressed "
	}
	switch {
	case e.Name != "":
		return fmt.Sprintf("unsupported capture format: %s%s (only pcap and pcapng are read)", inner, e.Name)
	case e.Short > 0:
		return fmt.Sprintf("unknown capture format: %sfile has only %d bytes", inner, e.Short)
	}
	return fmt.Sprintf("unknown capture format (%smagic 0x%08x)", inner, e.Magic)
}

// Unwrap lets errors.Is(err, ErrUnsupportedFormat) match.
func (e *FormatError) Unwrap() error { return ErrUnsupportedFormat }

// kind is the result of sniffing a file's leading bytes.
type kind struct {
	format   Format
	gzip     bool
	bigEnd   bool // pcap: header fields are big-endian
	nano     bool // pcap: nanosecond timestamps
	modified bool // pcap: Kuznetzov's modified format, 24-byte record headers
}

// sniffLen is how many leading bytes sniff wants (a tar header's "ustar" is
// at offset 257).
const sniffLen = 262

// sniff identifies a capture format from its leading bytes. It never looks
// at the file name.
func sniff(b []byte) (kind, error) {
	if len(b) == 0 {
		return kind{}, &FormatError{Name: "empty file"}
	}
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		return kind{gzip: true}, nil
	}
	if len(b) < 4 {
		return kind{}, &FormatError{Short: len(b)}
	}
	be := binary.BigEndian.Uint32(b)
	switch be {
	case 0xa1b2c3d4:
		return kind{format: FormatPcap, bigEnd: true}, nil
	case 0xd4c3b2a1:
		return kind{format: FormatPcap}, nil
	case 0xa1b23c4d:
		return kind{format: FormatPcap, bigEnd: true, nano: true}, nil
	case 0x4d3cb2a1:
		return kind{format: FormatPcap, nano: true}, nil
	case 0xa1b2cd34:
		return kind{format: FormatPcap, bigEnd: true, modified: true}, nil
	case 0x34cdb2a1:
		return kind{format: FormatPcap, modified: true}, nil
	case 0x0a0d0d0a:
		return kind{format: FormatPcapNG}, nil
	}
	if name := otherFormat(b); name != "" {
		return kind{}, &FormatError{Name: name, Magic: be}
	}
	return kind{}, &FormatError{Magic: be}
}

// otherFormat names well-known formats that are not pcap or pcapng, so the
// refusal tells the user what they have.
func otherFormat(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("GMBU")):
		return "Microsoft NetMon 2.x"
	case bytes.HasPrefix(b, []byte("RTSS")):
		return "Microsoft NetMon 1.x"
	case bytes.HasPrefix(b, []byte("snoop\x00\x00\x00")):
		return "snoop (RFC 1761)"
	case bytes.HasPrefix(b, []byte("XCP\x00")):
		return "NetXRay / Sniffer for Windows"
	case bytes.HasPrefix(b, []byte("TRSNIFF data    \x1a")):
		return "Sniffer (DOS)"
	case bytes.HasPrefix(b, []byte("ObserverPktBuffe")):
		return "Network Instruments Observer"
	case bytes.HasPrefix(b, []byte("PK\x03\x04")):
		return "zip archive"
	case bytes.HasPrefix(b, []byte("BZh")):
		return "bzip2-compressed data"
	case bytes.HasPrefix(b, []byte("\xfd7zXZ\x00")):
		return "xz-compressed data"
	case bytes.HasPrefix(b, []byte("\x28\xb5\x2f\xfd")):
		return "zstd-compressed data"
	case bytes.HasPrefix(b, []byte("\x04\x22\x4d\x18")):
		return "lz4-compressed data"
	case bytes.HasPrefix(b, []byte("7z\xbc\xaf\x27\x1c")):
		return "7-Zip archive"
	case len(b) >= 262 && bytes.Equal(b[257:262], []byte("ustar")):
		return "tar archive"
	case bytes.HasPrefix(b, []byte("\x7fELF")):
		return "ELF executable"
	}
	return ""
}
