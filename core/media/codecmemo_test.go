package media

import (
	"testing"
	"unsafe"

	"github.com/sipnab/sipnab/core/rtp"
)

// TestCodecMemoEqualsNamedCodec: the memo answers what rtp.NamedCodec
// does for every encoding, clock rate and media type, on a first sight and
// on every repeat (hits, and names that evict each other from a slot),
// and never hands back a view into the caller's text.
func TestCodecMemoEqualsNamedCodec(t *testing.T) {
	type in struct {
		enc       string
		clock     uint32
		mediaType string
	}
	ins := []in{
		{"PCMU", 8000, "audio"}, {"pcmu", 8000, "audio"}, {"PCMA", 8000, "audio"},
		{"telephone-event", 8000, "audio"}, {"telephone-event", 16000, "audio"},
		{"opus", 48000, "audio"}, {"OPUS", 0, "audio"}, {"AMR-WB", 16000, "audio"},
		{"H264", 90000, "video"}, {"G729", 8000, "audio"},
		// names the table does not hold: the media type decides the kind
		{"x-made-up", 8000, "audio"}, {"x-made-up", 8000, "video"}, {"x-made-up", 0, "text"},
		{"ÄRGER", 8000, "audio"}, {"A", 1, "audio"},
	}
	var cm codecMemo
	for round := range 3 {
		for i := range ins {
			x := ins[i]
			if round == 1 {
				x = ins[len(ins)-1-i] // another order: other slot evictions
			}
			text := string([]byte(x.enc)) // a fresh string, as an SDP body's view
			got := cm.named(text, x.clock, x.mediaType)
			want := rtp.NamedCodec(x.enc, x.clock, x.mediaType)
			if got != want {
				t.Fatalf("round %d: %+v: %+v, want %+v", round, x, got, want)
			}
			if got.Name != "" && unsafe.StringData(got.Name) == unsafe.StringData(text) {
				t.Fatalf("round %d: %+v: the name is a view into the caller's text", round, x)
			}
		}
	}
}

// TestCodecMemoKeepsTheUsualCodecs: once seen, the codecs SDP offers
// usually carry are all answered from the memo (no copy of their names
// again), none evicting another.
func TestCodecMemoKeepsTheUsualCodecs(t *testing.T) {
	usual := []struct {
		enc   string
		clock uint32
	}{
		{"PCMU", 8000}, {"PCMA", 8000}, {"telephone-event", 8000}, {"G722", 8000}, {"G729", 8000},
		{"opus", 48000}, {"telephone-event", 48000}, {"AMR", 8000}, {"AMR-WB", 16000},
		{"telephone-event", 16000}, {"iLBC", 8000}, {"H264", 90000},
	}
	texts := make([]string, len(usual))
	for i, u := range usual {
		texts[i] = string([]byte(u.enc))
	}
	var cm codecMemo
	for i, u := range usual {
		cm.named(texts[i], u.clock, "audio")
	}
	if n := testing.AllocsPerRun(10, func() {
		for i, u := range usual {
			cm.named(texts[i], u.clock, "audio")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per pass over the usual codecs, want 0 (one evicts another)", n)
	}
}
