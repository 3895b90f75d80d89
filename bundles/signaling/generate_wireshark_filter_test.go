package signaling

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	tr := testcap.LoadTruth[struct {
		SIP struct {
			Dialogs []struct {
				CallID     string `json:"call_id"`
				Messages   int    `json:"messages"`
				FirstFrame int    `json:"first_frame"`
				LastFrame  int    `json:"last_frame"`
			} `json:"dialogs"`
		} `json:"sip"`
	}](t, file)
	out := map[string]struct{ Messages, FirstFrame, LastFrame int }{}
	for _, d := range tr.SIP.Dialogs {
		out[d.CallID] = struct{ Messages, FirstFrame, LastFrame int }{d.Messages, d.FirstFrame, d.LastFrame}
	}
	return out
}

// wfRun runs the answer's tshark command line through the shell (so the
// quoting is checked too) with fields appended, one row per selected frame:
// frame number, RTP SSRC, RTCP sender SSRC, protocols, Call-ID, then the
// addresses and UDP ports (IPv4 or IPv6).
func wfRun(t *testing.T, line string) [][]string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line+" -T fields -E separator=/t -e frame.number -e rtp.ssrc -e rtcp.senderssrc -e frame.protocols -e sip.Call-ID"+
		" -e ip.src -e ipv6.src -e udp.srcport -e ip.dst -e ipv6.dst -e udp.dstport")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l != "" {
			r := strings.Split(l, "\t")
			for len(r) < 11 {
				r = append(r, "")
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// wfTuple is a row's UDP 5-tuple as "src:port>dst:port" (FilterStream's
// Src and Dst form).
func wfTuple(r []string) string {
	ap := func(v4, v6, port string) string {
		if v4 != "" {
			return v4 + ":" + port
		}
		return "[" + v6 + "]:" + port
	}
	return ap(r[5], r[6], r[7]) + ">" + ap(r[8], r[9], r[10])
}

// wfCall is one call a tshark check runs the generated commands for.
type wfCall struct {
	id      string
	streams int // RTP streams sipnab ties to the call (tshark's reference agrees)
	// decodeAs are the -d arguments the command must carry; anyDecode
	// checks only that the command carries the ones the answer lists.
	decodeAs  []string
	anyDecode bool
	// redissected counts media frames tshark reads as another protocol
	// than RTP on the call's 5-tuples (every one counted by sipnab as the
	// stream's RTP); -1: not checked (ZRTP frames sipnab does not count).
	redissected int
}

// wfReference is the SIP part of tshark's reference for one call.
type wfReference struct{ Messages, FirstFrame, LastFrame int }

// wfCheck generates both filters of one call and runs them through tshark:
// the SIP-only command selects exactly the reference's frames; the full one
// those plus, on each included stream's 5-tuple, RTP frames of the stream's
// SSRC (as many as sipnab counted, with the re-dissected ones) and frames
// tshark does not read as RTP, and RTCP only from the call's senders.
func wfCheck(t *testing.T, c *engine.Capture, cl wfCall, want wfReference) {
	t.Helper()
	id := cl.id
	tool := generateWiresharkFilterTool(&deps{capture: c})
	var sipOnly WiresharkFilter
	sxCall(t, tool, `{"call_id":`+sxJSON(id)+`,"include_media":false}`, &sipOnly)
	if sipOnly.SIPMessages != want.Messages {
		t.Errorf("%s: sipnab holds %d messages, tshark's reference %d", id, sipOnly.SIPMessages, want.Messages)
	}
	if !cl.anyDecode && strings.Join(sipOnly.DecodeAs, " ") != strings.Join(cl.decodeAs, " ") {
		t.Errorf("%s: got decode_as %q, want %q", id, sipOnly.DecodeAs, cl.decodeAs)
	}
	for _, d := range sipOnly.DecodeAs {
		if !strings.Contains(sipOnly.Tshark, " -d "+d+" ") {
			t.Errorf("%s: command %s lacks -d %s", id, sipOnly.Tshark, d)
		}
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
	if cl.streams >= 0 && len(full.StreamsIncluded) != cl.streams {
		t.Errorf("%s: got %d streams, want %d", id, len(full.StreamsIncluded), cl.streams)
	}
	rows = wfRun(t, full.Tshark)
	sipFrames, rtcpFrames := 0, 0
	perSSRC := map[string]int{}     // "ssrc tuple" -> RTP frames
	notRTP := map[string]int{}      // tuple -> frames tshark did not read as RTP
	ours := map[string]bool{}       // SSRCs of the call
	tuples := map[string][]string{} // tuple -> SSRCs of its streams
	wantSSRC := map[string]int{}    // "ssrc tuple" -> packets sipnab counted
	for _, s := range full.StreamsIncluded {
		ours[s.SSRC] = true
		k := s.Src + ">" + s.Dst
		tuples[k] = append(tuples[k], s.SSRC)
		wantSSRC[s.SSRC+" "+k] += int(s.Packets)
	}
	for _, r := range rows {
		tu := wfTuple(r)
		switch {
		case r[4] != "":
			sipFrames++
			if r[4] != id {
				t.Errorf("%s: frame %s: SIP of Call-ID %q", id, r[0], r[4])
			}
		case r[1] != "":
			perSSRC[strings.ToLower(r[1])+" "+tu]++
		case r[2] != "":
			rtcpFrames++
			for _, v := range strings.Split(strings.ToLower(r[2]), ",") {
				if !ours[v] {
					t.Errorf("%s: frame %s: RTCP from SSRC %s, not a sender of the call", id, r[0], v)
				}
			}
		case len(tuples[tu]) > 0:
			notRTP[tu]++
		default:
			t.Errorf("%s: frame %s (%s, %s) selected, neither SIP, RTP, RTCP nor on a 5-tuple of the call", id, r[0], r[3], tu)
		}
	}
	if sipFrames != want.Messages {
		t.Errorf("%s: got %d SIP frames with media, want %d", id, sipFrames, want.Messages)
	}
	redissected := 0
	for k, n := range wantSSRC {
		got := perSSRC[k]
		tu := k[strings.IndexByte(k, ' ')+1:]
		extra := 0
		if len(tuples[tu]) == 1 {
			extra = notRTP[tu]
		}
		switch {
		case cl.redissected >= 0 && got+extra != n:
			t.Errorf("%s: tshark selected %d RTP frames and %d re-dissected on %s, sipnab counted %d packets", id, got, extra, k, n)
		case got > n || got+extra < n:
			t.Errorf("%s: tshark selected %d RTP frames (+%d not RTP) on %s, sipnab counted %d packets", id, got, extra, k, n)
		}
		redissected += extra
	}
	if cl.redissected >= 0 && redissected != cl.redissected {
		t.Errorf("%s: got %d frames re-dissected off RTP on the call's 5-tuples, want %d", id, redissected, cl.redissected)
	}
	for k := range perSSRC {
		if _, ok := wantSSRC[k]; !ok {
			t.Errorf("%s: tshark selected RTP %s, not a stream of the call", id, k)
		}
	}
	t.Logf("%s: %d SIP frames, RTP %v, not RTP %v, %d RTCP frames", id, sipFrames, perSSRC, notRTP, rtcpFrames)
}

// wfTsharkCases are the calls TestGenerateWiresharkFilterWithTshark checks
// in detail (their stream counts); TestGenerateWiresharkFilterOnEveryPublicCapture
// covers the other public captures.
var wfTsharkCases = []struct {
	file  string
	calls []wfCall
}{
	{"sip-rtp-g711.pcap", []wfCall{{id: "1-1966@10.0.2.20", streams: 1}, {id: "1-1968@10.0.2.20", streams: 1}}},
	{"sip-over-tcp.pcap", []wfCall{{id: "158936656982201062716@10.33.6.100", streams: 2}}},
	// One SSRC per codec, the same in both directions.
	// SIPp's UAS on 5080 (tshark reads it by heuristics; -d makes it sure).
	{"codec-negotiation.pcap", []wfCall{{id: "1-3685341@127.0.0.1", streams: 4, decodeAs: []string{"udp.port==5080,sip"}}}},
	{"SIP_CALL_RTP_G711", []wfCall{{id: "12013223@200.57.7.195", streams: 2}, {id: "46E1C3CB36304F84A020CF6DD3F96461@Verso.com", streams: 0}}},
	{"rtp-protocol.pcap", []wfCall{{id: "1907983263271201083544@10.33.6.101", streams: 2}}},
	// ZRTP Hello/Commit/DHPart frames (19 frames from 32 on) share the
	// RTP 5-tuples: selected as the call's, not counted as RTP.
	{"Asterisk_ZFONE_XLITE.pcap", []wfCall{{id: "ZDYzOWVlNjEwM2NjZTBjNzliNmM1ZTNiOGZjNWFhN2E.", streams: 3, redissected: -1}, {id: "M2NhZDAwZmYwZGNkYmZjYzQzYmY1MTMxMDQ2MzkzMTk.", streams: 0}}},
	{"sipp-branch-scenario.pcapng", []wfCall{{id: "1-4461@127.0.1.1", streams: 0}, {id: "700-4461@127.0.1.1", streams: 0}}},
}

// TestGenerateWiresharkFilterWithTshark hands each filter to tshark itself
// and checks it selects exactly the call (wfCheck), on public captures
// against tshark's per-dialog reference and on the verdict corpus against
// the generator's counts.
func TestGenerateWiresharkFilterWithTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (Debian package tshark; CI installs it): the filters cannot be checked")
	}
	for _, tc := range wfTsharkCases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel() // its own capture and tshark runs
			c := sxLoad(t, tc.file)
			truth := wfTruth(t, tc.file)
			for _, cl := range tc.calls {
				want, ok := truth[cl.id]
				if !ok {
					t.Fatalf("%s: not in the reference", cl.id)
				}
				wfCheck(t, c, cl, want)
			}
		})
	}
}

// TestGenerateWiresharkFilterOnEveryPublicCapture runs the commands of up
// to three calls of every public capture (the reference's first dialogs
// whose first request is an INVITE) through tshark: each selects exactly
// its call. The captures of wfTsharkCases are left to
// TestGenerateWiresharkFilterWithTshark, which checks their calls in more
// detail: two tshark runs a call on sipp-branch-scenario.pcapng alone took
// 226 s under -race on a loaded machine. -short skips it.
func TestGenerateWiresharkFilterOnEveryPublicCapture(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed")
	}
	if testing.Short() {
		t.Skip("-short: a tshark run per call")
	}
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	detailed := map[string]bool{}
	for _, tc := range wfTsharkCases {
		detailed[tc.file] = true
	}
	for _, name := range names {
		if detailed[name] {
			continue
		}
		b, err := os.ReadFile(testcap.Truth(name))
		if err != nil {
			continue
		}
		var tr struct {
			SIP struct {
				Dialogs []struct {
					CallID     string         `json:"call_id"`
					Messages   int            `json:"messages"`
					FirstFrame int            `json:"first_frame"`
					LastFrame  int            `json:"last_frame"`
					Requests   map[string]int `json:"requests"`
				} `json:"dialogs"`
			} `json:"sip"`
		}
		if json.Unmarshal(b, &tr) != nil {
			continue
		}
		var calls []wfCall
		ref := map[string]wfReference{}
		for _, d := range tr.SIP.Dialogs {
			if d.Requests["INVITE"] == 0 || len(calls) == 3 {
				continue
			}
			calls = append(calls, wfCall{id: d.CallID, streams: -1, redissected: -1, anyDecode: true})
			ref[d.CallID] = wfReference{d.Messages, d.FirstFrame, d.LastFrame}
		}
		if len(calls) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // its own capture and tshark runs
			c := engine.New(engine.Config{Node: "test"}, nil)
			if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
				t.Skipf("sipnab does not read this capture: %v", err)
			}
			c.Wait()
			for _, cl := range calls {
				if _, ok := c.Dialogs().Lookup(cl.id); !ok {
					t.Errorf("%s: in tshark's reference, not in sipnab's store", cl.id)
					continue
				}
				wfCheck(t, c, cl, ref[cl.id])
			}
		})
	}
}

// TestGenerateWiresharkFilterOnTheCorpus runs the commands on the verdict
// corpus (tests/verdicts_sdpcorr_test.go documents each capture):
//
//   - sip-tcp-6060.pcap: tshark reads TCP 6060 as X11 unless told; the
//     command carries -d tcp.port==6060,sip and selects the call's 6 SIP
//     frames (1..70) and 20 RTP frames each way, nothing of the UDP 5060
//     call beside it.
//   - t38-reinvite-488-then-audio.pcap: after the T.38 offer (frame 55)
//     tshark reads the 25 caller frames to 10.20.0.2:30000 as T.38 until
//     the audio re-INVITE; sipnab counts them as RTP of 0x11110001 (75):
//     the 5-tuple clause selects them.
//   - b2bua-sbc-rewrite.pcap: each leg's 6 SIP frames, no media.
func TestGenerateWiresharkFilterOnTheCorpus(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed")
	}
	tests := []struct {
		file string
		call wfCall
		want wfReference
	}{
		{"sip-tcp-6060.pcap", wfCall{id: "tcp6060-call-1", streams: 2, decodeAs: []string{"tcp.port==6060,sip"}}, wfReference{6, 1, 70}},
		{"sip-tcp-6060.pcap", wfCall{id: "udp5060-other-1", streams: 2}, wfReference{6, 3, 72}},
		{"t38-reinvite-488-then-audio.pcap", wfCall{id: "t38-fallback-1", streams: 2, redissected: 25}, wfReference{12, 1, 162}},
		{"b2bua-sbc-rewrite.pcap", wfCall{id: "legA-7f3a9c@10.30.0.10", streams: 0}, wfReference{6, 1, 24}},
		{"b2bua-sbc-rewrite.pcap", wfCall{id: "sbc-b-91d2e0", streams: 0}, wfReference{6, 3, 22}},
	}
	for _, tc := range tests {
		t.Run(tc.file+" "+tc.call.id, func(t *testing.T) {
			c := engine.New(engine.Config{Node: "test"}, nil)
			if err := c.LoadFiles(context.Background(), []string{filepath.Join(testcap.Root(), "testdata", "verdicts", tc.file)}); err != nil {
				t.Fatal(err)
			}
			c.Wait()
			wfCheck(t, c, tc.call, tc.want)
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
