package dialog

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// BenchmarkEvictionBatchAt1M measures the Apply that opens a dialog in a
// full store of a million dialogs and so evicts a batch (MaxDialogs/100):
// Apply holds the write lock from start to end, so ns/op is how long that
// batch keeps every reader waiting. The Applies between two batches run
// outside the timed part.
func BenchmarkEvictionBatchAt1M(b *testing.B) {
	const n = 1000000
	m0, err := sip.Parse([]byte(basicCall("x")[0].text))
	if err != nil {
		b.Fatal(err)
	}
	s := New(Config{MaxDialogs: n, MaxBytes: -1})
	src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
	next := 0
	open := func() Result {
		m := *m0
		m.CallID = fmt.Sprintf("e%d", next)
		r := s.Apply(Observation{Msg: &m, TS: t0.Add(time.Duration(next) * time.Microsecond), Src: src, Dst: dst})
		next++
		return r
	}
	for next < n {
		open()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if open().Evicted != n/100 {
			b.Fatal("the timed Apply evicted no batch")
		}
		b.StopTimer()
		for j := 0; j < n/100-1; j++ {
			if open().Evicted != 0 {
				b.Fatal("evicted outside the timed Apply")
			}
		}
		b.StartTimer()
	}
}
