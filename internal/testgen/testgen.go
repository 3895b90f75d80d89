// Package testgen hands tests the bench generator's synthetic captures
// (bench/gen), each generated once per test binary and shared by every test
// of the package that asks for the same configuration.
//
// The capture is written by bench/cmd/gencapture built without the race
// detector: under -race the generator runs about eight times slower in
// process (a carrier capture, 400,000 frames: 10.4 s of CPU against 1.3 s),
// and it is the test's input, not the code under test. A configuration the
// command cannot express (a non-zero Start) is generated in process.
//
// A package that uses it removes the files when its tests end:
//
//	func TestMain(m *testing.M) { os.Exit(testgen.Run(m)) }
package testgen

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/internal/testcap"
)

type key struct {
	cfg gen.Config
	gz  bool
}

type entry struct {
	once sync.Once
	path string
	ans  *gen.Answers
	err  error
}

var (
	mu      sync.Mutex
	dir     string
	dirErr  error
	entries = map[key]*entry{}

	toolOnce sync.Once
	tool     string
	toolErr  error
)

// Capture returns the path of the pcap cfg generates and the generator's
// answers about it. The first call for a configuration writes it; later
// calls (from any test of the package) return the same file and answers,
// which the caller must not modify.
func Capture(tb testing.TB, cfg gen.Config) (string, *gen.Answers) {
	tb.Helper()
	return get(tb, key{cfg: cfg})
}

// GzipCapture is Capture with the pcap written gzip-compressed (fastest
// level): loading it costs the inflation too. The answers' sha256 is of the
// uncompressed bytes.
func GzipCapture(tb testing.TB, cfg gen.Config) (string, *gen.Answers) {
	tb.Helper()
	return get(tb, key{cfg: cfg, gz: true})
}

// Run runs the package's tests and removes the generated files.
func Run(m *testing.M) int {
	code := m.Run()
	Cleanup()
	return code
}

// Cleanup removes every generated file; later calls generate anew.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	dir, dirErr = "", nil
	entries = map[key]*entry{}
	toolOnce, tool, toolErr = sync.Once{}, "", nil
}

func get(tb testing.TB, k key) (string, *gen.Answers) {
	tb.Helper()
	mu.Lock()
	if dir == "" && dirErr == nil {
		dir, dirErr = os.MkdirTemp("", "sipnab-testgen-")
		if dirErr == nil {
			// A server under test may run as nobody after dropping root.
			dirErr = os.Chmod(dir, 0o755)
		}
	}
	d, derr := dir, dirErr
	e := entries[k]
	if e == nil {
		e = &entry{}
		entries[k] = e
	}
	n := len(entries)
	mu.Unlock()
	if derr != nil {
		tb.Fatalf("generated capture: %v", derr)
	}
	e.once.Do(func() {
		name := fmt.Sprintf("gen%d.pcap", n)
		if k.gz {
			name += ".gz"
		}
		e.path = filepath.Join(d, name)
		e.ans, e.err = generate(k, e.path)
	})
	if e.err != nil {
		tb.Fatalf("generating %+v: %v", k.cfg, e.err)
	}
	return e.path, e.ans
}

func generate(k key, path string) (*gen.Answers, error) {
	if !k.cfg.Start.IsZero() {
		return inProcess(k, path)
	}
	bin, err := gencapture()
	if err != nil {
		return nil, err
	}
	answers := path + ".json"
	preset := "carrier"
	if k.cfg.NoMedia {
		preset = "signaling" // the preset that leaves the media out; the knobs below set the rest
	}
	args := []string{"-q", "-preset", preset,
		"-seed", strconv.FormatUint(k.cfg.Seed, 10),
		"-calls", strconv.Itoa(k.cfg.Calls),
		"-duration", k.cfg.Duration.String(),
		"-spacing", k.cfg.Spacing.String(),
		"-registers", strconv.Itoa(k.cfg.Registers),
		"-o", path, "-answers", answers}
	if k.gz {
		args = append(args, "-gzip")
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gencapture: %v: %s", err, out)
	}
	b, err := os.ReadFile(answers)
	if err != nil {
		return nil, err
	}
	var a gen.Answers
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("decoding the answers: %w", err)
	}
	got := a.Config
	got.Start = k.cfg.Start // zero both ways; its JSON form differs only in location
	if got != k.cfg {
		return nil, fmt.Errorf("gencapture wrote %+v, asked for %+v", a.Config, k.cfg)
	}
	return &a, nil
}

// gencapture builds bench/cmd/gencapture once per test binary.
func gencapture() (string, error) {
	toolOnce.Do(func() {
		mu.Lock()
		d := dir
		mu.Unlock()
		tool = filepath.Join(d, "gencapture")
		cmd := exec.Command("go", "build", "-o", tool, "./bench/cmd/gencapture")
		cmd.Dir = testcap.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			toolErr = fmt.Errorf("building gencapture: %v: %s", err, out)
		}
	})
	return tool, toolErr
}

func inProcess(k key, path string) (*gen.Answers, error) {
	if !k.gz {
		return gen.WriteFiles(k.cfg, path, "")
	}
	return nil, fmt.Errorf("a gzip capture with a Start time is not supported")
}
