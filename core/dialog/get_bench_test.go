package dialog

import (
	"testing"
)

// BenchmarkGetDialog reads one seven-message dialog with its messages (the
// messages are parsed again from the kept bytes on every read).
func BenchmarkGetDialog(b *testing.B) {
	s := filledStore(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, ok := s.Get("bench-7")
		if !ok || len(d.Messages) != 7 {
			b.Fatal("dialog not found")
		}
	}
}

// BenchmarkGetDialogNoMessages reads the same dialog without its messages.
func BenchmarkGetDialogNoMessages(b *testing.B) {
	s := filledStore(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := s.GetWith("bench-7", Options{NoMessages: true}); !ok {
			b.Fatal("dialog not found")
		}
	}
}
