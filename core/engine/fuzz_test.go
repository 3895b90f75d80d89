package engine

import (
	"net/netip"
	"testing"

	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/packet"
)

// FuzzRoute hands arbitrary UDP payloads to the router (as themselves and
// wrapped in a HEP3 envelope): nothing may panic, and every SIP message
// counted must be accounted for by the dialog store.
func FuzzRoute(f *testing.F) {
	f.Add([]byte(invite("fz-1")))
	f.Add([]byte(invite("fz-2") + sipText("SIP/2.0 180 Ringing", "fz-2", 1, "INVITE", "")))
	f.Add([]byte("SIP/2.0 200 OK\r\n\r\n"))
	f.Add([]byte{0x80, 0x00, 0x00, 0x01, 0, 0, 0, 160, 0, 0, 0, 7, 0xff, 0xff})
	f.Add([]byte{0x80, 200, 0, 6, 0, 0, 0, 7})
	f.Add([]byte("HEP3\x00\x0c\x00\x00\x00\x01\x00\x07\x02"))
	env, _ := hep.Encode(&hep.Message{Version: 3, Protocol: 17, Src: netip.MustParseAddrPort("1.2.3.4:5"),
		Dst: netip.MustParseAddrPort("5.6.7.8:9"), ProtoType: hep.ProtoSIP, HasProtoType: true, Compressed: true,
		Payload: []byte(invite("fz-3"))})
	f.Add(env)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := New(Config{}, nil)
		fr := &packet.Frame{Source: "fuzz", Ordinal: 1, Data: data}
		c.HandlePacket(udp("10.0.0.1:5060", "10.0.0.2:5060", data, fr))
		wrapped, err := hep.Encode(&hep.Message{Version: 3, Protocol: 17, Src: netip.MustParseAddrPort("1.2.3.4:5"),
			Dst: netip.MustParseAddrPort("5.6.7.8:9"), ProtoType: hep.ProtoSIP, HasProtoType: true, Payload: data})
		if err == nil {
			c.HandlePacket(udp("10.0.0.1:40000", "10.0.0.2:9060", wrapped, fr))
		}
		tcp := udp("10.0.0.1:5060", "10.0.0.2:5060", data, nil)
		tcp.Transport = packet.TransportTCP
		c.HandlePacket(tcp)
		st := c.Status()
		ds := c.Dialogs().Stats()
		if st.SIPMessages != ds.Messages+ds.WithoutCallID+ds.RefusedMessages {
			t.Fatalf("sip_messages %d, dialog store saw %d + %d + %d", st.SIPMessages, ds.Messages, ds.WithoutCallID, ds.RefusedMessages)
		}
		for _, row := range c.Dialogs().Summaries(0) {
			if _, ok := c.Dialogs().Get(row.CallID); !ok {
				t.Fatalf("row %q without a dialog", row.CallID)
			}
		}
		_ = c.Media().All()
	})
}
