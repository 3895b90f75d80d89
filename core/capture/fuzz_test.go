package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// drain reads every frame of b and checks the reader's invariants: it ends
// with io.EOF or one of the package's errors, every frame is within bounds,
// and ordinals count up from 1.
func drain(t *testing.T, b []byte) {
	r, err := NewReader(bytes.NewReader(b), Options{MaxInflate: 4 << 20})
	if err != nil {
		return
	}
	var n uint64
	for {
		f, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrInflateLimit) {
				t.Fatalf("unexpected error class: %v", err)
			}
			if _, err2 := r.Next(); err2 == nil {
				t.Fatal("Next returned a frame after an error")
			}
			return
		}
		n++
		if f.Ordinal != n {
			t.Fatalf("ordinal %d, want %d", f.Ordinal, n)
		}
		if len(f.Data) > maxRecord || f.OrigLen < len(f.Data) {
			t.Fatalf("frame of %d bytes, orig %d", len(f.Data), f.OrigLen)
		}
		if n > uint64(len(b)) {
			t.Fatalf("%d frames from %d bytes", n, len(b))
		}
	}
}

func seedPublic(f *testing.F, names ...string) {
	for _, name := range names {
		b, err := os.ReadFile(testcap.Public(name))
		if err != nil {
			f.Fatalf("reading seed: %v", err)
		}
		if len(b) > 16<<10 {
			b = b[:16<<10]
		}
		f.Add(b)
	}
}

func FuzzPcap(f *testing.F) {
	seedPublic(f, "sip_call.pcap", "udp_5060.pcap", "h263-over-rtp.pcap", "speech_8k_ulaw.pcap")
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, v := range []pcapSpec{{nano: true}, {modified: true}, {}} {
			v.order, v.linkType = order, 1
			v.recs = []pcapRec{{sec: 1, frac: 2, data: payload(0, 30)}, {sec: 3, frac: 4, data: payload(1, 10), origLen: 5000}}
			b := buildPcap(v)
			f.Add(b)
			f.Add(gz(f, b))
			f.Add(b[:len(b)-3])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { drain(t, b) })
}

func FuzzPcapng(f *testing.F) {
	seedPublic(f, "sip-auth-failure.pcapng", "sip-488-codec-reject.pcapng")
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		b := buildPcapng(tNgSpec{order: order, ifaces: []tIface{
			{linkType: 1, tsresol: -1}, {linkType: 276, tsresol: 9}, {linkType: 101, tsresol: 0x80 | 20, tsoffset: -5},
		}, extra: [][]byte{ngBlock(order, 4, []byte{0, 0, 0, 0}), ngBlock(order, 0x0BAD, []byte{1, 2, 3, 4})},
			pkts: []tPkt{{iface: 0, ts: 1, data: payload(0, 20)}, {iface: 1, ts: 2, data: payload(1, 21)}, {iface: 2, ts: 3, data: payload(2, 22)}, {simple: true, data: payload(3, 9)}}})
		f.Add(b)
		f.Add(gz(f, b))
		f.Add(b[:len(b)-5])
	}
	f.Fuzz(func(t *testing.T, b []byte) { drain(t, b) })
}
