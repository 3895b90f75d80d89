package decode

import (
	"encoding/binary"
	"errors"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// cooked reads a Linux cooked capture header (SLL v1 or v2). Unlike
// gopacket's own layers it does not refuse an address length above 8: the
// address occupies a fixed 8-byte window whatever the length says, and
// captures with a byte-swapped length field exist (speech_8k_ulaw.pcap).
type cooked struct {
	layers.BaseLayer
	v2 bool
	// Protocol is the EtherType of the payload.
	Protocol uint16
}

var errCookedShort = errors.New("linux cooked header too small")

func (c *cooked) LayerType() gopacket.LayerType {
	if c.v2 {
		return layers.LayerTypeLinuxSLL2
	}
	return layers.LayerTypeLinuxSLL
}

func (c *cooked) CanDecode() gopacket.LayerClass { return c.LayerType() }

func (c *cooked) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	n, at := 16, 14
	if c.v2 {
		n, at = 20, 0
	}
	if len(data) < n {
		df.SetTruncated()
		return errCookedShort
	}
	c.Protocol = binary.BigEndian.Uint16(data[at : at+2])
	c.BaseLayer = layers.BaseLayer{Contents: data[:n], Payload: data[n:]}
	return nil
}

func (c *cooked) NextLayerType() gopacket.LayerType {
	switch c.Protocol {
	case 0x0800:
		return layers.LayerTypeIPv4
	case 0x86DD:
		return layers.LayerTypeIPv6
	case 0x8100, 0x88A8:
		return layers.LayerTypeDot1Q
	}
	return gopacket.LayerTypeZero
}
