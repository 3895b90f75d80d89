package dialog

import (
	"reflect"
	"testing"
	"time"
)

// TestSingleMessageReadersAgreeWithGet: MessageTimes and MessageAt read
// what Get's Detail.Messages holds, one message at a time; RetainedCounts
// lists every Call-ID most recently updated first with its retained
// count; an unknown Call-ID or position is refused.
func TestSingleMessageReadersAgreeWithGet(t *testing.T) {
	s := New(Config{})
	play(t, s, basicCall("one@x"))
	play(t, s, basicCall("two@x")[:3])
	det, ok := s.Get("one@x")
	if !ok {
		t.Fatal("no dialog one@x")
	}
	times, ok := s.MessageTimes("one@x", nil)
	if !ok || len(times) != len(det.Messages) || len(times) != 7 {
		t.Fatalf("MessageTimes: %d times (%v), Get holds %d, want 7", len(times), ok, len(det.Messages))
	}
	for i, m := range det.Messages {
		got, ok := s.MessageAt("one@x", i)
		if !ok || !times[i].Equal(m.TS) || !got.TS.Equal(m.TS) || got.Index != m.Index || got.Src != m.Src ||
			!reflect.DeepEqual(got.View(), m.View()) {
			t.Fatalf("message %d: MessageAt %+v (time %v), Get %+v", i, got.View(), times[i], m.View())
		}
	}
	if want := t0.Add(64030 * time.Millisecond); !times[6].Equal(want) {
		t.Fatalf("last time %v, want %v", times[6], want)
	}
	for _, bad := range []struct {
		id  string
		pos int
	}{{"one@x", 7}, {"one@x", -1}, {"nobody@x", 0}} {
		if _, ok := s.MessageAt(bad.id, bad.pos); ok {
			t.Errorf("MessageAt(%q, %d) answered", bad.id, bad.pos)
		}
	}
	if _, ok := s.MessageTimes("nobody@x", nil); ok {
		t.Error("MessageTimes of an unknown Call-ID answered")
	}
	got := s.RetainedCounts(nil)
	want := []RetainedCount{{"two@x", 3}, {"one@x", 7}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RetainedCounts %v, want %v", got, want)
	}
}
