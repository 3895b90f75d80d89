package pcapout

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// frameFields are tshark's per-frame fields compared between a capture and
// its re-emitted copy: number, time (ns), wire and captured length, the
// MD5 of the frame bytes and the dissected protocol stack.
var frameFields = []string{"frame.number", "frame.time_epoch", "frame.len", "frame.cap_len", "frame.md5_hash", "frame.protocols"}

func tsharkFields(t *testing.T, path string, extra ...string) string {
	t.Helper()
	args := []string{"-r", path, "-n", "-o", "frame.generate_md5_hash:TRUE", "-T", "fields"}
	for _, f := range append(append([]string(nil), frameFields...), extra...) {
		args = append(args, "-e", f)
	}
	cmd := exec.Command("tshark", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v\n%s", path, err, stderr.String())
	}
	return string(out)
}

func needTshark(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (.ci/run installs it)")
	}
}

// copyCapture re-emits every frame of the capture at in through a Writer.
func copyCapture(t *testing.T, in string, o Options) *Writer {
	t.Helper()
	r, err := capture.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", in, err)
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

// Every public capture re-emitted reads back in tshark with the same
// frames: times to the nanosecond, lengths, bytes (MD5) and dissection.
// To keep tshark's start-up cost to a few runs, the captures are compared
// as one run: mergecap -a concatenates them (the reference), and one
// Writer re-emits them in the same order, as pcapng (every capture, an
// interface each) and as classic pcap (one file per link type, since a
// classic pcap holds one, of up to six captures).
func TestReemittedCapturesReadBackInTsharkWithIdenticalFrames(t *testing.T) {
	needTshark(t)
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var all []string
	byLink := map[uint16][]string{}
	for _, name := range names {
		in := testcap.Public(name)
		r, err := capture.Open(in)
		if errors.Is(err, capture.ErrUnsupportedFormat) {
			continue // not pcap or pcapng (c07-sip-r2.cap is NetMon): sipnab reads no frames from it
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.Next()
		if err != nil {
			t.Fatalf("reading %s: %v", in, err)
		}
		lt := f.LinkType // one link type per public capture (capinfos -E)
		r.Close()
		all = append(all, in)
		byLink[lt] = append(byLink[lt], in)
	}
	check := func(t *testing.T, ins []string, out string) {
		ref := filepath.Join(dir, "ref-"+filepath.Base(out)+".pcapng")
		if b, err := exec.Command("mergecap", append([]string{"-a", "-F", "pcapng", "-w", ref}, ins...)...).CombinedOutput(); err != nil {
			t.Fatalf("mergecap: %v\n%s", err, b)
		}
		w := copyAll(t, ins, Options{Path: out, Inputs: ins, Application: "sipnab test", OS: "linux"})
		st := w.Stats()
		want, got := tsharkFields(t, ref), tsharkFields(t, out)
		if want != got {
			t.Fatalf("tshark reads %s differently from its sources:\n%s", out, firstDiff(want, got))
		}
		if n := strings.Count(want, "\n"); uint64(n) != st.Frames || n == 0 || st.SkippedLinkType != 0 {
			t.Fatalf("tshark read %d frames, the writer wrote %d and skipped %d", n, st.Frames, st.SkippedLinkType)
		}
		t.Logf("%d captures, %d frames identical in tshark", len(ins), st.Frames)
	}
	t.Run("pcapng of every capture", func(t *testing.T) { check(t, all, filepath.Join(dir, "all.pcapng")) })
	// Classic pcap: up to six captures per link type (the pcapng run
	// above already covers every frame; this checks the pcap records).
	for lt, ins := range byLink {
		t.Run(fmt.Sprintf("pcap of link type %d", lt), func(t *testing.T) {
			check(t, ins[:min(6, len(ins))], filepath.Join(dir, fmt.Sprintf("lt%d.pcap", lt)))
		})
	}
}

// copyAll re-emits every frame of the captures at ins, in order, through
// one Writer.
func copyAll(t *testing.T, ins []string, o Options) *Writer {
	t.Helper()
	w, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		r, err := capture.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		for {
			f, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("reading %s: %v", in, err)
			}
			if err := w.WriteFrame(f); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

func firstDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d:\nsource: %s\ncopy:   %s", i+1, a[i], b[i])
		}
	}
	return fmt.Sprintf("source has %d lines, copy %d", len(a), len(b))
}

func head(s string) string {
	lines := strings.SplitN(s, "\n", 6)
	return strings.Join(lines[:min(5, len(lines))], "\n")
}

// The pcapng section header names the application and OS, each interface
// is named after its source and has nanosecond resolution, and the names
// given become a Name Resolution Block tshark resolves addresses with.
func TestPcapngHeadersNameApplicationSourceAndHosts(t *testing.T) {
	needTshark(t)
	in := testcap.Public("sip-register.pcap")
	out := filepath.Join(t.TempDir(), "out.pcapng")
	copyCapture(t, in, Options{Path: out, Application: "sipnab 1.2.3", OS: "Linux 6.1",
		Names: []Name{{Addr: netip.MustParseAddr("10.33.6.101"), Name: "pbx.example"}}})

	info, err := exec.Command("capinfos", "-M", out).CombinedOutput()
	if err != nil {
		t.Fatalf("capinfos: %v\n%s", err, info)
	}
	flat := strings.Join(strings.Fields(string(info)), " ")
	for _, want := range []string{"Capture application: sipnab 1.2.3", "Capture oper-sys: Linux 6.1", "File timestamp precision: nanoseconds (9)",
		"Number of interfaces in file: 1", "Name = sip-register.pcap", "Time precision = nanoseconds (9)", "Number of resolved IPv4 addresses in file: 1"} {
		if !strings.Contains(flat, want) {
			t.Errorf("capinfos does not say %q:\n%s", want, info)
		}
	}
	got := tsharkFields(t, out, "frame.interface_name")
	if !strings.Contains(got, "\tsip-register.pcap\n") {
		t.Errorf("interface name is not the source's name:\n%s", head(got))
	}
	res, err := exec.Command("tshark", "-r", out, "-N", "n", "-T", "fields", "-e", "ip.src_host", "-e", "ip.dst_host").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, res)
	}
	if !strings.Contains(string(res), "pbx.example") {
		t.Errorf("tshark does not resolve 10.33.6.101 through the NRB:\n%s", res)
	}
}

// frames makes n Ethernet frames of size bytes, one second apart.
func frames(n, size int) []*packet.Frame {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	out := make([]*packet.Frame, n)
	for i := range out {
		d := bytes.Repeat([]byte{byte(i)}, size)
		out[i] = &packet.Frame{TS: t0.Add(time.Duration(i) * time.Second), LinkType: 1, Data: d, OrigLen: size, Source: "eth0", Ordinal: uint64(i + 1)}
	}
	return out
}

func writeAll(t *testing.T, o Options, fs []*packet.Frame) *Writer {
	t.Helper()
	w, err := Create(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

func readFrames(t *testing.T, path string) []time.Time {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ts []time.Time
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return ts
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		ts = append(ts, f.TS)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestSplitSetsAndRing(t *testing.T) {
	cases := []struct {
		name      string
		ext       string
		bytes     int64
		dur       time.Duration
		ring      int
		wantFiles []string
		wantPer   []int // frames per remaining file
		deleted   int
	}{
		// 10 frames of 1000 bytes: a classic pcap record is 1016 bytes and
		// the header 24, so 3 records fit 4000 bytes (24+3*1016=3072).
		{name: "pcap split by size keeps every frame", ext: ".pcap", bytes: 4000,
			wantFiles: []string{"out-00001.pcap", "out-00002.pcap", "out-00003.pcap", "out-00004.pcap"}, wantPer: []int{3, 3, 3, 1}},
		{name: "pcapng split by capture time every 4 s", ext: ".pcapng", dur: 4 * time.Second,
			wantFiles: []string{"out-00001.pcapng", "out-00002.pcapng", "out-00003.pcapng"}, wantPer: []int{4, 4, 2}},
		{name: "ring of 2 keeps the newest two and deletes its own", ext: ".pcap", bytes: 4000, ring: 2,
			wantFiles: []string{"out-00003.pcap", "out-00004.pcap"}, wantPer: []int{3, 1}, deleted: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			foreign := filepath.Join(dir, "out-notes.pcap")
			if err := os.WriteFile(foreign, []byte("not ours"), 0o644); err != nil {
				t.Fatal(err)
			}
			w := writeAll(t, Options{Path: filepath.Join(dir, "out"+tc.ext), SplitBytes: tc.bytes, SplitDuration: tc.dur, Ring: tc.ring}, frames(10, 1000))
			got := listDir(t, dir)
			want := append([]string{"out-notes.pcap"}, tc.wantFiles...)
			if strings.Join(got, " ") != strings.Join(sortedCopy(want), " ") {
				t.Fatalf("files %v, want %v", got, sortedCopy(want))
			}
			for i, name := range tc.wantFiles {
				p := filepath.Join(dir, name)
				if n := len(readFrames(t, p)); n != tc.wantPer[i] {
					t.Errorf("%s holds %d frames, want %d", name, n, tc.wantPer[i])
				}
				if fi, _ := os.Stat(p); tc.bytes > 0 && fi.Size() > tc.bytes {
					t.Errorf("%s is %d bytes, past the split size %d", name, fi.Size(), tc.bytes)
				}
			}
			if b, _ := os.ReadFile(foreign); string(b) != "not ours" {
				t.Errorf("the file sipnab did not write changed: %q", b)
			}
			if st := w.Stats(); st.Deleted != tc.deleted || st.Frames != 10 {
				t.Errorf("deleted %d files and wrote %d frames, want %d and 10", st.Deleted, st.Frames, tc.deleted)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// A file already at a name of the split set is neither replaced nor
// deleted: the write stops with an error naming it.
func TestSplitSetNeverReplacesAFileAlreadyThere(t *testing.T) {
	dir := t.TempDir()
	theirs := filepath.Join(dir, "out-00002.pcap")
	if err := os.WriteFile(theirs, []byte("someone else's"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Create(Options{Path: filepath.Join(dir, "out.pcap"), SplitBytes: 4000, Ring: 1})
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for _, f := range frames(10, 1000) {
		if werr = w.WriteFrame(f); werr != nil {
			break
		}
	}
	_ = w.Close()
	if werr == nil || !strings.Contains(werr.Error(), "out-00002.pcap already exists") {
		t.Fatalf("write error %v, want one naming out-00002.pcap", werr)
	}
	if b, _ := os.ReadFile(theirs); string(b) != "someone else's" {
		t.Errorf("the pre-existing file changed: %q", b)
	}
	if st := w.Stats(); st.Frames != 3 {
		t.Errorf("wrote %d frames before stopping, want 3", st.Frames)
	}
}

// A file the ring created but that was replaced under its name (a new
// inode) is kept and named, not deleted.
func TestRingKeepsAFileReplacedUnderItsName(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(Options{Path: filepath.Join(dir, "out.pcap"), SplitBytes: 4000, Ring: 1})
	if err != nil {
		t.Fatal(err)
	}
	fs := frames(4, 1000)
	for _, f := range fs[:3] {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	first := filepath.Join(dir, "out-00001.pcap")
	repl := filepath.Join(dir, "repl")
	if err := os.WriteFile(repl, []byte("replaced"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repl, first); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame(fs[3]); err != nil { // opens out-00002, prunes
		t.Fatal(err)
	}
	_ = w.Close()
	if b, _ := os.ReadFile(first); string(b) != "replaced" {
		t.Fatalf("the replaced file was touched: %q", b)
	}
	if st := w.Stats(); st.Deleted != 0 || len(st.RingKept) != 1 || st.RingKept[0] != first {
		t.Fatalf("deleted %d, kept %v; want 0 and [%s]", st.Deleted, st.RingKept, first)
	}
}

func TestCreateRefusesToWriteOverAnInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	if err := os.WriteFile(in, []byte("input bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pcap")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, link, filepath.Join(dir, ".", "in.pcap")} {
		_, err := Create(Options{Path: out, Inputs: []string{in}})
		if err == nil || !strings.Contains(err.Error(), "never writes over an input") {
			t.Errorf("Create(%s): %v, want a refusal", out, err)
		}
	}
	if b, _ := os.ReadFile(in); string(b) != "input bytes" {
		t.Errorf("the input changed: %q", b)
	}
}

func TestCreateRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []Options{
		{Path: ""},
		{Path: filepath.Join(dir, "a.pcap"), Ring: 3},
		{Path: filepath.Join(dir, "a.pcap"), SplitBytes: 10},
		{Path: filepath.Join(dir, "a.pcap"), SplitBytes: -1},
	} {
		if w, err := Create(o); err == nil {
			w.Close()
			t.Errorf("Create(%+v) succeeded", o)
		}
	}
}

// Classic pcap holds one link type: a frame of another is counted, not
// written.
func TestPcapCountsFramesOfAnotherLinkType(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.pcap")
	fs := frames(3, 100)
	fs[1].LinkType = 113
	w := writeAll(t, Options{Path: out}, fs)
	if st := w.Stats(); st.Frames != 2 || st.SkippedLinkType != 1 {
		t.Fatalf("wrote %d, skipped %d; want 2 and 1", st.Frames, st.SkippedLinkType)
	}
	if n := len(readFrames(t, out)); n != 2 {
		t.Fatalf("read back %d frames, want 2", n)
	}
	// pcapng gives the second link type its own interface.
	ng := filepath.Join(t.TempDir(), "out.pcapng")
	w = writeAll(t, Options{Path: ng}, fs)
	if st := w.Stats(); st.Frames != 3 || st.SkippedLinkType != 0 {
		t.Fatalf("pcapng wrote %d, skipped %d; want 3 and 0", st.Frames, st.SkippedLinkType)
	}
	if n := len(readFrames(t, ng)); n != 3 {
		t.Fatalf("read back %d frames from pcapng, want 3", n)
	}
}
