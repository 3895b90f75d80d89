package tests

// tshark runs every generate_wireshark_filter command of the verdict corpus
// and of the public captures, and it selects exactly the call's frames.
// bundles/signaling/generate_wireshark_filter_test.go covers the public
// captures; this file covers every call of every corpus capture through the
// binary.

import (
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// wsDiff says where tshark 4.0 and sipnab legitimately differ on one
// corpus capture, call by call, and why. A capture not listed must agree
// frame for frame: the command selects exactly the frames of the call's
// messages and, per stream, as many frames on its 5-tuple as sipnab counted
// packets.
type wsDiff struct {
	// duplicates are the capture duplicates sipnab counts per call
	// (timing.duplicates: the same bytes seen again at the capture point). They
	// are no message of get_dialog, yet they carry the Call-ID, so tshark
	// selects every copy: sip_messages counts them for that reason.
	duplicates map[string]int
	// unreadable are, per call, the frames of sipnab's messages that
	// tshark 4.0 does not read as SIP (the command cannot select them).
	unreadable map[string][]int
	// hep: every SIP frame is a HEP envelope; tshark 4.0 has no HEP
	// dissector, so the command selects neither the messages nor their
	// copies, and the answer's notes must say so.
	hep bool
	// notRTP are, per call, the frames on the call's 5-tuples that tshark
	// reads as another protocol than RTP (selected by the 5-tuple clause,
	// counted by sipnab as the stream's packets).
	notRTP map[string]int
	reason string
}

// wsExpected lists every corpus capture where the run differs from sipnab's
// frames, with the reason. A capture absent here has no difference.
var wsExpected = map[string]wsDiff{
	"t38-reinvite-488-then-audio.pcap": {notRTP: map[string]int{"t38-fallback-1": 25},
		reason: "after the T.38 re-INVITE (frame 55) tshark reads the caller's 25 RTP frames to 10.20.0.2:30000 as T.38 until the audio re-INVITE; sipnab counts them as RTP of 0x11110001 and the 5-tuple clause selects them"},
	"mirrored-duplicates.pcap": {duplicates: map[string]int{"mirror-1@corp.example": 7},
		reason: "a mirror port copies frames 1,3,5,7,9 (INVITE..BYE) and 211,213 into 2,4,6,8,10,212,214: duplicates, not messages; tshark selects each copy"},
	"invite-retransmitted-mirrored.pcap": {duplicates: map[string]int{"unanswered-2@corp.example": 5},
		reason: "the mirrored call's five INVITE sends are each copied once (frames 2,4,6,8,10): duplicates beside the retransmissions; tshark selects each copy"},
	"sbc-two-interfaces.pcapng": {duplicates: map[string]int{"sbc-1@corp.example": 7},
		reason: "each message is captured on both interfaces of the SBC (frames 2,4,..,14 repeat 1,3,..,13): duplicates; tshark selects both"},
	"hep-two-agents.pcap": {hep: true, duplicates: map[string]int{"hep-1@corp.example": 7}, unreadable: map[string][]int{"hep-1@corp.example": {1, 3, 5, 7, 9, 11, 13}},
		reason: "every message is in a HEPv3 envelope on UDP 9060, sent by two agents (frames 2,4,..,14 are the second agent's copies); tshark 4.0 has no HEP dissector and reads them as UDP data: the command selects nothing, the answer's notes say why"},
	"junk-before-request.pcap": {unreadable: map[string][]int{"junk@weak": {1}, "crlf@weak": {3}},
		reason: "frame 1 has junk bytes before its request line and frame 3 a leading CRLF pair; sipnab reads both requests (and reports the malformed one), tshark 4.0 reads them as UDP data: the command selects only the responses"},
}

// wsRow is one frame the command selected.
type wsRow struct {
	frame          int
	ssrc, rtcp     string
	protos, callID string
	tuple          string
}

// wsRun runs a generated command line exactly as given (through the shell,
// so its quoting is checked) with fields appended.
func wsRun(t *testing.T, line string) []wsRow {
	t.Helper()
	cmd := exec.Command("sh", "-c", line+" -T fields -E separator=/t -E occurrence=f -e frame.number -e rtp.ssrc -e rtcp.senderssrc"+
		" -e frame.protocols -e sip.Call-ID -e ip.src -e ipv6.src -e udp.srcport -e ip.dst -e ipv6.dst -e udp.dstport")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var rows []wsRow
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if l == "" {
			continue
		}
		r := strings.Split(l, "\t")
		for len(r) < 11 {
			r = append(r, "")
		}
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatalf("tshark row %q", l)
		}
		ap := func(v4, v6, port string) string {
			if v4 != "" {
				return v4 + ":" + port
			}
			return "[" + v6 + "]:" + port
		}
		rows = append(rows, wsRow{frame: n, ssrc: strings.ToLower(r[1]), rtcp: strings.ToLower(r[2]), protos: r[3], callID: r[4],
			tuple: ap(r[5], r[6], r[7]) + ">" + ap(r[8], r[9], r[10])})
	}
	return rows
}

// wsFrameNumber reads N from a frame ref "file#N@hash".
func wsFrameNumber(ref string) int {
	i := strings.LastIndexByte(ref, '#')
	if i < 0 {
		return 0
	}
	s := ref[i+1:]
	if j := strings.IndexByte(s, '@'); j >= 0 {
		s = s[:j]
	}
	n, _ := strconv.Atoi(s)
	return n
}

// TestVerdictCorpusWiresharkFiltersSelectTheCallsFrames starts the binary on
// every corpus capture, lists its calls (list_dialogs), and for each runs
// the tshark command generate_wireshark_filter gives, exactly as given (its
// -d options included): the frames it selects are the frames of the call's
// messages in get_dialog, the copies sipnab counts as duplicates, and on
// each stream's 5-tuple as many frames as sipnab counted packets; nothing
// else. wsExpected names each capture where tshark 4.0 differs, and why.
// One tshark run per call (about 50 in all).
func TestVerdictCorpusWiresharkFiltersSelectTheCallsFrames(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (Debian package tshark): the generated commands cannot be run")
	}
	for _, vc := range sortedVerdictCorpus() {
		t.Run(vc.Name, func(t *testing.T) {
			s := mdlSession(t, verdictPath(vc.Name))
			var ids []string
			seen := map[string]bool{}
			for _, r := range mdlRows(t, s, "list_dialogs", nil) {
				id := unfence(r["call_id"].(string))
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				t.Fatal("no call in the capture")
			}
			for _, id := range ids {
				wsCheckCall(t, s, vc.Name, id)
			}
		})
	}
}

// wsCheckCall generates the full command (SIP and media) of one call, runs
// it, and compares the selected frames with the call's frames in sipnab.
func wsCheckCall(t *testing.T, s *rawSession, capture, id string) {
	t.Helper()
	d, _ := s.ok("get_dialog", map[string]any{"call_id": id, "max_messages": 1000})
	ours := map[int]bool{}
	for _, m := range d["messages"].([]any) {
		ours[wsFrameNumber(m.(map[string]any)["frame"].(string))] = true
	}
	w, _ := s.ok("generate_wireshark_filter", map[string]any{"call_id": id})
	sipMessages := int(w["sip_messages"].(float64))
	type stream struct {
		ssrc, tuple string
		packets     int
	}
	var streams []stream
	tuples := map[string]int{}
	for _, x := range w["streams_included"].([]any) {
		m := x.(map[string]any)
		st := stream{ssrc: strings.ToLower(m["ssrc"].(string)), tuple: m["src"].(string) + ">" + m["dst"].(string), packets: int(m["packets"].(float64))}
		streams = append(streams, st)
		tuples[st.tuple]++
	}
	rows := wsRun(t, w["tshark"].(string))
	var sipFrames, missing, extra, other []int
	sel := map[int]bool{}
	rtp := map[string]int{}
	notRTP := map[string]int{}
	for _, r := range rows {
		sel[r.frame] = true
		switch {
		case r.callID != "":
			sipFrames = append(sipFrames, r.frame)
			if r.callID != id {
				t.Errorf("%s: frame %d: SIP of Call-ID %q", id, r.frame, r.callID)
			}
			if !ours[r.frame] {
				extra = append(extra, r.frame)
			}
		case r.ssrc != "":
			rtp[r.ssrc+" "+r.tuple]++
		case r.rtcp != "":
		case tuples[r.tuple] > 0:
			notRTP[r.tuple]++
		default:
			other = append(other, r.frame)
		}
	}
	for f := range ours {
		if !sel[f] {
			missing = append(missing, f)
		}
	}
	sort.Ints(missing)
	want := wsExpected[capture]
	dups := 0
	if tm, ok := d["dialog"].(map[string]any)["timing"].(map[string]any); ok {
		if v, ok := tm["duplicates"].(float64); ok {
			dups = int(v)
		}
	}
	if dups != want.duplicates[id] {
		t.Errorf("%s: sipnab counts %d duplicates, expected %d (%s)", id, dups, want.duplicates[id], want.reason)
	}
	if sipMessages != len(ours)+dups {
		t.Errorf("%s: sip_messages %d, but get_dialog holds %d messages and %d duplicates", id, sipMessages, len(ours), dups)
	}
	if fmt.Sprint(missing) != fmt.Sprint(want.unreadable[id]) && !(len(missing) == 0 && len(want.unreadable[id]) == 0) {
		t.Errorf("%s: tshark does not select sipnab's SIP frames %v; expected %v (%s)", id, missing, want.unreadable[id], want.reason)
	}
	wantExtra := dups
	if want.hep {
		wantExtra = 0
		if !strings.Contains(fmt.Sprint(w["notes"]), "7 messages reached sipnab inside HEP envelopes: tshark selects them only with a HEP dissector, which Wireshark 4.0 lacks") {
			t.Errorf("%s: the answer's notes do not say its messages came in HEP envelopes: %v", id, w["notes"])
		}
	}
	if len(extra) != wantExtra {
		t.Errorf("%s: tshark selects frames %v beside sipnab's messages; expected %d duplicate copies (%s)", id, extra, wantExtra, want.reason)
	}
	if len(other) > 0 {
		t.Errorf("%s: frames %v selected, neither SIP, RTP, RTCP of the call nor on its 5-tuples", id, other)
	}
	nr := 0
	for _, n := range notRTP {
		nr += n
	}
	if nr != want.notRTP[id] {
		t.Errorf("%s: tshark reads %d frames on the call's 5-tuples as another protocol than RTP (%v); expected %d (%s)", id, nr, notRTP, want.notRTP[id], want.reason)
	}
	for _, st := range streams {
		got := rtp[st.ssrc+" "+st.tuple]
		re := 0
		if tuples[st.tuple] == 1 {
			re = notRTP[st.tuple]
		}
		if got+re != st.packets {
			t.Errorf("%s: stream %s %s: tshark selected %d RTP frames and %d re-dissected, sipnab counted %d packets", id, st.ssrc, st.tuple, got, re, st.packets)
		}
	}
	for k := range rtp {
		found := false
		for _, st := range streams {
			found = found || st.ssrc+" "+st.tuple == k
		}
		if !found {
			t.Errorf("%s: tshark selected RTP %s, not a stream of the call", id, k)
		}
	}
	t.Logf("%s: %s", id, fmt.Sprintf("sip_messages %d, SIP frames %d, missing %v, extra %v, streams %d, RTP %v, not RTP %v",
		sipMessages, len(sipFrames), missing, extra, len(streams), rtp, notRTP))
}
