package report

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/benchload"
	"github.com/sipnab/sipnab/internal/testengine"
)

// benchCapture is $SIPNAB_BENCH_PCAP loaded (the scaled signaling
// workload, bench/README.md), else sipp-branch-scenario.pcapng.
func benchCapture(b *testing.B) *engine.Capture {
	if p := os.Getenv("SIPNAB_BENCH_PCAP"); p != "" {
		return testengine.Load(b, engine.Config{}, p)
	}
	return testengine.Public(b, engine.Config{}, "sipp-branch-scenario.pcapng")
}

// BenchmarkWriteDialogsJSON: --json-dialogs over benchCapture; reported
// per dialog.
func BenchmarkWriteDialogsJSON(b *testing.B) {
	c := benchCapture(b)
	b.ReportAllocs()
	cpu0 := benchload.CPUNow()
	n := 0
	for b.Loop() {
		k, err := WriteDialogsJSON(io.Discard, c, nil)
		if err != nil {
			b.Fatal(err)
		}
		n += k
	}
	b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(n), "cpu-ns/dialog")
}

// benchRow is a row as the signaling workload's look.
func benchRow() *DialogRow {
	pdd, setup, dur := int64(1096), int64(1828), int64(10059)
	t0 := time.Date(2025, 3, 3, 9, 0, 0, 26118000, time.UTC)
	return &DialogRow{Summary: dialog.Summary{
		CallID: "ed53baa5e2f110d75d4cda4d@192.0.2.15", State: "Completed", Method: "INVITE", MsgCount: 7,
		FromUser: "+12125550005", ToUser: "+14155550038", DurationSec: 11.917,
		CreatedAt: t0, UpdatedAt: t0.Add(11917636 * time.Microsecond),
		Timing:          dialog.Timing{PDDMs: &pdd, SetupMs: &setup, DurationMs: &dur},
		Frame:           "signaling.pcap#7@8d4c6b1041d3042b",
		FinalStatusCode: 200, InputOrigin: "wire",
	}}
}

// BenchmarkAppendRowJSON: one row by the appender, indented as
// --json-run writes it.
func BenchmarkAppendRowJSON(b *testing.B) {
	r := benchRow()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendRowJSON(buf[:0], r, true)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkEncodeRowJSON: the same row by encoding/json and the indenter,
// as --json-run wrote it before the appender.
func BenchmarkEncodeRowJSON(b *testing.B) {
	r := benchRow()
	jw := newJSONWriter(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		jw.elem(r)
		if jw.n > 1000 {
			jw.n = 0
		}
	}
}
