package stun

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The test vectors of RFC 5769 §2.1-§2.3: their FINGERPRINT values and
// mapped addresses are published there.
const (
	rfc5769Request = `
000100582112a442b7e7a701bc34d686fa87dfae
802200105354554e207465737420636c69656e74
002400046e0001ff
80290008932ff9b151263b36
000600096576746a3a68367659202020
000800149aeaa70cbfd8cb56781ef2b5b2d3f249c1b571a2
80280004e57a3bcf`
	rfc5769IPv4Response = `
0101003c2112a442b7e7a701bc34d686fa87dfae
8022000b7465737420766563746f7220
002000080001a147e112a643
000800142b91f599fd9e90c38c7489f92af9ba53f06be7d7
80280004c07d4c96`
	rfc5769IPv6Response = `
010100482112a442b7e7a701bc34d686fa87dfae
8022000b7465737420766563746f7220
002000140002a1470113a9faa5d3f179bc25f4b5bed2b9d9
00080014a382954e4be67bf11784c97c8292c275bfe3ed41
80280004c8fb0b4c`
)

func TestParseReadsTheRFC5769TestVectors(t *testing.T) {
	tx := [12]byte{0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae}
	tests := []struct {
		name     string
		msg      string
		class    Class
		software string
		mapped   string
		finger   uint32
		priority uint32
		attrs    int
	}{
		{"request with ICE attributes", rfc5769Request, ClassRequest, "STUN test client", "", 0xe57a3bcf, 0x6e0001ff, 6},
		{"IPv4 success response", rfc5769IPv4Response, ClassSuccess, "test vector", "192.0.2.1:32853", 0xc07d4c96, 0, 4},
		{"IPv6 success response", rfc5769IPv6Response, ClassSuccess, "test vector", "[2001:db8:1234:5678:11:2233:4455:6677]:32853", 0xc8fb0b4c, 0, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			if err := Parse(unhex(t, tc.msg), &m); err != nil {
				t.Fatal(err)
			}
			if m.Class != tc.class || m.Method != MethodBinding || m.TxID != tx {
				t.Errorf("got class %v method %v tx %x, want %v Binding %x", m.Class, m.Method, m.TxID, tc.class, tx)
			}
			if !m.HasFingerprint || !m.FingerprintOK || m.Fingerprint != tc.finger {
				t.Errorf("got fingerprint %08x ok=%v, want %08x verified", m.Fingerprint, m.FingerprintOK, tc.finger)
			}
			if string(m.Software) != tc.software {
				t.Errorf("got software %q, want %q", m.Software, tc.software)
			}
			if got := ""; m.HasXORMapped {
				got = m.XORMapped.String()
				if got != tc.mapped {
					t.Errorf("got XOR-MAPPED-ADDRESS %s, want %s", got, tc.mapped)
				}
			} else if tc.mapped != "" {
				t.Errorf("no XOR-MAPPED-ADDRESS, want %s", tc.mapped)
			}
			if !m.HasMessageIntegrity || m.Attrs != tc.attrs {
				t.Errorf("got integrity %v and %d attributes, want true and %d", m.HasMessageIntegrity, m.Attrs, tc.attrs)
			}
			if m.Priority != tc.priority || (tc.priority != 0) != m.ICEControlled {
				t.Errorf("got priority %x controlled %v, want %x", m.Priority, m.ICEControlled, tc.priority)
			}
			if tc.class == ClassRequest && (!m.HasUsername || m.TieBreaker != 0x932ff9b151263b36 || !m.IsICECheck()) {
				t.Errorf("got username %v tie-breaker %x ice check %v", m.HasUsername, m.TieBreaker, m.IsICECheck())
			}
		})
	}
}

func TestParseRejectsABadFingerprintButKeepsTheMessage(t *testing.T) {
	b := unhex(t, rfc5769IPv4Response)
	b[len(b)-1] ^= 1
	var m Message
	if err := Parse(b, &m); err != nil {
		t.Fatal(err)
	}
	if !m.HasFingerprint || m.FingerprintOK {
		t.Fatalf("got fingerprint present %v verified %v, want present and failing", m.HasFingerprint, m.FingerprintOK)
	}
	if m.XORMapped.String() != "192.0.2.1:32853" {
		t.Fatalf("got %s", m.XORMapped)
	}
}

func TestMessageTypeBitsRoundTripEveryMethodAndClass(t *testing.T) {
	var w Builder
	var m Message
	for _, meth := range []Method{MethodBinding, MethodAllocate, MethodRefresh, MethodSend, MethodData,
		MethodCreatePermission, MethodChannelBind, MethodConnect, MethodConnectionBind, MethodConnectionAttempt, 0xfff} {
		for c := ClassRequest; c <= ClassError; c++ {
			if err := Parse(w.Begin(c, meth, [12]byte{1}).End(true), &m); err != nil {
				t.Fatal(err)
			}
			if m.Method != meth || m.Class != c || !m.FingerprintOK {
				t.Errorf("built %v %v, parsed %v %v fingerprint ok %v", meth, c, m.Method, m.Class, m.FingerprintOK)
			}
		}
	}
	// RFC 8489 §6: 0x0101 is a Binding success response, 0x0111 a Binding
	// error response, 0x0113 an Allocate error response.
	for _, tc := range []struct {
		t0, t1 byte
		c      Class
		meth   Method
	}{{0x01, 0x01, ClassSuccess, MethodBinding}, {0x01, 0x11, ClassError, MethodBinding}, {0x01, 0x13, ClassError, MethodAllocate}, {0x00, 0x09, ClassRequest, MethodChannelBind}} {
		b := w.Begin(ClassRequest, MethodBinding, [12]byte{}).End(false)
		b[0], b[1] = tc.t0, tc.t1
		if err := Parse(b, &m); err != nil || m.Class != tc.c || m.Method != tc.meth {
			t.Errorf("type %02x%02x: got %v %v %v, want %v %v", tc.t0, tc.t1, m.Class, m.Method, err, tc.c, tc.meth)
		}
	}
}

func TestParseReadsTURNAttributes(t *testing.T) {
	tx := [12]byte{9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2}
	relayed := netip.MustParseAddrPort("198.51.100.1:49152")
	peer6 := netip.MustParseAddrPort("[2001:db8::7]:5004")
	mapped := netip.MustParseAddrPort("203.0.113.9:40000")
	var w Builder
	b := w.Begin(ClassSuccess, MethodAllocate, tx).
		Address(AttrXORRelayedAddress, relayed, true).
		Address(AttrXORMappedAddress, mapped, true).
		U32(AttrLifetime, 600).
		Attr(AttrSoftware, []byte("Coturn-4.6.1 'Gorst'")).
		End(true)
	var m Message
	if err := Parse(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.XORRelayed != relayed || m.XORMapped != mapped || m.Lifetime != 600 || !m.FingerprintOK {
		t.Fatalf("got relayed %s mapped %s lifetime %d fp %v", m.XORRelayed, m.XORMapped, m.Lifetime, m.FingerprintOK)
	}
	b = w.Begin(ClassRequest, MethodChannelBind, tx).
		U32(AttrChannelNumber, 0x4001<<16).
		Address(AttrXORPeerAddress, peer6, true).
		Attr(AttrRealm, []byte("example.org")).Attr(AttrNonce, []byte("abc")).
		Attr(AttrUsername, []byte("user")).Attr(AttrMessageIntegrity, make([]byte, 20)).
		End(false)
	if err := Parse(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.ChannelNumber != 0x4001 || m.NPeers != 1 || m.Peers[0] != peer6 || !m.HasRealm || !m.HasNonce || !m.HasUsername || m.HasFingerprint {
		t.Fatalf("got channel %x peers %v realm %v nonce %v", m.ChannelNumber, m.Peers[:m.NPeers], m.HasRealm, m.HasNonce)
	}
	b = w.Begin(ClassRequest, MethodAllocate, tx).U32(AttrRequestedTransport, 17<<24).End(false)
	if err := Parse(b, &m); err != nil || m.RequestedTransport != 17 {
		t.Fatalf("got transport %d %v", m.RequestedTransport, err)
	}
	b = w.Begin(ClassError, MethodAllocate, tx).ErrorCode(401, "Unauthorized").
		Address(AttrAlternateServer, netip.MustParseAddrPort("192.0.2.5:3478"), false).End(true)
	if err := Parse(b, &m); err != nil || m.ErrorCode != 401 || string(m.ErrorReason) != "Unauthorized" || m.AlternateServer.String() != "192.0.2.5:3478" {
		t.Fatalf("got %d %q %s %v", m.ErrorCode, m.ErrorReason, m.AlternateServer, err)
	}
}

func TestParseRefusesMalformedMessages(t *testing.T) {
	var w Builder
	good := append([]byte(nil), w.Begin(ClassRequest, MethodBinding, [12]byte{1}).U32(AttrPriority, 5).End(true)...)
	tests := []struct {
		name string
		mut  func([]byte) []byte
		want error
	}{
		{"empty", func([]byte) []byte { return nil }, ErrNotSTUN},
		{"RTP first byte", func(b []byte) []byte { b[0] = 0x80; return b }, ErrNotSTUN},
		{"no magic cookie", func(b []byte) []byte { b[4] = 0; return b }, ErrNotSTUN},
		{"length longer than the datagram", func(b []byte) []byte { return b[:len(b)-4] }, ErrLength},
		{"length not a multiple of 4", func(b []byte) []byte { b[3]--; return b[:len(b)-1] }, ErrLength},
		{"attribute longer than the message", func(b []byte) []byte { b[HeaderLen+3] = 200; return b }, ErrAttrLength},
		{"attribute after FINGERPRINT", func(b []byte) []byte {
			b = append(b, 0x80, 0x22, 0, 0)
			b[3] += 4
			return b
		}, ErrAfterFinger},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			err := Parse(tc.mut(append([]byte(nil), good...)), &m)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseNamesUnreadableAttributeValues(t *testing.T) {
	var w Builder
	b := w.Begin(ClassSuccess, MethodBinding, [12]byte{}).
		Attr(AttrXORMappedAddress, []byte{0, 9, 0, 0, 1, 2, 3, 4}).
		Attr(AttrLifetime, []byte{1}).
		Attr(AttrErrorCode, []byte{0, 0, 9, 0}).
		Attr(0x7777, []byte{1, 2}).
		End(false)
	var m Message
	if err := Parse(b, &m); err != nil {
		t.Fatal(err)
	}
	want := "XOR-MAPPED-ADDRESS family,LIFETIME length,ERROR-CODE value"
	if got := strings.Join(m.Malformed, ","); got != want || m.HasXORMapped || m.UnknownRequired != 1 {
		t.Fatalf("got malformed %q mapped %v unknown-required %d, want %q", got, m.HasXORMapped, m.UnknownRequired, want)
	}
}

func TestKindOfDemultiplexesByFirstByte(t *testing.T) {
	for _, tc := range []struct {
		b    byte
		want Kind
	}{{0, KindSTUN}, {3, KindSTUN}, {4, KindOther}, {22, KindOther}, {63, KindOther}, {64, KindChannelData}, {79, KindChannelData}, {80, KindOther}, {127, KindOther}, {128, KindRTP}, {191, KindRTP}, {192, KindOther}} {
		if got := KindOf([]byte{tc.b}); got != tc.want {
			t.Errorf("first byte %d: got %v, want %v", tc.b, got, tc.want)
		}
	}
}

func TestParseChannelDataChecksChannelAndLength(t *testing.T) {
	data := []byte{0x80, 0, 0, 1, 2}
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"unpadded over UDP", AppendChannelData(nil, 0x4000, data, false), true},
		{"padded", AppendChannelData(nil, 0x4fff, data, true), true},
		{"RFC 5766 channel range, as coturn uses", AppendChannelData(nil, 0x6804, data, false), true},
		{"channel out of range", AppendChannelData(nil, 0x8000, data, false), false},
		{"length past the datagram", AppendChannelData(nil, 0x4000, data, false)[:7], false},
		{"more than padding after the data", append(AppendChannelData(nil, 0x4000, data, false), 0, 0, 0, 0), false},
	} {
		cd, err := ParseChannelData(tc.b)
		if (err == nil) != tc.ok {
			t.Errorf("%s: got %v, want ok %v", tc.name, err, tc.ok)
		}
		if tc.ok && string(cd.Data) != string(data) {
			t.Errorf("%s: got data %x", tc.name, cd.Data)
		}
	}
}
