// Package portrange holds a set of TCP/UDP ports written as a list of
// ports and ranges ("5060-5061", "80,443,8080,8443", "5060,5080-5090"):
// the SIP ports of --portrange and the WebSocket ports of --ws-portrange
// (docs/capture-sources.md). The port gate asks Contains for every
// SIP-looking payload, so the set is a bitmap (one lookup, no allocation);
// the live capture's kernel filter is built from Ranges.
package portrange

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxEntries bounds the comma-separated entries a list may give (the
// kernel filter spends a few instructions per range).
const MaxEntries = 64

// Defaults: SIP's registered ports (RFC 3261 §18.1.1: 5060 for UDP and
// TCP, 5061 for TLS) and the usual WebSocket ports (RFC 7118 SIP over
// WebSocket rides HTTP's ports).
const (
	DefaultSIP = "5060-5061"
	DefaultWS  = "80,443,8080,8443"
)

// Range is an inclusive range of ports.
type Range struct {
	Lo, Hi uint16
}

// Set is a set of ports. The zero value is empty.
type Set struct {
	bits   [1024]uint64
	ranges []Range // sorted, merged
}

// Parse reads a list of ports and inclusive ranges separated by commas
// ("5060-5061,5080"). Ports run from 1 to 65535; a range's low end is not
// above its high end; at most MaxEntries entries; an empty list is an
// error (a gate that admits nothing is a mistake, not a setting).
func Parse(s string) (*Set, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty port list: give ports or ranges such as 5060-5061,5080")
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxEntries {
		return nil, fmt.Errorf("%d entries: at most %d", len(parts), MaxEntries)
	}
	set := &Set{}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		lo, hi, isRange := strings.Cut(p, "-")
		a, err := port(lo)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		b := a
		if isRange {
			if b, err = port(hi); err != nil {
				return nil, fmt.Errorf("%q: %w", p, err)
			}
			if b < a {
				return nil, fmt.Errorf("%q: the range ends below its start", p)
			}
		}
		set.Add(a, b)
	}
	return set, nil
}

// MustParse is Parse for constants; it panics on a bad list.
func MustParse(s string) *Set {
	set, err := Parse(s)
	if err != nil {
		panic("portrange: " + err.Error())
	}
	return set
}

func port(s string) (uint16, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a port (1-65535)", s)
	}
	return uint16(n), nil
}

// Add adds the ports lo..hi (inclusive).
func (s *Set) Add(lo, hi uint16) {
	for p := uint32(lo); p <= uint32(hi); p++ {
		s.bits[p>>6] |= 1 << (p & 63)
	}
	s.ranges = merge(append(s.ranges, Range{lo, hi}))
}

func merge(r []Range) []Range {
	slices.SortFunc(r, func(a, b Range) int { return int(a.Lo) - int(b.Lo) })
	out := r[:0]
	for _, x := range r {
		if n := len(out); n > 0 && uint32(x.Lo) <= uint32(out[n-1].Hi)+1 {
			out[n-1].Hi = max(out[n-1].Hi, x.Hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

// Contains reports whether p is in the set (false on a nil set).
func (s *Set) Contains(p uint16) bool {
	return s != nil && s.bits[p>>6]&(1<<(p&63)) != 0
}

// Ranges returns the set as sorted, merged ranges (a copy).
func (s *Set) Ranges() []Range {
	if s == nil {
		return nil
	}
	return slices.Clone(s.ranges)
}

// String writes the set back as a list ("5060-5061,5080").
func (s *Set) String() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for i, r := range s.ranges {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(r.Lo)))
		if r.Hi != r.Lo {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(r.Hi)))
		}
	}
	return b.String()
}
