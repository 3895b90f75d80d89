package correlate

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
)

// benchStore is a store of n calls through one SBC (every call shares its
// address, so the timing heuristic has a dense window to search), one in
// ten tied to the previous one by X-Call-ID, started 10 ms apart.
func benchStore(n int) *dialog.Store {
	s := dialog.New(dialog.Config{MaxDialogs: n + 10})
	for i := range n {
		l := leg{callID: fmt.Sprintf("call-%06d", i), at: time.Duration(i) * 10 * time.Millisecond,
			a: fmt.Sprintf("10.%d.%d.%d:5060", i>>16&255, i>>8&255, i&255), b: "192.0.2.1:5060",
			invite: []string{fmt.Sprintf("Session-ID: %032x", i+1)}}
		if i%10 == 1 {
			l.invite = append(l.invite, fmt.Sprintf("X-Call-ID: call-%06d", i-1))
		}
		for _, o := range l.messages() {
			s.Apply(o)
		}
	}
	return s
}

var (
	benchOnce sync.Once
	bench20k  *dialog.Store
)

func benchStore20k() *dialog.Store {
	benchOnce.Do(func() { bench20k = benchStore(20000) })
	return bench20k
}

// BenchmarkFirstQuery is a query on a fresh correlator: it reads every
// dialog of the store once.
func BenchmarkFirstQuery(b *testing.B) {
	s := benchStore20k()
	b.ResetTimer()
	for range b.N {
		c := New(s, Config{})
		c.Find("call-010000")
	}
}

// BenchmarkQuery is a query on an unchanged store: the lookups only.
func BenchmarkQuery(b *testing.B) {
	c := New(benchStore20k(), Config{})
	c.Find("call-000000")
	b.ResetTimer()
	for i := range b.N {
		r, _ := c.Find(fmt.Sprintf("call-%06d", i%20000))
		if len(r.Legs) == 0 {
			b.Fatal("no legs")
		}
	}
}

// BenchmarkQueryAfterOneNewCall is a query after one more call arrived: one
// dialog re-read, the index rebuilt from the extracted identifiers.
func BenchmarkQueryAfterOneNewCall(b *testing.B) {
	s := benchStore(20000)
	c := New(s, Config{})
	c.Find("call-000000")
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for _, o := range (leg{callID: fmt.Sprintf("new-%d", i), at: 300 * time.Second, b: "192.0.2.1:5060"}).messages()[:1] {
			s.Apply(o)
		}
		b.StartTimer()
		c.Find("call-010000")
	}
}

// BenchmarkTree walks a call tree on an unchanged store.
func BenchmarkTree(b *testing.B) {
	c := New(benchStore20k(), Config{})
	c.Find("call-000000")
	b.ResetTimer()
	for range b.N {
		c.Tree("call-010001", 50)
	}
}
