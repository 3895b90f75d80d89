package captures

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

const (
	cpCallA = "1-1966@10.0.2.20"
	cpCallB = "1-1968@10.0.2.20"
)

// cpSample loads the sample capture testdata/sip-rtp-g711.pcap.
func cpSample(t *testing.T) *engine.Capture {
	t.Helper()
	return testengine.Load(t, engine.Config{Node: "test"}, filepath.Join(testcap.Root(), "testdata", sampleCapture))
}

// TestBuildEvidencePackageWritesTheFolder: both calls of the sample
// (tshark -Y sip: 6 messages of 1-1966@10.0.2.20, 4 of 1-1968@10.0.2.20,
// interleaved; one RTP stream per call, 10.0.2.15 to 10.0.2.20: tshark -z
// rtp,streams gives 0x343DA99B with 425 packets for the first) give README.md with the
// disclaimer, manifest.json, call-01/02 ladder and rtp files named by
// ordinal, and signaling.pcapng that tshark reads back as the source's 10
// SIP messages in the same (time) order. Each file's SHA-256 in the answer
// is the file's.
func TestBuildEvidencePackageWritesTheFolder(t *testing.T) {
	root := t.TempDir()
	tools := cpTools(t, cpSample(t), root, sdk.EnvOptions{})
	var got EvidencePackage
	cpCall(t, tools["build_evidence_package"], `{"call_ids":["`+cpCallA+`","`+cpCallB+`"],"filename":"ticket"}`, &got)
	names := []string{}
	for _, f := range got.Files {
		names = append(names, f.Name)
		b, err := os.ReadFile(filepath.Join(root, "ticket", f.Name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if f.Name == "manifest.json" {
			sum = [32]byte{}
			if f.SHA256 != "" {
				t.Errorf("manifest.json carries a digest")
			}
		}
		if int64(len(b)) != f.Bytes || (f.Name != "manifest.json" && hex.EncodeToString(sum[:]) != f.SHA256) {
			t.Errorf("%s: %d bytes %s, the answer says %d %s", f.Name, len(b), hex.EncodeToString(sum[:]), f.Bytes, f.SHA256)
		}
	}
	want := []string{"README.md", "manifest.json", "call-01-ladder.md", "call-01-rtp.json", "call-02-ladder.md", "call-02-rtp.json", "signaling.pcapng"}
	if !slices.Equal(names, want) || got.Path != "ticket" || got.Messages != 10 || len(got.Calls) != 2 {
		t.Fatalf("answer: %+v", got)
	}
	if c := got.Calls[0]; c.CallID != cpCallA || c.Messages != 6 || c.Streams != 1 || c.Ladder != "call-01-ladder.md" {
		t.Errorf("call 1: %+v", c)
	}
	if c := got.Calls[1]; c.CallID != cpCallB || c.Messages != 4 {
		t.Errorf("call 2: %+v", c)
	}
	readme, _ := os.ReadFile(filepath.Join(root, "ticket", "README.md"))
	if !strings.Contains(string(readme), "rebuilt frames, not the frames that were on the wire") || !strings.Contains(string(readme), "`"+cpCallA+"`") {
		t.Errorf("README.md:\n%s", readme)
	}
	ladder, _ := os.ReadFile(filepath.Join(root, "ticket", "call-01-ladder.md"))
	if !strings.Contains(string(ladder), "# sipnab call report: `"+cpCallA+"`") || !strings.Contains(string(ladder), "6 messages") {
		t.Errorf("ladder:\n%.600s", ladder)
	}
	var rtp struct {
		CallID  string `json:"call_id"`
		Streams []struct {
			SSRC    string `json:"ssrc"`
			Packets uint64 `json:"packets"`
		} `json:"streams"`
	}
	b, _ := os.ReadFile(filepath.Join(root, "ticket", "call-01-rtp.json"))
	if err := json.Unmarshal(b, &rtp); err != nil || rtp.CallID != cpCallA || len(rtp.Streams) != 1 || rtp.Streams[0].SSRC != "0x343da99b" || rtp.Streams[0].Packets != 425 {
		t.Errorf("rtp file: %v %s", err, b)
	}
	var man packageManifest
	b, _ = os.ReadFile(filepath.Join(root, "ticket", "manifest.json"))
	if err := json.Unmarshal(b, &man); err != nil || len(man.Calls) != 2 || man.Calls[1].CallID != cpCallB || len(man.Files) != 5 || man.Disclaimer == "" {
		t.Errorf("manifest: %v %s", err, b)
	}
	src := testcap.TsharkSIP(t, filepath.Join(testcap.Root(), "testdata", sampleCapture))
	if back := testcap.TsharkSIP(t, filepath.Join(root, "ticket", "signaling.pcapng")); !slices.Equal(back, src) || len(back) != 10 {
		t.Errorf("tshark reads back\n%v\nthe source in time order\n%v", back, src)
	}
}

// TestBuildEvidencePackageOfOneCallHoldsOnlyIt: one call of two: its 6
// messages only, in the source's order (tshark -Y 'sip.Call-ID == ...').
func TestBuildEvidencePackageOfOneCallHoldsOnlyIt(t *testing.T) {
	root := t.TempDir()
	tools := cpTools(t, cpSample(t), root, sdk.EnvOptions{})
	var got EvidencePackage
	cpCall(t, tools["build_evidence_package"], `{"call_ids":["`+cpCallB+`"],"filename":"one"}`, &got)
	if got.Messages != 4 || len(got.Files) != 5 {
		t.Fatalf("%+v", got)
	}
	src := testcap.TsharkSIP(t, filepath.Join(testcap.Root(), "testdata", sampleCapture), "-2", "-R", `sip.Call-ID == "`+cpCallB+`"`)
	if back := testcap.TsharkSIP(t, filepath.Join(root, "one", "signaling.pcapng")); !slices.Equal(back, src) || len(back) != 4 {
		t.Errorf("tshark reads back %v, want %v", back, src)
	}
}

// TestBuildEvidencePackageRefusesBeforeWriting: each refusal leaves the
// root as it was (no folder, no half-written package).
func TestBuildEvidencePackageRefusesBeforeWriting(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "taken"), []byte("x"), 0o644)
	os.Symlink("nowhere", filepath.Join(root, "dangling"))
	tools := cpTools(t, cpSample(t), root, sdk.EnvOptions{})
	for _, tc := range []struct {
		name, args string
		kind       sdk.Kind
	}{
		{"an unknown call_id after a known one", `{"call_ids":["` + cpCallA + `","no-such-call"],"filename":"p1"}`, sdk.KindUnknownID},
		{"no call_ids", `{"call_ids":[],"filename":"p2"}`, sdk.KindMissingArgument},
		{"a call named twice", `{"call_ids":["` + cpCallA + `","` + cpCallA + `"],"filename":"p3"}`, sdk.KindInvalidArgument},
		{"a name taken by a file", `{"call_ids":["` + cpCallA + `"],"filename":"taken"}`, sdk.KindFileRefused},
		{"a name taken by a dangling symlink", `{"call_ids":["` + cpCallA + `"],"filename":"dangling"}`, sdk.KindFileRefused},
		{"a path, not a name", `{"call_ids":["` + cpCallA + `"],"filename":"../p4"}`, ""},
		{"an unknown argument", `{"call_ids":["` + cpCallA + `"],"filename":"p5","overwrite":true}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cpRefused(t, tools["build_evidence_package"], tc.args)
			if e.Code != sdk.CodeInvalidParams || (tc.kind != "" && e.StableKind() != tc.kind) {
				t.Errorf("code %d kind %s: %s", e.Code, e.StableKind(), e.Message)
			}
		})
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 2 {
		t.Errorf("the root holds %d entries, want the 2 it had", len(ents))
	}
	// More call_ids than --mcp-max-rows.
	many := make([]string, 1001)
	for i := range many {
		many[i] = cpCallA
	}
	if e := cpRefused(t, tools["build_evidence_package"], `{"call_ids":`+cpJSON(many)+`,"filename":"p6"}`); !strings.Contains(e.Message, "--mcp-max-rows") {
		t.Errorf("1001 call_ids: %s", e.Message)
	}
	// A second package under the same name: refused, the first intact.
	var got EvidencePackage
	cpCall(t, tools["build_evidence_package"], `{"call_ids":["`+cpCallA+`"],"filename":"pkg"}`, &got)
	if e := cpRefused(t, tools["build_evidence_package"], `{"call_ids":["`+cpCallB+`"],"filename":"pkg"}`); e.StableKind() != sdk.KindFileRefused || !strings.Contains(e.Message, "taken") {
		t.Errorf("second package over the first: %+v", e)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "pkg")); len(ents) != 5 {
		t.Errorf("the first package holds %d files", len(ents))
	}
	noRoot := cpTools(t, cpSample(t), "", sdk.EnvOptions{})
	if e := cpRefused(t, noRoot["build_evidence_package"], `{"call_ids":["`+cpCallA+`"],"filename":"x"}`); !strings.Contains(e.Message, "disabled") {
		t.Errorf("without a root: %s", e.Message)
	}
}
