package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// readAllMapped reads every frame of path and the error that ended it, as text.
func readAllMapped(t *testing.T, path string, o Options) (frames []string, end string, mapped bool) {
	t.Helper()
	r, err := OpenWith(path, o)
	if err != nil {
		return nil, "open: " + err.Error(), false
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if err != nil {
			return frames, err.Error(), r.Mapped()
		}
		frames = append(frames, fmt.Sprintf("%d %d %v %d %d %s %x", f.Ordinal, f.LinkType, f.TS.UnixNano(), f.OrigLen, f.SourceID, f.Source, f.Data))
	}
}

// TestMappedReaderMatchesBuffered reads every public pcap capture, whole
// and cut at several points, through the mapping and through read calls,
// and wants the same frames and the same error.
func TestMappedReaderMatchesBuffered(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mapping is checked on Linux")
	}
	defer func(m int64) { minMapped = m }(minMapped)
	minMapped = 0
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mappedFiles := 0
	for _, name := range names {
		raw, err := os.ReadFile(testcap.Public(name))
		if err != nil {
			t.Fatal(err)
		}
		k, err := sniff(raw[:min(len(raw), sniffLen)])
		if err != nil || k.gzip || k.format != FormatPcap {
			continue
		}
		cuts := []int{len(raw), len(raw) - 1, len(raw) - 20, len(raw) / 2, 24 + 10, 24}
		for _, cut := range cuts {
			if cut < 0 || cut > len(raw) {
				continue
			}
			path := filepath.Join(dir, fmt.Sprintf("%s.%d", name, cut))
			if err := os.WriteFile(path, raw[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			want, wantEnd, _ := readAllMapped(t, path, Options{Name: name})
			got, gotEnd, mapped := readAllMapped(t, path, Options{Name: name, Mmap: true})
			if !mapped {
				t.Fatalf("%s cut at %d: not mapped", name, cut)
			}
			mappedFiles++
			if len(got) != len(want) {
				t.Fatalf("%s cut at %d: got %d frames, want %d", name, cut, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s cut at %d: frame %d differs", name, cut, i+1)
				}
			}
			if gotEnd != wantEnd {
				t.Fatalf("%s cut at %d: got end %q, want %q", name, cut, gotEnd, wantEnd)
			}
		}
	}
	if mappedFiles < 20 {
		t.Fatalf("only %d mapped files compared", mappedFiles)
	}
}

// bigPcap writes a pcap of n copies of sip_call.pcap's frames.
func bigPcap(t *testing.T, path string, n int) int {
	t.Helper()
	one := readFrames(t, testcap.Public("sip_call.pcap"))
	var all []frameCopy
	for i := 0; i < n; i++ {
		all = append(all, one...)
	}
	writePcap(t, path, all)
	return len(all)
}

// TestMappedReaderReleasesBehind reads a file several release windows long
// and checks every frame arrives and the progress counter reaches the size.
func TestMappedReaderReleasesBehind(t *testing.T) {
	defer func(d int) { dropEvery = d }(dropEvery)
	dropEvery = 64 << 10
	path := filepath.Join(t.TempDir(), "big.pcap")
	n := bigPcap(t, path, 800)
	want, wantEnd, _ := readAllMapped(t, path, Options{})
	got, gotEnd, mapped := readAllMapped(t, path, Options{Mmap: true})
	if !mapped && runtime.GOOS == "linux" {
		t.Fatal("not mapped")
	}
	if len(got) != n || len(want) != n || gotEnd != wantEnd || gotEnd != io.EOF.Error() {
		t.Fatalf("got %d frames (%s), want %d (%s)", len(got), gotEnd, n, wantEnd)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("frame %d differs", i+1)
		}
	}
	st, _ := os.Stat(path)
	r, err := OpenWith(path, Options{Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	if r.FileBytes() != st.Size() {
		t.Fatalf("FileBytes %d at the end, want the size %d", r.FileBytes(), st.Size())
	}
}

// shrinker truncates the file it is loading after a number of frames.
type shrinker struct {
	path  string
	after int
	n     int
	err   error
}

func (s *shrinker) HandleFrame(f *packet.Frame) {
	s.n++
	if s.n == s.after {
		s.err = os.Truncate(s.path, 4096)
	}
	// touch the frame, as a decoder would
	for _, b := range f.Data {
		_ = b
	}
}

// TestMappedFileShrinkingStopsEarly truncates a mapped capture while it
// loads: the load must stop early with ErrTruncated, not crash.
func TestMappedFileShrinkingStopsEarly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the fault of a shrunk mapping is checked on Linux")
	}
	path := filepath.Join(t.TempDir(), "shrinking.pcap")
	n := bigPcap(t, path, 800)
	ins, _, err := Expand([]string{path}, ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := &shrinker{path: path, after: 100}
	snap := StartWith(context.Background(), ins, s, LoadOptions{Mmap: true}).Wait()
	if s.err != nil {
		t.Fatal(s.err)
	}
	if !snap.StoppedEarly || snap.Complete || snap.Files[0].State != FileStoppedEarly {
		t.Fatalf("got %+v, want the file stopped early", snap.Files[0])
	}
	if !errors.Is(snap.Files[0].Err, ErrTruncated) {
		t.Fatalf("got error %v, want ErrTruncated", snap.Files[0].Err)
	}
	if snap.FramesRead < 100 || int(snap.FramesRead) >= n {
		t.Fatalf("got %d frames read, want at least 100 and fewer than %d", snap.FramesRead, n)
	}
}
