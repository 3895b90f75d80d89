package decode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// errNotPcap says a file is neither pcap nor pcapng.
var errNotPcap = errors.New("not a pcap or pcapng file")

// readFrames reads every frame of a pcap or pcapng file (told apart by
// magic) into memory.
func readFrames(path string) ([]*packet.Frame, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	br := bufio.NewReader(fh)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, errNotPcap
	}
	var next func() ([]byte, int, int64, int, uint16, error)
	switch {
	case bytes.Equal(magic, []byte{0x0a, 0x0d, 0x0d, 0x0a}):
		r, err := pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			return nil, err
		}
		next = func() ([]byte, int, int64, int, uint16, error) {
			data, ci, err := r.ReadPacketData()
			lt := uint16(0)
			if err == nil {
				if intf, ierr := r.Interface(ci.InterfaceIndex); ierr == nil {
					lt = uint16(intf.LinkType)
				}
			}
			return data, ci.Length, ci.Timestamp.UnixNano(), ci.CaptureLength, lt, err
		}
	default:
		r, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, errNotPcap
		}
		next = func() ([]byte, int, int64, int, uint16, error) {
			data, ci, err := r.ReadPacketData()
			return data, ci.Length, ci.Timestamp.UnixNano(), ci.CaptureLength, uint16(r.LinkType()), err
		}
	}
	var out []*packet.Frame
	for {
		data, origLen, ts, _, lt, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, err
		}
		f := &packet.Frame{LinkType: lt, Data: append([]byte(nil), data...), OrigLen: origLen, Source: "test", Ordinal: uint64(len(out) + 1)}
		f.TS = tsFromNanos(ts)
		out = append(out, f)
	}
	return out, nil
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

func readTruth(t *testing.T, name string) truth {
	t.Helper()
	b, err := os.ReadFile(testcap.Truth(name))
	if err != nil {
		t.Fatalf("reading truth: %v", err)
	}
	var tr truth
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("reading truth: %v", err)
	}
	return tr
}

// TestPublicCaptures decodes every public capture and checks what the
// reference answers pin down: the frame count, and for captures whose SIP
// travels as one message per datagram or framed stream, tshark's SIP message
// count.
func TestPublicCaptures(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Skipf("public captures not available: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			frames, err := readFrames(testcap.Public(name))
			if errors.Is(err, errNotPcap) {
				t.Logf("%s: not pcap, skipped", name)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tr := readTruth(t, name)
			if len(frames) != tr.Frames {
				t.Fatalf("got %d frames, want %d", len(frames), tr.Frames)
			}
			c, st := decodeAll(t, frames, Config{})
			if got := sipMessages(c); got != tr.SIP.Messages {
				t.Errorf("got %d SIP messages, want %d (tshark)", got, tr.SIP.Messages)
			}
			t.Logf("%s: frames=%d packets=%d undecodable=%v snapped=%d tcp_segments=%d", name, st.Frames, st.Packets, st.UndecodableMap(), st.SnappedFrames, st.TCPSegments)
		})
	}
}

func tsFromNanos(n int64) (t time.Time) { return time.Unix(0, n) }
