package media

import (
	"net/netip"
	"testing"
)

// TestEPIndexKeepsAddressesApart: the endpoint index's packed key tells
// apart every pair of addresses AddrPort tells apart (an IPv4 address and
// its IPv4-mapped IPv6 form, another port, the invalid address and ::,
// zoned addresses, which go to their own map), and finds each under the
// address it was set at.
func TestEPIndexKeepsAddressesApart(t *testing.T) {
	addrs := []netip.AddrPort{
		netip.MustParseAddrPort("1.2.3.4:5004"),
		netip.MustParseAddrPort("[::ffff:1.2.3.4]:5004"),
		netip.MustParseAddrPort("1.2.3.4:5006"),
		netip.MustParseAddrPort("[2001:db8::1]:5004"),
		netip.MustParseAddrPort("[fe80::1%eth0]:5004"),
		netip.MustParseAddrPort("[fe80::1%eth1]:5004"),
		netip.MustParseAddrPort("[fe80::1]:5004"),
		netip.MustParseAddrPort("[::]:0"),
		netip.MustParseAddrPort("0.0.0.0:0"),
		{},
	}
	x := newEPIndex()
	for i, a := range addrs {
		x.set(a, &endpoint{addr: a, ordinal: uint64(i)})
	}
	if x.len() != len(addrs) {
		t.Fatalf("%d endpoints indexed, want %d", x.len(), len(addrs))
	}
	for i, a := range addrs {
		if ep := x.get(a); ep == nil || ep.ordinal != uint64(i) {
			t.Fatalf("%v: got %+v, want endpoint %d", a, ep, i)
		}
	}
	for i, a := range addrs {
		x.del(a)
		if x.get(a) != nil || x.len() != len(addrs)-i-1 {
			t.Fatalf("%v: still indexed after del (len %d)", a, x.len())
		}
	}
}
