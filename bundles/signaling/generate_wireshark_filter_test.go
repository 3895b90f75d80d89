package signaling

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

// wfTruth reads the per-dialog tshark counts of a capture.
func wfTruth(t *testing.T, file string) map[string]struct{ Messages, FirstFrame, LastFrame int } {
	t.Helper()
	b, err := os.ReadFile(testcap.Truth(file))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		SIP struct {
			Dialogs []struct {
				CallID     string `json:"call_id"`
				Messages   int    `json:"messages"`
				FirstFrame int    `json:"first_frame"`
				LastFrame  int    `json:"last_frame"`
			} `json:"dialogs"`
		} `json:"sip"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	out := map[string]struct{ Messages, FirstFrame, LastFrame int }{}
	for _, d := range tr.SIP.Dialogs {
		out[d.CallID] = struct{ Messages, FirstFrame, LastFrame int }{d.Messages, d.FirstFrame, d.LastFrame}
	}
	return out
}

// wfRun runs the answer's tshark command line through the shell (so the
// quoting is checked too) with fields appended, one row per selected frame:
// frame number, RTP SSRC, RTCP sender SSRC, protocols, Call-ID.
func wfRun(t *testing.T, line string) [][]string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line+" -T fields -E separator=/t -e frame.number -e rtp.ssrc -e rtcp.senderssrc -e frame.protocols -e sip.Call-ID")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			rows = append(rows, strings.Split(l, "\t"))
		}
	}
	return rows
}

// TestGenerateWiresharkFilterWithTshark hands each filter to tshark itself
// and checks it selects exactly the call: without media, the frames of the
// call's SIP messages (count, first and last frame equal to tshark's
// per-dialog reference and to sipnab's message count); with media, those
// frames plus RTP frames whose count per stream equals the packets sipnab
// counted, and RTCP only from the call's senders.
func TestGenerateWiresharkFilterWithTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (Debian package tshark; CI installs it): the filters cannot be checked")
	}
	type call struct {
		id      string
		streams int // RTP streams sipnab ties to the call (tshark's reference agrees)
	}
	tests := []struct {
		file  string
		calls []call
	}{
		{"sip-rtp-g711.pcap", []call{{"1-1966@10.0.2.20", 1}, {"1-1968@10.0.2.20", 1}}},
		{"sip-over-tcp.pcap", []call{{"158936656982201062716@10.33.6.100", 2}}},
		// One SSRC per codec, the same in both directions.
		{"codec-negotiation.pcap", []call{{"1-3685341@127.0.0.1", 4}}},
		{"SIP_CALL_RTP_G711", []call{{"12013223@200.57.7.195", 2}, {"46E1C3CB36304F84A020CF6DD3F96461@Verso.com", 0}}},
		{"rtp-protocol.pcap", []call{{"1907983263271201083544@10.33.6.101", 2}}},
		{"Asterisk_ZFONE_XLITE.pcap", []call{{"ZDYzOWVlNjEwM2NjZTBjNzliNmM1ZTNiOGZjNWFhN2E.", 3}, {"M2NhZDAwZmYwZGNkYmZjYzQzYmY1MTMxMDQ2MzkzMTk.", 0}}},
		{"sipp-branch-scenario.pcapng", []call{{"1-4461@127.0.1.1", 0}, {"700-4461@127.0.1.1", 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			c := sxLoad(t, tc.file)
			truth := wfTruth(t, tc.file)
			tool := generateWiresharkFilterTool(&deps{capture: c})
			for _, cl := range tc.calls {
				id := cl.id
				want, ok := truth[id]
				if !ok {
					t.Fatalf("%s: not in the reference", id)
				}
				var sipOnly WiresharkFilter
				sxCall(t, tool, `{"call_id":`+sxJSON(id)+`,"include_media":false}`, &sipOnly)
				if sipOnly.SIPMessages != want.Messages {
					t.Errorf("%s: sipnab holds %d messages, tshark's reference %d", id, sipOnly.SIPMessages, want.Messages)
				}
				rows := wfRun(t, sipOnly.Tshark)
				for _, r := range rows {
					if r[4] != id {
						t.Errorf("%s: frame %s selected with Call-ID %q", id, r[0], r[4])
					}
				}
				if len(rows) != want.Messages || len(rows) == 0 || rows[0][0] != sxItoa(want.FirstFrame) || rows[len(rows)-1][0] != sxItoa(want.LastFrame) {
					t.Errorf("%s: filter %s selected %d frames %v..%v; want %d frames %d..%d", id, sipOnly.DisplayFilter,
						len(rows), first(rows), last(rows), want.Messages, want.FirstFrame, want.LastFrame)
				}
				if len(sipOnly.StreamsIncluded) != 0 || strings.Contains(sipOnly.DisplayFilter, "rtp") {
					t.Errorf("%s: got media in a SIP-only filter: %s", id, sipOnly.DisplayFilter)
				}

				var full WiresharkFilter
				sxCall(t, tool, `{"call_id":`+sxJSON(id)+`}`, &full)
				if len(full.StreamsIncluded) != cl.streams {
					t.Errorf("%s: got %d streams, want %d", id, len(full.StreamsIncluded), cl.streams)
				}
				rows = wfRun(t, full.Tshark)
				sipFrames, rtcpFrames := 0, 0
				perSSRC := map[string]int{}
				ours := map[string]bool{}
				for _, s := range full.StreamsIncluded {
					ours[s.SSRC] = true
				}
				for _, r := range rows {
					switch {
					case r[4] != "":
						sipFrames++
					case r[1] != "":
						perSSRC[strings.ToLower(r[1])]++
					case r[2] != "":
						rtcpFrames++
						for _, v := range strings.Split(strings.ToLower(r[2]), ",") {
							if !ours[v] {
								t.Errorf("%s: frame %s: RTCP from SSRC %s, not a sender of the call", id, r[0], v)
							}
						}
					default:
						t.Errorf("%s: frame %s selected, neither SIP, RTP nor RTCP of the call", id, r[0])
					}
				}
				if sipFrames != want.Messages {
					t.Errorf("%s: got %d SIP frames with media, want %d", id, sipFrames, want.Messages)
				}
				wantSSRC := map[string]int{}
				for _, s := range full.StreamsIncluded {
					wantSSRC[s.SSRC] += int(s.Packets)
				}
				for ssrc, n := range wantSSRC {
					if perSSRC[ssrc] != n {
						t.Errorf("%s: tshark selected %d RTP frames of %s, sipnab counted %d packets", id, perSSRC[ssrc], ssrc, n)
					}
				}
				if len(perSSRC) != len(wantSSRC) {
					t.Errorf("%s: tshark selected SSRCs %v, want %v", id, perSSRC, wantSSRC)
				}
				t.Logf("%s: %d SIP frames, RTP %v, %d RTCP frames", id, sipFrames, perSSRC, rtcpFrames)
			}
		})
	}
}

func first(rows [][]string) string {
	if len(rows) == 0 {
		return "-"
	}
	return rows[0][0]
}

func last(rows [][]string) string {
	if len(rows) == 0 {
		return "-"
	}
	return rows[len(rows)-1][0]
}

// TestGenerateWiresharkFilterQuoting checks a hostile Call-ID: quotes and
// backslashes are escaped in the filter and the command line survives the
// shell; a control character is refused before the store is read.
func TestGenerateWiresharkFilterQuoting(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	id := `x"y\z';$(id)`
	inv := "INVITE sip:b@example.com SIP/2.0\nVia: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK1\nFrom: <sip:a@example.com>;tag=a\n" +
		"To: <sip:b@example.com>\nCall-ID: " + id + "\nCSeq: 1 INVITE\nContent-Length: 0\n\n"
	c.HandlePacket(sxSIP(t0, "192.0.2.1:5060", "192.0.2.2:5060", inv))
	var got WiresharkFilter
	sxCall(t, generateWiresharkFilterTool(&deps{capture: c}), `{"call_id":`+sxJSON(id)+`}`, &got)
	if want := `sip.Call-ID == "x\"y\\z';$(id)"`; got.DisplayFilter != want {
		t.Errorf("got filter %s, want %s", got.DisplayFilter, want)
	}
	if want := `tshark -r "$CAPTURE" -Y 'sip.Call-ID == "x\"y\\z'\'';$(id)"'`; got.Tshark != want {
		t.Errorf("got command %s, want %s", got.Tshark, want)
	}
	out, err := exec.Command("sh", "-c", "set -- "+strings.TrimPrefix(got.Tshark, "tshark ")+`; printf %s "$4"`).Output()
	if err != nil || string(out) != got.DisplayFilter {
		t.Errorf("the shell read the filter as %q (%v), want %q", out, err, got.DisplayFilter)
	}
	if !strings.Contains(strings.Join(got.Notes, "|"), "not reading a capture file") {
		t.Errorf("got notes %q, want the missing capture file explained", got.Notes)
	}
}

func TestGenerateWiresharkFilterRefusals(t *testing.T) {
	tool := generateWiresharkFilterTool(&deps{capture: sxLoad(t, "sip_call.pcap")})
	for _, tc := range []struct{ name, args, want string }{
		{"CRLF in the Call-ID", `{"call_id":"test-call-1@10.0.0.1\r\nX: y"}`, "control character"},
		{"NUL in the Call-ID", `{"call_id":"a\u0000b"}`, "control character"},
		{"tab in the Call-ID", `{"call_id":"a\tb"}`, "control character"},
		{"bidi override", `{"call_id":"a\u202eb"}`, "control character"},
		{"unknown call", `{"call_id":"nope"}`, "unknown call_id"},
		{"empty call", `{"call_id":""}`, "call_id is required"},
		{"media not a boolean", `{"call_id":"test-call-1@10.0.0.1","include_media":"yes"}`, "include_media"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e := sxCallErr(t, tool, tc.args); e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Errorf("got %d %q, want -32602 mentioning %q", e.Code, e.Message, tc.want)
			}
		})
	}
}

// TestGenerateWiresharkFilterTransportNotes checks the notes on messages
// tshark cannot select as plain SIP: over TLS, and out of HEP envelopes.
func TestGenerateWiresharkFilterTransportNotes(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	inv := "INVITE sip:b@example.com SIP/2.0\nVia: SIP/2.0/TLS 192.0.2.1:5061;branch=z9hG4bK1\nFrom: <sip:a@example.com>;tag=a\n" +
		"To: <sip:b@example.com>\nCall-ID: tls-call\nCSeq: 1 INVITE\nContent-Length: 0\n\n"
	p := sxSIP(t0, "192.0.2.1:5061", "192.0.2.2:5061", inv)
	p.Transport = packet.TransportTLS
	c.HandlePacket(p)
	var got WiresharkFilter
	sxCall(t, generateWiresharkFilterTool(&deps{capture: c}), `{"call_id":"tls-call"}`, &got)
	if notes := strings.Join(got.Notes, "|"); !strings.Contains(notes, "1 message travelled over TLS") {
		t.Errorf("got notes %q, want the TLS message named", got.Notes)
	}
	var plain WiresharkFilter
	sxCall(t, generateWiresharkFilterTool(&deps{capture: sxLoad(t, "sip_call.pcap")}), `{"call_id":"test-call-1@10.0.0.1"}`, &plain)
	if notes := strings.Join(plain.Notes, "|"); strings.Contains(notes, "TLS") || strings.Contains(notes, "HEP") || strings.Contains(notes, "CAPTURE") {
		t.Errorf("got notes %q on a plain UDP call read from a file", plain.Notes)
	}
	if !strings.HasPrefix(plain.Tshark, "tshark -r "+testcap.Public("sip_call.pcap")+" -Y ") {
		t.Errorf("got %s, want the capture file named", plain.Tshark)
	}
}
