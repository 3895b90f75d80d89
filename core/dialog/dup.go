package dialog

import (
	"encoding/binary"
	"hash/crc32"
	"hash/maphash"
	"math"
	"time"
	"unsafe"
)

// Capture duplicates (docs/retransmissions.md).
//
// A capture duplicate is one message seen twice at the capture point: a
// mirrored (SPAN) copy of the same IP datagram, the same message captured
// on two interfaces of one host, or HEP copies of it sent by two agents. A
// retransmission is the sender sending the message again on the RFC 3261
// §17 timers: Timer A/E fire T1 (500 ms) after the first copy and double
// from there, a 2xx is re-sent on T1 doubling until its ACK (§13.3.1.4), so
// a retransmission follows its previous copy by T1 or more (§17.1.1.1
// lets T1 be lowered only where round trips are known to be shorter). A
// duplicate follows its original by microseconds to a few milliseconds
// with the very same bytes.
//
// The store recognizes a duplicate before the message enters its dialog:
// the same SIP bytes (start line through body) between the same source and
// destination (address and port; for HEP, the envelope's) in the same
// dialog within Config.DuplicateWindow (50 ms) of the copy it repeats, in
// either order, unless both copies came in IPv4 datagrams whose
// Identification differs (RFC 791): those were two datagrams, so the
// sender sent the message twice. b2bua-asterisk.pcapng holds such a pair:
// a phone answers an INVITE and its retransmission with two 100 Trying
// 0.3 ms apart, the same bytes in datagrams 0x0a27 and 0x0a28, and the
// second is a retransmission (§17.2.1), not a duplicate. The IDs only veto:
// equal IDs prove nothing (many stacks send 0 in every datagram with DF
// set, RFC 6864), and HEP, IPv6 and TCP carry none. The rest of the link
// and IP headers is not compared: a second interface sees another link
// header (a VLAN tag, a cooked header), a mirror port may rewrite TTL or
// DSCP, two HEP agents wrap the message differently. The addresses are
// compared: the same bytes between other addresses are the message on
// another hop (a proxy's or a NAT's two sides), which the store keeps as a
// message of its own, as it always has.
// A duplicate is counted (the dialog's duplicates, the copy it repeats, the
// store's Duplicates) and nothing else: it does not count as a message of
// the dialog (msg_count), is not retained, opens no transaction, moves no
// state and no timing, and is never a retransmission.
//
// The messages seen lately are remembered in one fixed table per store
// (dupSets sets of dupWays entries, 24 bytes each: 96 KiB, allocated with
// the first message), keyed by a hash of the bytes, the addresses and the
// dialog, seeded per process like the retransmission identity, so a sender
// cannot make two different messages one fingerprint. The set a message
// lands in is chosen, unseeded, from what the parser read out of its bytes
// (length, status, CSeq number, top Via branch, last bytes; see dupKey)
// mixed with the addresses and the dialog, so which
// entries share a set, and so every count below, is the same on every run
// of the same capture; a sender who aims many messages at one set only
// forces replacements, never a false duplicate. An entry replaced while
// still inside the window (more than dupWays recent messages in one set)
// could hide a later copy of its message: those replacements are counted
// (Stats.DuplicateEntriesEvicted).

// DefaultDuplicateWindow is the default Config.DuplicateWindow.
const DefaultDuplicateWindow = 50 * time.Millisecond

const (
	dupSets = 1024 // a power of two
	dupWays = 4
)

// dupEntry is one message seen lately.
type dupEntry struct {
	key   uint64 // hash of the bytes, the addresses and the dialog; 0: empty
	ts    int64  // capture time of the copy a duplicate would repeat, Unix ns
	pos   int32  // the copy's position in the dialog's retained messages; -1: not retained
	ipID  uint16 // IPv4 Identification of its datagram, when hasID
	hasID bool
}

// age orders entries for replacement: an empty one first, then the oldest.
func (e *dupEntry) age() int64 {
	if e.key == 0 {
		return math.MinInt64
	}
	return e.ts
}

// dupTable remembers the messages seen lately, bounded in count and bytes.
type dupTable struct {
	e       []dupEntry // dupSets*dupWays, allocated with the first message
	evicted uint64     // entries replaced while still inside the window
}

// dupSeed keys dupKey's fingerprint; random per process.
var dupSeed = maphash.MakeSeed()

// castagnoli is the CRC-32C table (hardware-assisted where the CPU has it).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// dupID names a message for the duplicate table: its seeded fingerprint
// (0: never a duplicate) and the set it is kept in.
type dupID struct {
	key uint64
	set uint32
}

// dupKey is the fingerprint of a message's bytes and addresses in one
// dialog, and its set; a zero key when the message has no bytes (a Message
// not made by the parser), which is never taken for a duplicate.
//
// ab is the message's addresses as putAddrPorts writes them.
func dupKey(o *Observation, seq uint64, ab *addrBytes) dupID {
	if len(o.Msg.Raw) == 0 {
		return dupID{}
	}
	// The bytes in one pass of the seeded hash, then that hash with the
	// addresses and the dialog in a second, short one. The set is unseeded
	// and reads no byte of the message twice: it mixes what tells the
	// messages of one dialog apart and the parser has already read out of
	// the bytes (so two copies of the same bytes land in the same set):
	// the length, the status code, the CSeq number, a CRC-32C of the top
	// Via's branch (unique per transaction, RFC 3261 §8.1.1.7), the last
	// eight bytes (the end of a body), then the addresses and the dialog.
	// It need not resist a sender: one who aims many messages at a set
	// forces counted replacements, never a false duplicate (the key
	// decides that, and it is seeded).
	m := o.Msg
	var b [2*16 + 2*2 + 8 + 8]byte
	n := copy(b[:], ab[:])
	binary.BigEndian.PutUint64(b[n:], seq)
	set := mix64(uint64(len(m.Raw))<<32 | uint64(uint32(m.StatusCode)))
	set = mix64(set ^ uint64(m.CSeq.Number))
	if len(m.Vias) > 0 {
		set ^= uint64(crc32.Checksum(unsafeBytes(m.Vias[0].Branch), castagnoli))
	}
	var last [8]byte
	copy(last[:], m.Raw[max(0, len(m.Raw)-8):])
	set = mix64(set ^ binary.LittleEndian.Uint64(last[:]))
	w := b[:n+8]
	for ; len(w) >= 8; w = w[8:] {
		set = mix64(set ^ binary.LittleEndian.Uint64(w))
	}
	var tail [8]byte
	copy(tail[:], w)
	set = mix64(set ^ binary.LittleEndian.Uint64(tail[:]))
	binary.BigEndian.PutUint64(b[n+8:], maphash.Bytes(dupSeed, o.Msg.Raw))
	k := maphash.Bytes(dupSeed, b[:])
	if k == 0 {
		k = 1
	}
	return dupID{key: k, set: uint32(set)}
}

// unsafeBytes views a string's bytes without copying; they must not be
// written.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// mix64 is a fixed 64-bit finalizer (the one of SplitMix64): every input
// bit moves every output bit, with no seed.
func mix64(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func (t *dupTable) set(id dupID) []dupEntry {
	i := int(id.set&(dupSets-1)) * dupWays
	return t.e[i : i+dupWays : i+dupWays]
}

// find returns the entry the message o (key, capture time ts) duplicates:
// the same key within win of its time, not from a datagram of another IPv4
// Identification; nil when none.
func (t *dupTable) find(id dupID, o *Observation, ts, win int64) *dupEntry {
	key := id.key
	if t.e == nil || key == 0 {
		return nil
	}
	set := t.set(id)
	for i := range set {
		e := &set[i]
		if e.key != key {
			continue
		}
		if d := ts - e.ts; d > win || d < -win {
			return nil
		}
		if e.hasID && o.HasIPID && e.ipID != o.IPID {
			return nil // two datagrams: the sender sent it twice
		}
		return e
	}
	return nil
}

// put remembers a message that was not a duplicate: its entry is refreshed
// (a retransmission's later copies repeat the retransmission), else it
// takes an empty entry or the set's oldest one.
func (t *dupTable) put(id dupID, o *Observation, ts int64, pos int32, win int64) {
	key := id.key
	if key == 0 {
		return
	}
	if t.e == nil {
		t.e = make([]dupEntry, dupSets*dupWays)
	}
	set := t.set(id)
	v := -1
	for i := range set {
		if set[i].key == key {
			v = i
			break
		}
	}
	if v < 0 {
		v = 0 // an empty entry, else the oldest
		for i := 1; i < len(set); i++ {
			if set[i].age() < set[v].age() {
				v = i
			}
		}
	}
	e := &set[v]
	if e.key != 0 && e.key != key {
		if d := ts - e.ts; d <= win && d >= -win {
			t.evicted++
		}
	}
	*e = dupEntry{key: key, ts: ts, pos: pos, ipID: o.IPID, hasID: o.HasIPID}
}

// duplicate records a capture duplicate of the retained message pos (-1:
// not retained).
func (d *dialog) duplicate(pos int32) {
	inc32(&d.dups)
	if pos >= 0 && int(pos) < len(d.msgs) {
		if r := &d.msgs[pos]; r.dups < ^uint16(0) {
			r.dups++
		}
	}
}
