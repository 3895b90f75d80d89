package decode

import (
	"bytes"
	"net/netip"
	"sort"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// fragKey identifies the datagram a fragment belongs to (RFC 791, RFC 8200).
type fragKey struct {
	src, dst netip.Addr
	id       uint32
	proto    uint8 // IPv4 protocol; 0 for IPv6
	v6       bool
}

type fragPiece struct {
	off  int
	data []byte
}

// fragEntry collects the fragments of one datagram.
type fragEntry struct {
	key      fragKey
	elem     *listElem
	created  time.Time
	pieces   []fragPiece // sorted by offset, never overlapping
	total    int         // datagram length, -1 until the last fragment arrives
	have     int         // bytes received
	next     uint8       // protocol of the reassembled payload
	haveNext bool
}

func (d *Decoder) fragment4() reason {
	ip := &d.ip4
	s, t := d.addrs()
	key := fragKey{src: s, dst: t, id: uint32(ip.Id), proto: uint8(ip.Protocol)}
	more := ip.Flags&layers.IPv4MoreFragments != 0
	return d.fragment(key, int(ip.FragOffset)*8, more, ip.Payload, uint8(ip.Protocol), true)
}

func (d *Decoder) fragment6() reason {
	fr := &d.ip6frag
	s, t := d.addrs()
	key := fragKey{src: s, dst: t, id: fr.Identification, v6: true}
	off := int(fr.FragmentOffset) * 8
	return d.fragment(key, off, fr.MoreFragments, fr.Payload, uint8(fr.NextHeader), off == 0)
}

// fragment files one fragment and, when it completes its datagram, decodes
// the datagram's payload starting with protocol next.
func (d *Decoder) fragment(key fragKey, off int, more bool, data []byte, next uint8, nextValid bool) reason {
	d.st.Fragments++
	if d.cfg.NoIPReassembly {
		d.st.FragmentsNotJoined++
		return reasonNone
	}
	if d.truncated || d.frame.Snapped() {
		// A cut fragment would join into a wrong datagram.
		d.st.FragmentsRefused++
		return reasonTruncated
	}
	end := off + len(data)
	e := d.frags[key]
	refuse := func() reason {
		d.st.FragmentsRefused++
		if e != nil {
			d.dropFrag(e)
		}
		return reasonMalformed
	}
	if end > d.cfg.MaxDatagram || (more && (len(data) == 0 || len(data)%8 != 0)) {
		return refuse()
	}
	if e == nil {
		d.makeRoom(true, len(data))
		e = &fragEntry{key: key, created: d.now, total: -1}
		e.elem = d.fragList.pushBack(e)
		d.frags[key] = e
	}
	if !more {
		if e.total >= 0 && e.total != end {
			return refuse()
		}
		if n := len(e.pieces); n > 0 && e.pieces[n-1].off+len(e.pieces[n-1].data) > end {
			return refuse()
		}
		e.total = end
	} else if e.total >= 0 && end > e.total {
		return refuse()
	}
	i := sort.Search(len(e.pieces), func(i int) bool { return e.pieces[i].off >= off })
	if i < len(e.pieces) && e.pieces[i].off == off && bytes.Equal(e.pieces[i].data, data) {
		d.st.FragmentDuplicates++
		return reasonNone
	}
	if i > 0 && e.pieces[i-1].off+len(e.pieces[i-1].data) > off {
		return refuse() // overlaps the previous fragment
	}
	if i < len(e.pieces) && end > e.pieces[i].off {
		return refuse() // overlaps the next fragment
	}
	if len(e.pieces) >= d.cfg.MaxFragments {
		return refuse()
	}
	e.pieces = append(e.pieces, fragPiece{})
	copy(e.pieces[i+1:], e.pieces[i:])
	e.pieces[i] = fragPiece{off: off, data: bytes.Clone(data)}
	e.have += len(data)
	d.held += len(data)
	if nextValid {
		e.next, e.haveNext = next, true
	}
	if e.total < 0 || e.have != e.total || !e.haveNext {
		return reasonNone
	}
	// Complete: join the pieces (they tile [0, total) exactly).
	buf := d.fragBuf[:0]
	for _, p := range e.pieces {
		buf = append(buf, p.data...)
	}
	d.fragBuf = buf
	proto := e.next
	d.dropFrag(e)
	d.st.DatagramsReassembled++
	d.reassembled = true
	return d.transport(proto, buf)
}

// transport decodes a reassembled IP payload whose protocol is proto.
func (d *Decoder) transport(proto uint8, b []byte) reason {
	t := layers.IPProtocol(proto).LayerType()
	if d.parsers[t] != nil {
		return d.run(t, b)
	}
	return d.afterIP(proto, b)
}

func (d *Decoder) dropFrag(e *fragEntry) {
	for _, p := range e.pieces {
		d.held -= len(p.data)
	}
	e.pieces = nil
	delete(d.frags, e.key)
	d.fragList.remove(e.elem)
}

// makeRoom evicts the oldest reassembly entries until extra more bytes fit
// and, with entry, one more entry.
func (d *Decoder) makeRoom(entry bool, extra int) {
	for len(d.frags)+len(d.streams) > 0 &&
		((entry && len(d.frags)+len(d.streams) >= d.cfg.MaxEntries) || d.held+extra > d.cfg.MaxReassemblyBytes) {
		f, t := d.fragList.front(), d.tcpList.front()
		switch {
		case f != nil && (t == nil || !t.value.(*tcpDir).last.Before(f.value.(*fragEntry).created)):
			d.st.FragmentEvictions++
			d.dropFrag(f.value.(*fragEntry))
		case t != nil:
			dir := t.value.(*tcpDir)
			if dir == d.current {
				if t.next == nil {
					return // the stream being fed is the only entry left
				}
				dir = t.next.value.(*tcpDir)
			}
			d.st.TCPEvictions++
			d.closeStale(dir)
		default:
			return
		}
	}
}

// expire drops entries older than the TTL in capture time.
func (d *Decoder) expire() {
	if d.fragList.front() == nil && d.tcpList.front() == nil {
		return
	}
	deadline := d.now.Add(-d.cfg.TTL)
	for f := d.fragList.front(); f != nil; f = d.fragList.front() {
		e := f.value.(*fragEntry)
		if !e.created.Before(deadline) {
			break
		}
		d.st.FragmentTimeouts++
		d.dropFrag(e)
	}
	for t := d.tcpList.front(); t != nil; t = d.tcpList.front() {
		dir := t.value.(*tcpDir)
		if !dir.last.Before(deadline) {
			break
		}
		d.st.TCPTimeouts++
		d.closeStale(dir)
	}
}
