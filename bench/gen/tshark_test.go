package gen

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tsharkStream is one row of tshark -q -z rtp,streams.
type tsharkStream struct {
	key                                    StreamKey
	payload                                string
	packets, lost                          int
	startRel, endRel                       float64
	minDeltaMs, meanDeltaMs, maxDeltaMs    float64
	minJitterMs, meanJitterMs, maxJitterMs float64
}

// parseRTPStreams reads tshark 4.x's rtp,streams table:
// start end src sport dst dport ssrc payload pkts lost (pct) mind meand maxd minj meanj maxj [X]
func parseRTPStreams(out []byte) ([]tsharkStream, error) {
	var rows []tsharkStream
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 17 || !strings.HasPrefix(f[6], "0x") {
			continue
		}
		var r tsharkStream
		var err error
		num := func(s string) float64 {
			if err != nil {
				return 0
			}
			var v float64
			v, err = strconv.ParseFloat(s, 64)
			return v
		}
		r.key = StreamKey{SSRC: strings.ToLower(f[6]), Src: f[2] + ":" + f[3], Dst: f[4] + ":" + f[5]}
		r.payload = f[7]
		r.packets = int(num(f[8]))
		r.lost = int(num(f[9]))
		r.startRel, r.endRel = num(f[0]), num(f[1])
		r.minDeltaMs, r.meanDeltaMs, r.maxDeltaMs = num(f[11]), num(f[12]), num(f[13])
		r.minJitterMs, r.meanJitterMs, r.maxJitterMs = num(f[14]), num(f[15]), num(f[16])
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

func needTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed: skipping the cross-check against tshark (CI installs it: apt-get install -y tshark)")
	}
	return p
}

func writeSmall(t *testing.T, cfg Config) (string, *Answers) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "small.pcap")
	a, err := WriteFiles(cfg, path, filepath.Join(filepath.Dir(path), "small.json"))
	if err != nil {
		t.Fatalf("WriteFiles: %v", err)
	}
	back, err := ReadAnswers(filepath.Join(filepath.Dir(path), "small.json"))
	if err != nil {
		t.Fatalf("ReadAnswers: %v", err)
	}
	if back.Capture.SHA256 != a.Capture.SHA256 || len(back.Streams) != len(a.Streams) || len(back.Dialogs) != len(a.Dialogs) {
		t.Fatalf("answers do not survive a JSON round trip")
	}
	return path, a
}

// TestTsharkRTPStreams checks the answers against tshark's own RTP analysis:
// the same streams, packets and lost equal, max jitter within
// max(0.05 ms, 2 %), and the mean jitter too.
func TestTsharkRTPStreams(t *testing.T) {
	tshark := needTshark(t)
	for _, cfg := range []Config{Small(1), Small(3)} {
		t.Run(cfgName(cfg), func(t *testing.T) {
			path, a := writeSmall(t, cfg)
			out, err := exec.Command(tshark, "-n", "-q", "-z", "rtp,streams", "-r", path).Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			rows, err := parseRTPStreams(out)
			if err != nil {
				t.Fatalf("parsing tshark output: %v\n%s", err, out)
			}
			if len(rows) != len(a.Streams) {
				t.Errorf("tshark finds %d streams, want %d", len(rows), len(a.Streams))
			}
			seen := map[StreamKey]bool{}
			for _, r := range rows {
				seen[r.key] = true
				s, ok := a.Stream(r.key)
				if !ok {
					t.Errorf("tshark stream %s not in the answers", r.key)
					continue
				}
				t.Run(r.key.SSRC, func(t *testing.T) {
					if r.packets != s.Packets {
						t.Errorf("packets: tshark %d, want %d", r.packets, s.Packets)
					}
					if r.lost != s.Lost {
						t.Errorf("lost: tshark %d, want %d", r.lost, s.Lost)
					}
					if tol := math.Max(0.05, 0.02*s.JitterMaxMs); math.Abs(r.maxJitterMs-s.JitterMaxMs) > tol {
						t.Errorf("max jitter: tshark %.3f ms, want %.3f ms (± %.3f)", r.maxJitterMs, s.JitterMaxMs, tol)
					}
					if tol := math.Max(0.05, 0.02*s.JitterMeanMs); math.Abs(r.meanJitterMs-s.JitterMeanMs) > tol {
						t.Errorf("mean jitter: tshark %.3f ms, want %.3f ms (± %.3f)", r.meanJitterMs, s.JitterMeanMs, tol)
					}
					if math.Abs(r.maxDeltaMs-s.MaxDeltaMs) > 0.0015 {
						t.Errorf("max delta: tshark %.3f ms, want %.3f ms", r.maxDeltaMs, s.MaxDeltaMs)
					}
					if want := map[string]string{"PCMU": "g711U", "PCMA": "g711A"}[s.Codec]; r.payload != want {
						t.Errorf("payload: tshark %s, want %s", r.payload, want)
					}
				})
			}
			for _, s := range a.Streams {
				if !seen[s.StreamKey] {
					t.Errorf("stream %s (%s) not found by tshark", s.StreamKey, s.Impairment)
				}
			}
		})
	}
}

// TestTsharkSIP checks Call-IDs, per-dialog message counts, methods and
// status codes against tshark -Y sip.
func TestTsharkSIP(t *testing.T) {
	tshark := needTshark(t)
	path, a := writeSmall(t, Small(1))
	out, err := exec.Command(tshark, "-n", "-r", path, "-Y", "sip", "-T", "fields", "-E", "separator=|",
		"-e", "sip.Call-ID", "-e", "sip.Method", "-e", "sip.Status-Code", "-e", "sip.CSeq.method").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	perCall := map[string]int{}
	methods := map[string]int{}
	codes := map[string]int{}
	finalInvite := map[string]string{}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		f := strings.Split(l, "|")
		if len(f) != 4 {
			t.Fatalf("unexpected tshark line %q", l)
		}
		perCall[f[0]]++
		if f[1] != "" {
			methods[f[1]]++
		}
		if f[2] != "" {
			codes[f[2]]++
			if f[3] == "INVITE" && f[2] >= "200" {
				finalInvite[f[0]] = f[2]
			}
		}
	}
	if got, want := len(lines), a.Capture.SIPMessages; got != want {
		t.Errorf("tshark SIP messages %d, want %d", got, want)
	}
	if got, want := len(perCall), a.Counts.CallIDs; got != want {
		t.Errorf("tshark Call-IDs %d, want %d", got, want)
	}
	for _, d := range a.Dialogs {
		if got := perCall[d.CallID]; got != d.Messages {
			t.Errorf("%s: tshark counts %d messages, want %d", d.CallID, got, d.Messages)
		}
		if d.FinalStatus != 0 {
			if got := finalInvite[d.CallID]; got != strconv.Itoa(d.FinalStatus) {
				t.Errorf("%s: tshark final INVITE status %s, want %d", d.CallID, got, d.FinalStatus)
			}
		}
	}
	for m, n := range a.Counts.MessagesByMethod {
		if methods[m] != n {
			t.Errorf("tshark %s requests %d, want %d", m, methods[m], n)
		}
	}
	for c, n := range a.Counts.ResponsesByCode {
		if codes[c] != n {
			t.Errorf("tshark %s responses %d, want %d", c, codes[c], n)
		}
	}
	if len(methods) != len(a.Counts.MessagesByMethod) || len(codes) != len(a.Counts.ResponsesByCode) {
		t.Errorf("tshark methods %v codes %v, want %v %v", methods, codes, a.Counts.MessagesByMethod, a.Counts.ResponsesByCode)
	}
}

func TestParseRTPStreams(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "rtp-streams.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseRTPStreams(out)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"rows", len(rows), 3},
		{"ssrc", rows[0].key.SSRC, "0x00002e3d"},
		{"src", rows[1].key.Src, "200.57.7.196:40376"},
		{"packets", rows[1].packets, 891},
		{"lost", rows[2].lost, 0},
		{"max jitter", rows[2].maxJitterMs, 7.407},
		{"payload", rows[0].payload, "g711A"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
