package dialog

import (
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

// applyBigInvites applies n INVITEs, each opening its own dialog and
// carrying a body of bodyBytes, as a flood of fat calls would.
func applyBigInvites(t testing.TB, s *Store, n, bodyBytes int, check func(i int)) {
	body := "v=0\r\n" + strings.Repeat("a=x-pad:0123456789abcdef0123456789abcdef0123456789abcdef012345\r\n", bodyBytes/64)
	for i := 0; i < n; i++ {
		text := req("INVITE", hdr{callID: fmt.Sprintf("fat-%d", i), fromTag: "f", cseq: 1, branch: fmt.Sprintf("z9hG4bK-%d", i), body: body, ctype: "application/sdp"})
		m, err := sip.Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Millisecond), Src: netip.MustParseAddrPort(alice), Dst: netip.MustParseAddrPort(bob),
			Transport: packet.TransportUDP, Origin: packet.OriginWire, Frame: packet.FrameRef{Source: "flood", Ordinal: uint64(i + 1)}})
		if check != nil {
			check(i)
		}
	}
}

// TestStoreStaysWithinItsByteBudget: 3,000 dialogs with 60 KB bodies
// (about 180 MB) against a 16 MiB budget: the store never holds more than
// its budget, the oldest dialogs are evicted and counted as evicted for
// bytes, the newest stay, and the heap agrees with the store's account.
func TestStoreStaysWithinItsByteBudget(t *testing.T) {
	const budget = 16 << 20
	s := New(Config{MaxBytes: budget})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	applyBigInvites(t, s, 3000, 60000, func(i int) {
		if b := s.Stats().Bytes; b > budget {
			t.Fatalf("after message %d the store holds %d bytes, over its %d budget", i+1, b, budget)
		}
	})
	st := s.Stats()
	if st.EvictedForBytes == 0 || st.Evicted != st.EvictedForBytes || st.MaxBytes != budget {
		t.Errorf("stats %+v: want evictions for bytes, all of them", st)
	}
	if uint64(st.Dialogs)+st.Evicted != 3000 {
		t.Errorf("held %d + evicted %d != 3000", st.Dialogs, st.Evicted)
	}
	if _, ok := s.Get("fat-2999"); !ok {
		t.Error("the newest dialog was evicted")
	}
	if _, ok := s.Get("fat-0"); ok {
		t.Error("the oldest dialog is still held")
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if held > 2*budget {
		t.Errorf("the heap grew %d bytes for a store that says it holds %d (budget %d)", held, st.Bytes, budget)
	}
	t.Logf("held %d dialogs, %d bytes by the store's account, heap +%d; evicted %d", st.Dialogs, st.Bytes, held, st.Evicted)
	runtime.KeepAlive(s)
}

// TestStoreByteAccountFollowsEvictions: without a byte budget nothing is
// evicted for bytes, and the account returns to zero-ish as the dialog cap
// evicts: bytes are the held dialogs' bytes, never a running total.
func TestStoreByteAccountFollowsEvictions(t *testing.T) {
	s := New(Config{MaxBytes: -1, MaxDialogs: 100})
	applyBigInvites(t, s, 1000, 1000, nil)
	st := s.Stats()
	if st.EvictedForBytes != 0 || st.MaxBytes != 0 {
		t.Errorf("no byte budget, yet %+v", st)
	}
	per := st.Bytes / int64(st.Dialogs)
	if st.Dialogs > 100 || per < 1000 || per > 1000+dialogOverhead+messageOverhead+1000 {
		t.Errorf("%d dialogs hold %d bytes (%d each): want at most 100 dialogs of about 1 KB of body plus overheads", st.Dialogs, st.Bytes, per)
	}
}

func TestDefaultByteBudgetIsSizedForTheMachine(t *testing.T) {
	for _, tc := range []struct {
		total uint64
		want  int64
	}{
		{0, fallbackDefaultBytes},
		{512 << 20, minDefaultBytes},
		{8 << 30, 512 << 20},
		{64 << 30, maxDefaultBytes},
	} {
		if got := defaultBytesFor(tc.total); got != tc.want {
			t.Errorf("defaultBytesFor(%d) = %d, want %d", tc.total, got, tc.want)
		}
	}
	if d := DefaultMaxBytes(); d < minDefaultBytes || d > maxDefaultBytes {
		t.Errorf("DefaultMaxBytes() = %d", d)
	}
}

// BenchmarkStoreBytesPerDialog compares the store's byte account with the
// heap on small calls (seven messages each, basicCall): the account must
// not be far below what the heap holds, or the budget would let the store
// outgrow it. Reports heap-B/dialog and account-B/dialog.
func BenchmarkStoreBytesPerDialog(b *testing.B) {
	const n = 20000
	var msgs [][]*sip.Message
	for i := 0; i < n; i++ {
		var call []*sip.Message
		for _, st := range basicCall(fmt.Sprintf("small-%d", i)) {
			m, err := sip.Parse([]byte(st.text))
			if err != nil {
				b.Fatal(err)
			}
			call = append(call, m)
		}
		msgs = append(msgs, call)
	}
	steps := basicCall("x")
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		s := New(Config{MaxBytes: -1})
		for i, call := range msgs {
			for j, m := range call {
				s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i)*time.Second + time.Duration(steps[j].ms)*time.Millisecond),
					Src: netip.MustParseAddrPort(steps[j].src), Dst: netip.MustParseAddrPort(steps[j].dst),
					Transport: packet.TransportUDP, Origin: packet.OriginWire})
			}
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-B/dialog")
		b.ReportMetric(float64(s.Stats().Bytes)/n, "account-B/dialog")
		runtime.KeepAlive(s)
	}
}
