package decode

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// readFrames reads every frame of a capture file into memory (the capture
// reader reuses its frame, so each is copied).
func readFrames(path string) ([]*packet.Frame, error) {
	r, err := capture.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []*packet.Frame
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		c := *f
		c.Data = append([]byte(nil), f.Data...)
		out = append(out, &c)
	}
}

// collect gathers copies of emitted packets.
type collect struct {
	pkts []packet.Packet
}

func (c *collect) HandlePacket(p *packet.Packet) {
	q := *p
	q.Payload = append([]byte(nil), p.Payload...)
	q.Frame = nil
	c.pkts = append(c.pkts, q)
}

func decodeAll(t *testing.T, frames []*packet.Frame, cfg Config) (*collect, Stats) {
	t.Helper()
	d := New(cfg)
	c := &collect{}
	for _, f := range frames {
		d.Decode(f, c)
	}
	d.Flush(c)
	return c, d.Stats()
}

// sipMessages counts emitted payloads that start a SIP message.
func sipMessages(c *collect) int {
	n := 0
	for _, p := range c.pkts {
		if sipStart(p.Payload) == startYes {
			n++
		}
	}
	return n
}

type truth struct {
	Frames int `json:"frames"`
	SIP    struct {
		Messages int `json:"messages"`
	} `json:"sip"`
}

// publicWant pins what is known about a public capture beyond tshark's SIP
// count (hand-checked with tshark: SIP_CALL_RTP_G711 holds 162 802.3/LLC (153 STP, 9 CDP)
// frames and 2 ARP; http-example.cap's 19 TCP segments with payload include
// one retransmission, plus 2 DNS datagrams).
var publicWant = map[string]struct {
	undecodable map[string]uint64
	other       map[string]uint64 // other traffic by kind
	packets     int               // -1: not pinned
	icmpErrors  uint64
}{
	"SIP_CALL_RTP_G711":                {nil, map[string]uint64{"stp": 153, "cdp": 9, "arp": 2}, 3781, 0},
	"http-example.cap":                 {nil, nil, 20, 0},
	"h263-over-rtp.pcap":               {nil, nil, 49, 0},
	"speech_8k_ulaw.pcap":              {nil, nil, 835, 0},
	"sip-over-tcp.pcap":                {nil, nil, -1, 0},
	"metasploit-sip-invite-spoof.pcap": {nil, nil, 2, 1},
}

// TestPublicCaptures decodes every public capture as the capture reader
// streams it (frames are reused, so nothing borrowed may be kept), and checks
// tshark's SIP message count: every SIP message of these captures is one
// datagram or one framed stream unit.
func TestPublicCaptures(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r, err := capture.Open(testcap.Public(name))
			if errors.Is(err, capture.ErrUnsupportedFormat) {
				return // NetMon files: refused by the reader, nothing to decode
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tr := testcap.LoadTruth[truth](t, name)
			d := New(Config{})
			c := &collect{}
			frames := 0
			for {
				f, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				frames++
				d.Decode(f, c)
			}
			d.Flush(c)
			st := d.Stats()
			if frames != tr.Frames {
				t.Fatalf("got %d frames, want %d", frames, tr.Frames)
			}
			if got := sipMessages(c); got != tr.SIP.Messages {
				t.Errorf("got %d SIP messages, want %d (tshark)", got, tr.SIP.Messages)
			}
			w, pinned := publicWant[name]
			if !pinned {
				w.packets = -1
			}
			checkUndecodable(t, st, w.undecodable)
			if w.other != nil {
				checkOther(t, st, w.other)
			}
			if w.packets >= 0 && len(c.pkts) != w.packets {
				t.Errorf("got %d packets, want %d", len(c.pkts), w.packets)
			}
			eq(t, "icmp errors", st.ICMPErrors, w.icmpErrors)
			if st.TCPIncomplete != 0 || st.TCPOverflowFlushes != 0 {
				t.Errorf("got %d incomplete and %d overflowed TCP units, want 0", st.TCPIncomplete, st.TCPOverflowFlushes)
			}
		})
	}
}

// TestHTTPIsNotSIP: the HTTP capture yields TCP payloads, none SIP-looking.
func TestHTTPIsNotSIP(t *testing.T) {
	frames, err := readFrames(testcap.Public("http-example.cap"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := decodeAll(t, frames, Config{})
	http := 0
	for _, p := range c.pkts {
		if sipStart(p.Payload) != startNo {
			t.Fatalf("got SIP-looking payload %.60q", p.Payload)
		}
		if bytes.HasPrefix(p.Payload, []byte("GET ")) || bytes.HasPrefix(p.Payload, []byte("HTTP/1.1 ")) {
			http++
		}
	}
	eq(t, "HTTP requests and responses", http, 4)
}

// TestSIPOverTCPCapture: sip-over-tcp.pcap yields tshark's 7 SIP messages,
// all over TCP and each exactly one message.
func TestSIPOverTCPCapture(t *testing.T) {
	frames, err := readFrames(testcap.Public("sip-over-tcp.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	c, st := decodeAll(t, frames, Config{})
	var sips []packet.Packet
	for _, p := range c.pkts {
		if sipStart(p.Payload) == startYes {
			sips = append(sips, p)
		}
	}
	eq(t, "SIP messages", len(sips), testcap.LoadTruth[truth](t, "sip-over-tcp.pcap").SIP.Messages)
	for _, p := range sips {
		if p.Transport != packet.TransportTCP {
			t.Errorf("got transport %v, want TCP", p.Transport)
		}
		if n, ok := sipMessageLen(p.Payload); !ok || n != len(p.Payload) {
			t.Errorf("got a unit of %d bytes framing to (%d, %v)", len(p.Payload), n, ok)
		}
	}
	eq(t, "tcp segments", st.TCPSegments, uint64(16))
}
