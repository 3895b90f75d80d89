// Package testpcap writes classic pcap files for tests: the one pcap writer
// the core packages' tests share (gopacket's pcapgo, snaplen 65535).
// Tests that need a byte order, a header or a record pcapgo does not write
// (core/capture's reader tests, tests/ accPcap) build their bytes by hand.
package testpcap

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Frame is one record: its time, its bytes and, when the frame was cut,
// its length on the wire (0: len(Data)).
type Frame struct {
	TS      time.Time
	Data    []byte
	OrigLen int
}

// Write writes a pcap of link type lt to w, with nanosecond timestamps when
// nanos is set (magic a1b23c4d), else microseconds.
func Write(tb testing.TB, w io.Writer, lt layers.LinkType, nanos bool, frames []Frame) {
	tb.Helper()
	pw := pcapgo.NewWriter(w)
	if nanos {
		pw = pcapgo.NewWriterNanos(w)
	}
	if err := pw.WriteFileHeader(65535, lt); err != nil {
		tb.Fatalf("writing the pcap header: %v", err)
	}
	for i, f := range frames {
		n := f.OrigLen
		if n == 0 {
			n = len(f.Data)
		}
		ci := gopacket.CaptureInfo{Timestamp: f.TS, CaptureLength: len(f.Data), Length: n}
		if err := pw.WritePacket(ci, f.Data); err != nil {
			tb.Fatalf("writing pcap record %d: %v", i, err)
		}
	}
}

// Bytes is Write into memory.
func Bytes(tb testing.TB, lt layers.LinkType, nanos bool, frames []Frame) []byte {
	tb.Helper()
	var b bytes.Buffer
	Write(tb, &b, lt, nanos, frames)
	return b.Bytes()
}

// WriteFile is Write to a new file at path (mode 0644).
func WriteFile(tb testing.TB, path string, lt layers.LinkType, nanos bool, frames []Frame) {
	tb.Helper()
	if err := os.WriteFile(path, Bytes(tb, lt, nanos, frames), 0o644); err != nil {
		tb.Fatal(err)
	}
}
