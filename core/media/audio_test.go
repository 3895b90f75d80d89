package media_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/testcap"
)

// sample is the README's capture: two calls, one PCMU stream
// (0x343da99b, 425 packets, call 1-1966@10.0.2.20) and one PCMA stream
// (0x343ffa34, 414 packets, call 1-1968@10.0.2.20).
func sample(t *testing.T, cfg media.Config) *media.Store {
	t.Helper()
	st := media.NewStore(cfg)
	if _, err := mediatest.Feed(t, testcap.Public("sip-rtp-g711.pcap"), st, nil); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAudioIsRetainedOnlyWhenAsked: without RetainAudio nothing is kept.
func TestAudioIsRetainedOnlyWhenAsked(t *testing.T) {
	st := sample(t, media.Config{})
	if a := st.AudioFor("1-1966@10.0.2.20"); len(a) != 0 {
		t.Errorf("retained %d streams with retention off", len(a))
	}
	if s := st.AudioStats(); s != (media.AudioStats{}) {
		t.Errorf("stats %+v with retention off", s)
	}
}

// TestAudioRetainedEqualsTsharkPayloads: every retained payload of
// 0x343da99b is byte for byte what tshark -Y rtp.ssrc==0x343da99b -T
// fields -e rtp.seq -e rtp.timestamp -e rtp.payload gives, in order.
func TestAudioRetainedEqualsTsharkPayloads(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (CI installs it): the payloads cannot be compared")
	}
	out, err := exec.Command("tshark", "-r", testcap.Public("sip-rtp-g711.pcap"), "-Y", "rtp.ssrc==0x343da99b",
		"-T", "fields", "-e", "rtp.seq", "-e", "rtp.timestamp", "-e", "rtp.payload").Output()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		want = append(want, strings.ReplaceAll(l, ":", ""))
	}
	st := sample(t, media.Config{RetainAudio: true})
	a := st.AudioFor("1-1966@10.0.2.20")
	if len(a) != 1 || a[0].SSRC != "0x343da99b" {
		t.Fatalf("retained %+v, want the one stream 0x343da99b", a)
	}
	var got []string
	for _, f := range a[0].Frames {
		if f.Codec != "PCMU" {
			t.Fatalf("frame codec %q, want PCMU", f.Codec)
		}
		got = append(got, fmt.Sprintf("%d\t%d\t%s", f.Seq, f.Timestamp, hex.EncodeToString(f.Payload)))
	}
	if len(got) != 425 || !reflect.DeepEqual(got, want) {
		t.Errorf("got %d frames, want tshark's %d; first differing: %s", len(got), len(want), firstDiff(got, want))
	}
	if s := st.AudioStats(); !s.Enabled || s.Bytes != 425*160+414*160 || s.FramesEvicted != 0 || s.StreamsEvicted != 0 {
		t.Errorf("stats %+v, want 839 frames of 160 bytes held, nothing evicted", s)
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("#%d got %.40s want %.40s", i, a[i], b[i])
		}
	}
	return "(lengths)"
}

// TestAudioRingKeepsTheNewestFrames: a ring of 100 frames keeps the last
// 100 of the stream's 425 and counts the 325 it replaced.
func TestAudioRingKeepsTheNewestFrames(t *testing.T) {
	st := sample(t, media.Config{RetainAudio: true, AudioFramesPerStream: 100})
	a := st.AudioFor("1-1966@10.0.2.20")
	if len(a) != 1 || len(a[0].Frames) != 100 || a[0].FramesEvicted != 325 {
		t.Fatalf("got %d streams, frames %d, evicted %d; want 100 and 325", len(a), len(a[0].Frames), a[0].FramesEvicted)
	}
	// The stream's sequence numbers run 37595.. with no gap (tshark): the
	// last 100 start at 37595+325.
	if f := a[0].Frames; f[0].Seq != 37595+325 || f[99].Seq != 37595+424 {
		t.Errorf("kept seq %d..%d, want %d..%d", f[0].Seq, f[99].Seq, 37595+325, 37595+424)
	}
	if s := st.AudioStats(); s.FramesEvicted != 325+314 || s.Bytes != 200*160 {
		t.Errorf("stats %+v, want 639 frames evicted, 200 frames held", s)
	}
}

// TestAudioByteBudgetLetsTheOldestStreamGo: with room for 100 frames of
// 160 bytes across streams, the first call's stream turns its ring over
// at 100 frames; when the second call's stream needs room, the first's
// audio goes whole, counted.
func TestAudioByteBudgetLetsTheOldestStreamGo(t *testing.T) {
	st := sample(t, media.Config{RetainAudio: true, AudioMaxBytes: 100 * 160})
	if a := st.AudioFor("1-1966@10.0.2.20"); len(a) != 0 {
		t.Errorf("the first stream kept %d frames, want its audio let go", len(a[0].Frames))
	}
	a := st.AudioFor("1-1968@10.0.2.20")
	if len(a) != 1 || len(a[0].Frames) != 100 || a[0].Frames[0].Codec != "PCMA" {
		t.Fatalf("second stream: %d streams", len(a))
	}
	s := st.AudioStats()
	if s.StreamsEvicted != 1 || s.BytesEvicted != 100*160 || s.Bytes != 100*160 || s.FramesEvicted != 325+314 {
		t.Errorf("stats %+v, want one stream of 16000 bytes let go, 16000 held", s)
	}
}

// TestAudioShardedMergeEqualsSingle: two stores sharded by host pair and
// merged retain what one store does.
func TestAudioShardedMergeEqualsSingle(t *testing.T) {
	cfg := media.Config{RetainAudio: true}
	single := sample(t, cfg)
	shards := []*media.Store{media.NewStore(cfg), media.NewStore(cfg)}
	_, err := mediatest.Walk(t, testcap.Public("sip-rtp-g711.pcap"), func(p *packet.Packet) {
		if sip.Looks(p.Payload) {
			if m, err := sip.Parse(p.Payload); err == nil && m.CallID != "" {
				if body, ok := m.SDPBody(); ok {
					if s, err := sdp.Parse(body); err == nil {
						for _, sh := range shards {
							sh.OnSDP(m.CallID, p.TS, s, m.IsRequest, p.Src)
						}
					}
				}
			}
			return
		}
		shards[hostPairShard(p, 2)].Observe(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	shards[0].Merge(shards[1])
	for _, id := range []string{"1-1966@10.0.2.20", "1-1968@10.0.2.20"} {
		g, w := shards[0].AudioFor(id), single.AudioFor(id)
		if len(g) != 1 || !reflect.DeepEqual(g, w) {
			t.Errorf("%s: merged audio differs from the single store's", id)
		}
	}
	if g, w := shards[0].AudioStats(), single.AudioStats(); g != w {
		t.Errorf("merged stats %+v, single %+v", g, w)
	}
	if !bytes.Equal(single.AudioFor("1-1968@10.0.2.20")[0].Frames[0].Payload, shards[0].AudioFor("1-1968@10.0.2.20")[0].Frames[0].Payload) {
		t.Error("first PCMA payload differs")
	}
}
