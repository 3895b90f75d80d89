package sip

import (
	"encoding/binary"
	"math/bits"
	"reflect"
	"strings"
	"testing"
)

// fastCases are values the fast paths take, and values they must leave to
// the full parsers (quoted-pairs, token display names, bare URIs, IPv6,
// odd ports, spaces, quoted parameters, repeated and flag parameters).
var fastCases = []string{
	`"Line 0000" <sip:+12125550000@192.0.2.10>;tag=87c62dde00`,
	`<sip:+14155550003@198.51.100.20>`,
	`<sip:+14155550003@198.51.100.20:5060>;tag=a;x=y`,
	`<sips:alice:secret@example.com:5061;transport=tls?subject=x>;tag=1`,
	`<sip:alice@example.com>;x=1;tag=2`,
	`<sip:alice@example.com>;TAG=2`,
	`<sip:alice@example.com>;tag="quoted"`,
	`<sip:alice@example.com>;tag=`,
	`<sip:alice@example.com> ;tag=1`,
	`"A \"B\"" <sip:a@b>`,
	`"" <sip:a@b>`,
	`"a<b" <sip:a@b>`,
	`Bob <sip:bob@b>`,
	`sip:bob@b;tag=1`,
	`<sip:[2001:db8::1]:5060>`,
	`<sip:a@2001:db8::1>`,
	`<sip:a@b:0>`,
	`<sip:a@b:65536>`,
	`<sip:a@b:005060>`,
	`<sip:a@b:5060x>`,
	`<sip:a@b:>`,
	`<sip:a@>`,
	`<Sip:a@b>`,
	`<tel:+1234;phone-context=x>`,
	`<sip:a@b`,
	`< sip:a@b >`,
	`*`,
	`<>`,
	`<sip:host;x=a@b>`,
	`<sip:user;npdi@host:5060>`,
	`<sip:a:b:c@host:5060>`,
	`<sip:a@b;x?y>`,
	`<sip:a?b@c>`,
	`<sip:a@b?c:d>`,
	`<sip:a@b:5060;lr>;tag=x`,
	`<sip:a@b c>`,
	`<sip:a b@c>`,
	`<sip:a@@b>`,
	`"A\" <sip:a@b>`,
	`"Line 0000 with a longer display name" <sip:+12125550000@gateway-long-name.example.com:5060;transport=udp>;tag=87c62dde00`,
	`SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKb4791f7919cb85f0;rport`,
	`SIP/2.0/UDP 192.0.2.10:5060;rport=5060;received=192.0.2.99;branch=z9hG4bK1`,
	`SIP/2.0/TCP host;BRANCH=z9hG4bK1;Received=1.2.3.4;RPORT`,
	`SIP/2.0/udp host:5060;branch=1`,
	`SIP / 2.0 / UDP host:5060;branch=1`,
	`SIP/2.0/UDP  host:5060 ;branch=1`,
	`SIP/2.0/UDP host:5060;branch="q;x"`,
	`SIP/2.0/UDP host:5060;;branch=1`,
	`SIP/2.0/UDP host:5060;branch=1;`,
	`SIP/2.0/UDP [2001:db8::1]:5060;branch=1`,
	`SIP/2.0/UDP host:99999;branch=1`,
	`SIP/2.0/UDP :5060;branch=1`,
	`SIP/2.0/UDP host:5060;branch=1;branch=2`,
	`SIP/2.0/UDP host:5060;branch=a=b`,
	`SIP/2.0/UDP`,
	`SIP/2.0/UDP;branch=1`,
}

// checkFastPaths fails when a fast path answers where the full parser
// would answer differently or flag an error.
func checkFastPaths(t *testing.T, s string) (tookNameAddr, tookVia bool) {
	t.Helper()
	var got NameAddr
	if fastNameAddr(&got, s) {
		want, err := ParseNameAddr(s)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("fastNameAddr(%q) = %+v; ParseNameAddr = %+v, %v", s, got, want, err)
		}
		tookNameAddr = true
	}
	var gotVia Via
	if fastVia(&gotVia, s) {
		want, err := ParseVia(s)
		if err != nil || !reflect.DeepEqual(gotVia, want) {
			t.Fatalf("fastVia(%q) = %+v; ParseVia = %+v, %v", s, gotVia, want, err)
		}
		tookVia = true
	}
	return
}

// TestFastPathsMatchFullParsers checks the fast name-addr and Via paths
// against ParseNameAddr and ParseVia on the cases above, and that they do
// take the common forms.
func TestFastPathsMatchFullParsers(t *testing.T) {
	took := map[string]bool{}
	for _, s := range fastCases {
		na, via := checkFastPaths(t, s)
		took[s] = na || via
	}
	for _, s := range []string{fastCases[0], fastCases[1], fastCases[3], fastCases[29], fastCases[31]} {
		if !took[s] {
			t.Errorf("%q: the fast path was not taken", s)
		}
	}
	for _, s := range []string{`"A \"B\"" <sip:a@b>`, `<sip:a@b:005060>`, `SIP/2.0/udp host:5060;branch=1`, `SIP/2.0/UDP host:5060;branch="q;x"`} {
		if took[s] {
			t.Errorf("%q: the fast path answered a form it should leave to the full parser", s)
		}
	}
}

// TestFastPathsTakeTheSignalingWorkload checks that every From, To,
// Contact and Via of the signaling-only workload takes a fast path (the
// parser's speed on it depends on that; scaled down under the race
// detector) and that the fast answers are the
// full parsers' answers.
func TestFastPathsTakeTheSignalingWorkload(t *testing.T) {
	msgs := signalingWorkload(t)
	n := 0
	for i := range msgs {
		m, err := Parse(msgs[i].Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range m.Headers {
			switch h.ID {
			case HdrFrom, HdrTo, HdrContact:
				if na, _ := checkFastPaths(t, h.Value); !na {
					t.Fatalf("message %d: %s %q: not on the fast path", i, h.Name, h.Value)
				}
			case HdrVia:
				for e, k := nextElem(h.Value, 0); e != ""; e, k = nextElem(h.Value, k) {
					if _, via := checkFastPaths(t, e); !via {
						t.Fatalf("message %d: Via %q: not on the fast path", i, e)
					}
				}
			}
			n++
		}
	}
	t.Logf("%d headers checked", n)
}

// FuzzFastPathsMatchFullParsers checks on arbitrary values that whenever a
// fast path answers, ParseNameAddr or ParseVia give the same answer and no
// error. Seeds: the cases above and every From, To, Contact and Via value
// of FuzzParse's corpus.
func FuzzFastPathsMatchFullParsers(f *testing.F) {
	for _, s := range fastCases {
		f.Add(s)
	}
	for _, b := range fuzzSeeds(f, "testdata/fuzz/FuzzParse") {
		m, err := Parse(b)
		if err != nil {
			continue
		}
		for _, h := range m.Headers {
			switch h.ID {
			case HdrFrom, HdrTo, HdrContact, HdrVia:
				f.Add(h.Value)
			}
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkFastPaths(t, s)
		checkFastPaths(t, trimSpaceFast(s))
	})
}

// TestOutsideASCIIMarksTheFirstByte checks outsideASCII on every byte value
// at every position of a word, behind printable bytes and in front of
// every kind of byte: the lowest mark is the position of the first byte
// outside 0x20..0x7e, and there is no mark when there is none.
func TestOutsideASCIIMarksTheFirstByte(t *testing.T) {
	for pos := 0; pos < 8; pos++ {
		for b := 0; b < 256; b++ {
			for _, after := range []byte{0x00, 0x1f, 0x20, 0x7e, 0x7f, 0xff} {
				var w [8]byte
				for i := range w {
					switch {
					case i < pos:
						w[i] = 'a' + byte(i)
					case i == pos:
						w[i] = byte(b)
					default:
						w[i] = after
					}
				}
				x := uint64(0)
				for i := 7; i >= 0; i-- {
					x = x<<8 | uint64(w[i])
				}
				want := -1
				for i, c := range w {
					if c < 0x20 || c > 0x7e {
						want = i
						break
					}
				}
				f := outsideASCII(x)
				got := -1
				if f != 0 {
					got = bits.TrailingZeros64(f) >> 3
				}
				if got != want {
					t.Fatalf("word % x: first mark at %d, want %d", w, got, want)
				}
			}
		}
	}
}

// TestLookupNameMatchesLookupHeader checks lookupName against
// lookupHeaderBytes on every known name in three spellings and on names it
// does not know, and that only the canonical spelling is reported as such.
func TestLookupNameMatchesLookupHeader(t *testing.T) {
	var names []string
	for id := HeaderID(1); id < hdrCount; id++ {
		c := canonicalNames[id]
		names = append(names, c, strings.ToLower(c), strings.ToUpper(c))
	}
	names = append(names, "X-Unknown", "i", "V", "Via2", "", "-", "9ia", strings.Repeat("a", 40),
		"Call_ID", "Call\rID", "Call-Id", "Via:", "Contacts", "Tox", "CALL-ID", "Cal@-ID", "Contacts", "Contac", "Content-Lengtx")
	for _, n := range names {
		id, canonical := lookupName([]byte(n))
		if want := lookupHeaderBytes([]byte(n)); id != want {
			t.Errorf("%q: id %v, lookupHeaderBytes %v", n, id, want)
		}
		if want := id != HdrExtension && n == canonicalNames[id]; canonical != want {
			t.Errorf("%q: canonical %v, want %v", n, canonical, want)
		}
	}
}

// TestShapeHashHasNoCollisions checks that every known header name has its
// own lookupName slot (a collision would still answer right, slowly).
func TestShapeHashHasNoCollisions(t *testing.T) {
	for h, c := range byShapeHash.collide {
		if c {
			t.Errorf("slot %d is shared", h)
		}
	}
}

// TestNamePatternsCoverTheKnownHeaders checks that every known header whose
// "Name:" fits in 16 bytes has its pattern in the slot of its first three
// bytes (a pattern left out would only be slower), and that each pattern
// matches its own line and not a lower-case or longer name.
func TestNamePatternsCoverTheKnownHeaders(t *testing.T) {
	match := func(line string) (HeaderID, int) {
		b := []byte(line)
		x0, x1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		for _, pi := range patternSlots[patternHash(x0)] {
			if pi == 0 {
				break
			}
			if pt := &namePatterns[pi]; x0&pt.mask[0] == pt.w[0] && x1&pt.mask[1] == pt.w[1] {
				return pt.id, pt.n
			}
		}
		return HdrExtension, -1
	}
	for id := HeaderID(1); id < hdrCount; id++ {
		c := canonicalNames[id]
		if len(c)+1 > 16 {
			continue
		}
		if got, n := match(c + ": some value\r\n"); got != id || n != len(c) {
			t.Errorf("%s: pattern gives %v at %d", c, got, n)
		}
		if got, _ := match(strings.ToLower(c) + ": some value\r\n"); got != HdrExtension && strings.ToLower(c) != c {
			t.Errorf("%s in lower case: pattern gives %v", c, got)
		}
		if got, _ := match(c + "x: some value\r\n"); got != HdrExtension {
			t.Errorf("%sx: pattern gives %v", c, got)
		}
	}
}
