package capture

import (
	"encoding/binary"
	"net/netip"
)

// Name is one host name a capture file's Name Resolution Block gives for
// an address (pcapng, draft-ietf-opsawg-pcapng §4.5).
type Name struct {
	Addr netip.Addr
	Name string
}

// Bounds of the names one file may give: past them names are counted, not
// kept (a hostile file cannot grow the table).
const (
	MaxNames     = 4096
	MaxNameBytes = 256
	maxNameTotal = 256 << 10
)

// nameTable collects the names of a pcapng file's Name Resolution Blocks:
// those not yet taken (TakeNames) and the counts.
type nameTable struct {
	fresh   []Name
	kept    int
	bytes   int
	dropped uint64
}

// parseNRB reads the records of a Name Resolution Block body: records of
// type 1 (IPv4: 4 address bytes) and 2 (IPv6: 16) followed by one or more
// NUL-terminated names, each padded to 32 bits, until the end record (type
// 0). A record that overruns the block ends the parse; a name that is
// empty, too long or not terminated is skipped and counted.
func (t *nameTable) parseNRB(order binary.ByteOrder, b []byte) {
	for len(b) >= 4 {
		typ, n := order.Uint16(b[0:2]), int(order.Uint16(b[2:4]))
		if typ == 0 || 4+n > len(b) {
			return
		}
		v := b[4 : 4+n]
		b = b[min(len(b), 4+(n+3)&^3):]
		alen := 0
		switch typ {
		case 1:
			alen = 4
		case 2:
			alen = 16
		default:
			continue
		}
		if len(v) < alen {
			continue
		}
		addr, _ := netip.AddrFromSlice(v[:alen])
		for rest := v[alen:]; len(rest) > 0; {
			end := 0
			for end < len(rest) && rest[end] != 0 {
				end++
			}
			name := rest[:end]
			rest = rest[min(len(rest), end+1):]
			if len(name) == 0 && len(rest) == 0 {
				break // padding after the last name
			}
			if len(name) == 0 || len(name) > MaxNameBytes || t.kept >= MaxNames || t.bytes+len(name) > maxNameTotal {
				t.dropped++
				continue
			}
			t.fresh = append(t.fresh, Name{Addr: addr, Name: string(name)})
			t.kept++
			t.bytes += len(name)
		}
	}
}

// TakeNames returns the names read from the file's Name Resolution Blocks
// since the last call (nil when none), in file order: a name applies to
// the frames after its block.
func (r *Reader) TakeNames() []Name {
	if r.ng == nil || len(r.ng.names.fresh) == 0 {
		return nil
	}
	n := r.ng.names.fresh
	r.ng.names.fresh = nil
	return n
}

// NamesDropped counts the names the file gave past MaxNames (or
// malformed) that were not kept.
func (r *Reader) NamesDropped() uint64 {
	if r.ng == nil {
		return 0
	}
	return r.ng.names.dropped
}

// NameSink is a FrameSink that also takes the names a file gives: the
// loader hands them over before the frame read after their block.
type NameSink interface {
	HandleNames(source string, names []Name)
}
