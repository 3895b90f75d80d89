package gen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// SIPMessage is one SIP message of a generated capture as it went on the
// wire: the UDP payload, its addresses and its capture time.
type SIPMessage struct {
	At       time.Time
	Src, Dst netip.AddrPort
	Payload  []byte
}

// SIPMessages generates the capture cfg describes and returns its SIP
// messages (the UDP payloads to or from port 5060) in capture order, for
// benchmarks of the SIP parser and the dialog store on a generated
// workload (Signaling is the SIP-only one).
func SIPMessages(cfg Config) ([]SIPMessage, error) {
	var buf bytes.Buffer
	if _, err := Generate(cfg, &buf); err != nil {
		return nil, err
	}
	r, err := pcapgo.NewReader(&buf)
	if err != nil {
		return nil, fmt.Errorf("reading generated capture: %w", err)
	}
	var out []SIPMessage
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading generated capture: %w", err)
		}
		// The generator writes Ethernet II / IPv4 / UDP only.
		if len(data) < 14+20+8 || data[12] != 0x08 || data[13] != 0x00 {
			continue
		}
		ip := data[14:]
		ihl := int(ip[0]&0x0f) * 4
		if ip[9] != 17 || len(ip) < ihl+8 {
			continue
		}
		udp := ip[ihl:]
		sp, dp := binary.BigEndian.Uint16(udp[0:]), binary.BigEndian.Uint16(udp[2:])
		if sp != 5060 && dp != 5060 {
			continue
		}
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), sp)
		dst := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), dp)
		out = append(out, SIPMessage{At: ci.Timestamp.UTC(), Src: src, Dst: dst, Payload: bytes.Clone(udp[8:])})
	}
}
