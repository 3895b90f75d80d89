package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/hepsend"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/core/stun"
	"github.com/sipnab/sipnab/internal/testcap"
)

func reportText(t *testing.T, c *engine.Capture) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The STUN block of --report says what --json-run's stun section says about
// testdata/stun/turn-relayed-call.pcapng (the values
// TestTheRunDocumentCarriesTheSTUNSectionOnlyWhenThereWasSTUN checks
// against tshark): 44 messages, 3 Allocate successes after three 401s, the
// allocation with channel 0x4000 relaying 51 packets each way, the one
// nomination, coturn's SOFTWARE; a capture without STUN has no block.
func TestReportSTUNBlockOnlyWhenTheCaptureHeldSTUN(t *testing.T) {
	for _, tc := range []struct {
		name    string
		path    string
		want    []string
		notWant []string
	}{
		{
			name: "turn relayed call names counts, allocations, channels, nomination and software",
			path: filepath.Join(testcap.Root(), "testdata", "stun", "turn-relayed-call.pcapng"),
			want: []string{
				"\nSTUN / TURN / ICE\n",
				"  44 STUN messages (23 requests, 18 success and 3 error responses, 0 indications, 1 retransmissions, 0 malformed), 112 ChannelData (112 relayed packets unwrapped, 0 unbound).\n",
				"Allocate 6 (3 ok, 3 error (401 x3))",
				"  Unanswered: 0 requests; 1 pending (younger than a client's wait at the capture's end, not judged).\n",
				"  NAT mappings (5):\n",
				"    10.0.0.2:40000 -> 198.51.100.254:40000 seen by 198.51.100.1:3478 (translated), frame turn-relayed-call.pcapng#56@",
				"(peer-reflexive, from an ICE check)",
				"  TURN allocations (3, 0 lapsed):\n",
				"    10.0.0.2:40000 via 198.51.100.1:3478 relayed 198.51.100.1:49157: deleted, lifetime 600 s, 0 refreshes, 0 permissions, 51/51 packets to/from peers",
				"      channels (packets to/from peer): 0x4000 to 198.51.100.2:4000 51/51\n",
				"  ICE: 1 candidate pairs checked, 1 nominated, 0 role conflicts.\n",
				"    nominated 198.51.100.1:49157 -> 198.51.100.2:4000 (controlling, 1 of 1 checks succeeded), frame turn-relayed-call.pcapng#68@",
				"  SOFTWARE: \"Coturn-4.6.1 'Gorst'\" (20).\n",
			},
			notWant: []string{"LAPSED", "Evicted at"},
		},
		{
			name:    "a capture without STUN has no STUN block",
			path:    testcap.Public("sip-rtp-g711.pcap"),
			notWant: []string{"STUN"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkText(t, reportText(t, load(t, tc.path)), tc.want, tc.notWant)
		})
	}
}

// Values a STUN sender wrote (SOFTWARE) and a lapsed allocation's reason
// reach the report as internal/textsafe.Line leaves them: terminal escapes
// and bidi overrides dropped, a line break made a space; evictions are
// named, not dropped silently; a list names five rows and counts the rest.
func TestReportSTUNBlockEscapesSenderTextAndNamesEvictions(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &stun.Report{
		Counts:   stun.Stats{Messages: 3, Requests: 2, Successes: 1, TransactionsEvicted: 4, RoleConflicts: 1},
		Software: []stun.Software{{Value: "evil\x1b[2J\nFINDINGS\u202e", Count: 2}},
		Allocations: []stun.Allocation{{Client: "10.0.0.1:1", Server: "192.0.2.1:3478", Relayed: "192.0.2.1:5000", State: "active",
			Lapsed: true, LapseReason: "refresh_refused_437", LapseFrame: "x.pcap#9@00", Created: now}},
		LapsedAllocations: 1,
		Unanswered:        []stun.Unanswered{{Method: "Binding", Client: "10.0.0.1:1", Server: "198.51.100.9:3478", Sent: 7, Frame: "x.pcap#1@00", ServerPublic: true}},
		UnansweredCount:   3,
		ICE:               stun.ICEReport{RoleConflicts: []stun.RoleConflict{{A: "10.0.0.1:1", B: "10.0.0.2:2", At: now, Frame: "x.pcap#3@00", Why: "487_role_conflict"}}},
	}
	for i := 0; i < 7; i++ {
		r.Mappings = append(r.Mappings, stun.Mapping{Local: "10.0.0.1:1", Server: "192.0.2.1:3478", Mapped: "192.0.2.200:1", Translated: true})
	}
	r.MappingsOmitted = 3
	var b bytes.Buffer
	writeSTUN(&b, r)
	out := b.String()
	for _, w := range []string{
		"  Evicted at the tracker's caps (not below): 4 transactions.\n",
		"  Unanswered: 3 requests.\n    Binding 10.0.0.1:1 -> 198.51.100.9:3478 (public): 7 sent, frame x.pcap#1@00\n    … 2 more (--json-run has them)\n",
		"  NAT mappings (10):\n",
		"    … 5 more (--json-run has them)\n",
		"  TURN allocations (1, 1 lapsed):\n",
		"active, LAPSED (refresh_refused_437, frame x.pcap#9@00)",
		"    role conflict 10.0.0.1:1 / 10.0.0.2:2: 487_role_conflict, frame x.pcap#3@00\n",
		"  SOFTWARE: \"evil FINDINGS\" (2).\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q in\n%s", w, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\u202e") || strings.Contains(out, "\nFINDINGS") {
		t.Errorf("sender text reached the report raw:\n%s", out)
	}
}

// The loss pattern line under WORST STREAMS carries the burst_gap of
// --json-run for the same stream: Asterisk_ZFONE_XLITE.pcap's degraded
// 0xbee0f2ed (3 bursts, 369 of 369 positions lost, mean 2460 ms, longest
// run 233) and its 0xb72a7104 with one isolated loss; a stream that lost
// nothing (sip-rtp-g711.pcap) has no line: absent is not zero.
func TestReportLossPatternAgreesWithTheRunDocument(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string
		// json: "ssrc src dst" -> the burst_gap values --json-run must carry
		json map[string][4]float64 // bursts, burst_lost, gap_lost, max_consecutive_lost
		want []string
	}{
		{
			name: "lossy Asterisk ZFONE call shows bursts and gaps of both lossy streams",
			path: testcap.Public("Asterisk_ZFONE_XLITE.pcap"),
			json: map[string][4]float64{
				"0xbee0f2ed 192.168.10.41:64508 192.168.10.40:49848": {3, 369, 0, 233},
				"0xb72a7104 192.168.10.40:49848 192.168.10.41:64508": {0, 0, 1, 1},
			},
			want: []string{
				"  Loss pattern (RFC 3611 §4.7.2 burst/gap, Gmin 16):\n",
				"    0xbee0f2ed 192.168.10.41:64508 -> 192.168.10.40:49848: 3 bursts (369 of 369 lost, 100.0%, mean 2460 ms); gaps 0 of 205 lost (0.0%, mean 1025 ms); longest loss run 233, bursty\n",
				"    0xb72a7104 192.168.10.40:49848 -> 192.168.10.41:64508: 0 bursts; gaps 1 of 791 lost (0.1%, mean 15820 ms); longest loss run 1\n",
			},
		},
		{
			name: "a call that lost nothing has no loss pattern line",
			path: testcap.Public("sip-rtp-g711.pcap"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.path)
			var js bytes.Buffer
			if err := WriteJSON(&js, c); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Streams []struct {
					SSRC     string          `json:"ssrc"`
					Src      string          `json:"src"`
					Dst      string          `json:"dst"`
					BurstGap *media.BurstGap `json:"burst_gap"`
				} `json:"streams"`
			}
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			matched := 0
			for _, s := range doc.Streams {
				want, ok := tc.json[s.SSRC+" "+s.Src+" "+s.Dst]
				if !ok {
					continue
				}
				matched++
				g := s.BurstGap
				if g == nil || [4]float64{float64(g.Bursts), float64(g.BurstLost), float64(g.GapLost), float64(g.MaxConsecutiveLost)} != want {
					t.Errorf("--json-run burst_gap of %s %s = %+v, want %v", s.SSRC, s.Src, g, want)
				}
			}
			if matched != len(tc.json) {
				t.Errorf("--json-run has %d of the %d streams", matched, len(tc.json))
			}
			out := reportText(t, c)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in\n%s", w, out)
				}
			}
			if len(tc.want) == 0 && strings.Contains(out, "Loss pattern") {
				t.Errorf("a loss pattern without a loss:\n%s", out)
			}
		})
	}
}

// The EGRESS block says what -O wrote and -H forwarded, every -H drop by
// reason, and only when the run had them (engine.Capture.SetEgress).
func TestReportEgressBlock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		egress  *engine.EgressStatus
		want    []string
		notWant []string
	}{
		{name: "no -O and no -H writes no block", notWant: []string{"EGRESS"}},
		{
			name: "-O ring names files, deletions, link-type skips and the error",
			egress: &engine.EgressStatus{Output: &engine.OutputStatus{Frames: 12, Bytes: 3456,
				Files: []string{"ring-00002.pcap", "ring-00003.pcap"}, Deleted: 1, SkippedLinkType: 2, Error: "write ring-00003.pcap: no space left\x1b[0m"}},
			want: []string{
				"\nEGRESS\n",
				"  -O: 12 frames (3456 bytes) written to 2 files (ring-00002.pcap, ring-00003.pcap), 1 deleted by the ring.\n",
				"  -O: 2 frames of another link type not written (a classic pcap holds one; write .pcapng to keep them).\n",
				"  -O stopped: write ring-00003.pcap: no space left\n",
			},
			notWant: []string{"-H", "\x1b"},
		},
		{
			name: "-H counts sent by type and every drop by reason",
			egress: &engine.EgressStatus{HEPSend: &hepsend.Stats{Receiver: "127.0.0.1:9060", Network: "udp", Sent: 9, SentSIP: 7, SentRTCP: 2, SentBytes: 4096,
				DroppedQueueFull: 3, DroppedTooLarge: 1, DroppedSendError: 2, DroppedAtStop: 4, LastError: "connection refused"}},
			want: []string{
				"  -H 127.0.0.1:9060 (udp): sent 9 (SIP 7, RTCP 2, 4096 bytes), dropped 10 (queue full 3, too large 1, send errors 2, unsent at stop 4).\n",
				"  -H last error: connection refused\n",
			},
			notWant: []string{"-O"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, testcap.Public("sip-rtp-g711.pcap"))
			if tc.egress != nil {
				c.SetEgress(tc.egress)
			}
			checkText(t, reportText(t, c), tc.want, tc.notWant)
		})
	}
}

// checkText fails for each of want missing from out and each of notWant in
// it.
func checkText(t *testing.T, out string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q in\n%s", w, out)
		}
	}
	for _, w := range notWant {
		if strings.Contains(out, w) {
			t.Errorf("unexpected %q in\n%s", w, out)
		}
	}
}
