package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/report"
	"github.com/sipnab/sipnab/internal/testcap"
)

// batchDocument loads paths into a new capture on the given number of cores
// and returns its --json-run document with the run's own timing and instance
// (which differ between any two runs) blanked.
func batchDocument(t *testing.T, paths []string, cores int) []byte {
	t.Helper()
	c := engine.New(engine.Config{Node: "test", Cores: cores}, nil)
	if err := c.LoadFiles(context.Background(), paths); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, c); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("reading the document back: %v", err)
	}
	run := doc["run"].(map[string]any)
	run["elapsed_sec"] = 0
	run["capture_identity"].(map[string]any)["instance"] = ""
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// firstDiff names the first line where two documents differ.
func firstDiff(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(al) && i < len(bl); i++ {
		if !bytes.Equal(al[i], bl[i]) {
			return fmt.Sprintf("line %d:\n  one core: %s\n  sharded:  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d and %d lines", len(al), len(bl))
}

// TestCoresGiveTheSameDocument loads every public capture and generated
// carrier and signaling captures on one core and sharded over 2, 3 and 5
// cores, and wants the same --json-run document byte for byte (the run's
// elapsed time and capture instance aside).
func TestCoresGiveTheSameDocument(t *testing.T) {
	type input struct {
		name  string
		paths []string
	}
	var inputs []input
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	var pub []string
	for _, n := range names {
		r, err := capture.Open(testcap.Public(n))
		if errors.Is(err, capture.ErrUnsupportedFormat) {
			continue // not pcap or pcapng: refused by every run alike
		}
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		inputs = append(inputs, input{n, []string{testcap.Public(n)}})
		pub = append(pub, testcap.Public(n))
	}
	dir := t.TempDir()
	cfgs := []gen.Config{
		gen.Small(1),
		{Seed: 7, Calls: 300, Duration: 3 * time.Second, Spacing: 10 * time.Millisecond, Registers: 30},
		// signaling only: long runs of SIP, parsed on the workers
		{Seed: 9, Calls: 300, Duration: 3 * time.Second, Spacing: 5 * time.Millisecond, Registers: 30, NoMedia: true},
	}
	var all []string
	for _, cfg := range cfgs {
		p := filepath.Join(dir, fmt.Sprintf("gen-seed%d-calls%d-nomedia%v.pcap", cfg.Seed, cfg.Calls, cfg.NoMedia))
		if _, err := gen.WriteFiles(cfg, p, ""); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{filepath.Base(p), []string{p}})
		all = append(all, p)
	}
	// several files in one load, and every public capture at once
	inputs = append(inputs, input{"generated captures together", all})
	inputs = append(inputs, input{"every public capture together", pub})
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			want := batchDocument(t, in.paths, 1)
			for _, cores := range []int{2, 3, 5} {
				if got := batchDocument(t, in.paths, cores); !bytes.Equal(got, want) {
					t.Errorf("--cores %d: the document differs from one core's: %s", cores, firstDiff(want, got))
				}
			}
		})
	}
}
