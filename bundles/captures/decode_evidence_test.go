package captures

import (
	"bytes"
	"encoding/xml"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// pdmlField is one field of tshark's PDML (-T pdml): its name, where it
// sits in the frame (pos, size) and its value (show).
type pdmlField struct {
	Name   string      `xml:"name,attr"`
	Pos    int         `xml:"pos,attr"`
	Size   int         `xml:"size,attr"`
	Show   string      `xml:"show,attr"`
	Fields []pdmlField `xml:"field"`
}

type pdmlPacket struct {
	Protos []struct {
		Name   string      `xml:"name,attr"`
		Fields []pdmlField `xml:"field"`
	} `xml:"proto"`
}

// tsharkHeaders returns, by frame number, the header lines tshark finds in
// the first SIP message of each SIP frame of a capture: the children of
// sip.msg_hdr, in order.
func tsharkHeaders(t *testing.T, path string) map[uint64][]pdmlField {
	t.Helper()
	out, err := exec.Command("tshark", "-r", path, "-Y", "sip", "-T", "pdml").Output()
	if err != nil {
		t.Skipf("tshark: %v", err)
	}
	dec := xml.NewDecoder(bytes.NewReader(out))
	res := map[uint64][]pdmlField{}
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "packet" {
			continue
		}
		var p pdmlPacket
		if err := dec.DecodeElement(&p, &se); err != nil {
			t.Fatal(err)
		}
		var num uint64
		var hdrs []pdmlField
		for _, pr := range p.Protos {
			for _, f := range pr.Fields {
				if f.Name == "frame.number" {
					num, _ = strconv.ParseUint(f.Show, 10, 64)
				}
				if pr.Name == "sip" && f.Name == "sip.msg_hdr" && hdrs == nil {
					hdrs = []pdmlField{}
					for _, h := range f.Fields {
						// tshark adds fields of its own derivation
						// over a header's line (sip.call_id_generated,
						// sip.auth): one header line each.
						if n := len(hdrs); n > 0 && hdrs[n-1].Pos == h.Pos {
							continue
						}
						hdrs = append(hdrs, h)
					}
				}
			}
		}
		if hdrs != nil {
			res[num] = hdrs
		}
	}
	return res
}

// cpPointers are the evidence pointers the engine gave the messages of
// every dialog (what get_dialog's messages[].frame carries), deduplicated,
// in dialog order.
func cpPointers(capture *engine.Capture) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range capture.Dialogs().CallIDs() {
		det, _ := capture.Dialogs().Get(id)
		for _, m := range det.Messages {
			if p := m.Frame.String(); p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// TestDecodeEvidenceMatchesTshark decodes the frame behind every pointer
// the engine made for five public captures (UDP over Ethernet, SIP over
// TCP, pcapng, a proxy's two legs, a re-INVITE) and checks each header's
// name, value and frame byte range against tshark's PDML of the same frame:
// frame_byte_start is tshark's pos, frame_byte_end its pos+size less the
// CRLF tshark counts in a header line, and the value tshark's show.
func TestDecodeEvidenceMatchesTshark(t *testing.T) {
	caps := []string{"sip-rtp-g711.pcap", "sip-over-tcp.pcap", "sip-auth-failure.pcapng", "sip-proxy.pcap", "register-invite-reinvite-bye.pcap"}
	for _, name := range caps {
		t.Run(name, func(t *testing.T) {
			capture := cpLoad(t, name)
			tools := cpTools(t, capture, cpRoot(t, name), sdk.EnvOptions{})
			want := tsharkHeaders(t, testcap.Public(name))
			frames, headers := 0, 0
			for _, p := range cpPointers(capture) {
				var got DecodeEvidence
				cpCall(t, tools["decode_evidence"], `{"frame_ref":`+cpJSON(p)+`}`, &got)
				if got.Status != statusVerified || got.SIP == nil {
					t.Fatalf("%s: %+v, want a verified SIP frame", p, got)
				}
				th, ok := want[got.Ordinal]
				if !ok {
					t.Fatalf("%s: tshark finds no SIP in frame %d", p, got.Ordinal)
				}
				if got.PayloadOffset == nil || got.SIP.RangesUnavailable {
					t.Fatalf("%s: payload offset unknown (%+v)", p, got)
				}
				if len(got.SIP.Headers) != len(th) || got.SIP.HeaderCount != len(th) {
					t.Fatalf("%s: %d headers, tshark %d", p, len(got.SIP.Headers), len(th))
				}
				for i, h := range got.SIP.Headers {
					tf := th[i]
					if *h.FrameByteStart != tf.Pos || *h.FrameByteEnd != tf.Pos+tf.Size-2 {
						t.Errorf("%s header %d %s: frame bytes [%d,%d), tshark pos %d size %d", p, i, h.Name, *h.FrameByteStart, *h.FrameByteEnd, tf.Pos, tf.Size)
					}
					// tshark shows some values with their name
					// (Remote-Party-ID: ...).
					show := strings.TrimPrefix(tf.Show, h.Name+": ")
					if v := strings.TrimSuffix(strings.TrimPrefix(h.Value, sdk.FenceOpen), sdk.FenceClose); v != answer.Unfenced(show) {
						t.Errorf("%s header %d %s: value %q, tshark %q", p, i, h.Name, v, tf.Show)
					}
					if *h.MessageByteEnd-*h.MessageByteStart != *h.FrameByteEnd-*h.FrameByteStart {
						t.Errorf("%s header %d: message and frame ranges differ in length", p, i)
					}
					headers++
				}
				frames++
			}
			if frames == 0 || headers < 5*frames {
				t.Errorf("checked %d frames, %d headers: want every SIP frame", frames, headers)
			}
			t.Logf("%s: %d frames, %d headers agree with tshark", name, frames, headers)
		})
	}
}

// TestDecodeEvidenceSampleFrame: frame 1 of the sample capture, checked by
// hand against tshark -r testdata/sip-rtp-g711.pcap -Y frame.number==1
// -T pdml: 500 bytes on Ethernet, 10.0.2.20:5060 → 10.0.2.15:5060 UDP,
// the SIP payload at offset 42 (14 + 20 + 8), 458 bytes, an INVITE with 9
// headers; field keeps only Call-ID (its compact form i asks the same).
func TestDecodeEvidenceSampleFrame(t *testing.T) {
	tools := cpTools(t, cpLoad(t, sampleCapture), cpRoot(t, sampleCapture), sdk.EnvOptions{})
	var got DecodeEvidence
	r := cpCall(t, tools["decode_evidence"], `{"frame_ref":"`+samplePointer+`"}`, &got)
	if got.Status != statusVerified || *got.FrameBytes != 500 || *got.LinkType != 1 || *got.PayloadOffset != 42 || *got.PayloadBytes != 458 {
		t.Errorf("frame: %+v", got)
	}
	if n := got.Network; n == nil || *n != (Network{SrcAddr: "10.0.2.20", SrcPort: 5060, DstAddr: "10.0.2.15", DstPort: 5060, Transport: "UDP"}) {
		t.Errorf("network: %+v", got.Network)
	}
	if s := got.SIP; s == nil || !s.IsRequest || s.Method != "INVITE" || s.HeaderCount != 9 || s.HeadersReturned != 9 ||
		s.StartLine != sdk.FenceOpen+"INVITE sip:test@10.0.2.15:5060 SIP/2.0"+sdk.FenceClose {
		t.Errorf("sip: %+v", got.SIP)
	}
	if !r.Fenced {
		t.Errorf("fenced header values without the provenance note last")
	}
	if strings.Contains(r.Blocks[0], "timestamp") || strings.Contains(r.Blocks[0], "2016-") {
		t.Errorf("the answer carries a time: %s", r.Blocks[0])
	}
	for _, field := range []string{"Call-ID", "i", "call-id"} {
		var one DecodeEvidence
		cpCall(t, tools["decode_evidence"], `{"frame_ref":"`+samplePointer+`","field":"`+field+`"}`, &one)
		if one.SIP.HeaderCount != 9 || one.SIP.HeadersReturned != 1 || one.SIP.Headers[0].Index != 3 ||
			one.SIP.Headers[0].Value != sdk.FenceOpen+"1-1966@10.0.2.20"+sdk.FenceClose || *one.SIP.Headers[0].FrameByteStart != 226 {
			t.Errorf("field %s: %+v", field, one.SIP)
		}
	}
}

// TestDecodeEvidenceNotSIPAndUnresolvable: frame 6 of the sample is RTP
// (tshark -d udp.port==6000,rtp: 10.0.2.15:27942 → 10.0.2.20:6000; the
// engine makes no pointer for media, so it is hashed here): decoded, not
// SIP. A wrong digest is unresolvable with nothing decoded; a malformed
// pointer and a missing root are refused.
func TestDecodeEvidenceNotSIPAndUnresolvable(t *testing.T) {
	root := cpRoot(t, sampleCapture)
	tools := cpTools(t, cpLoad(t, sampleCapture), root, sdk.EnvOptions{})
	rtp := cpFramePointer(t, filepath.Join(root, sampleCapture), 6)
	var got DecodeEvidence
	cpCall(t, tools["decode_evidence"], `{"frame_ref":"`+rtp+`"}`, &got)
	if got.Status != statusVerified || got.SIP != nil || got.NotSIP == "" || got.Network == nil ||
		*got.Network != (Network{SrcAddr: "10.0.2.15", SrcPort: 27942, DstAddr: "10.0.2.20", DstPort: 6000, Transport: "UDP"}) {
		t.Errorf("RTP frame: %+v", got)
	}
	var bad DecodeEvidence
	cpCall(t, tools["decode_evidence"], `{"frame_ref":"sip-rtp-g711.pcap#1@0000000000000000"}`, &bad)
	if bad.Status != statusUnresolvable || !strings.Contains(bad.Reason, "digest mismatch") || bad.SIP != nil || bad.FrameBytes != nil {
		t.Errorf("tampered digest: %+v", bad)
	}
	if e := cpRefused(t, tools["decode_evidence"], `{"frame_ref":"frame 1"}`); e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, "<source>#<ordinal>@") {
		t.Errorf("malformed pointer: %+v", e)
	}
	none := cpTools(t, cpLoad(t, sampleCapture), "", sdk.EnvOptions{})
	if e := cpRefused(t, none["decode_evidence"], `{"frame_ref":"`+samplePointer+`"}`); e.Kind != sdk.KindNotEnabled {
		t.Errorf("no root: %+v", e)
	}
}

// TestDecodeEvidenceUnwrapsHEP: testdata/verdicts/hep-two-agents.pcap
// carries one call as HEP3 copies from two agents (10.30.0.11 and
// 10.30.0.12 to 10.30.0.100:9060; this tshark has no HEP dissector). Each
// pointer the engine made decodes through the envelope: network is the
// envelope's addressing (frame 1: 10.30.0.10:5060 → 10.30.0.20:5060, the
// call's INVITE), and every header's frame range holds, in the frame's own
// bytes, that header's line: its name, a colon, its value.
func TestDecodeEvidenceUnwrapsHEP(t *testing.T) {
	path := filepath.Join(testcap.Root(), "testdata", "verdicts", "hep-two-agents.pcap")
	capture := testengine.Load(t, engine.Config{}, path)
	root := t.TempDir()
	cpCopy(t, path, filepath.Join(root, "hep-two-agents.pcap"))
	tools := cpTools(t, capture, root, sdk.EnvOptions{})
	ptrs := cpPointers(capture)
	if len(ptrs) == 0 {
		t.Fatal("no pointers")
	}
	for i, p := range ptrs {
		var got DecodeEvidence
		cpCall(t, tools["decode_evidence"], `{"frame_ref":"`+p+`"}`, &got)
		if got.Status != statusVerified || !got.ViaHEP || got.SIP == nil || got.PayloadOffset == nil {
			t.Fatalf("%s: %+v", p, got)
		}
		if i == 0 && *got.Network != (Network{SrcAddr: "10.30.0.10", SrcPort: 5060, DstAddr: "10.30.0.20", DstPort: 5060, Transport: "UDP"}) {
			t.Errorf("%s: network %+v", p, got.Network)
		}
		_, frame := cpFrame(t, path, got.Ordinal)
		for _, h := range got.SIP.Headers {
			line := string(frame[*h.FrameByteStart:*h.FrameByteEnd])
			v := strings.TrimSuffix(strings.TrimPrefix(h.Value, sdk.FenceOpen), sdk.FenceClose)
			if name, rest, ok := strings.Cut(line, ":"); !ok || strings.TrimSpace(name) != h.Name || strings.TrimSpace(rest) != v {
				t.Errorf("%s %s: frame bytes %q", p, h.Name, line)
			}
		}
	}
}
