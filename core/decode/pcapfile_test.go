package decode

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testpcap"
)

// writeCapture writes frames (all of one link type) to a pcap file, or to a
// pcapng file when ng is set.
func writeCapture(t *testing.T, path string, frames []*packet.Frame, ng bool) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	lt := layers.LinkType(frames[0].LinkType)
	var write func(gopacket.CaptureInfo, []byte) error
	if ng {
		w, err := pcapgo.NewNgWriter(fh, lt)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Flush()
		write = w.WritePacket
	} else {
		recs := make([]testpcap.Frame, len(frames))
		for i, f := range frames {
			recs[i] = testpcap.Frame{TS: f.TS, Data: f.Data, OrigLen: f.OrigLen}
		}
		testpcap.Write(t, fh, lt, true, recs)
		return
	}
	for _, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: f.TS, CaptureLength: len(f.Data), Length: f.OrigLen}
		if err := write(ci, f.Data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEncapsulationsFromFiles writes every hand-built encapsulation case to
// a pcap file (and a pcapng file), reads it back through the capture reader
// and checks the decoder yields exactly the same packets.
func TestEncapsulationsFromFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range encapCases(t) {
		for _, ng := range []bool{false, true} {
			name := tc.name + map[bool]string{false: " pcap", true: " pcapng"}[ng]
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".cap")
				writeCapture(t, path, tc.frames, ng)
				r, err := capture.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				d := New(tc.cfg)
				c := &collect{}
				n := 0
				for {
					f, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if f.LinkType != tc.frames[0].LinkType {
						t.Fatalf("got link type %d, want %d", f.LinkType, tc.frames[0].LinkType)
					}
					n++
					d.Decode(f, c)
				}
				d.Flush(c)
				eq(t, "frames", n, len(tc.frames))
				checkPackets(t, c.pkts, tc.want)
				checkUndecodable(t, d.Stats(), tc.undec)
			})
		}
	}
}
