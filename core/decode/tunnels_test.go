package decode

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/sipnab/sipnab/core/packet"
)

// gtpu builds a GTP-U header (3GPP TS 29.281 §5.1) of message type typ
// with flags (E 0x04, S 0x02, PN 0x01) over opt (the optional fields and
// extension headers, as given) and the T-PDU.
func gtpu(flags, typ byte, opt, tpdu []byte) []byte {
	b := []byte{0x30 | flags, typ, 0, 0, 0, 0, 0x12, 0x34}
	binary.BigEndian.PutUint16(b[2:4], uint16(len(opt)+len(tpdu)))
	return append(append(b, opt...), tpdu...)
}

// geneve builds a GENEVE header (RFC 8926 §3.4): flags byte (O 0x80),
// protocol type and options.
func geneve(flags byte, proto uint16, opts, inner []byte) []byte {
	b := []byte{byte(len(opts) / 4), flags, 0, 0, 0, 0, 0x2a, 0}
	binary.BigEndian.PutUint16(b[2:4], proto)
	return append(append(b, opts...), inner...)
}

func TestUDPTunnels(t *testing.T) {
	sip := []byte(sipOptions)
	u4 := ipUDP(t, 5060, 5080, sip)
	u6 := ip6UDP(t, 5060, 5080, sip)
	w4 := []want{{"192.0.2.10:5060", "192.0.2.20:5080", packet.TransportUDP, sipOptions, false}}
	w6 := []want{{"[2001:db8::10]:5060", "[2001:db8::20]:5080", packet.TransportUDP, sipOptions, false}}
	rtp := append([]byte{0x80, 0x08, 0x00, 0x01, 0, 0, 0, 160, 0x12, 0x34, 0x56, 0x78}, bytes.Repeat([]byte{0xd5}, 160)...)
	plain := func(dport uint16, payload []byte) []want {
		return []want{{"192.0.2.10:2152", "192.0.2.20:" + strconv.Itoa(int(dport)), packet.TransportUDP, string(payload), false}}
	}
	// S and E set: sequence number, N-PDU number, next type 0x85 (PDU
	// session container), one 4-byte extension header ending the chain.
	seqExt := []byte{0, 7, 0, 0x85, 1, 0x10, 0x01, 0}
	badExt := []byte{0, 7, 0, 0x85, 0, 0x10, 0x01, 0} // extension length 0
	echo := gtpu(0x02, 1, []byte{0, 1, 0, 0}, nil)
	long := gtpu(0, 0xFF, nil, u4)
	binary.BigEndian.PutUint16(long[2:4], uint16(len(u4)+10))         // longer than the datagram
	tlv := []byte{0x01, 0x02, 0x03, 0x01, 0xaa, 0xbb, 0xcc, 0xdd}     // class 0x0102, type 3, 4 bytes of data
	overrun := []byte{0x01, 0x02, 0x03, 0x02, 0xaa, 0xbb, 0xcc, 0xdd} // says 8 bytes of data, holds 4
	tests := []struct {
		name  string
		frame []byte
		cfg   Config
		want  []want
		undec map[string]uint64
		gtpu  uint64
		gen   uint64
	}{
		{"GTP-U G-PDU carrying IPv4 is unwrapped", ethUDP(t, 2152, 2152, gtpu(0, 0xFF, nil, u4)), Config{}, w4, nil, 1, 0},
		{"GTP-U G-PDU carrying IPv6 is unwrapped", ethUDP(t, 2152, 2152, gtpu(0, 0xFF, nil, u6)), Config{}, w6, nil, 1, 0},
		{"GTP-U with a sequence number and an extension header chain", ethUDP(t, 2152, 2152, gtpu(0x06, 0xFF, seqExt, u4)), Config{}, w4, nil, 1, 0},
		{"GTP-U extension header of length 0 is refused: the datagram stays UDP", ethUDP(t, 2152, 2152, gtpu(0x06, 0xFF, badExt, u4)), Config{}, plain(2152, gtpu(0x06, 0xFF, badExt, u4)), nil, 0, 0},
		{"GTP-U echo request carries no user packet: the datagram stays UDP", ethUDP(t, 2152, 2152, echo), Config{}, plain(2152, echo), nil, 0, 0},
		{"GTP-U length past the datagram is refused", ethUDP(t, 2152, 2152, long), Config{}, plain(2152, long), nil, 0, 0},
		{"RTP on the GTP-U port stays RTP", ethUDP(t, 2152, 2152, rtp), Config{}, plain(2152, rtp), nil, 0, 0},
		{"GENEVE carrying Ethernet is unwrapped", ethUDP(t, 2152, 6081, geneve(0, 0x6558, nil, withEth(t, 0x0800, u4))), Config{}, w4, nil, 0, 1},
		{"GENEVE carrying IPv4 with an option is unwrapped", ethUDP(t, 2152, 6081, geneve(0, 0x0800, tlv, u4)), Config{}, w4, nil, 0, 1},
		{"GENEVE carrying IPv6 is unwrapped", ethUDP(t, 2152, 6081, geneve(0, 0x86DD, nil, u6)), Config{}, w6, nil, 0, 1},
		{"GENEVE option overrunning the options is refused", ethUDP(t, 2152, 6081, geneve(0, 0x0800, overrun, u4)), Config{}, plain(6081, geneve(0, 0x0800, overrun, u4)), nil, 0, 0},
		{"GENEVE control message is not unwrapped", ethUDP(t, 2152, 6081, geneve(0x80, 0x0800, nil, u4)), Config{}, plain(6081, geneve(0x80, 0x0800, nil, u4)), nil, 0, 0},
		{"GENEVE naming IPv6 over an IPv4 packet is refused", ethUDP(t, 2152, 6081, geneve(0, 0x86DD, nil, u4)), Config{}, plain(6081, geneve(0, 0x86DD, nil, u4)), nil, 0, 0},
		{"RTP on the GENEVE port stays RTP", ethUDP(t, 2152, 6081, rtp), Config{}, plain(6081, rtp), nil, 0, 0},
		{"GTP-U inside GENEVE inside VXLAN shares one nesting budget", ethUDP(t, 1, 4789, append(append([]byte(nil), vxlanHeader...),
			withEth(t, 0x0800, ipUDP(t, 2, 6081, geneve(0, 0x0800, nil, ipUDP(t, 2152, 2152, gtpu(0, 0xFF, nil, u4)))))...)),
			Config{}, w4, nil, 1, 1},
		{"past the nesting budget the frame is refused", ethUDP(t, 1, 6081, geneve(0, 0x0800, nil, ipUDP(t, 2152, 2152, gtpu(0, 0xFF, nil, u4)))),
			Config{MaxNesting: 1}, nil, map[string]uint64{"nesting_limit_exceeded": 1}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, st := decodeAll(t, []*packet.Frame{frame(LinkEthernet, tc.frame)}, tc.cfg)
			checkPackets(t, c.pkts, tc.want)
			checkUndecodable(t, st, tc.undec)
			eq(t, "gtpu", st.GTPU, tc.gtpu)
			eq(t, "geneve", st.GENEVE, tc.gen)
		})
	}
}

func FuzzUDPTunnelHeaders(f *testing.F) {
	u4 := ipUDP(f, 5060, 5080, []byte(sipOptions))
	f.Add(gtpu(0x06, 0xFF, []byte{0, 7, 0, 0x85, 1, 0x10, 0x01, 0}, u4))
	f.Add(geneve(0, 0x0800, []byte{0x01, 0x02, 0x03, 0x01, 0xaa, 0xbb, 0xcc, 0xdd}, u4))
	f.Fuzz(func(t *testing.T, b []byte) {
		if in, ok := gtpuTPDU(b, false); ok && (len(in) == 0 || len(in) > len(b)-8) {
			t.Fatalf("gtp-u t-pdu of %d bytes from %d", len(in), len(b))
		}
		if _, in, ok := geneveInner(b); ok && len(in) > len(b)-8 {
			t.Fatalf("geneve inner of %d bytes from %d", len(in), len(b))
		}
		d := New(Config{})
		for _, port := range []uint16{2152, 6081, 4789} {
			d.Decode(frame(LinkEthernet, ethUDP(t, 1, port, b)), &checkSink{t: t, maxWS: DefaultMaxWSPayload, maxBuf: DefaultMaxStreamBuffer})
		}
	})
}
