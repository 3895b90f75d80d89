package media

import (
	"fmt"
	"sort"
	"time"

	"github.com/sipnab/sipnab/core/rtp"
)

// Retained audio (--retain-audio, engine.md §8 and §17): with
// Config.RetainAudio, the payloads of G.711 packets (PCMU, PCMA: the
// codecs export_audio decodes) are kept per stream in a ring of
// Config.AudioFramesPerStream frames (1500 by default, 30 s at 20 ms),
// the oldest frame replaced first, and within Config.AudioMaxBytes across
// every stream: past it, the audio of the stream that began retaining
// first is let go whole. Both are counted (AudioStats). Off, a packet
// pays one test of a boolean.

// Defaults of the audio retention.
const (
	DefaultAudioFrames   = 1500
	DefaultAudioMaxBytes = 64 << 20
	// maxAudioPayload bounds one retained payload: a G.711 packet of
	// 200 ms at 8 kHz is 1600 bytes; anything longer is counted, not kept.
	maxAudioPayload = 1600
)

// audioFrame is one retained payload.
type audioFrame struct {
	ns   int64  // arrival
	ts   uint32 // RTP timestamp
	seq  uint16
	pt   uint8
	data []byte // a copy of the payload
}

// audioRing is a stream's retained audio, oldest frame at next once full.
type audioRing struct {
	frames  []audioFrame
	next    int
	bytes   int64
	evicted uint64 // frames replaced by newer ones
}

// audioState is the store's account of the retained audio.
type audioState struct {
	q     []*stream // streams holding audio, in the order they began (entries whose audio went stay until compacted)
	qHd   int
	live  int // streams holding audio now
	bytes int64
	stats AudioStats
}

// AudioStats counts what the audio retention kept and let go.
type AudioStats struct {
	// Enabled: --retain-audio is on.
	Enabled bool `json:"enabled"`
	// Bytes is the payload bytes held now, across every stream.
	Bytes int64 `json:"bytes"`
	// FramesEvicted counts frames a stream's ring replaced with newer ones.
	FramesEvicted uint64 `json:"frames_evicted"`
	// StreamsEvicted counts streams whose whole audio was let go to stay
	// within the byte budget; BytesEvicted their bytes.
	StreamsEvicted uint64 `json:"streams_evicted"`
	BytesEvicted   uint64 `json:"bytes_evicted"`
	// Oversized counts payloads over 1600 bytes, not kept.
	Oversized uint64 `json:"oversized"`
}

func (c Config) audioFrames() int {
	if c.AudioFramesPerStream > 0 {
		return c.AudioFramesPerStream
	}
	return DefaultAudioFrames
}

func (c Config) audioMaxBytes() int64 {
	if c.AudioMaxBytes > 0 {
		return c.AudioMaxBytes
	}
	return DefaultAudioMaxBytes
}

// isG711 reports whether a codec is one export_audio decodes.
func isG711(c rtp.Codec) bool { return c.Name == "PCMU" || c.Name == "PCMA" }

// retain keeps one G.711 payload of s (writer, under st.mu).
func (st *Store) retain(s *stream, ns int64, h *rtp.Header, payload []byte) {
	if h.PayloadOffset < 0 || h.PayloadLen <= 0 || h.PayloadOffset+h.PayloadLen > len(payload) {
		return
	}
	p := payload[h.PayloadOffset : h.PayloadOffset+h.PayloadLen]
	if len(p) > maxAudioPayload {
		st.audio.stats.Oversized++
		return
	}
	if s.ext == nil {
		s.ext = &streamExt{}
	}
	r := s.ext.audio
	if r == nil {
		r = &audioRing{}
		s.ext.audio = r
		st.audio.live++
		st.audio.q = append(st.audio.q, s)
		st.compactAudioQ()
	}
	n := int64(len(p))
	for st.audio.bytes+n > st.cfg.audioMaxBytes() && st.evictAudio(s) {
	}
	// Still over the budget with every other stream's audio gone: this
	// stream's ring turns over at the length it has reached.
	full := len(r.frames) >= st.cfg.audioFrames() || (st.audio.bytes+n > st.cfg.audioMaxBytes() && len(r.frames) > 0)
	f := audioFrame{ns: ns, ts: h.Timestamp, seq: h.Seq, pt: h.PayloadType}
	if !full {
		f.data = append([]byte(nil), p...)
		r.frames = append(r.frames, f)
	} else {
		old := &r.frames[r.next]
		r.bytes -= int64(len(old.data))
		st.audio.bytes -= int64(len(old.data))
		r.evicted++
		st.audio.stats.FramesEvicted++
		f.data = append(old.data[:0], p...)
		*old = f
		r.next = (r.next + 1) % len(r.frames)
	}
	r.bytes += n
	st.audio.bytes += n
}

// evictAudio lets go the audio of the stream that began retaining first,
// other than keep; false when there is none.
func (st *Store) evictAudio(keep *stream) bool {
	a := &st.audio
	for i := a.qHd; i < len(a.q); i++ {
		s := a.q[i]
		if s == nil || s.ext == nil || s.ext.audio == nil {
			if i == a.qHd { // gone already: the head moves past it
				a.q[i] = nil
				a.qHd++
			}
			continue
		}
		if s == keep {
			continue
		}
		a.stats.BytesEvicted += uint64(st.dropAudio(s))
		a.stats.StreamsEvicted++
		a.q[i] = nil
		if i == a.qHd {
			a.qHd++
		}
		st.compactAudioQ()
		return true
	}
	return false
}

// dropAudio lets a stream's audio go and returns its bytes, which leave
// the byte count.
func (st *Store) dropAudio(s *stream) int64 {
	if s.ext == nil || s.ext.audio == nil {
		return 0
	}
	b := s.ext.audio.bytes
	st.audio.bytes -= b
	st.audio.live--
	s.ext.audio = nil
	return b
}

// mergeAudio takes a stream that moved in from another store (Merge) into
// the audio account, and o's counters with the last one (done).
func (st *Store) mergeAudio(s *stream) {
	if s.ext == nil || s.ext.audio == nil {
		return
	}
	st.audio.bytes += s.ext.audio.bytes
	st.audio.live++
	st.audio.q = append(st.audio.q, s)
	st.compactAudioQ()
}

// mergeAudioStats adds another store's audio counters and lets the oldest
// audio go until the merged bytes fit the budget (counted).
func (st *Store) mergeAudioStats(o *Store) {
	a, b := &st.audio.stats, o.audio.stats
	a.FramesEvicted += b.FramesEvicted
	a.StreamsEvicted += b.StreamsEvicted
	a.BytesEvicted += b.BytesEvicted
	a.Oversized += b.Oversized
	for st.audio.bytes > st.cfg.audioMaxBytes() && st.evictAudio(nil) {
	}
}

// compactAudioQ drops the queue's entries whose audio went (let go at the
// budget, or with a stream evicted from the store) once they outnumber the
// live ones: the queue stays within twice the streams holding audio (plus
// 1024), and holds no evicted stream for long. Amortized O(1) per entry.
func (st *Store) compactAudioQ() {
	a := &st.audio
	if len(a.q)-a.qHd <= 2*a.live+1024 {
		return
	}
	n := 0
	for _, s := range a.q[a.qHd:] {
		if s != nil && s.ext != nil && s.ext.audio != nil {
			a.q[n] = s
			n++
		}
	}
	clear(a.q[n:])
	a.q = a.q[:n]
	a.qHd = 0
}

// AudioStats returns the audio retention's counters.
func (st *Store) AudioStats() AudioStats {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s := st.audio.stats
	s.Enabled = st.cfg.RetainAudio
	s.Bytes = st.audio.bytes
	return s
}

// AudioFrame is one retained payload as readers get it.
type AudioFrame struct {
	Arrival     time.Time
	Timestamp   uint32 // RTP timestamp
	Seq         uint16
	PayloadType uint8
	Codec       string // PCMU or PCMA, from the payload type as the stream resolves it
	Payload     []byte // a copy
}

// StreamAudio is one stream's retained audio.
type StreamAudio struct {
	SSRC     string
	Src, Dst string
	// FirstSeen is the stream's first packet; the frames are in arrival
	// order, oldest first.
	FirstSeen time.Time
	Frames    []AudioFrame
	// FramesEvicted counts the stream's frames the ring let go (older than
	// the first one here).
	FramesEvicted uint64
}

// AudioFor returns the retained audio of a dialog's streams, oldest stream
// first; streams without retained audio are left out.
func (st *Store) AudioFor(callID string) []StreamAudio {
	st.mu.RLock()
	defer st.mu.RUnlock()
	ss := append([]*stream(nil), st.byCall[callID]...)
	sort.Slice(ss, func(i, j int) bool { return less(ss[i], ss[j]) })
	var out []StreamAudio
	for _, s := range ss {
		if s.ext == nil || s.ext.audio == nil || len(s.ext.audio.frames) == 0 {
			continue
		}
		r := s.ext.audio
		a := StreamAudio{
			SSRC: fmt.Sprintf("0x%08x", s.key.SSRC), Src: s.key.Src.String(), Dst: s.key.Dst.String(),
			FirstSeen: time.Unix(0, s.firstNs).UTC(), FramesEvicted: r.evicted,
			Frames: make([]AudioFrame, 0, len(r.frames)),
		}
		for i := range r.frames {
			f := &r.frames[(r.next+i)%len(r.frames)]
			c, _ := s.codecFor(f.pt)
			a.Frames = append(a.Frames, AudioFrame{Arrival: time.Unix(0, f.ns).UTC(), Timestamp: f.ts, Seq: f.seq, PayloadType: f.pt, Codec: c.Name, Payload: append([]byte(nil), f.data...)})
		}
		out = append(out, a)
	}
	return out
}
