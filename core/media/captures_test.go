package media_test

import (
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"testing"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/testcap"
)

type truthStream struct {
	SSRC        string  `json:"ssrc"`
	Src         string  `json:"src"`
	Dst         string  `json:"dst"`
	Packets     int64   `json:"packets"`
	Lost        int64   `json:"lost"`
	MaxJitterMs float64 `json:"max_jitter_ms"`
	MaxDeltaMs  float64 `json:"max_delta_ms"`
}

type truthFile struct {
	RTP struct {
		Default   struct{ Streams []truthStream } `json:"default"`
		Heuristic struct{ Streams []truthStream } `json:"heuristic"`
	} `json:"rtp"`
}

func streamKey(ssrc, src, dst string) string { return ssrc + " " + src + " " + dst }

// hostPairShard is the shard of n a packet's host pair goes to, as the
// router shards a multi-core load: both directions of a flow together.
func hostPairShard(p *packet.Packet, n uint32) uint32 {
	a, b := p.Src.Addr(), p.Dst.Addr()
	if b.Less(a) {
		a, b = b, a
	}
	h := fnv.New32a()
	h.Write(a.AsSlice())
	h.Write(b.AsSlice())
	return h.Sum32() % n
}

// TestPublicCapturesAgainstTshark checks every RTP stream tshark reports on
// every public capture: packets and lost equal, max jitter within
// max(0.05 ms, 2 %); streams tshark finds only with its RTP heuristic are
// found as orphans.
func TestPublicCapturesAgainstTshark(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			tf := testcap.LoadTruth[truthFile](t, name)
			st := media.NewStore(media.Config{})
			r, err := capture.Open(testcap.Public(name))
			if errors.Is(err, capture.ErrUnsupportedFormat) && len(tf.RTP.Default.Streams)+len(tf.RTP.Heuristic.Streams) == 0 {
				t.Skipf("capture format not read yet and tshark reports no RTP: %v", err)
			}
			if err == nil {
				r.Close()
			}
			if _, err := mediatest.Feed(t, testcap.Public(name), st, nil); err != nil {
				t.Fatalf("reading %s: %v", name, err)
			}
			got := map[string]media.StreamInfo{}
			for _, s := range st.All() {
				got[streamKey(s.SSRC, s.Src, s.Dst)] = s
			}
			inDefault := map[string]bool{}
			for _, w := range tf.RTP.Default.Streams {
				k := streamKey(w.SSRC, w.Src, w.Dst)
				inDefault[k] = true
				g, ok := got[k]
				if !ok {
					t.Errorf("stream %s: not found", k)
					continue
				}
				if g.Orphaned {
					t.Logf("stream %s: orphaned", k)
				}
				if int64(g.Packets) != w.Packets {
					t.Errorf("stream %s: got packets %d, want %d", k, g.Packets, w.Packets)
				}
				if g.Lost != w.Lost {
					t.Errorf("stream %s: got lost %d, want %d", k, g.Lost, w.Lost)
				}
				var jm float64
				if g.JitterMaxMs != nil {
					jm = *g.JitterMaxMs
				}
				if tol := math.Max(0.05, 0.02*w.MaxJitterMs); math.Abs(jm-w.MaxJitterMs) > tol {
					t.Errorf("stream %s: got jitter_max_ms %.3f, want %.3f ± %.3f", k, jm, w.MaxJitterMs, tol)
				}
				var dm float64
				if g.DeltaMaxMs != nil {
					dm = *g.DeltaMaxMs
				}
				if tol := math.Max(0.05, 0.02*w.MaxDeltaMs); math.Abs(dm-w.MaxDeltaMs) > tol {
					t.Errorf("stream %s: got delta_max_ms %.3f, want %.3f ± %.3f", k, dm, w.MaxDeltaMs, tol)
				}
			}
			for _, w := range tf.RTP.Heuristic.Streams {
				k := streamKey(w.SSRC, w.Src, w.Dst)
				if inDefault[k] {
					continue
				}
				g, ok := got[k]
				if !ok {
					t.Errorf("heuristic stream %s: not found", k)
					continue
				}
				if !g.Orphaned {
					t.Errorf("heuristic stream %s: got orphaned false (dialog %q), want true", k, g.AssociatedDialog)
				}
				if int64(g.Packets) != w.Packets {
					t.Errorf("heuristic stream %s: got packets %d, want %d", k, g.Packets, w.Packets)
				}
			}
		})
	}
}

// TestShardedMergeEqualsSingle shards every public capture by host pair
// into two stores (SDP to both, as the router does on two cores), merges
// them and expects the single-store answer byte for byte.
func TestShardedMergeEqualsSingle(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			single := media.NewStore(media.Config{})
			shards := []*media.Store{media.NewStore(media.Config{}), media.NewStore(media.Config{})}
			_, err := mediatest.Walk(t, testcap.Public(name), func(p *packet.Packet) {
				if sip.Looks(p.Payload) {
					m, err := sip.Parse(p.Payload)
					if err != nil || m.CallID == "" {
						return
					}
					if body, ok := m.SDPBody(); ok {
						if s, err := sdp.Parse(body); err == nil {
							single.OnSDP(m.CallID, p.TS, s, m.IsRequest, p.Src)
							for _, sh := range shards {
								sh.OnSDP(m.CallID, p.TS, s, m.IsRequest, p.Src)
							}
						}
					}
					return
				}
				if p.Transport != packet.TransportUDP {
					return
				}
				single.Observe(p)
				shards[hostPairShard(p, 2)].Observe(p)
			})
			if errors.Is(err, capture.ErrUnsupportedFormat) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			shards[0].Merge(shards[1])
			want, _ := json.Marshal(single.All())
			got, _ := json.Marshal(shards[0].All())
			if string(got) != string(want) {
				t.Errorf("merged shards differ from the single store:\n got %s\nwant %s", got, want)
			}
			if g, w := shards[0].Stats().Streams, single.Stats().Streams; g != w {
				t.Errorf("got %d streams, want %d", g, w)
			}
		})
	}
}
