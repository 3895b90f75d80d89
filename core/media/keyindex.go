package media

// packedKey is a Key as plain bytes: the map of streams hashes it in one
// pass over 44 bytes instead of field by field through netip's types (the
// lookup runs once per RTP packet).
type packedKey struct {
	src, dst [16]byte // the addresses' 16-byte forms
	ports    uint32   // source port << 16 | destination port
	ssrc     uint32
	meta     uint32 // bit 0 fax; bits 1, 2: source, destination is IPv4; bits 3, 4: source, destination present
}

// packAddrs packs k ignoring IPv6 zones.
func (k Key) packAddrs() packedKey {
	sa, da := k.Src.Addr(), k.Dst.Addr()
	p := packedKey{
		src:   sa.As16(),
		dst:   da.As16(),
		ports: uint32(k.Src.Port())<<16 | uint32(k.Dst.Port()),
		ssrc:  k.SSRC,
	}
	if k.Fax {
		p.meta |= 1
	}
	if sa.Is4() {
		p.meta |= 1 << 1
	}
	if da.Is4() {
		p.meta |= 1 << 2
	}
	if sa.IsValid() {
		p.meta |= 1 << 3
	}
	if da.IsValid() {
		p.meta |= 1 << 4
	}
	return p
}

// pack returns k's packed form; zoned is true when an address carries an
// IPv6 zone, which the packed form cannot hold (such keys are indexed by
// Key itself).
func (k Key) pack() (p packedKey, zoned bool) {
	if k.Src.Addr().Zone() != "" || k.Dst.Addr().Zone() != "" {
		return packedKey{}, true
	}
	return k.packAddrs(), false
}

// keyIndex maps Keys to values through their packed form. The rare key
// with a zoned address goes to a map keyed by Key itself.
type keyIndex[V any] struct {
	m     map[packedKey]V
	zoned map[Key]V
}

func newKeyIndex[V any]() keyIndex[V] { return keyIndex[V]{m: make(map[packedKey]V)} }

func (x *keyIndex[V]) get(k Key) (V, bool) {
	p, zoned := k.pack()
	if zoned {
		v, ok := x.zoned[k]
		return v, ok
	}
	v, ok := x.m[p]
	return v, ok
}

func (x *keyIndex[V]) set(k Key, v V) {
	p, zoned := k.pack()
	if zoned {
		if x.zoned == nil {
			x.zoned = make(map[Key]V)
		}
		x.zoned[k] = v
		return
	}
	x.m[p] = v
}

func (x *keyIndex[V]) del(k Key) {
	p, zoned := k.pack()
	if zoned {
		delete(x.zoned, k)
		return
	}
	delete(x.m, p)
}

func (x *keyIndex[V]) len() int { return len(x.m) + len(x.zoned) }

// each calls f for every entry, in no particular order.
func (x *keyIndex[V]) each(f func(V)) {
	for _, v := range x.m {
		f(v)
	}
	for _, v := range x.zoned {
		f(v)
	}
}
