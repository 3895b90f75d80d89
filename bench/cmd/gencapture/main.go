// Command gencapture writes a synthetic carrier capture (pcap) and the exact
// answers about it (JSON), for benchmarks and end-to-end tests.
//
//	gencapture -preset carrier -seed 1 -o carrier.pcap -answers carrier.json
//
// A preset sets every knob; -calls, -duration, -spacing and -registers,
// when given, override it.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bench/gen"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gencapture:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gencapture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	preset := fs.String("preset", "small", "base configuration: "+strings.Join(gen.Presets, ", "))
	seed := fs.Uint64("seed", 1, "random seed; the same seed and knobs give the same bytes")
	calls := fs.Int("calls", 0, "number of INVITE dialogs (overrides the preset)")
	duration := fs.Duration("duration", 0, "nominal INVITE-to-BYE span of an answered call (overrides the preset)")
	spacing := fs.Duration("spacing", 0, "time between call starts (overrides the preset)")
	registers := fs.Int("registers", 0, "number of REGISTER dialogs (overrides the preset)")
	out := fs.String("o", "", "capture file to write (pcap)")
	answers := fs.String("answers", "", "answers file to write (JSON); empty: none")
	quiet := fs.Bool("q", false, "print nothing on success")
	gz := fs.Bool("gzip", false, "write the capture gzip-compressed (fastest level); the answers' sha256 is of the uncompressed bytes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *out == "" {
		return fmt.Errorf("missing -o FILE")
	}
	cfg, err := gen.Preset(*preset, *seed)
	if err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "calls":
			cfg.Calls = *calls
		case "duration":
			cfg.Duration = *duration
		case "spacing":
			cfg.Spacing = *spacing
		case "registers":
			cfg.Registers = *registers
		}
	})
	t0 := time.Now()
	var a *gen.Answers
	if *gz {
		a, err = writeGzip(cfg, *out, *answers)
	} else {
		a, err = gen.WriteFiles(cfg, *out, *answers)
	}
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %d frames (%d SIP messages, %d RTP packets in %d streams), %d dialogs (%d failed, %d with problems, %d degraded streams), sha256 %s, %.1fs\n",
			*out, a.Capture.Frames, a.Capture.SIPMessages, a.Capture.RTPPackets, len(a.Streams), len(a.Dialogs),
			len(a.FailedCalls), len(a.ProblemCalls), len(a.DegradedStreams), a.Capture.SHA256, time.Since(t0).Seconds())
	}
	return nil
}

// writeGzip writes the capture gzip-compressed and the answers beside it.
func writeGzip(cfg gen.Config, out, answers string) (*gen.Answers, error) {
	f, err := os.Create(out)
	if err != nil {
		return nil, fmt.Errorf("creating capture: %w", err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	zw, err := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	a, err := gen.Generate(cfg, zw)
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", out, err)
	}
	if answers != "" {
		if err := a.WriteJSON(answers); err != nil {
			return nil, err
		}
	}
	return a, nil
}
