package captures

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/sdk"
)

// cpFramePointer hashes frame ordinal of a capture file itself (core/capture's
// reader, SHA-256 of the captured bytes, first 8 bytes): a pointer made
// without the engine.
func cpFramePointer(t *testing.T, path string, ordinal uint64) string {
	t.Helper()
	p, _ := cpFrame(t, path, ordinal)
	return p
}

// cpFrame is cpFramePointer with a copy of the frame's bytes.
func cpFrame(t *testing.T, path string, ordinal uint64) (string, []byte) {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("%s: no frame %d: %v", path, ordinal, err)
		}
		if f.Ordinal == ordinal {
			sum := sha256.Sum256(f.Data)
			return fmt.Sprintf("%s#%d@%s", filepath.Base(path), ordinal, hex.EncodeToString(sum[:8])), bytes.Clone(f.Data)
		}
	}
}

// TestShowEvidenceVerifiesTheEnginesPointers: every pointer the engine gave
// the messages of three public captures verifies against the copy in the
// root; the sample's first message's pointer is samplePointer, hashed by
// hand from the pcap record.
func TestShowEvidenceVerifiesTheEnginesPointers(t *testing.T) {
	for _, name := range []string{sampleCapture, "sip-over-tcp.pcap", "sipp-branch-scenario.pcapng"} {
		t.Run(name, func(t *testing.T) {
			capture := cpLoad(t, name)
			tools := cpTools(t, capture, cpRoot(t, name), sdk.EnvOptions{})
			ptrs := cpPointers(capture)
			if len(ptrs) > maxRefs {
				ptrs = ptrs[:maxRefs]
			}
			var got ShowEvidence
			cpCall(t, tools["show_evidence"], `{"refs":`+cpJSON(ptrs)+`,"max_bytes":0}`, &got)
			if got.Requested != len(ptrs) || got.Verified != len(ptrs) || got.Resolved != len(ptrs) {
				t.Errorf("%d pointers: requested %d resolved %d verified %d (%s)", len(ptrs), got.Requested, got.Resolved, got.Verified, got.Summary)
			}
			for _, f := range got.Frames {
				if f.Status != statusVerified || *f.HexBytesShown != 0 || f.Hex != "" || *f.FrameBytes == 0 {
					t.Errorf("%s: %+v", f.Pointer, f)
				}
			}
			if name == sampleCapture && ptrs[0] != samplePointer {
				t.Errorf("the engine's first pointer is %s, want %s", ptrs[0], samplePointer)
			}
		})
	}
}

// TestShowEvidenceRefusesWhatItCannotVerify: the sample frame 1 verified
// with its first 16 bytes shown (Ethernet with zero MACs, then 0x0800 IPv4
// and 0x45: tshark -x); the same pointer on a copy with one byte tampered
// is a digest mismatch; an ordinal past the 852 frames, a file not in the
// root, a HEP listener's datagram, a live interface's frame and a
// malformed pointer are unresolvable with their reason; only the final
// path component of a source is looked up.
func TestShowEvidenceRefusesWhatItCannotVerify(t *testing.T) {
	root := cpRoot(t, sampleCapture)
	b, err := os.ReadFile(filepath.Join(root, sampleCapture))
	if err != nil {
		t.Fatal(err)
	}
	b[24+16+100] ^= 0xff // a byte inside frame 1 (after the 24-byte file header and the 16-byte record header)
	if err := os.WriteFile(filepath.Join(root, "tampered.pcap"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	tools := cpTools(t, cpLoad(t, sampleCapture), root, sdk.EnvOptions{})
	tampered := strings.Replace(samplePointer, sampleCapture, "tampered.pcap", 1)
	cases := []struct {
		ref, status, source, reason string
	}{
		{samplePointer, statusVerified, sampleCapture, ""},
		{"/var/captures/../" + samplePointer, statusVerified, sampleCapture, ""},
		{tampered, statusUnresolvable, "tampered.pcap", "digest mismatch"},
		{strings.Replace(samplePointer, "#1@", "#853@", 1), statusUnresolvable, sampleCapture, "holds 852 frames"},
		{strings.Replace(samplePointer, "#1@", "#2@", 1), statusUnresolvable, sampleCapture, "digest mismatch"},
		{"gone.pcap#1@436e86580983e304", statusUnresolvable, "gone.pcap", "no such file"},
		{"hep:127.0.0.1:9060#1@436e86580983e304", statusUnresolvable, "hep:127.0.0.1:9060", "evidence ring (mcp-evidence-ring), which this build does not have"},
		{"not-a-pointer", statusUnresolvable, "", "<source>#<ordinal>@"},
	}
	refs := make([]string, len(cases))
	for i, c := range cases {
		refs[i] = c.ref
	}
	var got ShowEvidence
	cpCall(t, tools["show_evidence"], `{"refs":`+cpJSON(refs)+`,"max_bytes":16}`, &got)
	if got.Requested != 8 || got.Resolved != 2 || got.Verified != 2 || got.Summary != "2 of 8 pointers verified, 6 unresolvable" {
		t.Errorf("counts: %+v", got)
	}
	for i, c := range cases {
		f := got.Frames[i]
		if f.Pointer != c.ref || f.Status != c.status || f.Source != c.source || !strings.Contains(f.Reason, c.reason) {
			t.Errorf("%s: %+v, want %s from %q (%q)", c.ref, f, c.status, c.source, c.reason)
		}
		if c.status == statusUnresolvable && (f.Hex != "" || f.FrameBytes != nil) {
			t.Errorf("%s: unresolvable but shows bytes", c.ref)
		}
	}
	if f := got.Frames[0]; *f.FrameBytes != 500 || *f.HexBytesShown != 16 || !*f.Truncated || f.Hex != "00000000000000000000000008004500" {
		t.Errorf("verified frame: %+v", f)
	}
	var def ShowEvidence
	cpCall(t, tools["show_evidence"], `{"refs":["`+samplePointer+`"]}`, &def)
	if f := def.Frames[0]; *f.HexBytesShown != 256 || len(f.Hex) != 512 {
		t.Errorf("default max_bytes: %+v", f)
	}
	for _, tc := range []struct{ args, want string }{
		{`{"refs":[]}`, "at least one"},
		{`{"refs":` + cpJSON(make([]string, maxRefs+1)) + `}`, "at most 100"},
		{`{"refs":["` + samplePointer + `"],"max_bytes":4097}`, "4096"},
	} {
		if e := cpRefused(t, tools["show_evidence"], tc.args); e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %+v, want a refusal naming %q", tc.args, e, tc.want)
		}
	}
	none := cpTools(t, cpLoad(t, sampleCapture), "", sdk.EnvOptions{})
	if e := cpRefused(t, none["show_evidence"], `{"refs":["`+samplePointer+`"]}`); e.Kind != sdk.KindNotEnabled || !strings.Contains(e.Message, "--mcp-file-root") {
		t.Errorf("no root: %+v", e)
	}
}

// TestShowEvidenceLiveInterfaceNeedsARing: a pointer into a live
// interface of the capture (eth9, attached as the host attaches -i) names
// the evidence ring that would keep its frames, which this build lacks; a
// file of the load in the same call still verifies.
func TestShowEvidenceLiveInterfaceNeedsARing(t *testing.T) {
	c := cpLoad(t, sampleCapture)
	done := make(chan struct{})
	c.AttachLive("eth9", func() error { close(done); return nil }, done, nil)
	tools := cpTools(t, c, cpRoot(t, sampleCapture), sdk.EnvOptions{})
	var got ShowEvidence
	cpCall(t, tools["show_evidence"], `{"refs":["eth9#7@436e86580983e304","`+samplePointer+`"]}`, &got)
	if f := got.Frames[0]; f.Status != statusUnresolvable || !strings.Contains(f.Reason, "live interface eth9") || !strings.Contains(f.Reason, "evidence ring") {
		t.Errorf("live pointer: %+v", f)
	}
	if got.Verified != 1 || got.Frames[1].Status != statusVerified {
		t.Errorf("file pointer beside it: %+v", got)
	}
}
