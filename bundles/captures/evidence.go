package captures

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/sdk"
)

// Frame statuses of an evidence pointer (mcp-surface §3.3).
const (
	// statusVerified: the frame was read from the file in the root and
	// its SHA-256 matches the pointer's digest.
	statusVerified = "verified"
	// "unverified" (bytes found without a file to check them against: a
	// retained frame of an evidence ring) is in the answers' enum but never
	// answered: this build has no ring.
	// statusUnresolvable: no bytes, or bytes whose digest differs (the
	// file changed since the pointer was made): never shown.
	statusUnresolvable = "unresolvable"
)

// ringReason is why a live or HEP pointer cannot be resolved: such frames
// are kept nowhere a later read can reach, unless an evidence ring keeps
// them (the reference's mcp-evidence-ring setting), which this build does
// not have. The setting is named without its dashes: this binary has no
// such flag to send an operator to (TestEveryFlagNamedExists).
const ringReason = "frames of live interfaces and HEP listeners are kept only by an evidence ring (mcp-evidence-ring), which this build does not have"

// resolved is one pointer's resolution.
type resolved struct {
	pointer string
	ref     packet.FrameRef
	parsed  bool
	file    string // the final path component of the pointer's source
	status  string
	reason  string
	// data and linkType are the frame's captured bytes and link type when
	// the digest matched.
	data     []byte
	linkType uint16
}

// baseName is the final path component of a pointer's source (either
// separator): only that is looked up in the root, so a source can never
// name a path.
func baseName(source string) string {
	if i := strings.LastIndexAny(source, `/\`); i >= 0 {
		return source[i+1:]
	}
	return source
}

// liveNames are the names of the capture's live sources (interfaces):
// the names its status lists that are no file of its load.
func (d *deps) liveNames() []string {
	st := d.capture.Status()
	if !strings.Contains(st.Source, "live") {
		return nil
	}
	var out []string
	for _, n := range strings.Split(st.Name, ", ") {
		if strings.HasPrefix(n, "hep:") || slices.ContainsFunc(st.Files, func(f capture.FileResult) bool { return f.Name == n }) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// resolve resolves pointers against the files of the root: each file is
// opened once (sdk.FileRoot: one path component, beneath the root) and
// read from its start up to the highest ordinal asked of it, the frames
// asked for copied out; a frame whose SHA-256 differs from the pointer's
// digest is unresolvable, its bytes never shown (a capture changed since
// the pointer was made would manufacture the confidence evidence exists to
// give). The read stops when ctx ends.
func (d *deps) resolve(ctx context.Context, pointers []string) []resolved {
	out := make([]resolved, len(pointers))
	byFile := map[string][]int{}
	var live []string
	liveDone := false
	for i, p := range pointers {
		r := &out[i]
		r.pointer, r.status = p, statusUnresolvable
		ref, err := packet.ParseFrameRef(p)
		if err != nil {
			r.reason = err.Error()
			continue
		}
		r.ref, r.parsed, r.file = ref, true, baseName(ref.Source)
		switch {
		case strings.HasPrefix(ref.Source, "hep:"):
			r.reason = "a HEP listener's datagram: " + ringReason
			continue
		case r.file == "" || r.file == "." || r.file == "..":
			r.reason = "the source names no file"
			continue
		}
		if !liveDone {
			live, liveDone = d.liveNames(), true
		}
		if slices.Contains(live, ref.Source) {
			r.reason = "a frame of the live interface " + ref.Source + ": " + ringReason
			continue
		}
		byFile[r.file] = append(byFile[r.file], i)
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, name := range files {
		d.readFrames(ctx, name, byFile[name], out)
	}
	return out
}

// readFrames resolves the pointers at idx, all naming the file name.
func (d *deps) readFrames(ctx context.Context, name string, idx []int, out []resolved) {
	fail := func(reason string) {
		for _, i := range idx {
			out[i].reason = reason
		}
	}
	r, f, err := openCapture(d.root, name)
	if err != nil {
		fail(clipReason(sdk.AsError(err).Message))
		return
	}
	defer f.Close()
	defer r.Close()
	want := map[uint64][]int{}
	var last uint64
	for _, i := range idx {
		o := out[i].ref.Ordinal
		want[o] = append(want[o], i)
		last = max(last, o)
	}
	for {
		if r.Frames()%4096 == 0 && ctx.Err() != nil {
			fail("the read was cancelled at frame " + fmt.Sprint(r.Frames()))
			return
		}
		fr, err := r.Next()
		if err != nil {
			reason := fmt.Sprintf("the file holds %d frames: the ordinal is past its end", r.Frames())
			if !errors.Is(err, io.EOF) {
				reason = clipReason(fmt.Sprintf("the file could not be read past frame %d: %v", r.Frames(), err))
			}
			for o, is := range want {
				if o > r.Frames() {
					for _, i := range is {
						out[i].reason = reason
					}
				}
			}
			return
		}
		if is, ok := want[fr.Ordinal]; ok {
			sum := sha256.Sum256(fr.Data)
			for _, i := range is {
				if [8]byte(sum[:8]) != out[i].ref.Digest {
					out[i].reason = fmt.Sprintf("digest mismatch: frame %d of %s hashes to %x, not the pointer's digest: the file changed since the pointer was made", fr.Ordinal, name, sum[:8])
					continue
				}
				out[i].status = statusVerified
				out[i].data = slices.Clone(fr.Data)
				out[i].linkType = fr.LinkType
			}
		}
		if fr.Ordinal >= last {
			return
		}
	}
}
