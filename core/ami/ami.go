// Package ami spots Asterisk Manager Interface (AMI) traffic sent in
// cleartext: the manager's banner and login actions, on any port.
//
// AMI is not SIP, so a capture full of it reads as zero unanalysed SIP
// messages, which is correct and misleading. The engine hands every TCP
// payload that failed the SIP check to [Tracker.Observe], which costs two
// literal prefix tests on it: the banner ("Asterisk Call Manager/") and a
// login action ("Action: login", case-insensitive). A match is recorded as a
// [Sighting] keyed by (src, dst, dst_port, kind).
//
// The username is outside the key: this path runs before authentication,
// so the field is attacker-chosen and keying on it would let a sender grow
// the map without limit. [Inspect] reads it (bounded by [MaxValueChars]) and
// [Tracker.Observe] drops it, so no sighting carries one. The secret itself
// is never read into memory the package keeps: only whether one was sent.
package ami

import (
	"bytes"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// DefaultPort is AMI's registered TCP port. Sightings report the port they
// were seen on beside it rather than requiring it: a deployment that moved
// AMI off 5038 is the one most likely to assume nobody can find it.
const DefaultPort = 5038

// MaxValueChars bounds the bytes read from a header value (the username).
const MaxValueChars = 64

// DefaultMaxSightings bounds the distinct sightings a Tracker keeps; past it
// new keys are refused and counted ([Stats.Refused]).
const DefaultMaxSightings = 1024

// maxScanBytes bounds how much of a login payload is scanned for its
// Username and Secret lines (an AMI action is a few short lines).
const maxScanBytes = 4096

// Kind is what was seen.
type Kind uint8

const (
	// Banner is the manager's greeting ("Asterisk Call Manager/<version>"),
	// sent by the server when a client connects.
	Banner Kind = iota + 1
	// CleartextLogin is an "Action: login" sent by a client.
	CleartextLogin
)

// String returns the kind's name as capture_status reports it.
func (k Kind) String() string {
	switch k {
	case Banner:
		return "banner"
	case CleartextLogin:
		return "cleartext-login"
	}
	return "unknown"
}

var (
	bannerPrefix = []byte("Asterisk Call Manager/")
	loginPrefix  = []byte("action: login")
)

// Observation is what one payload shows.
type Observation struct {
	// Kind is Banner or CleartextLogin.
	Kind Kind
	// SecretPresent: a login carried a non-empty Secret line (its value is
	// never copied).
	SecretPresent bool
	// Username is the login's Username value, cut to MaxValueChars bytes.
	// Tracker.Observe drops it: no Sighting carries a username.
	Username string
}

// Inspect applies the two prefix tests to a payload that is not SIP. ok is
// false when neither matches (the common case: two comparisons).
func Inspect(payload []byte) (o Observation, ok bool) {
	switch {
	case bytes.HasPrefix(payload, bannerPrefix):
		return Observation{Kind: Banner}, true
	case hasLoginPrefix(payload):
		o = Observation{Kind: CleartextLogin}
		scanLogin(payload, &o)
		return o, true
	}
	return Observation{}, false
}

// hasLoginPrefix reports "Action: login" (any case) at the start of b,
// followed by the end of its line or of the payload.
func hasLoginPrefix(b []byte) bool {
	if len(b) < len(loginPrefix) {
		return false
	}
	for i, c := range loginPrefix {
		if lower(b[i]) != c {
			return false
		}
	}
	if len(b) == len(loginPrefix) {
		return true
	}
	switch b[len(loginPrefix)] {
	case '\r', '\n', ' ', '\t':
		return true
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// scanLogin reads the Username (bounded) and whether a Secret was sent from
// the lines of a login action, up to its blank line or maxScanBytes.
func scanLogin(b []byte, o *Observation) {
	if len(b) > maxScanBytes {
		b = b[:maxScanBytes]
	}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			return // end of the action
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case equalFold(bytes.TrimSpace(name), "secret"):
			o.SecretPresent = o.SecretPresent || len(value) > 0
		case equalFold(bytes.TrimSpace(name), "username") && o.Username == "":
			if len(value) > MaxValueChars {
				value = value[:MaxValueChars]
			}
			o.Username = string(value)
		}
	}
}

func equalFold(b []byte, lowerName string) bool {
	if len(b) != len(lowerName) {
		return false
	}
	for i := range b {
		if lower(b[i]) != lowerName[i] {
			return false
		}
	}
	return true
}

// Sighting is one (src, dst, dst_port, kind) seen at least once. Src is the
// manager client and Dst:DstPort the AMI server, whichever way the observed
// payload travelled (a banner goes server to client), so one server seen by
// many clients is one sighting per client, never one per connection.
type Sighting struct {
	// Kind is what was seen.
	Kind Kind
	// SecretPresent: at least one of these logins carried a secret.
	SecretPresent bool
	// Src is the client's address.
	Src netip.Addr
	// Dst is the AMI server's address and DstPort its port.
	Dst     netip.Addr
	DstPort uint16
	// Count counts the payloads seen under this key.
	Count uint64
	// First and Last are the first and last payload's capture times.
	First, Last time.Time
}

// Stats are a Tracker's counters.
type Stats struct {
	// Refused counts payloads whose new key found the Tracker full.
	Refused uint64
}

type key struct {
	kind    Kind
	src     netip.Addr
	dst     netip.Addr
	dstPort uint16
}

// Tracker accumulates sightings. The zero value is ready to use with
// DefaultMaxSightings; it is safe for one writer and concurrent readers.
type Tracker struct {
	// Max bounds the distinct sightings kept (DefaultMaxSightings when 0).
	Max int

	mu      sync.Mutex
	m       map[key]*Sighting
	refused uint64
}

// Observe inspects one packet that the router found to be neither HEP, SIP
// nor media. Only TCP payloads are looked at; the username is dropped.
func (t *Tracker) Observe(p *packet.Packet) {
	if p.Transport != packet.TransportTCP {
		return
	}
	o, ok := Inspect(p.Payload)
	if !ok {
		return
	}
	t.Record(o, p.TS, p.Src, p.Dst)
}

// Record counts one observation of a payload sent from src to dst.
func (t *Tracker) Record(o Observation, ts time.Time, src, dst netip.AddrPort) {
	client, server := src, dst
	if o.Kind == Banner {
		client, server = dst, src
	}
	k := key{kind: o.Kind, src: client.Addr().Unmap(), dst: server.Addr().Unmap(), dstPort: server.Port()}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[k]
	if s == nil {
		max := t.Max
		if max <= 0 {
			max = DefaultMaxSightings
		}
		if len(t.m) >= max {
			t.refused++
			return
		}
		if t.m == nil {
			t.m = map[key]*Sighting{}
		}
		s = &Sighting{Kind: k.kind, Src: k.src, Dst: k.dst, DstPort: k.dstPort, First: ts}
		t.m[k] = s
	}
	s.Count++
	s.SecretPresent = s.SecretPresent || o.SecretPresent
	if ts.Before(s.First) {
		s.First = ts
	}
	if ts.After(s.Last) {
		s.Last = ts
	}
}

// Sightings returns a copy of every sighting, ordered by kind, server,
// server port, then client. Never nil: empty means looked, found none.
func (t *Tracker) Sightings() []Sighting {
	t.mu.Lock()
	out := make([]Sighting, 0, len(t.m))
	for _, s := range t.m {
		out = append(out, *s)
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if c := a.Dst.Compare(b.Dst); c != 0 {
			return c < 0
		}
		if a.DstPort != b.DstPort {
			return a.DstPort < b.DstPort
		}
		return a.Src.Compare(b.Src) < 0
	})
	return out
}

// Len returns the number of sightings held.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Stats returns the Tracker's counters.
func (t *Tracker) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Stats{Refused: t.refused}
}
