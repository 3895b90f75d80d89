package testcap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readmeRow matches a row of the table in testdata/captures/README.md:
// | `file` | size (bytes) | contents | origin |
var readmeRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([0-9]+) \\| [^|]+\\| ([^|\\n]+) \\|$")

// TestCapturesAreInTheRepository wants the public captures under
// testdata/captures (a clone carries its own fixtures), each the very bytes
// tshark measured (its truth file's sha256 and size_bytes), each with one row
// in the provenance README giving its size and a non-empty origin, and no
// truth file or README row without a capture.
func TestCapturesAreInTheRepository(t *testing.T) {
	names, err := PublicNames()
	if err != nil {
		t.Fatalf("public captures: %v", err)
	}
	// 31 files as copied; grows when a capture is added with its row and truth.
	if len(names) < 31 {
		t.Fatalf("%d public captures in %s, want at least 31", len(names), filepath.Join(Dir(), "public"))
	}
	readme, err := os.ReadFile(filepath.Join(Dir(), "README.md"))
	if err != nil {
		t.Fatalf("provenance README: %v", err)
	}
	rows := map[string]int64{}
	defer func() {
		if len(rows) != len(names) {
			t.Errorf("README has %d rows for %d captures", len(rows), len(names))
		}
	}()
	for _, m := range readmeRow.FindAllStringSubmatch(string(readme), -1) {
		size, _ := strconv.ParseInt(m[2], 10, 64)
		if _, dup := rows[m[1]]; dup {
			t.Errorf("README: %s has two rows", m[1])
		}
		if len(bytes.TrimSpace([]byte(m[3]))) == 0 {
			t.Errorf("README: %s has no origin", m[1])
		}
		rows[m[1]] = size
	}
	have := map[string]bool{}
	for _, name := range names {
		have[name] = true
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(Public(name))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(Truth(name))
			if err != nil {
				t.Fatalf("no truth file: %v", err)
			}
			var truth struct {
				Capture   string `json:"capture"`
				SizeBytes int64  `json:"size_bytes"`
				SHA256    string `json:"sha256"`
			}
			if err := json.Unmarshal(raw, &truth); err != nil {
				t.Fatalf("truth: %v", err)
			}
			sum := sha256.Sum256(data)
			if truth.Capture != name || truth.SizeBytes != int64(len(data)) || truth.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("truth describes %s, %d bytes, sha256 %s; the file is %d bytes, sha256 %x",
					truth.Capture, truth.SizeBytes, truth.SHA256, len(data), sum)
			}
			size, ok := rows[name]
			if !ok {
				t.Fatalf("no row in %s", filepath.Join(Dir(), "README.md"))
			}
			if size != int64(len(data)) {
				t.Errorf("README row says %d bytes, file is %d", size, len(data))
			}
		})
	}
	for name := range rows {
		if !have[name] {
			t.Errorf("README row for %s, which is not in public/", name)
		}
	}
	truths, err := os.ReadDir(filepath.Join(Dir(), "truth"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range truths {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); !ok || !have[name] {
			t.Errorf("truth/%s has no capture", e.Name())
		}
	}
}

// TestReadmeSampleIsThePublicCapture wants the README's first command's file
// (testdata/sip-rtp-g711.pcap) to stay where it is and be the public capture
// of that name, so its report agrees with truth/sip-rtp-g711.pcap.json.
func TestReadmeSampleIsThePublicCapture(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join(Root(), "testdata", "sip-rtp-g711.pcap"))
	if err != nil {
		t.Fatalf("README sample: %v", err)
	}
	public, err := os.ReadFile(Public("sip-rtp-g711.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sample, public) {
		t.Errorf("testdata/sip-rtp-g711.pcap (%d bytes) differs from public/sip-rtp-g711.pcap (%d bytes)", len(sample), len(public))
	}
}

// TestLoadTruthDecodesTheReferenceAnswer: LoadTruth reads a capture's truth
// file into the caller's type; the sample capture's truth has its two
// INVITE dialogs.
func TestLoadTruthDecodesTheReferenceAnswer(t *testing.T) {
	tr := LoadTruth[struct {
		SIP struct {
			Dialogs []struct {
				CallID string `json:"call_id"`
			} `json:"dialogs"`
		} `json:"sip"`
	}](t, "sip-rtp-g711.pcap")
	if len(tr.SIP.Dialogs) == 0 {
		t.Fatal("no dialogs decoded from the sample capture's truth")
	}
}
