package captures

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sipnab/sipnab/bundles/internal/tooltest"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// Helpers of the bundle's tests (prefixed cp so they cannot collide).

// cpRoot makes a file root holding copies of the named public captures
// (the sample capture testdata/sip-rtp-g711.pcap is public too).
func cpRoot(t *testing.T, names ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, n := range names {
		cpCopy(t, testcap.Public(n), filepath.Join(root, n))
	}
	return root
}

func cpCopy(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cpLoad runs public captures through the engine to their end.
func cpLoad(t *testing.T, names ...string) *engine.Capture {
	t.Helper()
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = testcap.Public(n)
	}
	return testengine.Load(t, engine.Config{Node: "test"}, paths...)
}

// cpLog is a log the bundle writes to (save_findings).
type cpLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *cpLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *cpLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cpTools provisions the bundle over capture with root ("" for none) and
// returns its tools by name.
func cpTools(t *testing.T, capture *engine.Capture, root string, o sdk.EnvOptions) map[string]sdk.Tool {
	t.Helper()
	o.Services = append(o.Services, capture)
	if root != "" {
		o.FileRoot = sdk.NewFileRoot(root, nil)
	}
	return tooltest.Tools(t, Bundle{}, sdk.NewEnv(o))
}

// cpCall invokes a tool and decodes its answer into into (when not nil).
func cpCall(t *testing.T, tool sdk.Tool, args string, into any) sdk.Reply {
	t.Helper()
	return tooltest.Call(t, tool, args, into)
}

// cpRefused invokes a tool that must refuse and returns its error.
func cpRefused(t *testing.T, tool sdk.Tool, args string) *sdk.Error {
	t.Helper()
	return tooltest.CallErr(t, tool, args)
}

// cpJSON quotes a value as JSON.
func cpJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// cpLogger is a logger writing to l at info level.
func cpLogger(l *cpLog) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
