package capture

import (
	"context"
	"testing"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// batchCollector is a BatchSink that records the length of every run and
// what the load's counters said at each EndBatch.
type batchCollector struct {
	l       *Load
	inRun   int
	runs    []int
	counted []uint64
}

func (b *batchCollector) HandleFrame(*packet.Frame) { b.inRun++ }

func (b *batchCollector) EndBatch() {
	if b.inRun > 0 {
		b.runs = append(b.runs, b.inRun)
		b.inRun = 0
		if b.l != nil {
			b.counted = append(b.counted, b.l.FramesRead())
		}
	}
}

// TestBatchSinkRuns loads a capture of 1,079 frames followed by one of 7
// into a BatchSink: runs of at most BatchFrames frames, a run ending with
// each file, and the counters published run by run.
func TestBatchSinkRuns(t *testing.T) {
	ins, _, err := Expand([]string{testcap.Public("voicecmd_combined.pcap"), testcap.Public("sip_call.pcap")}, ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var perFile []uint64
	for _, in := range ins {
		r, err := Open(in.Path)
		if err != nil {
			t.Fatal(err)
		}
		n := uint64(0)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
			n++
		}
		r.Close()
		perFile = append(perFile, n)
	}
	b := &batchCollector{}
	snap := Start(context.Background(), ins, b).Wait()
	total := perFile[0] + perFile[1]
	if snap.FramesRead != total || !snap.Complete {
		t.Fatalf("got %d frames read (complete %v), want %d", snap.FramesRead, snap.Complete, total)
	}
	var want []int
	for _, n := range perFile {
		for ; n > BatchFrames; n -= BatchFrames {
			want = append(want, BatchFrames)
		}
		want = append(want, int(n))
	}
	if len(b.runs) != len(want) {
		t.Fatalf("got %d runs %v, want %d %v", len(b.runs), b.runs, len(want), want)
	}
	for i := range want {
		if b.runs[i] != want[i] {
			t.Fatalf("run %d: got %d frames, want %d (runs %v)", i, b.runs[i], want[i], b.runs)
		}
	}
}

// TestBatchSinkCountersMoveByRun checks that during a load into a
// BatchSink the frame counter moves at the end of each run, to the frames
// of the runs before.
func TestBatchSinkCountersMoveByRun(t *testing.T) {
	ins, _, err := Expand([]string{testcap.Public("voicecmd_combined.pcap")}, ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := &batchCollector{}
	ready := make(chan struct{})
	var l *Load
	sink := &lateBinder{b: b, ready: ready}
	l = Start(context.Background(), ins, sink)
	b.l = l
	close(ready)
	l.Wait()
	sum := uint64(0)
	for i, n := range b.runs {
		if i < len(b.counted) && b.counted[i] != sum {
			t.Fatalf("at the end of run %d the counter said %d, want %d (the runs before)", i, b.counted[i], sum)
		}
		sum += uint64(n)
	}
	if len(b.counted) == 0 {
		t.Fatal("no run was observed")
	}
}

// lateBinder holds the first frame until the test has set the collector's
// Load.
type lateBinder struct {
	b     *batchCollector
	ready chan struct{}
	once  bool
}

func (s *lateBinder) HandleFrame(f *packet.Frame) {
	if !s.once {
		<-s.ready
		s.once = true
	}
	s.b.HandleFrame(f)
}

func (s *lateBinder) EndBatch() { s.b.EndBatch() }
