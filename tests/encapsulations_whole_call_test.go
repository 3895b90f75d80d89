package tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// The encapsulations and source formats that the engine-level
// acceptance tests (engine_acceptance_sip_test.go) did not carry a whole
// call through: ERSPAN type I, IPv6 fragments, raw IPv6 on LINKTYPE_RAW,
// WebSocket frames several per segment in both directions, and pcapng
// interfaces each with its own if_tsresol (and if_tsoffset) in both byte
// orders, each also gzip-compressed. Every case asserts exact SIP message
// and dialog counts.

// frag6 splits an IPv6 packet (40-byte header, next header UDP) into
// fragments carrying at most size bytes (a multiple of 8) of the UDP part.
func frag6(pkt []byte, size int, id uint32) [][]byte {
	hdr, body := pkt[:40], pkt[40:]
	next := hdr[6]
	var out [][]byte
	for off := 0; off < len(body); off += size {
		end := min(off+size, len(body))
		f := append([]byte(nil), hdr...)
		f[6] = 44 // fragment header follows
		fh := []byte{next, 0}
		fo := uint16(off/8) << 3
		if end < len(body) {
			fo |= 1 // more fragments
		}
		fh = binary.BigEndian.AppendUint16(fh, fo)
		fh = binary.BigEndian.AppendUint32(fh, id)
		f = append(f, fh...)
		f = append(f, body[off:end]...)
		binary.BigEndian.PutUint16(f[4:], uint16(8+end-off))
		out = append(out, f)
	}
	return out
}

func TestEncapsulationsCarryWholeCallsThroughTheEngine(t *testing.T) {
	v6 := map[string]string{accA: "[2001:db8::10]:5060", accB: "[2001:db8::20]:5060"}
	type wrap struct {
		name  string
		lt    layers.LinkType
		frame func(t *testing.T, ip []byte, src, dst string, payload []byte) [][]byte
	}
	cases := []wrap{
		{name: "ERSPAN type I", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			// GRE without the sequence bit, protocol 0x88BE: no ERSPAN header.
			gre := append([]byte{0, 0, 0x88, 0xBE}, accIPEth(ip)...)
			return [][]byte{accEth(0x0800, accIPv4Proto(t, "203.0.113.1", "203.0.113.2", layers.IPProtocolGRE, gre))}
		}},
		{name: "IPv6 fragments out of order", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			frags := frag6(accUDP(t, v6[src], v6[dst], payload), 256, uint32(len(payload)))
			var out [][]byte
			for i := len(frags) - 1; i >= 0; i-- {
				out = append(out, accEth(0x86DD, frags[i]))
			}
			return out
		}},
		{name: "raw IPv6 (101)", lt: layers.LinkTypeRaw, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			return [][]byte{accUDP(t, v6[src], v6[dst], payload)}
		}},
		{name: "raw IPv4 (228)", lt: 228, frame: func(t *testing.T, ip []byte, _, _ string, _ []byte) [][]byte {
			return [][]byte{ip}
		}},
		{name: "QinQ carrying IPv6 fragments", lt: layers.LinkTypeEthernet, frame: func(t *testing.T, _ []byte, src, dst string, payload []byte) [][]byte {
			var out [][]byte
			for _, f := range frag6(accUDP(t, v6[src], v6[dst], payload), 200, 7+uint32(len(payload))) {
				out = append(out, accEth(0x88A8, append(append(accTag(10, 0x8100), accTag(20, 0x86DD)...), f...)))
			}
			return out
		}},
	}
	call := accCall("audit-encap@a.example")
	dir := t.TempDir()
	for i, w := range cases {
		t.Run(w.name, func(t *testing.T) {
			var frames []accFrame
			multi := false
			for j, m := range call {
				src, dst, payload := m[0].(string), m[1].(string), m[2].([]byte)
				fs := w.frame(t, accUDP(t, src, dst, payload), src, dst, payload)
				multi = multi || len(fs) > 1
				for _, f := range fs {
					frames = append(frames, accFrame{accAt(100*j + len(frames)), f})
				}
			}
			if strings.Contains(w.name, "fragments") && !multi {
				t.Fatal("no message was fragmented: the case proves nothing")
			}
			p := accWrite(t, dir, fmt.Sprintf("encap%d.pcap", i), w.lt, frames)
			_, doc := accLoad(t, p)
			r := doc.Run
			if r.FramesRead != uint64(len(frames)) || r.SIPMessages != 7 || len(doc.Dialogs) != 1 || r.UndecodableFrames != 0 {
				t.Fatalf("got %d frames, %d SIP messages, %d dialogs, undecodable %v; want %d, 7, 1, none", r.FramesRead, r.SIPMessages, len(doc.Dialogs), r.Undecodable, len(frames))
			}
			if d := doc.Dialogs[0]; d.State != "Completed" || d.FinalStatusCode != 200 || d.MsgCount != 7 {
				t.Errorf("got %s %d with %d messages, want Completed 200 with 7", d.State, d.FinalStatusCode, d.MsgCount)
			}
		})
	}
}

// TestWebSocketFramesSeveralPerSegment: over one upgraded connection the
// client sends three masked frames (INVITE, ACK, BYE) and the server three
// unmasked ones (180, 200, 200) where two frames share a segment and one
// frame (with a 16-bit extended length) spans three segments: 6 messages.
func TestWebSocketFramesSeveralPerSegment(t *testing.T) {
	const cA, cB = "192.0.2.11:50200", "192.0.2.21:443"
	id := "ws-multi@a.example"
	up := []byte("GET /sip HTTP/1.1\r\nHost: b.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: sip\r\nSec-WebSocket-Version: 13\r\n\r\n")
	upOK := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: sip\r\n\r\n")
	key := []byte{0x37, 0xfa, 0x21, 0x3d}
	inv := accWSFrame(accReq("INVITE", id, 1, "", accSDP("192.0.2.11", 16000, "0")), key)
	ringing := accWSFrame(accResp(180, "Ringing", "INVITE", id, 1, ""), nil)
	ok := accWSFrame(accResp(200, "OK", "INVITE", id, 1, accSDP("192.0.2.21", 20000, "0")), nil)
	ack := accWSFrame(accReq("ACK", id, 1, "bt1", ""), key)
	bye := accWSFrame(accReq("BYE", id, 2, "bt1", ""), key)
	byeOK := accWSFrame(accResp(200, "OK", "BYE", id, 2, ""), nil)
	if inv[1]&0x7f != 126 {
		t.Fatalf("the INVITE frame does not use the 16-bit length (%d)", inv[1]&0x7f)
	}
	seq := map[string]uint32{cA: 1000, cB: 5000}
	var frames []accFrame
	ms := 0
	send := func(src, dst string, syn bool, p []byte) {
		s := seq[src]
		if syn {
			s--
		}
		frames = append(frames, accFrame{accAt(ms), accEth(0x0800, accTCP(t, src, dst, s, syn, p))})
		ms++
		seq[src] += uint32(len(p))
	}
	send(cA, cB, true, nil)
	send(cB, cA, true, nil)
	send(cA, cB, false, up)
	send(cB, cA, false, upOK)
	n1, n2 := len(inv)/3, 2*len(inv)/3
	send(cA, cB, false, inv[:n1])
	send(cA, cB, false, inv[n1:n2])
	send(cA, cB, false, inv[n2:])
	send(cB, cA, false, append(append([]byte(nil), ringing...), ok...))
	send(cA, cB, false, append(append([]byte(nil), ack...), bye...))
	send(cB, cA, false, byeOK)
	p := accWrite(t, t.TempDir(), "ws.pcap", layers.LinkTypeEthernet, frames)
	_, doc := accLoad(t, p)
	if doc.Run.SIPMessages != 6 || len(doc.Dialogs) != 1 {
		t.Fatalf("got %d SIP messages, %d dialogs; want 6, 1", doc.Run.SIPMessages, len(doc.Dialogs))
	}
	if d := doc.Dialogs[0]; d.CallID != id || d.State != "Completed" || d.FinalStatusCode != 200 || d.MsgCount != 6 {
		t.Errorf("got %s %s %d with %d messages, want %s Completed 200 with 6", d.CallID, d.State, d.FinalStatusCode, d.MsgCount, id)
	}
}

// ngIface is one interface of a hand-built pcapng section.
type ngIface struct {
	lt       uint16
	tsresol  int   // -1: no option (microseconds); else the option byte
	tsoffset int64 // seconds, 0: no option
	// link wraps an IPv4 packet in the interface's link header.
	link func(ip []byte) []byte
}

// tsresolUnits is how many timestamp units of an if_tsresol byte make a second.
func tsresolUnits(tsresol int) uint64 {
	if tsresol < 0 {
		return 1000000
	}
	u := uint64(1)
	for i := 0; i < tsresol&0x7f; i++ {
		if tsresol&0x80 != 0 {
			u *= 2
		} else {
			u *= 10
		}
	}
	return u
}

// pcapngIfaces writes one section: SHB, the interfaces' IDBs (with
// if_tsresol / if_tsoffset options), then one EPB per frame.
func pcapngIfaces(order binary.AppendByteOrder, ifaces []ngIface, frames []accFrame, ifOf []int) []byte {
	var b bytes.Buffer
	put := order.(binary.ByteOrder)
	block := func(typ uint32, body []byte) {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(12 + len(body))
		var h [8]byte
		put.PutUint32(h[0:], typ)
		put.PutUint32(h[4:], n)
		b.Write(h[:])
		b.Write(body)
		var tail [4]byte
		put.PutUint32(tail[:], n)
		b.Write(tail[:])
	}
	shb := order.AppendUint32(nil, 0x1A2B3C4D)
	shb = order.AppendUint16(shb, 1)
	shb = order.AppendUint16(shb, 0)
	shb = order.AppendUint64(shb, ^uint64(0))
	block(0x0A0D0D0A, shb)
	for _, ifc := range ifaces {
		body := order.AppendUint16(nil, ifc.lt)
		body = order.AppendUint16(body, 0)
		body = order.AppendUint32(body, 262144)
		if ifc.tsresol >= 0 {
			body = order.AppendUint16(body, 9)
			body = order.AppendUint16(body, 1)
			body = append(body, byte(ifc.tsresol), 0, 0, 0)
		}
		if ifc.tsoffset != 0 {
			body = order.AppendUint16(body, 14)
			body = order.AppendUint16(body, 8)
			body = order.AppendUint64(body, uint64(ifc.tsoffset))
		}
		body = order.AppendUint32(body, 0) // opt_endofopt
		block(1, body)
	}
	for i, f := range frames {
		ifc := ifaces[ifOf[i]]
		units := tsresolUnits(ifc.tsresol)
		since := f.ts.Add(-time.Duration(ifc.tsoffset) * time.Second)
		ts := uint64(since.Unix())*units + uint64(since.Nanosecond())*units/1e9
		body := order.AppendUint32(nil, uint32(ifOf[i]))
		body = order.AppendUint32(body, uint32(ts>>32))
		body = order.AppendUint32(body, uint32(ts))
		body = order.AppendUint32(body, uint32(len(f.data)))
		body = order.AppendUint32(body, uint32(len(f.data)))
		body = append(body, f.data...)
		block(6, body)
	}
	return b.Bytes()
}

// TestPcapngPerInterfaceTimestampResolutions: four calls, each on its own
// interface of one pcapng section (Ethernet in microseconds by default,
// Linux SLL in nanoseconds, raw IPv4 in 2^-20 s, BSD NULL in milliseconds
// with a 1000 s if_tsoffset), their frames interleaved; little- and
// big-endian, each plain and gzip. Every call has its 7 messages and its
// first and last message times to the interface's resolution.
func TestPcapngPerInterfaceTimestampResolutions(t *testing.T) {
	sll := func(ip []byte) []byte {
		return append([]byte{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 0x0a, 0, 0, 0x08, 0x00}, ip...)
	}
	ifaces := []ngIface{
		{lt: 1, tsresol: -1, link: accIPEth},
		{lt: 113, tsresol: 9, link: sll},
		{lt: 101, tsresol: 0x80 | 20, link: func(ip []byte) []byte { return ip }},
		{lt: 0, tsresol: 3, tsoffset: 1000, link: func(ip []byte) []byte { return append([]byte{2, 0, 0, 0}, ip...) }},
	}
	// Each interface's calls sit a distinct sub-step past accT0 that its
	// resolution holds exactly (2^-20 s: 1/64 s = 16384 units).
	sub := []time.Duration{123456 * time.Microsecond, 123456789, 15625 * time.Microsecond, 7 * time.Millisecond}
	var frames []accFrame
	var ifOf []int
	want := map[string][2]time.Time{}
	for j := 0; j < 7; j++ {
		for i, ifc := range ifaces {
			id := fmt.Sprintf("tsresol-%d@a.example", i)
			m := accCall(id)[j]
			ts := accT0.Add(time.Duration(j)*250*time.Millisecond + sub[i])
			frames = append(frames, accFrame{ts, ifc.link(accUDP(t, m[0].(string), m[1].(string), m[2].([]byte)))})
			ifOf = append(ifOf, i)
			w := want[id]
			if j == 0 {
				w[0] = ts
			}
			w[1] = ts
			want[id] = w
		}
	}
	dir := t.TempDir()
	for _, order := range []binary.AppendByteOrder{binary.LittleEndian, binary.BigEndian} {
		path := filepath.Join(dir, fmt.Sprintf("tsresol-%v.pcapng", order))
		if err := os.WriteFile(path, pcapngIfaces(order, ifaces, frames, ifOf), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, gz := range []bool{false, true} {
			p, name := path, order.String()
			if gz {
				p, name = accGzip(t, path), name+" gzip"
			}
			t.Run(name, func(t *testing.T) {
				_, doc := accLoad(t, p)
				r := doc.Run
				if r.FramesRead != 28 || r.SIPMessages != 28 || len(doc.Dialogs) != 4 || r.UndecodableFrames != 0 || !r.Complete {
					t.Fatalf("got %d frames, %d messages, %d dialogs, undecodable %v, complete %v; want 28, 28, 4, none, true",
						r.FramesRead, r.SIPMessages, len(doc.Dialogs), r.Undecodable, r.Complete)
				}
				for _, d := range doc.Dialogs {
					w, ok := want[d.CallID]
					if !ok {
						t.Errorf("unexpected dialog %s", d.CallID)
						continue
					}
					if d.MsgCount != 7 || d.State != "Completed" {
						t.Errorf("%s: %s with %d messages, want Completed with 7", d.CallID, d.State, d.MsgCount)
					}
					if !d.CreatedAt.Equal(w[0]) || !d.UpdatedAt.Equal(w[1]) {
						t.Errorf("%s: created %v updated %v, want %v and %v", d.CallID, d.CreatedAt, d.UpdatedAt, w[0], w[1])
					}
				}
			})
		}
	}
}
