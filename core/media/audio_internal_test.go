package media

import (
	"net/netip"
	"testing"
	"time"
)

// TestAudioQueueStaysBoundedAsStreamsComeAndGo: with retention on and a
// store of 4 streams, 3000 unsignaled PCMU streams of 5 packets each come
// and go (each evicted for the next: the audio of the first 3 packets,
// replayed from probation, is not kept, the other 2 are). The queue of
// streams holding audio never exceeds twice the live ones plus 1024, the
// byte count equals what the 4 live streams hold, and no evicted stream's
// audio is counted.
func TestAudioQueueStaysBoundedAsStreamsComeAndGo(t *testing.T) {
	st := NewStore(Config{RetainAudio: true, MaxStreams: 4})
	maxQ := 0
	for i := range 3000 {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 4000)
		dst := netip.MustParseAddrPort("10.0.0.2:5000")
		for k := range 5 {
			at := t0.Add(time.Duration(i*5+k) * 20 * time.Millisecond)
			st.Observe(udp(src, dst, at, rtpPkt(0, false, uint16(100+k), uint32(160*k), uint32(i+1), make([]byte, 160))))
		}
		maxQ = max(maxQ, len(st.audio.q)-st.audio.qHd)
	}
	if maxQ > 2*4+1024 || st.audio.live != 4 {
		t.Errorf("queue reached %d entries with %d live streams, want at most %d", maxQ, st.audio.live, 2*4+1024)
	}
	var held int64
	for _, s := range st.order[st.orderHd:] {
		if s != nil && s.ext != nil && s.ext.audio != nil {
			held += s.ext.audio.bytes
		}
	}
	if held != 4*2*160 || st.audio.bytes != held {
		t.Errorf("bytes counted %d, held %d; want %d", st.audio.bytes, held, 4*2*160)
	}
}
