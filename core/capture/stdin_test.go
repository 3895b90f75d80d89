package capture

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// stdinLoad loads "-" reading src.
func stdinLoad(t *testing.T, ctx context.Context, src io.Reader, sink packet.FrameSink) *Load {
	t.Helper()
	ins, warns, err := Expand([]string{StdinPath}, ExpandOptions{Stdin: src})
	if err != nil || len(warns) > 0 || len(ins) != 1 || ins[0].Name != StdinName {
		t.Fatalf("Expand(-): %+v %v %v", ins, warns, err)
	}
	return StartWith(ctx, ins, sink, LoadOptions{Mmap: true})
}

// TestStdinReadsPcapAndPcapngAsTheFileIs: a public pcap, pcapng and a
// gzip-compressed pcap given on standard input deliver the frames the file
// gives, byte for byte, named "stdin"; the read is whole and never mapped
// (Mmap asked for: a stream has nothing to map).
func TestStdinReadsPcapAndPcapngAsTheFileIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		gz   bool
	}{{"sip-rtp-g711.pcap", false}, {"b2bua-asterisk.pcapng", false}, {"sip-rtp-g711.pcap", true}} {
		name := tc.name
		t.Run(fmt.Sprintf("%s gzip=%v", name, tc.gz), func(t *testing.T) {
			raw, err := os.ReadFile(testcap.Public(name))
			if err != nil {
				t.Fatal(err)
			}
			if tc.gz {
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				_, _ = zw.Write(raw)
				_ = zw.Close()
				raw = b.Bytes()
			}
			want := readFrames(t, testcap.Public(name))
			c := &collector{}
			snap := stdinLoad(t, context.Background(), bytes.NewReader(raw), c).Wait()
			if !snap.Exhausted || snap.StoppedEarly || snap.StoppedOnRequest || snap.Err != nil {
				t.Fatalf("snapshot %+v, want a whole read", snap)
			}
			if len(c.frames) != len(want) || snap.FramesRead != uint64(len(want)) {
				t.Fatalf("%d frames (snapshot %d), want %d", len(c.frames), snap.FramesRead, len(want))
			}
			for i := range want {
				if !bytes.Equal(c.frames[i].data, want[i].data) || !c.frames[i].ts.Equal(want[i].ts) || c.frames[i].source != StdinName {
					t.Fatalf("frame %d differs from the file's (source %q)", i+1, c.frames[i].source)
				}
			}
			if f := snap.Files[0]; f.Name != StdinName || f.Path != StdinPath || f.State != FileDone {
				t.Errorf("file %+v", f)
			}
		})
	}
}

// TestStdinCutInsideARecordStopsEarlyAfterItsWholeFrames: a stream that ends
// inside a record is a truncated capture: its whole frames are delivered,
// the load stopped early with ErrTruncated naming stdin and the frame.
func TestStdinCutInsideARecordStopsEarlyAfterItsWholeFrames(t *testing.T) {
	var recs []pcapRec
	for i := 0; i < 5; i++ {
		recs = append(recs, pcapRec{sec: uint32(1000 + i), data: payload(i, 100)})
	}
	full := buildPcap(pcapSpec{order: littleEndian, linkType: 1, recs: recs})
	c := &collector{}
	snap := stdinLoad(t, context.Background(), bytes.NewReader(full[:len(full)-50]), c).Wait()
	if len(c.frames) != 4 || !snap.StoppedEarly || !snap.Exhausted || snap.StoppedOnRequest {
		t.Fatalf("%d frames, snapshot %+v; want 4 and stopped early", len(c.frames), snap)
	}
	if !errors.Is(snap.Err, ErrTruncated) || !strings.Contains(snap.Err.Error(), "stdin after frame 4") {
		t.Fatalf("error %v, want ErrTruncated naming stdin after frame 4", snap.Err)
	}
}

// TestStdinNotACaptureStopsEarly: text on stdin is refused as a file is,
// when the load opens it (it is never read ahead at Expand).
func TestStdinNotACaptureStopsEarly(t *testing.T) {
	snap := stdinLoad(t, context.Background(), strings.NewReader("hello, this is not a capture at all\n"), &collector{}).Wait()
	if !snap.StoppedEarly || !errors.Is(snap.Err, ErrUnsupportedFormat) {
		t.Fatalf("snapshot %+v, want stopped early with an unsupported format", snap)
	}
}

// TestStdinIsReadAlone: "-" beside another input, or without a standard
// input, is refused at Expand.
func TestStdinIsReadAlone(t *testing.T) {
	if _, _, err := Expand([]string{StdinPath, testcap.Public("sip_call.pcap")}, ExpandOptions{Stdin: strings.NewReader("")}); err == nil || !strings.Contains(err.Error(), "read alone") {
		t.Errorf("stdin beside a file: %v", err)
	}
	if _, _, err := Expand([]string{StdinPath}, ExpandOptions{}); err == nil || !strings.Contains(err.Error(), "no standard input") {
		t.Errorf("no stdin: %v", err)
	}
}

// lockSink is a BatchSink that, like the engine's, holds a lock across a
// run of frames: held from the first frame of a run to EndBatch.
type lockSink struct {
	mu     sync.Mutex
	held   bool
	frames int
}

func (s *lockSink) HandleFrame(*packet.Frame) {
	if !s.held {
		s.mu.Lock()
		s.held = true
	}
	s.frames++
}

func (s *lockSink) EndBatch() {
	if s.held {
		s.held = false
		s.mu.Unlock()
	}
}

// TestStdinWaitingForItsWriterHoldsNoRunAndStopsOnRequest: a pipe whose
// writer sent three frames and then waits: the three are delivered and
// their run ended (the sink's lock is free, the counters published) while
// the load waits; a stop request then ends the load at once, stopped on
// request, not early.
func TestStdinWaitingForItsWriterHoldsNoRunAndStopsOnRequest(t *testing.T) {
	var recs []pcapRec
	for i := 0; i < 3; i++ {
		recs = append(recs, pcapRec{sec: uint32(1000 + i), data: payload(i, 100)})
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write(buildPcap(pcapSpec{order: littleEndian, linkType: 1, recs: recs})) }()
	ctx, cancel := context.WithCancel(context.Background())
	s := &lockSink{}
	l := stdinLoad(t, ctx, pr, s)
	deadline := time.Now().Add(5 * time.Second)
	for l.FramesRead() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("frames read %d, want 3", l.FramesRead())
		}
		time.Sleep(time.Millisecond)
	}
	if !s.mu.TryLock() {
		t.Fatal("the sink's run is still held while the load waits for the writer")
	}
	s.mu.Unlock()
	cancel()
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the load did not stop while waiting for the writer")
	}
	snap := l.Snapshot()
	if !snap.StoppedOnRequest || snap.StoppedEarly || snap.Exhausted || snap.Files[0].State != FileStopped || s.frames != 3 {
		t.Fatalf("snapshot %+v, %d frames; want stopped on request after 3", snap, s.frames)
	}
}
