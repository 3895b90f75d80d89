package dialog

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

func filledStore(b *testing.B, n int) *Store {
	s := New(Config{})
	src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
	for i := 0; i < n; i++ {
		for j, st := range basicCall(fmt.Sprintf("bench-%d", i)) {
			m, err := sip.Parse([]byte(st.text))
			if err != nil {
				b.Fatal(err)
			}
			if j%2 == 1 {
				src, dst = dst, src
			}
			s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i)*time.Millisecond + time.Duration(st.ms)*time.Millisecond), Src: src, Dst: dst})
		}
	}
	return s
}

// BenchmarkApply measures applying one message of a seven-message call.
func BenchmarkApply(b *testing.B) {
	var msgs []*sip.Message
	for _, st := range basicCall("x") {
		m, _ := sip.Parse([]byte(st.text))
		msgs = append(msgs, m)
	}
	s := New(Config{MaxDialogs: 10000})
	src, dst := netip.MustParseAddrPort(alice), netip.MustParseAddrPort(bob)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := *msgs[i%len(msgs)]
		m.CallID = fmt.Sprintf("c%d", i/len(msgs))
		s.Apply(Observation{Msg: &m, TS: t0, Src: src, Dst: dst})
	}
}

// BenchmarkListPage measures one 50-row page over 100k dialogs.
func BenchmarkListPage(b *testing.B) {
	s := filledStore(b, 100000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := s.List(Query{Limit: 50})
		if len(p.Rows) != 50 {
			b.Fatal(len(p.Rows))
		}
	}
}
