package media_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/media/mediatest"
	"github.com/sipnab/sipnab/internal/testcap"
)

// segment is a second, offline reading of RFC 3611 §4.7.2 over a whole
// received set: the positions from the lowest to the highest extended
// sequence number, losses grouped while fewer than Gmin received packets
// part them, a group of two losses or more a burst spanning its first to
// its last loss, a lone loss a gap loss.
func segment(seqs []uint16) media.BurstGap {
	got := map[int64]bool{}
	var ext, lo, hi int64
	for i, s := range seqs {
		if i == 0 {
			ext = int64(s)
			lo, hi = ext, ext
		} else {
			ext += int64(int16(s - uint16(ext)))
		}
		got[ext] = true
		lo, hi = min(lo, ext), max(hi, ext)
	}
	var lost []int64
	for p := lo; p <= hi; p++ {
		if !got[p] {
			lost = append(lost, p)
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	g := media.BurstGap{Gmin: media.Gmin}
	run, maxRun := int64(0), int64(0)
	for i := 0; i < len(lost); {
		j := i
		for j+1 < len(lost) && lost[j+1]-lost[j]-1 < media.Gmin {
			j++
		}
		if j > i {
			g.Bursts++
			g.BurstLost += uint64(j - i + 1)
			g.BurstPackets += uint64(lost[j] - lost[i] + 1)
		} else {
			g.GapLost++
		}
		i = j + 1
	}
	for k := range lost {
		if k > 0 && lost[k] == lost[k-1]+1 {
			run++
		} else {
			run = 1
		}
		maxRun = max(maxRun, run)
	}
	g.GapPackets = uint64(hi-lo+1) - g.BurstPackets
	g.MaxConsecutiveLost = uint64(maxRun)
	return g
}

// TestBurstGapAgainstTsharkSequences feeds the lossy streams of the public
// captures and compares burst_gap with the segmentation of tshark's
// sequence numbers (testdata/burstgap), and the 64 %-loss stream of
// Asterisk_ZFONE_XLITE.pcap with values read off tshark's list by hand:
// losses 4514-4525 (12), 4619-4742 (124) and 4765-4997 (233), each run
// parted from the next by 93 and 22 received packets (≥ Gmin): three
// bursts of density 100 %, 369 lost, four gaps over 205 packets.
func TestBurstGapAgainstTsharkSequences(t *testing.T) {
	files, err := filepath.Glob("testdata/burstgap/*.tsv")
	if err != nil || len(files) == 0 {
		t.Fatalf("no truth files: %v", err)
	}
	hand := map[string]media.BurstGap{
		"Asterisk_ZFONE_XLITE.pcap.0xbee0f2ed": {Gmin: 16, Bursts: 3, BurstLost: 369, BurstPackets: 369, GapPackets: 205,
			MaxConsecutiveLost: 233, IsBursty: true},
	}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".tsv")
		capName, ssrc := base[:strings.LastIndex(base, ".")], base[strings.LastIndex(base, ".")+1:]
		t.Run(base, func(t *testing.T) {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			var seqs []uint16
			var src, dst string
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				c := strings.Split(sc.Text(), "\t")
				n, err := strconv.Atoi(c[4])
				if err != nil {
					t.Fatalf("%s: %v", sc.Text(), err)
				}
				seqs = append(seqs, uint16(n))
				src, dst = c[0]+":"+c[1], c[2]+":"+c[3]
			}
			want := segment(seqs)
			want.IsBursty = want.MaxConsecutiveLost >= media.BurstyRun
			if h, ok := hand[base]; ok && (h.Bursts != want.Bursts || h.BurstLost != want.BurstLost || h.BurstPackets != want.BurstPackets || h.GapPackets != want.GapPackets || h.MaxConsecutiveLost != want.MaxConsecutiveLost) {
				t.Fatalf("offline segmentation %+v disagrees with the hand reading %+v", want, h)
			}
			st := media.NewStore(media.Config{})
			if _, err := mediatest.Feed(t, testcap.Public(capName), st, nil); err != nil {
				t.Fatal(err)
			}
			var s *media.StreamInfo
			for _, x := range st.All() {
				if x.SSRC == ssrc && x.Src == src && x.Dst == dst {
					s = &x
					break
				}
			}
			if s == nil || s.BurstGap == nil {
				t.Fatalf("stream %s %s→%s or its burst_gap not found", ssrc, src, dst)
			}
			got := *s.BurstGap
			if int64(got.BurstLost+got.GapLost) != s.Lost {
				t.Errorf("burst_lost %d + gap_lost %d, want the stream's lost %d", got.BurstLost, got.GapLost, s.Lost)
			}
			// Compare the counts; densities and means follow from them.
			got.BurstDensityPct, got.MeanBurstMs, got.MeanGapMs = nil, nil, nil
			got.GapDensityPct = 0
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Errorf("burst_gap counts\n got %s\nwant %s", g, w)
			}
		})
	}
}
