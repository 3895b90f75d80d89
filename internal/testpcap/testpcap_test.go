package testpcap

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// TestBytesReadBackWithTimesLengthsAndLinkType: what Bytes writes, pcapgo's
// reader reads back: the link type, each record's time to the unit written
// (microseconds or nanoseconds), its bytes and its wire length.
func TestBytesReadBackWithTimesLengthsAndLinkType(t *testing.T) {
	t0 := time.Date(2025, 3, 3, 9, 0, 0, 123456789, time.UTC)
	frames := []Frame{{TS: t0, Data: []byte("abc")}, {TS: t0.Add(time.Second), Data: []byte("de"), OrigLen: 60}}
	for _, tc := range []struct {
		nanos bool
		unit  time.Duration
	}{{false, time.Microsecond}, {true, time.Nanosecond}} {
		r, err := pcapgo.NewReader(bytes.NewReader(Bytes(t, layers.LinkTypeRaw, tc.nanos, frames)))
		if err != nil {
			t.Fatal(err)
		}
		if r.LinkType() != layers.LinkTypeRaw {
			t.Errorf("nanos %v: link type %v, want raw", tc.nanos, r.LinkType())
		}
		for i, f := range frames {
			data, ci, err := r.ReadPacketData()
			if err != nil {
				t.Fatalf("nanos %v record %d: %v", tc.nanos, i, err)
			}
			want := f.OrigLen
			if want == 0 {
				want = len(f.Data)
			}
			if !ci.Timestamp.Equal(f.TS.Truncate(tc.unit)) || !bytes.Equal(data, f.Data) || ci.Length != want {
				t.Errorf("nanos %v record %d: %v %q len %d, want %v %q len %d", tc.nanos, i, ci.Timestamp, data, ci.Length, f.TS.Truncate(tc.unit), f.Data, want)
			}
		}
	}
}
