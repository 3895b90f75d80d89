package media

import "net/netip"

// epKey is an endpoint address as the endpoint index keys it: plain
// bytes (the address's 16-byte form, the port, whether it is IPv4 and
// valid), which the map hashes in one pass over 20 bytes instead of field
// by field through netip's types (an SDP looks each announced address up
// and adds the new ones; a new RTP flow looks up both of its ends).
type epKey struct {
	addr [16]byte
	port uint16
	meta uint16 // bit 0: IPv4 (1.2.3.4, not ::ffff:1.2.3.4); bit 1: a valid address
}

// epKeyOf returns a's key; zoned is true when a carries an IPv6 zone,
// which the key cannot hold (such addresses are indexed by AddrPort).
func epKeyOf(a netip.AddrPort) (k epKey, zoned bool) {
	ip := a.Addr()
	if ip.Zone() != "" {
		return epKey{}, true
	}
	k = epKey{addr: ip.As16(), port: a.Port()}
	if ip.Is4() {
		k.meta |= 1
	}
	if ip.IsValid() {
		k.meta |= 2
	}
	return k, false
}

// epIndex is the announced endpoints by address (Store.eps): by key, and
// the rare zoned address by AddrPort itself.
type epIndex struct {
	m     map[epKey]*endpoint
	zoned map[netip.AddrPort]*endpoint
}

func newEPIndex() epIndex { return epIndex{m: make(map[epKey]*endpoint)} }

// get returns the endpoint announced at a; nil when none.
func (x *epIndex) get(a netip.AddrPort) *endpoint {
	k, zoned := epKeyOf(a)
	if zoned {
		return x.zoned[a]
	}
	return x.m[k]
}

func (x *epIndex) set(a netip.AddrPort, ep *endpoint) {
	k, zoned := epKeyOf(a)
	if zoned {
		if x.zoned == nil {
			x.zoned = make(map[netip.AddrPort]*endpoint)
		}
		x.zoned[a] = ep
		return
	}
	x.m[k] = ep
}

func (x *epIndex) del(a netip.AddrPort) {
	k, zoned := epKeyOf(a)
	if zoned {
		delete(x.zoned, a)
		return
	}
	delete(x.m, k)
}

func (x *epIndex) len() int { return len(x.m) + len(x.zoned) }
