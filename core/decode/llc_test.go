package decode

import (
	"encoding/binary"
	"testing"

	"github.com/sipnab/sipnab/core/packet"
)

// dot3 returns an IEEE 802.3 frame: addresses, the length of llc, then llc
// (plus pad bytes after it, which the length excludes).
func dot3(llc []byte, pad int) []byte {
	b := append(append([]byte(nil), macB...), macA...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(llc)))
	b = append(b, llc...)
	return append(b, make([]byte, pad)...)
}

// stpBPDU is an 802.2 LLC header (DSAP 0x42, SSAP 0x42, UI) and a 35-byte
// configuration BPDU.
func stpBPDU() []byte {
	b := []byte{0x42, 0x42, 0x03, 0x00, 0x00, 0x00, 0x00}
	b = append(b, 0x80, 0x00, 0x02, 0, 0, 0, 0, 1) // root identifier
	b = append(b, 0, 0, 0, 0)                      // root path cost
	b = append(b, 0x80, 0x00, 0x02, 0, 0, 0, 0, 1) // bridge identifier
	b = append(b, 0x80, 0x01, 0, 0, 0x14, 0, 0x02, 0, 0x0f, 0)
	return b
}

// snap returns an LLC/SNAP header (AA AA 03) with the OUI and protocol id,
// then body.
func snap(oui uint32, pid uint16, body []byte) []byte {
	b := []byte{0xAA, 0xAA, 0x03, byte(oui >> 16), byte(oui >> 8), byte(oui)}
	b = binary.BigEndian.AppendUint16(b, pid)
	return append(b, body...)
}

// cdpBody is a CDP v2 header and a Device-ID TLV.
var cdpBody = []byte{0x02, 0xb4, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06, 's', 'w'}

// TestLLCFrames checks that IEEE 802.3 frames are named by what their LLC
// header carries (they hold a length where Ethernet II holds an EtherType:
// the code before read them as not_ip_ethertype_0x00NN), and that SNAP with
// an EtherType OUI continues into the EtherType it names.
func TestLLCFrames(t *testing.T) {
	sip := []byte(sipOptions)
	u4 := ipUDP(t, 5060, 5080, sip)
	w4 := []want{{"192.0.2.10:5060", "192.0.2.20:5080", packet.TransportUDP, sipOptions, false}}

	tagged := func(llc []byte) []byte {
		b := vlanTag(10, uint16(len(llc)))
		return withEth(t, 0x8100, append(b, llc...))
	}
	cases := []struct {
		name   string
		lt     uint16
		data   []byte
		want   []want
		other  map[string]uint64 // other traffic by kind (never undecodable)
		frames int               // copies of the frame
	}{
		{"stp bpdu", 1, dot3(stpBPDU(), 8), nil, map[string]uint64{"stp": 3}, 3},
		{"cisco pvst+ over snap", 1, dot3(snap(0x00000c, 0x010b, stpBPDU()[3:]), 0), nil, map[string]uint64{"stp": 1}, 1},
		{"cdp", 1, dot3(snap(0x00000c, 0x2000, cdpBody), 20), nil, map[string]uint64{"cdp": 2}, 2},
		{"netbios llc", 1, dot3([]byte{0xF0, 0xF0, 0x03, 0xff, 0xef}, 41), nil, map[string]uint64{"llc": 1}, 1},
		{"snap of an unknown oui", 1, dot3(snap(0x00000d, 0x0800, u4), 0), nil, map[string]uint64{"llc": 1}, 1},
		{"llc header cut short", 1, dot3([]byte{0x42, 0x42}, 0), nil, map[string]uint64{"llc": 1}, 1},
		{"snap ipv4 udp sip (rfc 1042)", 1, dot3(snap(0, 0x0800, u4), 0), w4, nil, 1},
		{"snap ipv4 udp sip (802.1h)", 1, dot3(snap(0x0000f8, 0x0800, u4), 0), w4, nil, 1},
		{"snap of arp", 1, dot3(snap(0, 0x0806, make([]byte, 28)), 0), nil, map[string]uint64{"arp": 1}, 1},
		{"tagged 802.3 stp", 1, tagged(stpBPDU()), nil, map[string]uint64{"stp": 1}, 1},
		{"tagged snap ipv4 udp sip", 1, tagged(snap(0, 0x0800, u4)), w4, nil, 1},
		{"linux cooked llc stp", 113, append(sllHeader(sllProtoLLC, []byte{0, 6}), stpBPDU()...), nil, map[string]uint64{"stp": 1}, 1},
		{"linux cooked v2 llc cdp", 276, append(sll2Header(sllProtoLLC), snap(0x00000c, 0x2000, cdpBody)...), nil, map[string]uint64{"cdp": 1}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := make([][]byte, tc.frames)
			for i := range fs {
				fs[i] = tc.data
			}
			c, st := decodeAll(t, frames(tc.lt, fs...), Config{})
			checkPackets(t, c.pkts, tc.want)
			checkUndecodable(t, st, nil)
			if tc.other != nil {
				checkOther(t, st, tc.other)
			}
		})
	}
}
