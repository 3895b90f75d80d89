package dialog

import (
	"fmt"
	"math"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// TestStampKeepsTimesExactly: a stamp gives back the very time.Time it was
// made from (==, so JSON and comparisons cannot tell them apart), over the
// whole range a capture timestamp may take (capture.usableTS: Unix 0 to the
// end of year 9999) and beyond the int64 nanosecond range, and the zero
// Time stays the zero stamp while the Unix epoch does not.
func TestStampKeepsTimesExactly(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    time.Time
	}{
		{"zero Time", time.Time{}},
		{"Unix epoch", time.Unix(0, 0).UTC()},
		{"one ns after the epoch", time.Unix(0, 1).UTC()},
		{"a capture time", time.Date(2024, 5, 17, 10, 11, 12, 123456789, time.UTC)},
		{"after the int64 ns range", time.Date(2300, 1, 1, 0, 0, 0, 999999999, time.UTC)},
		{"the last usable capture second", time.Unix(253402300799, 999999999).UTC()},
		{"before the epoch", time.Date(1600, 2, 29, 23, 59, 59, 1, time.UTC)},
		{"a local time, kept as UTC", time.Date(2024, 1, 1, 12, 0, 0, 5, time.FixedZone("x", 3600)).UTC()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stampOf(tc.t)
			if got := s.time(); got != tc.t {
				t.Errorf("round trip: got %#v, want %#v", got, tc.t)
			}
			if s.isZero() != tc.t.IsZero() {
				t.Errorf("isZero %v, time.IsZero %v", s.isZero(), tc.t.IsZero())
			}
		})
	}
	a := stampOf(time.Unix(100, 5).UTC())
	b := stampOf(time.Unix(100, 6).UTC())
	c := stampOf(time.Unix(101, 0).UTC())
	for _, tc := range []struct {
		x, y stamp
		want bool
	}{{a, b, true}, {b, a, false}, {a, a, false}, {b, c, true}, {c, a, false}, {stamp{}, a, true}} {
		if got := tc.x.before(tc.y); got != tc.want || got != tc.x.time().Before(tc.y.time()) {
			t.Errorf("%v before %v: got %v, want %v (time.Before %v)", tc.x, tc.y, got, tc.want, tc.x.time().Before(tc.y.time()))
		}
	}
}

// TestInc32SaturatesInsteadOfWrapping: the int32 counts of legs,
// transactions and dialogs stop at 2^31-1 instead of turning negative.
func TestInc32SaturatesInsteadOfWrapping(t *testing.T) {
	for _, tc := range []struct {
		from, want int32
	}{{0, 1}, {41, 42}, {math.MaxInt32 - 1, math.MaxInt32}, {math.MaxInt32, math.MaxInt32}} {
		n := tc.from
		inc32(&n)
		if n != tc.want {
			t.Errorf("inc32(%d) = %d, want %d", tc.from, n, tc.want)
		}
	}
}

// TestRetainedFrameSourcesReadBack: a retained message keeps its frame's
// source only when it differs from the dialog's first frame's; a dialog
// whose messages come from several files (or from none) reads every frame
// back as applied.
func TestRetainedFrameSourcesReadBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources []string // per message of the call; "" leaves the frame zero
	}{
		{"one file", []string{"a.pcap", "a.pcap", "a.pcap", "a.pcap"}},
		{"a second file", []string{"a.pcap", "b.pcap", "a.pcap", "b.pcap"}},
		{"first frame unknown", []string{"", "a.pcap", "", "b.pcap"}},
		{"no frames", []string{"", "", "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{})
			src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
			var want []packet.FrameRef
			for j, st := range basicCall("frames")[:len(tc.sources)] {
				m, err := sip.Parse([]byte(st.text))
				if err != nil {
					t.Fatal(err)
				}
				var f packet.FrameRef
				if tc.sources[j] != "" {
					f = packet.FrameRef{Source: tc.sources[j], Ordinal: uint64(10 + j), Digest: [8]byte{byte(j), 1, 2, 3, 4, 5, 6, 7}}
				}
				s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(st.ms) * time.Millisecond), Src: src, Dst: dst, Frame: f})
				want = append(want, f)
				src, dst = dst, src
			}
			d, ok := s.Get("frames")
			if !ok {
				t.Fatal("dialog not found")
			}
			for i, f := range want {
				if got := d.Messages[i].Frame; got != f {
					t.Errorf("message %d: frame %+v, want %+v", i, got, f)
				}
				if got, ok := s.MessageAt("frames", i); !ok || got.Frame != f {
					t.Errorf("MessageAt %d: frame %+v, want %+v", i, got.Frame, f)
				}
			}
		})
	}
}

// TestDialogFitsItsSizeClass: a dialog (its first leg, transactions,
// addresses and identities inside) plus the 8-byte header the allocator
// puts before an object over 512 bytes that holds pointers fits the
// 1,792-byte size class; one byte more and every dialog takes 2,048.
func TestDialogFitsItsSizeClass(t *testing.T) {
	if got := unsafe.Sizeof(dialog{}) + 8; got > 1792 {
		t.Errorf("dialog with header: %d bytes, over the 1,792-byte size class", got)
	}
	for _, tc := range []struct {
		name string
		size uintptr
		max  uintptr
	}{
		{"leg", unsafe.Sizeof(leg{}) + 8, 416},
		{"slab of transactions (no header at 512)", txSlab * unsafe.Sizeof(tx{}), 512},
		{"retained message", unsafe.Sizeof(retained{}), 88},
	} {
		if tc.size > tc.max {
			t.Errorf("%s: %d bytes, over %d", tc.name, tc.size, tc.max)
		}
	}
}

// TestFirstLegAndTransactionsAreReadInPlace: legAt and txAt read the first
// leg and the first txSlab transactions from the dialog itself; they must
// be the very legs and transactions legs and txOrder hold, in order, for a
// dialog with more legs and transactions than first holds.
func TestFirstLegAndTransactionsAreReadInPlace(t *testing.T) {
	s := New(Config{})
	src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
	for i := 0; i < 3*txSlab; i++ {
		tag := fmt.Sprintf("leg%d", i%3)
		m := parsed(t, req("OPTIONS", hdr{callID: "c", fromTag: tag, cseq: i + 1, branch: fmt.Sprintf("z9hG4bK-%d", i)}))
		s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Second), Src: src, Dst: dst})
	}
	d := s.lookup("c")
	if len(d.legs) != 3 || len(d.txOrder) != 3*txSlab {
		t.Fatalf("%d legs, %d transactions; want 3 and %d", len(d.legs), len(d.txOrder), 3*txSlab)
	}
	for i := range d.legs {
		if d.legAt(i) != d.legs[i] {
			t.Errorf("legAt(%d) is not legs[%d]", i, i)
		}
	}
	for i := range d.txOrder {
		if d.txAt(i) != d.txOrder[i] {
			t.Errorf("txAt(%d) is not txOrder[%d]", i, i)
		}
	}
}
