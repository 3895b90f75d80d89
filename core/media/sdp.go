package media

import (
	"hash/maphash"
	"net/netip"
	"strings"
	"time"
	"unsafe"

	"github.com/sipnab/sipnab/core/rtp"
	"github.com/sipnab/sipnab/core/sdp"
)

// OnSDP registers the media endpoints an offer or answer announces for a
// dialog: each m= port at its effective c= address, with the codecs its
// rtpmap lines name (dynamic payload types) over the RFC 3551 table. A
// re-INVITE re-registers; an endpoint already announced by the same dialog
// is updated in place, so the streams bound to it see the new codecs. Hold
// (c=0.0.0.0) announces no endpoint; sendonly/inactive are recorded. RTP
// already seen at or from a newly announced endpoint stops being orphaned.
// src is where the signaling came from. Nothing of s is kept past the call
// (its strings are interned or copied), so the caller may reuse s.
func (st *Store) OnSDP(callID string, ts time.Time, s *sdp.Session, offer bool, src netip.AddrPort) {
	if s == nil || callID == "" {
		return
	}
	st.mu.Lock()
	changed := false
	var h uint64 // callID's callHash, once the SDP announces a new endpoint
	hashed := false
	st.markCall(callID)
	for i := range s.Media {
		m := &s.Media[i]
		if m.Port <= 0 || m.Port > 65535 {
			continue
		}
		conn := m.Conn
		if conn == "" {
			conn = s.Conn
		}
		addr, err := netip.ParseAddr(strings.TrimSpace(conn))
		if err != nil || addr.IsUnspecified() {
			continue
		}
		ap := netip.AddrPortFrom(addr.Unmap(), uint16(m.Port))
		ep := st.eps.get(ap)
		var took *endpoint // the endpoint another dialog announced before
		if ep == nil || ep.callID != callID {
			if ep == nil && st.eps.len() >= st.cfg.MaxEndpoints {
				st.evictEndpoint()
			}
			if ep == nil {
				st.epQ.push(ap)
			}
			took = ep
			if took != nil {
				st.markCall(took.callID)
				for _, x := range took.sharers {
					st.markCall(x.callID)
				}
			}
			st.epOrd++
			var sharers []sharer
			if took != nil {
				sharers = st.sharersAfter(took, callID, ts)
			}
			if !hashed {
				h, hashed = st.callHash(callID), true
			}
			ep = st.newCallEndpoint(h, callID, len(m.Formats))
			ep.addr, ep.callID, ep.ordinal = ap, callID, st.epOrd
			ep.sharers = sharers
			st.eps.set(ap, ep)
		}
		// Strings kept past this call are interned or copied: a view into the
		// SDP text would keep the whole body alive for the endpoint's life.
		ep.mediaType = internMediaType(m.Type)
		ep.fax = strings.EqualFold(m.Proto, "udptl") || strings.EqualFold(m.Proto, "udp/udptl")
		ep.offer = offer
		ep.direction = internDirection(m.Direction)
		ep.hold = m.Direction == sdp.SendOnly || m.Direction == sdp.Inactive
		ep.ptime = m.Ptime
		ep.ice = iceTraversal(m.Attrs)
		ep.at = ts
		ep.signaler = src
		if cap(ep.formats) >= len(m.Formats) {
			// re-announced: the old formats are read only under st.mu
			ep.formats = ep.formats[:0]
		} else {
			ep.formats = make([]format, 0, len(m.Formats))
		}
		for _, f := range m.Formats {
			if f.PayloadType < 0 || f.PayloadType > 127 {
				continue
			}
			pt := uint8(f.PayloadType)
			var c rtp.Codec
			fromMap := f.Encoding != ""
			if fromMap {
				c = st.codecs.named(f.Encoding, uint32(max(f.ClockRate, 0)), m.Type)
			} else if sc, ok := rtp.StaticCodec(pt); ok {
				c = sc
			} else {
				continue
			}
			ff := format{pt: pt, codec: c, rtpmap: fromMap}
			if _, ok := rtp.AMRFlavorOf(c.Name); ok {
				ff.amr = rtp.ParseAMRFmtp(f.Fmtp)
			}
			ep.formats = append(ep.formats, ff)
		}
		changed = true
		for _, o := range append([]*stream(nil), st.orphanEP[ap]...) {
			if !o.orphanIdx {
				continue // listed twice (sent to itself): bound already
			}
			st.unindexOrphan(o)
			st.bind(o, ep)
		}
		// Streams already bound to the dialogs sharing the address join
		// this dialog when its SDP now names both of their ends.
		for _, x := range ep.sharers {
			l := st.byCall[x.callID]
			for _, s := range l[max(0, len(l)-maxShareScan):] {
				if s.key.Src == ap || s.key.Dst == ap {
					st.share(s, callID)
				}
			}
		}
	}
	st.mu.Unlock()
	if changed {
		st.rev.Add(1)
	}
}

// endpointFormats is how many formats an endpoint has room for in its own
// allocation (newEndpoint): an audio offer's usual codec, its alternative
// and telephone-event.
const endpointFormats = 3

// endpointBlock is an endpoint with room for its usual formats, allocated
// together.
type endpointBlock struct {
	ep      endpoint
	formats [endpointFormats]format
}

// newEndpoint returns a new endpoint, with room for n formats in the same
// allocation when n is small.
func newEndpoint(n int) *endpoint {
	if n > endpointFormats {
		return &endpoint{}
	}
	b := &endpointBlock{}
	b.ep.formats = b.formats[:0]
	return &b.ep
}

// sharersAfter returns who keeps sharing an address callID announces at ts
// after prev's dialog: prev's owner and sharers whose announcement is within
// SharedEndpointWindow of ts, at most maxSharers (the newest). The
// announcements of those who do not keep it leave their dialogs' lists.
func (st *Store) sharersAfter(prev *endpoint, callID string, ts time.Time) []sharer {
	cands := append(prev.sharers, sharer{callID: prev.callID, at: prev.at, ep: prev})
	var out []sharer
	for i := len(cands) - 1; i >= 0; i-- { // newest first
		x := cands[i]
		keep := x.callID != callID && len(out) < maxSharers &&
			ts.Sub(x.at) <= SharedEndpointWindow && x.at.Sub(ts) <= SharedEndpointWindow
		for _, y := range out {
			if y.callID == x.callID {
				keep = false
			}
		}
		if keep {
			out = append(out, x)
		} else {
			st.unindexEndpoint(x.ep)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func (st *Store) evictEndpoint() {
	for {
		a, ok := st.epQ.pop()
		if !ok {
			return
		}
		if ep := st.eps.get(a); ep != nil {
			st.eps.del(a)
			st.unindexEndpoint(ep)
			for _, x := range ep.sharers {
				st.unindexEndpoint(x.ep)
			}
			st.stats.EndpointsEvicted++
			return
		}
	}
}

// Endpoint is one SDP-announced media endpoint as readers see it.
type Endpoint struct {
	Address   string    `json:"address"` // ip:port
	CallID    string    `json:"call_id"`
	MediaType string    `json:"media_type"`
	Codecs    []string  `json:"codecs,omitempty"`
	Fax       bool      `json:"fax,omitempty"`
	Offer     bool      `json:"offer"`
	Direction string    `json:"direction,omitempty"`
	Hold      bool      `json:"hold,omitempty"`
	PtimeMs   int       `json:"ptime_ms,omitempty"`
	At        time.Time `json:"at"`
	Signaler  string    `json:"signaler,omitempty"`
	// ICETraversal: the media section carries an ICE server-reflexive or
	// relayed candidate (a=candidate ... typ srflx|relay, RFC 8839 §5.1):
	// its c= address is only the default candidate, and a private one is
	// expected.
	ICETraversal bool `json:"ice_traversal,omitempty"`
	// AddrPort is the parsed address (not serialized).
	AddrPort netip.AddrPort `json:"-"`
}

// EndpointsFor returns the media endpoints a dialog's SDP announced that
// the store still remembers, oldest first.
func (st *Store) EndpointsFor(callID string) []Endpoint {
	st.mu.RLock()
	defer st.mu.RUnlock()
	var out []Endpoint
	if ce := st.callEndpointsOf(callID, st.callHash(callID)); ce != nil {
		for _, ep := range ce.l {
			out = append(out, ep.view())
		}
	}
	return out
}

// callEndpoints lists the endpoints a dialog's SDP announced, oldest
// first, with room for an offer's and an answer's in its own allocation.
// The index (Store.epByCall) holds it by pointer under the Call-ID's hash,
// so that adding to it is one map lookup of a 64-bit key: hashing the
// Call-ID once, while it is in the cache, and never reading the stored
// Call-IDs again when the map grows (a string-keyed map rehashes every key,
// each in the first message of its dialog, long out of the cache). The
// Call-ID is compared on a hit all the same: Call-IDs whose hashes collide
// are chained through next, so a collision costs a comparison, never a
// wrong answer.
type callEndpoints struct {
	callID string
	next   *callEndpoints // another Call-ID with the same hash
	l      []*endpoint
	buf    [2]*endpoint
}

// callHash is the key of callID in epByCall: seeded per store, so that a
// sender cannot choose Call-IDs whose keys collide (and collisions are
// chained anyway, see callEndpoints).
func (st *Store) callHash(callID string) uint64 {
	return maphash.String(st.epSeed, callID)
}

// callEndpointsOf returns callID's list, h being its callHash; nil when
// the store lists no endpoint for it.
func (st *Store) callEndpointsOf(callID string, h uint64) *callEndpoints {
	for ce := st.epByCall[h]; ce != nil; ce = ce.next {
		if ce.callID == callID {
			return ce
		}
	}
	return nil
}

// callEndpointsBlock is a call's endpoint list allocated with room for its
// first endpoint: 64 and 320 bytes, the 384-byte size class the two took
// apart, in one allocation instead of two.
type callEndpointsBlock struct {
	ce  callEndpoints
	blk endpointBlock
}

// newCallEndpoint returns a new endpoint for callID (h its callHash) with
// room for n formats, appended to callID's list: a call's first endpoint
// that fits an endpointBlock is allocated with the list itself, any other
// as newEndpoint makes it.
func (st *Store) newCallEndpoint(h uint64, callID string, n int) *endpoint {
	ce := st.callEndpointsOf(callID, h)
	var ep *endpoint
	switch {
	case ce == nil && n <= endpointFormats:
		b := &callEndpointsBlock{}
		b.blk.ep.formats = b.blk.formats[:0]
		ce, ep = &b.ce, &b.blk.ep
		st.listCall(h, callID, ce)
	case ce == nil:
		ce, ep = &callEndpoints{}, newEndpoint(n)
		st.listCall(h, callID, ce)
	default:
		ep = newEndpoint(n)
	}
	ce.l = append(ce.l, ep)
	return ep
}

// addCallEndpoint appends ep to the list of callID's endpoints.
func (st *Store) addCallEndpoint(callID string, ep *endpoint) {
	st.addCallEndpointAt(st.callHash(callID), callID, ep)
}

// addCallEndpointAt is addCallEndpoint with callID's hash h.
func (st *Store) addCallEndpointAt(h uint64, callID string, ep *endpoint) {
	ce := st.callEndpointsOf(callID, h)
	if ce == nil {
		ce = &callEndpoints{}
		st.listCall(h, callID, ce)
	}
	ce.l = append(ce.l, ep)
}

// listCall lists ce, a new empty endpoint list, as callID's under h, ahead
// of the Call-IDs sharing h.
func (st *Store) listCall(h uint64, callID string, ce *callEndpoints) {
	ce.callID, ce.next = callID, st.epByCall[h]
	ce.l = ce.buf[:0]
	st.epByCall[h] = ce
}

func (st *Store) unindexEndpoint(ep *endpoint) {
	st.markCall(ep.callID)
	st.unindexEndpointAt(st.callHash(ep.callID), ep)
}

// unindexEndpointAt removes ep from the list of its Call-ID, whose hash
// is h.
func (st *Store) unindexEndpointAt(h uint64, ep *endpoint) {
	var prev *callEndpoints
	ce := st.epByCall[h]
	for ce != nil && ce.callID != ep.callID {
		prev, ce = ce, ce.next
	}
	if ce == nil {
		return
	}
	for i, x := range ce.l {
		if x == ep {
			ce.l = append(ce.l[:i], ce.l[i+1:]...)
			break
		}
	}
	if len(ce.l) == 0 {
		switch {
		case prev != nil:
			prev.next = ce.next
		case ce.next != nil:
			st.epByCall[h] = ce.next
		default:
			delete(st.epByCall, h)
		}
	}
}

func (ep *endpoint) view() Endpoint {
	e := Endpoint{
		Address:   ep.addr.String(),
		AddrPort:  ep.addr,
		CallID:    ep.callID,
		MediaType: ep.mediaType,
		Fax:       ep.fax,
		Offer:     ep.offer,
		Direction: string(ep.direction),
		Hold:      ep.hold,
		PtimeMs:   ep.ptime,
		At:        ep.at,

		ICETraversal: ep.ice,
	}
	if ep.signaler.IsValid() {
		e.Signaler = ep.signaler.String()
	}
	for _, f := range ep.formats {
		e.Codecs = append(e.Codecs, f.codec.Name)
	}
	return e
}

// iceTraversal reports whether a media section's attributes hold an ICE
// candidate of type srflx or relay (RFC 8839 §5.1: candidate-attribute ...
// "typ" SP cand-type).
func iceTraversal(attrs []sdp.Attr) bool {
	for _, a := range attrs {
		// Only a 9-byte key can fold to "candidate" (none of its letters
		// has a non-ASCII fold, as K and s do): the length rules out the
		// usual attributes before EqualFold looks at them.
		if len(a.Key) != len("candidate") || !strings.EqualFold(a.Key, "candidate") {
			continue
		}
		f := strings.Fields(a.Value)
		for i := 0; i+1 < len(f); i++ {
			if strings.EqualFold(f[i], "typ") {
				if t := strings.ToLower(f[i+1]); t == "srflx" || t == "relay" {
					return true
				}
				break
			}
		}
	}
	return false
}

// internMediaType returns the media type as a constant string when it is a
// common one, a copy otherwise.
func internMediaType(t string) string {
	switch t {
	case "audio":
		return "audio"
	case "video":
		return "video"
	case "image":
		return "image"
	case "application":
		return "application"
	case "text":
		return "text"
	case "message":
		return "message"
	}
	return strings.Clone(t)
}

// internDirection returns the direction as one of sdp's constants when it
// is one, a copy otherwise.
func internDirection(d sdp.Direction) sdp.Direction {
	switch d {
	case sdp.SendRecv:
		return sdp.SendRecv
	case sdp.SendOnly:
		return sdp.SendOnly
	case sdp.RecvOnly:
		return sdp.RecvOnly
	case sdp.Inactive:
		return sdp.Inactive
	}
	return sdp.Direction(strings.Clone(string(d)))
}

// codecMemo remembers the codecs the codec table resolved for the latest
// rtpmap encodings, so that the usual few (an SDP names the same codecs
// call after call) are not lower-cased and looked up again on every SDP:
// codecSlots entries, a name kept in one of two slots chosen by its
// length, first bytes, last byte and clock rate (codecSlots2), each the
// name as written (a copy) and the clock rate and codec it resolves to.
// Only names the table holds are kept: the codec then does not depend on
// the media type (rtp.NamedCodec), so a hit returns what NamedCodec
// would. Bounded by its slots; a name found in neither slot is resolved as
// before and takes an empty one of the two, else the first.
type codecMemo [codecSlots]codecMemoEntry

const codecSlots = 32 // a power of two

type codecMemoEntry struct {
	enc   string
	clock uint32
	c     rtp.Codec
}

// codecSlots2 returns enc's two slots in the memo (enc not empty): two
// parts of a multiplicative hash of its length, first, second and last
// bytes and the clock rate. A name is kept in either, so the usual few do
// not evict one another.
func codecSlots2(enc string, clock uint32) (uint, uint) {
	k := uint64(len(enc))<<56 | uint64(enc[0])<<48 | uint64(enc[min(1, len(enc)-1)])<<40 | uint64(enc[len(enc)-1])<<32 | uint64(clock)
	k *= 0x9E3779B97F4A7C15
	return uint(k>>59) & (codecSlots - 1), uint(k>>50) & (codecSlots - 1)
}

// named is rtp.NamedCodec(enc, clock, mediaType), the name copied when
// the table does not hold it (a view into the SDP text would keep the
// whole body alive).
func (cm *codecMemo) named(enc string, clock uint32, mediaType string) rtp.Codec {
	if enc == "" {
		return rtp.NamedCodec(enc, clock, mediaType)
	}
	a, b := codecSlots2(enc, clock)
	if e := &cm[a]; e.enc == enc && e.clock == clock {
		return e.c
	}
	if e := &cm[b]; e.enc == enc && e.clock == clock {
		return e.c
	}
	c := rtp.NamedCodec(enc, clock, mediaType)
	if c.Name != "" && unsafe.StringData(c.Name) == unsafe.StringData(enc) {
		c.Name = strings.Clone(c.Name) // a name the codec table does not hold
		return c
	}
	e := &cm[a] // an empty slot of the two, else the first
	if e.enc != "" && cm[b].enc == "" {
		e = &cm[b]
	}
	*e = codecMemoEntry{enc: strings.Clone(enc), clock: clock, c: c}
	return c
}
