package packet

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// FrameRef is an evidence pointer: `<source>#<ordinal>@<digest>`, where the
// digest is the first 16 hex digits of the SHA-256 of the frame's captured
// bytes. A zero FrameRef means "no pointer" and must be omitted, never
// rendered as "" or frame 0.
type FrameRef struct {
	Source  string
	Ordinal uint64
	Digest  [8]byte
}

// RefOf computes the evidence pointer of a frame. It returns the zero
// FrameRef for a nil frame or a frame without an ordinal.
func RefOf(f *Frame) FrameRef {
	if f == nil || f.Ordinal == 0 || f.Source == "" {
		return FrameRef{}
	}
	sum := sha256.Sum256(f.Data)
	var r FrameRef
	r.Source = f.Source
	r.Ordinal = f.Ordinal
	copy(r.Digest[:], sum[:8])
	return r
}

// IsZero reports whether the pointer is absent.
func (r FrameRef) IsZero() bool { return r.Ordinal == 0 }

func (r FrameRef) String() string {
	if r.IsZero() {
		return ""
	}
	return r.Source + "#" + strconv.FormatUint(r.Ordinal, 10) + "@" + hex.EncodeToString(r.Digest[:])
}

// MarshalText renders the pointer; callers omit zero pointers with omitempty
// on a string field or a pointer, never by emitting "".
func (r FrameRef) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

var errBadRef = errors.New("frame pointer must look like <source>#<ordinal>@<16 hex digits>")

// ParseFrameRef parses `<source>#<ordinal>@<digest>`.
func ParseFrameRef(s string) (FrameRef, error) {
	at := strings.LastIndexByte(s, '@')
	hash := strings.LastIndexByte(s, '#')
	if at < 0 || hash < 0 || hash > at || hash == 0 {
		return FrameRef{}, errBadRef
	}
	ord, err := strconv.ParseUint(s[hash+1:at], 10, 64)
	if err != nil || ord == 0 {
		return FrameRef{}, errBadRef
	}
	d, err := hex.DecodeString(s[at+1:])
	if err != nil || len(d) != 8 {
		return FrameRef{}, errBadRef
	}
	var r FrameRef
	r.Source = s[:hash]
	r.Ordinal = ord
	copy(r.Digest[:], d)
	return r, nil
}
