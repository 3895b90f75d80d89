package capture

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

type frameCopy struct {
	ts       time.Time
	data     []byte
	source   string
	sourceID uint16
	ordinal  uint64
}

func readFrames(t *testing.T, path string) []frameCopy {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []frameCopy
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, frameCopy{ts: f.TS, data: append([]byte(nil), f.Data...)})
	}
}

func writePcap(t *testing.T, path string, frames []frameCopy) {
	t.Helper()
	var b bytes.Buffer
	w := pcapgo.NewWriter(&b)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: f.ts, CaptureLength: len(f.data), Length: len(f.data)}, f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

type collector struct {
	frames []frameCopy
	onNth  func(n int)
}

func (c *collector) HandleFrame(f *packet.Frame) {
	c.frames = append(c.frames, frameCopy{ts: f.TS, data: append([]byte(nil), f.Data...), source: f.Source, sourceID: f.SourceID, ordinal: f.Ordinal})
	if c.onNth != nil {
		c.onNth(len(c.frames))
	}
}

// splitCall writes sip_call.pcap (7 frames) as two files named so that name
// order is the reverse of time order: z-first.pcap holds frames 1-4,
// a-second.pcap.gz frames 5-7 (gzipped).
func splitCall(t *testing.T, dir string) []frameCopy {
	all := readFrames(t, testcap.Public("sip_call.pcap"))
	if len(all) != 7 {
		t.Fatalf("sip_call.pcap has %d frames, want 7", len(all))
	}
	writePcap(t, filepath.Join(dir, "z-first.pcap"), all[:4])
	tmp := filepath.Join(t.TempDir(), "second.pcap")
	writePcap(t, tmp, all[4:])
	raw, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a-second.pcap.gz", gz(t, raw))
	return all
}

func TestLoadTimeOrder(t *testing.T) {
	dir := t.TempDir()
	all := splitCall(t, dir)
	writeFile(t, dir, "notes.txt", []byte("not a capture\n"))

	cases := []struct {
		name   string
		inputs []string
		opts   ExpandOptions
		warns  int
	}{
		{name: "directory", inputs: []string{dir}, warns: 1},
		{name: "directory with glob", inputs: []string{dir}, opts: ExpandOptions{Glob: "*.pcap*"}},
		{name: "named files in name order", inputs: []string{filepath.Join(dir, "a-second.pcap.gz"), filepath.Join(dir, "z-first.pcap")}},
		{name: "glob", inputs: []string{filepath.Join(dir, "*.pcap*")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ins, warns, err := Expand(tc.inputs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != tc.warns {
				t.Fatalf("got %d warnings %v, want %d", len(warns), warns, tc.warns)
			}
			if len(ins) != 2 || ins[0].Name != "z-first.pcap" || ins[1].Name != "a-second.pcap.gz" {
				t.Fatalf("got inputs %+v, want z-first.pcap then a-second.pcap.gz", ins)
			}
			if !ins[0].FirstTS.Equal(all[0].ts) || !ins[1].FirstTS.Equal(all[4].ts) || !ins[1].Compressed {
				t.Fatalf("got first timestamps %v %v, want %v %v", ins[0].FirstTS, ins[1].FirstTS, all[0].ts, all[4].ts)
			}
			c := &collector{}
			snap := Start(context.Background(), ins, c).Wait()
			if len(c.frames) != 7 {
				t.Fatalf("got %d frames, want 7", len(c.frames))
			}
			for i, f := range c.frames {
				if !f.ts.Equal(all[i].ts) || !bytes.Equal(f.data, all[i].data) {
					t.Fatalf("frame %d: got ts %v, want %v (frames out of time order)", i+1, f.ts, all[i].ts)
				}
				wantSrc, wantID, wantOrd := "z-first.pcap", uint16(0), uint64(i+1)
				if i >= 4 {
					wantSrc, wantID, wantOrd = "a-second.pcap.gz", 1, uint64(i-3)
				}
				if f.source != wantSrc || f.sourceID != wantID || f.ordinal != wantOrd {
					t.Fatalf("frame %d: got %s/%d #%d, want %s/%d #%d", i+1, f.source, f.sourceID, f.ordinal, wantSrc, wantID, wantOrd)
				}
			}
			if !snap.Done || !snap.Exhausted || snap.StoppedEarly || !snap.Complete || snap.StoppedOnRequest || snap.Err != nil {
				t.Fatalf("got %+v, want done, exhausted and complete", snap)
			}
			if snap.FramesRead != 7 || snap.Files[0].Frames != 4 || snap.Files[1].Frames != 3 {
				t.Fatalf("got frames %d (%d + %d), want 7 (4 + 3)", snap.FramesRead, snap.Files[0].Frames, snap.Files[1].Frames)
			}
			var wantBytes uint64
			for _, f := range all {
				wantBytes += uint64(len(f.data))
			}
			if snap.Bytes != wantBytes {
				t.Fatalf("got %d bytes, want %d", snap.Bytes, wantBytes)
			}
			if snap.FileBytes != snap.TotalFileBytes {
				t.Fatalf("read %d file bytes of %d", snap.FileBytes, snap.TotalFileBytes)
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	good := buildPcap(pcapSpec{order: littleEndian, linkType: 1, recs: []pcapRec{{sec: 100, data: payload(0, 20)}}})
	writeFile(t, dir, "top.pcap", good)
	writeFile(t, sub, "deep.pcap", good)
	writeFile(t, sub, "netmon.cap", []byte("GMBU\x00\x02xxxxxxxx"))
	netmon, err := filepath.Abs(testcap.Public("c07-sip-r2.cap"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("named netmon file is an error", func(t *testing.T) {
		_, _, err := Expand([]string{filepath.Join(dir, "top.pcap"), netmon}, ExpandOptions{})
		if !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "c07-sip-r2.cap") {
			t.Fatalf("got %v, want an unsupported-format error naming c07-sip-r2.cap", err)
		}
	})
	t.Run("named missing file is an error", func(t *testing.T) {
		_, _, err := Expand([]string{filepath.Join(dir, "missing.pcap")}, ExpandOptions{})
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("got %v, want not-exist", err)
		}
	})
	t.Run("not recursive", func(t *testing.T) {
		ins, warns, err := Expand([]string{dir}, ExpandOptions{})
		if err != nil || len(ins) != 1 || len(warns) != 0 {
			t.Fatalf("got %d inputs, %d warnings, error %v; want 1, 0, nil", len(ins), len(warns), err)
		}
	})
	t.Run("recursive skips discovered netmon with a warning", func(t *testing.T) {
		ins, warns, err := Expand([]string{dir}, ExpandOptions{Recursive: true})
		if err != nil || len(ins) != 2 {
			t.Fatalf("got %d inputs, error %v; want 2, nil", len(ins), err)
		}
		if len(warns) != 1 || !errors.Is(warns[0].Err, ErrUnsupportedFormat) || !strings.Contains(warns[0].String(), "netmon.cap") {
			t.Fatalf("got warnings %v, want one for netmon.cap", warns)
		}
		// same base name in two folders? no: distinct names here
		if ins[0].Name == ins[1].Name {
			t.Fatalf("inputs share the name %q", ins[0].Name)
		}
	})
	t.Run("same base name gets a longer name", func(t *testing.T) {
		writeFile(t, sub, "top.pcap", good)
		ins, _, err := Expand([]string{filepath.Join(dir, "top.pcap"), filepath.Join(sub, "top.pcap")}, ExpandOptions{})
		if err != nil || len(ins) != 2 {
			t.Fatalf("got %d inputs, error %v", len(ins), err)
		}
		names := []string{ins[0].Name, ins[1].Name}
		wantDir := filepath.Base(dir) + "/top.pcap"
		if names[0] != wantDir || names[1] != "sub/top.pcap" {
			t.Fatalf("got names %v, want [%s sub/top.pcap]", names, wantDir)
		}
	})
}

func TestLoadTruncatedMember(t *testing.T) {
	dir := t.TempDir()
	var recs []pcapRec
	for i := 0; i < 5; i++ {
		recs = append(recs, pcapRec{sec: uint32(1000 + i), data: payload(i, 100)})
	}
	full := buildPcap(pcapSpec{order: littleEndian, linkType: 1, recs: recs})
	cut := writeFile(t, dir, "1-cut.pcap", full[:len(full)-50]) // 4 whole frames
	var later []pcapRec
	for i := 0; i < 3; i++ {
		later = append(later, pcapRec{sec: uint32(2000 + i), data: payload(i, 60)})
	}
	next := writeFile(t, dir, "2-next.pcap", buildPcap(pcapSpec{order: littleEndian, linkType: 1, recs: later}))

	ins, _, err := Expand([]string{cut, next}, ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	snap := Start(context.Background(), ins, c).Wait()
	if len(c.frames) != 7 {
		t.Fatalf("got %d frames, want 4 before the cut + 3 from the next file", len(c.frames))
	}
	if !snap.StoppedEarly || snap.Complete || !snap.Exhausted || snap.StoppedOnRequest {
		t.Fatalf("got stopped_early %v complete %v exhausted %v on_request %v; want true false true false", snap.StoppedEarly, snap.Complete, snap.Exhausted, snap.StoppedOnRequest)
	}
	if !errors.Is(snap.Err, ErrTruncated) || !strings.Contains(snap.Err.Error(), "1-cut.pcap after frame 4") {
		t.Fatalf("got error %v, want ErrTruncated naming 1-cut.pcap after frame 4", snap.Err)
	}
	if snap.Files[0].State != FileStoppedEarly || snap.Files[0].Frames != 4 || snap.Files[1].State != FileDone || snap.Files[1].Frames != 3 {
		t.Fatalf("got files %+v", snap.Files)
	}
}

func TestLoadStopOnRequest(t *testing.T) {
	dir := t.TempDir()
	splitCall(t, dir)
	ins, _, err := Expand([]string{dir}, ExpandOptions{Glob: "*.pcap*"})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("frame limit", func(t *testing.T) {
		c := &collector{}
		snap := StartWith(context.Background(), ins, c, LoadOptions{MaxFrames: 5}).Wait()
		if len(c.frames) != 5 || snap.FramesRead != 5 {
			t.Fatalf("got %d frames, want 5", len(c.frames))
		}
		if !snap.StoppedOnRequest || !snap.LimitReached || snap.StoppedEarly || snap.Exhausted || snap.Complete || snap.Err != nil {
			t.Fatalf("got %+v, want stopped on request only", snap)
		}
		if snap.Files[1].State != FileStopped || snap.Files[1].Frames != 1 {
			t.Fatalf("got second file %+v, want stopped after 1 frame", snap.Files[1])
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := &collector{onNth: func(n int) {
			if n == 4 {
				cancel()
			}
		}}
		snap := Start(ctx, ins, c).Wait()
		if len(c.frames) != 4 {
			t.Fatalf("got %d frames, want 4", len(c.frames))
		}
		if !snap.StoppedOnRequest || snap.LimitReached || snap.StoppedEarly || snap.Exhausted || snap.Complete {
			t.Fatalf("got %+v, want stopped on request only", snap)
		}
		if snap.Files[1].State != FileNotRead {
			t.Fatalf("got second file state %s, want not_read", snap.Files[1].State)
		}
	})
}

// TestLoadCountersWhileLoading reads the counters while the sink holds the
// loader goroutine inside frame 3.
func TestLoadCountersWhileLoading(t *testing.T) {
	dir := t.TempDir()
	splitCall(t, dir)
	ins, _, err := Expand([]string{dir}, ExpandOptions{Glob: "*.pcap*"})
	if err != nil {
		t.Fatal(err)
	}
	inside := make(chan struct{})
	release := make(chan struct{})
	c := &collector{onNth: func(n int) {
		if n == 6 {
			close(inside)
			<-release
		}
	}}
	l := Start(context.Background(), ins, c)
	<-inside
	mid := l.Snapshot()
	if mid.Done || mid.Exhausted || mid.Complete {
		t.Fatalf("mid-load snapshot claims done/exhausted/complete: %+v", mid)
	}
	if mid.FramesRead != 5 || l.FramesRead() != 5 {
		t.Fatalf("mid-load frames_read %d, want 5 (frame 6 is still in the sink)", mid.FramesRead)
	}
	if mid.Current != 1 || mid.Files[0].State != FileDone || mid.Files[1].State != FileReading || mid.Files[1].Frames != 1 {
		t.Fatalf("mid-load files %+v current %d", mid.Files, mid.Current)
	}
	if l.Exhausted() {
		t.Fatal("Exhausted() true mid-load")
	}
	if mid.FileBytes <= 0 || mid.Elapsed <= 0 {
		t.Fatalf("mid-load file bytes %d elapsed %v, want positive", mid.FileBytes, mid.Elapsed)
	}
	close(release)
	final := l.Wait()
	if final.FramesRead != 7 || !final.Complete || !l.Exhausted() || l.StoppedEarly() || l.Err() != nil {
		t.Fatalf("final %+v", final)
	}
	if l.Elapsed() != final.Elapsed {
		t.Fatalf("Elapsed() %v after the end, want the frozen %v", l.Elapsed(), final.Elapsed)
	}
}
