package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

// feedFrames routes payloads as Ethernet/IPv4/UDP frames of a file load on
// the given number of cores, ending a run after every third frame, and
// returns the capture once the load ended (pipeline drained, stores merged).
func feedFrames(cores int, payloads [][]byte) *Capture {
	frames := make([][]byte, len(payloads))
	for i, p := range payloads {
		frames[i] = ethIPv4UDP(p)
	}
	return loadFrames(cores, frames, "fuzz", 3)
}

// loadFrames runs frames (link type Ethernet, 1 ms apart) through a file
// load of source on the given number of cores, ending a run after every
// runEvery frames, and returns the capture once the load ended (pipeline
// drained, stores merged).
func loadFrames(cores int, frames [][]byte, source string, runEvery int) *Capture {
	c := New(Config{Cores: cores}, nil)
	c.startSharding()
	s := &fileSink{c: c}
	for i, d := range frames {
		s.HandleFrame(&packet.Frame{TS: ts0.Add(time.Duration(i) * time.Millisecond), LinkType: 1, Data: d,
			OrigLen: len(d), Source: source, Ordinal: uint64(i + 1)})
		if i%runEvery == runEvery-1 {
			s.EndBatch()
		}
	}
	s.EndBatch()
	c.flush(kindFile)
	c.stopSharding()
	return c
}

// storeAnswers renders what a client can read of the dialog store and the
// router's counters.
func storeAnswers(t *testing.T, c *Capture) []byte {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	st := c.Status()
	st.Elapsed, st.ElapsedSec, st.Identity.Instance = 0, 0, ""
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(enc.Encode(st))
	must(enc.Encode(c.Dialogs().Stats()))
	for _, row := range c.Dialogs().Summaries(0) {
		d, _ := c.Dialogs().Get(row.CallID)
		must(enc.Encode(row))
		must(enc.Encode(d))
	}
	must(enc.Encode(c.Media().Stats()))
	return out.Bytes()
}

// FuzzSIPPipeline splits its input at "|||" into datagrams (each also sent
// again, a retransmission) with an RTP packet after every fifth, routes
// them on one core and through the SIP pipeline of a two-core load with
// batches of 8 packets and 600 bytes (sipshard.go), and wants the same
// dialog store, counters and stream-store counters from both.
func FuzzSIPPipeline(f *testing.F) {
	sdpBody := "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 16384 RTP/AVP 0\r\n"
	f.Add([]byte(invite("p-1") + "|||" + sipText("SIP/2.0 200 OK", "p-1", 1, "INVITE", sdpBody)))
	f.Add([]byte(sipText("INVITE sip:bob@b SIP/2.0", "p-2", 1, "INVITE", sdpBody) + sipText("SIP/2.0 180 Ringing", "p-2", 1, "INVITE", "") +
		"|||" + sipText("BYE sip:bob@b SIP/2.0", "p-2", 2, "BYE", "")))
	f.Add([]byte("SIP/2.0 200 OK\r\n\r\n|||INVITE x SIP/2.0\r\nCall-ID: a\r\nContent-Length: 9999\r\n\r\nv=0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		defer SetSIPBatch(8, 600)() // the first SIP packet after a drain is parsed where met (sipRunToBatch)
		rtp := append([]byte{0x80, 0, 0, 1, 0, 0, 0, 160, 1, 2, 3, 4}, make([]byte, 20)...)
		var payloads [][]byte
		for i, p := range bytes.Split(data, []byte("|||")) {
			if len(payloads) >= 64 {
				break
			}
			payloads = append(payloads, p, p)
			if i%5 == 4 {
				payloads = append(payloads, rtp)
			}
		}
		want := storeAnswers(t, feedFrames(1, payloads))
		got := storeAnswers(t, feedFrames(2, payloads))
		if !bytes.Equal(got, want) {
			t.Fatalf("two cores differ from one:\n one: %s\n two: %s", want, got)
		}
	})
}

// TestSIPPipelineBatchesOnlyRunsOfSIP: SIP packets between media packets
// (every media packet drains the pipeline) are parsed where they are met and
// start no parse worker; a run longer than sipRunToBatch goes to the
// workers, and a batch a drain meets before it is full is parsed by the
// router. Either way the answers are one core's.
func TestSIPPipelineBatchesOnlyRunsOfSIP(t *testing.T) {
	rtp := append([]byte{0x80, 0, 0, 1, 0, 0, 0, 160, 1, 2, 3, 4}, make([]byte, 20)...)
	cases := []struct {
		name        string
		run, runs   int
		wantWorkers bool
	}{
		{"runs of sipRunToBatch SIP packets between media start no worker", sipRunToBatch(), 12, false},
		{"a run of three batches goes to the workers", sipRunToBatch() + 3*sipBatchItems, 1, true},
		{"a run that fills no batch is parsed by the router at the drain", sipRunToBatch() + sipBatchItems - 1, 3, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var payloads [][]byte
			for r := 0; r < tc.runs; r++ {
				for i := 0; i < tc.run; i++ {
					payloads = append(payloads, []byte(invite(fmt.Sprintf("run-%d-%d", r, i))))
				}
				payloads = append(payloads, rtp)
			}
			before := sipWorkerBatches.Load()
			want := storeAnswers(t, feedFrames(1, payloads))
			got := storeAnswers(t, feedFrames(2, payloads))
			if !bytes.Equal(got, want) {
				t.Fatalf("two cores differ from one:\n one: %s\n two: %s", want, got)
			}
			if worked := sipWorkerBatches.Load() != before; worked != tc.wantWorkers {
				t.Errorf("a parse worker took a batch: %v, want %v", worked, tc.wantWorkers)
			}
		})
	}
}

// TestSIPPipelineRouterParsesForAStalledWorker: when the parse worker gets
// no core the router parses the batches it must apply itself, keeps the
// ones the worker has not given back aside (retired) instead of waiting,
// and the answers are one core's once the worker runs again.
func TestSIPPipelineRouterParsesForAStalledWorker(t *testing.T) {
	defer SetSIPBatch(2, 64<<10)()
	var payloads [][]byte
	for i := 0; i < 14; i++ { // 7 batches of 2
		payloads = append(payloads, []byte(invite(fmt.Sprintf("stalled-%d", i))))
	}
	want := storeAnswers(t, feedFrames(1, payloads))

	c := New(Config{Cores: 2}, nil)
	c.startSharding()
	q := c.shard.sip
	q.started = true // the worker gets no core: none runs yet
	s := &fileSink{c: c}
	before := sipWorkerBatches.Load()
	for i, p := range payloads {
		d := ethIPv4UDP(p)
		s.HandleFrame(&packet.Frame{TS: ts0.Add(time.Duration(i) * time.Millisecond), LinkType: 1, Data: d,
			OrigLen: len(d), Source: "fuzz", Ordinal: uint64(i + 1)})
	}
	// sent: 6 batches; the first 4 applied by the router alone and retired
	// (sipRetiredPerWorker), 2 in flight; the 7th is being filled
	if len(q.retired) != 4 || len(q.inflight) != 2 || sipWorkerBatches.Load() != before {
		t.Fatalf("retired %d, in flight %d, worker batches %d: want 4, 2, 0",
			len(q.retired), len(q.inflight), sipWorkerBatches.Load()-before)
	}
	q.started = false
	q.start() // the worker runs again
	s.EndBatch()
	c.flush(kindFile)
	c.stopSharding()
	if got := storeAnswers(t, c); !bytes.Equal(got, want) {
		t.Fatalf("two cores differ from one:\n one: %s\n two: %s", want, got)
	}
}
