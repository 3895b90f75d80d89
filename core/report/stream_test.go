package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
)

// wholeDocument is what WriteJSON wrote before it streamed: Build encoded
// at once.
func wholeDocument(t *testing.T, c *engine.Capture) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Build(c)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWriteJSONStreamsTheWholeDocument wants the streamed document equal,
// byte for byte, to Build encoded at once, on every public capture (alone
// and all together) and on an empty capture.
func TestWriteJSONStreamsTheWholeDocument(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	cases := map[string][]string{}
	for _, n := range names {
		p := testcap.Public(n)
		if r, err := capture.Open(p); errors.Is(err, capture.ErrUnsupportedFormat) {
			cases[n] = []string{p} // refused: a document with an error
			continue
		} else if err == nil {
			r.Close()
		}
		cases[n] = []string{p}
		all = append(all, p)
	}
	cases["every public capture"] = all
	empty := filepath.Join(t.TempDir(), "empty.pcap")
	writeEmptyPcap(t, empty)
	cases["empty"] = []string{empty}
	cases["coturn relay (stun section)"] = []string{filepath.Join(testcap.Root(), "testdata", "stun", "turn-relayed-call.pcapng")}
	for name, paths := range cases {
		t.Run(name, func(t *testing.T) {
			c := engine.New(engine.Config{Node: "test-node"}, nil)
			if err := c.LoadFiles(context.Background(), paths); err != nil {
				t.Skip(err) // refused before loading: no document
			}
			c.Wait()
			want := wholeDocument(t, c)
			var got bytes.Buffer
			if err := WriteJSON(&got, c); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("streamed document differs from the whole one:\n got %s\nwant %s", head(got.Bytes()), head(want))
			}
		})
	}
}

func head(b []byte) []byte {
	if len(b) > 600 {
		return b[:600]
	}
	return b
}

// writeEmptyPcap writes a pcap file header with no record.
func writeEmptyPcap(t *testing.T, path string) {
	t.Helper()
	hdr := []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0}
	if err := writeFile(path, hdr); err != nil {
		t.Fatal(err)
	}
}

// failingWriter fails after n bytes.
type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return f.n, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteJSONReportsWriteErrors: a write that fails mid-document is an
// error, not a silently cut document.
func TestWriteJSONReportsWriteErrors(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public("sipp-branch-scenario.pcapng")}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	for _, n := range []int{0, 100, 70000, 300000} {
		if err := WriteJSON(&failingWriter{n: n}, c); err == nil {
			t.Fatalf("a writer failing after %d bytes: got no error", n)
		}
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }
