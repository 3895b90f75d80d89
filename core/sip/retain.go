package sip

import "unsafe"

// Retained is a parsed message reduced to what rebuilds it: its bytes
// (Message.Raw, shared, not copied), the parser limits and the two counts
// of bytes around it that are not in Raw. A store that keeps many messages
// keeps these (32 bytes besides the message's own bytes) and parses
// again when a reader asks, instead of holding the parser's whole structure
// (headers, Vias, name-addrs: about four times the message's size).
type Retained struct {
	// raw and n are Message.Raw without its capacity (nobody appends to
	// it): 8 bytes less per message kept than a slice.
	raw *byte
	lim *Limits
	n   uint32
	// junk is JunkPrefixBytes, negated when the junk was not only CRLF
	// (MalJunkBeforeStartLine).
	junk     int32
	trailing int32
}

// Retain returns the compact form of m, and false when m was not produced
// by Parse or ParseLimits (a Message built by hand cannot be rebuilt: keep
// it as it is). Retain(m).Message() equals m field for field
// (TestRetainedMessageEqualsParsed, FuzzRetain).
//
// A caller that changed a parsed Message (rather than treating it as
// read-only, as its documentation asks) would get the parser's version back;
// as a cheap guard, a Message whose start line or Call-ID no longer lies in
// Raw is not retained.
func (m *Message) Retain() (Retained, bool) {
	if m == nil || m.lim == nil || m.JunkPrefixBytes > 1<<30 || m.TrailingBytes > 1<<30 || len(m.Raw) > 1<<30 ||
		!inRaw(m.Raw, m.StartLine) || (m.CallID != "" && !inRaw(m.Raw, m.CallID)) {
		return Retained{}, false
	}
	junk := int32(m.JunkPrefixBytes)
	if len(m.Malformed) > 0 && m.Malformed[0] == MalJunkBeforeStartLine {
		junk = -junk // the junk was not CRLF: flagged again on Message
	}
	r := Retained{lim: m.lim, junk: junk, trailing: int32(m.TrailingBytes)}
	if len(m.Raw) > 0 {
		// (an empty Raw keeps no pointer: its data pointer may lie just
		// past another object)
		r.raw, r.n = unsafe.SliceData(m.Raw), uint32(len(m.Raw))
	}
	return r, true
}

// inRaw reports whether s is a view into raw (an empty s is).
func inRaw(raw []byte, s string) bool {
	if s == "" {
		return true
	}
	if len(raw) == 0 {
		return false
	}
	r := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= r && p+uintptr(len(s)) <= r+uintptr(len(raw))
}

// Raw returns the message's bytes (start line through body). Read-only.
func (r Retained) Raw() []byte {
	if r.raw == nil {
		return nil
	}
	return unsafe.Slice(r.raw, r.n)
}

// Message parses the bytes again and returns the Message Parse gave the
// first time. Each call returns a new Message.
func (r Retained) Message() *Message { return r.into(new(Message)) }

// MessageInto is Message parsed into m, reusing the arrays of m's Headers
// and Vias: a reader that rebuilds message after message into the same m
// allocates them once. Whatever m held is overwritten, the arrays too; the
// strings, Raw and Body of a Message rebuilt before stay valid (views into
// the retained bytes, or their own). The result equals Message's
// (TestRetainedMessageEqualsParsed, FuzzRetain).
func (r Retained) MessageInto(m *Message) *Message {
	*m = Message{Headers: m.Headers[:0], Vias: m.Vias[:0]}
	return r.into(m)
}

// into parses the retained bytes into the reset m.
func (r Retained) into(m *Message) *Message {
	if r.lim == nil {
		return nil
	}
	// Raw is shared as Retain shared it, not copied again: the
	// Message's strings are views into the retained bytes.
	if err := parseInto(m, r.Raw(), *r.lim, nil, true); err != nil {
		return nil // cannot happen: these bytes parsed before
	}
	m.lim = r.lim
	m.JunkPrefixBytes = int(r.junk)
	if r.junk < 0 {
		// Raw starts at the start line: the junk's flag is restored, first
		// as Parse set it.
		m.JunkPrefixBytes = int(-r.junk)
		m.Malformed = append([]string{MalJunkBeforeStartLine}, m.Malformed...)
	}
	m.TrailingBytes = int(r.trailing)
	return m
}

// limitsRef returns a shared pointer for the default limits (the common
// case) and a private copy for any other.
func limitsRef(lim Limits) *Limits {
	if lim == defaultLimits {
		return &defaultLimits
	}
	p := new(Limits) // only here: &lim would move every caller's lim to the heap
	*p = lim
	return p
}

// defaultLimits is the limits every default Parse shares.
var defaultLimits = DefaultLimits
