package dialog

import (
	"net/netip"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// retained is one retained message as the store keeps it, in 88 bytes
// besides the message's own bytes: the bytes (sip.Retained, shared with
// the strings the dialog keeps, never copied), when it was seen, its frame
// (ordinal and digest; the source is the dialog's first frame's, else kept
// in the dialog's srcs map by message position: a dialog's messages come
// from one capture file), and its addresses as indexes into the dialog's
// address table (a dialog's messages travel between a handful of
// addresses). The parsed form
// (headers, Vias, name-addrs, the Message itself: three to four times the
// message's size) is not kept; a reader asking for the messages
// (Detail.Messages) gets them parsed again, equal to what the parser first
// returned (sip.Retained). A message that cannot be rebuilt that way (not
// made by the parser) is kept whole, in the dialog's whole map.
type retained struct {
	msg       sip.Retained
	sec       int64 // TS, UTC
	ordinal   uint64
	digest    [8]byte
	nsec      int32
	index     uint32
	src, dst  uint16 // indexes into dialog.addrs; farAddr when it was full
	leg       int16
	transport packet.Transport
	origin    packet.Origin
	dscp      uint8
	flags     uint8
	dups      uint16 // capture duplicates of this message (saturating; dup.go)
}

const (
	retHasDSCP uint8 = 1 << iota
	retRetrans
	retWhole  // the Message is in dialog.whole
	retSource // the frame's source is not the first frame's: in dialog.srcs
)

// farAddr marks an address past the address table's cap (kept in
// dialog.far by message position).
const farAddr = 0xFFFF

// maxAddrs caps a dialog's address table (attacker-chosen addresses); a
// test lowers it.
var maxAddrs = farAddr

// addrIndex returns the index of a in the dialog's address table, adding it
// (farAddr once the table holds farAddr addresses).
func (d *dialog) addrIndex(a netip.AddrPort) uint16 {
	var idx map[netip.AddrPort]uint16
	if d.rare != nil {
		idx = d.rare.addrIdx
	}
	if idx != nil {
		if i, ok := idx[a]; ok {
			return i
		}
	} else {
		for i, x := range d.addrs {
			if x == a {
				return uint16(i)
			}
		}
	}
	if len(d.addrs) >= maxAddrs {
		return farAddr
	}
	i := uint16(len(d.addrs))
	d.addrs = append(withCap(d.addrs, firstAddrs), a)
	if idx == nil && len(d.addrs) > 16 {
		idx = make(map[netip.AddrPort]uint16, len(d.addrs))
		for j, x := range d.addrs {
			idx[x] = uint16(j)
		}
		d.more().addrIdx = idx
	} else if idx != nil {
		idx[a] = i
	}
	return i
}

// retain appends a message to the dialog's retained messages.
func (d *dialog) retain(o *Observation, index, leg int, retrans bool) {
	pos := len(d.msgs)
	r := retained{
		sec: o.TS.Unix(), nsec: int32(o.TS.Nanosecond()), leg: int16(leg), index: uint32(index),
		src: d.addrIndex(o.Src), dst: d.addrIndex(o.Dst),
		ordinal: o.Frame.Ordinal, digest: o.Frame.Digest,
		transport: o.Transport, origin: o.Origin, dscp: o.DSCP,
	}
	if o.Frame.Source != d.firstFrame.Source {
		r.flags |= retSource
		x := d.more()
		if x.srcs == nil {
			x.srcs = map[int]string{}
		}
		x.srcs[pos] = o.Frame.Source
	}
	if r.src == farAddr || r.dst == farAddr {
		x := d.more()
		if x.far == nil {
			x.far = map[int][2]netip.AddrPort{}
		}
		x.far[pos] = [2]netip.AddrPort{o.Src, o.Dst}
	}
	if o.HasDSCP {
		r.flags |= retHasDSCP
	}
	if retrans {
		r.flags |= retRetrans
	}
	d.noteExtra(o, pos, leg)
	if c, ok := o.Msg.Retain(); ok {
		r.msg = c
		d.bytes += int64(len(c.Raw())) + messageOverhead
	} else {
		d.bytes += int64(len(o.Msg.Raw))*wholeFactor + messageOverhead
		r.flags |= retWhole
		x := d.more()
		if x.whole == nil {
			x.whole = map[int]*sip.Message{}
		}
		x.whole[pos] = o.Msg
	}
	if d.msgs == nil {
		n := firstMsgsOther
		if o.Msg.IsRequest && o.Msg.Method == "INVITE" {
			n = firstMsgs
		}
		d.msgs = make([]retained, 0, n)
	}
	d.msgs = append(d.msgs, r)
}

// message rebuilds retained message i as readers see it.
func (d *dialog) message(i int) Message { return d.messageInto(i, nil) }

// messageInto is message with the Message rebuilt into into
// (sip.Retained.MessageInto) when into is not nil.
func (d *dialog) messageInto(i int, into *sip.Message) Message {
	r := &d.msgs[i]
	m := Message{
		TS: time.Unix(r.sec, int64(r.nsec)).UTC(), Transport: r.transport,
		Origin: r.origin, DSCP: r.dscp, HasDSCP: r.flags&retHasDSCP != 0,
		Index: int(r.index), Leg: int(r.leg), Retransmission: r.flags&retRetrans != 0,
		Duplicates: int(r.dups),
	}
	m.Frame = d.frameOf(i)
	m.Src, m.Dst = d.addrsOf(i)
	if r.flags&retWhole != 0 {
		m.Msg = d.rare.whole[i] // retWhole: rare holds it
	} else if into != nil {
		m.Msg = r.msg.MessageInto(into)
	} else {
		m.Msg = r.msg.Message()
	}
	return m
}

// noteExtra notes what Extra reads from retained message pos (of leg li)
// as it is retained, so readers need not parse the messages again. The
// strings are views into the message's bytes, which the dialog keeps
// anyway.
func (d *dialog) noteExtra(o *Observation, pos, li int) {
	m := o.Msg
	if d.ua == "" {
		d.ua = m.UserAgent
	}
	if li < 0 || li >= len(d.legs) {
		return
	}
	l := d.legAt(li)
	if l.first == 0 {
		l.first = int32(pos) + 1
		l.toHost = m.To.Host
	}
	if m.IsRequest && m.To.Tag == "" && o.Dst.IsValid() && m.Method == l.method {
		l.hop = int32(pos) + 1
	}
}

// Extra is what the aggregations and filters read from a dialog's retained
// messages besides its row, noted as the messages are retained so that no
// message is parsed again to answer them.
type Extra struct {
	// Retained: the dialog has a retained message. Without one, every
	// field below is absent.
	Retained bool
	// Src and Dst are the addresses of the primary leg's first retained
	// message (docs/data-model.md).
	Src, Dst netip.AddrPort
	// UA is the first non-empty User-Agent (Server on a response) among the
	// retained messages; empty when none.
	UA string
	// ToHost is the host of the To URI of the primary leg's first retained
	// message, as written; empty when none.
	ToHost string
	// NextHop is the destination of the primary leg's last retained
	// out-of-dialog request (no To tag) of the leg's method (the row's
	// method); invalid when none.
	NextHop netip.AddrPort
}

// frameOf returns the frame of retained message i.
func (d *dialog) frameOf(i int) packet.FrameRef {
	r := &d.msgs[i]
	f := packet.FrameRef{Source: d.firstFrame.Source, Ordinal: r.ordinal, Digest: r.digest}
	if r.flags&retSource != 0 {
		f.Source = d.rare.srcs[i] // retSource: rare holds it
	}
	return f
}

// addrsOf returns the addresses of retained message i.
func (d *dialog) addrsOf(i int) (src, dst netip.AddrPort) {
	r := &d.msgs[i]
	if r.src == farAddr || r.dst == farAddr {
		a := d.rare.far[i] // farAddr: rare holds it
		return a[0], a[1]
	}
	return d.addrs[r.src], d.addrs[r.dst]
}

func (d *dialog) extra() Extra {
	if len(d.msgs) == 0 {
		return Extra{}
	}
	e := Extra{Retained: true, UA: d.ua}
	first := d.firstPos()
	e.Src, e.Dst = d.addrsOf(first)
	if l := d.primary(); l != nil {
		e.ToHost = l.toHost
		if l.hop > 0 {
			_, e.NextHop = d.addrsOf(int(l.hop) - 1)
		}
	}
	return e
}

// firstPos is the position of the primary leg's first retained message
// (the first retained message when the primary leg has none); call it only
// with a retained message.
func (d *dialog) firstPos() int {
	if l := d.primary(); l != nil && l.first > 0 {
		return int(l.first) - 1
	}
	return 0
}
