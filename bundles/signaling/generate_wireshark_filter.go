package signaling

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/wsfilter"
	"github.com/sipnab/sipnab/sdk"
)

// wiresharkFilterSchemaVersion is generate_wireshark_filter's response
// schema version.
const wiresharkFilterSchemaVersion = 1

type wiresharkFilterIn struct {
	CallID       string `json:"call_id" desc:"Call-ID, verbatim"`
	IncludeMedia *bool  `json:"include_media,omitempty" default:"true" desc:"also select the call's RTP (by SSRC and 5-tuple) and its RTCP (default true)"`
}

// WiresharkFilter is generate_wireshark_filter's answer: a display filter
// selecting one call in Wireshark or tshark, and the command line applying
// it to the capture file sipnab read.
type WiresharkFilter struct {
	// CallID is the call, verbatim.
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
	// DisplayFilter selects the call's SIP (by Call-ID) and, with media,
	// its RTP and RTCP.
	DisplayFilter string `json:"display_filter" desc:"Wireshark display filter"`
	// Tshark is the full command line, every argument shell-quoted.
	Tshark string `json:"tshark" desc:"tshark command line applying the filter, shell-quoted"`
	// SIPMessages is how many SIP messages sipnab saw for the Call-ID
	// (retransmissions and capture duplicates included: msg_count plus
	// timing.duplicates): the frames the SIP part should select, give or
	// take frames carrying several messages over TCP.
	SIPMessages int `json:"sip_messages" desc:"SIP messages sipnab holds for the Call-ID"`
	// DecodeAs are the -d arguments the command carries: SIP on ports
	// tshark does not decode as SIP by default (UDP/TCP 5060).
	DecodeAs []string `json:"decode_as,omitempty" desc:"tshark -d arguments for SIP on non-default ports"`
	// StreamsIncluded are the media streams the filter names ([] without
	// media).
	StreamsIncluded []FilterStream `json:"streams_included" nonnull:"true" desc:"media streams the filter names"`
	// StreamsOmitted counts streams past the 64 a filter names.
	StreamsOmitted int `json:"streams_omitted,omitempty" desc:"streams past the 64 a filter names"`
	// Notes say what the filter does and does not select.
	Notes []string `json:"notes" nonnull:"true" desc:"what the filter does and does not select"`
	sdk.SourceFlags
	// CaptureIdentity names the capture the answer came from.
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	// SchemaVersion of this answer.
	SchemaVersion int `json:"schema_version" desc:"response schema version"`
}

// FilterStream is one stream the filter names.
type FilterStream struct {
	SSRC    string `json:"ssrc" desc:"SSRC (0x00000000 for a fax flow)"`
	Src     string `json:"src" desc:"source address:port"`
	Dst     string `json:"dst" desc:"destination address:port"`
	Kind    string `json:"kind" desc:"audio, video, fax, ..."`
	Packets uint64 `json:"packets" desc:"packets sipnab counted: the frames the stream's clause should select"`
	// RTCP: the filter also selects the RTCP this stream's sender emitted.
	RTCP bool `json:"rtcp" desc:"the sender's RTCP is selected too"`
}

func generateWiresharkFilterTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "generate_wireshark_filter",
		Title: "Wireshark filter for a call",
		Description: "A Wireshark display filter selecting one call (SIP by Call-ID; with include_media, RTP by 5-tuple and " +
			"SSRC and its RTCP) and the tshark command (decode-as for SIP off port 5060).",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "A Wireshark filter for one call", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "a Call-ID holding a control character (no display filter can select it exactly)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in wiresharkFilterIn) (WiresharkFilter, error) {
		return generateWiresharkFilter(d, c, in)
	})
}

func generateWiresharkFilter(d *deps, c *sdk.Call, in wiresharkFilterIn) (WiresharkFilter, error) {
	if in.CallID == "" {
		return WiresharkFilter{}, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs or find_problems")
	}
	if _, err := wsfilter.Quote(in.CallID); err != nil {
		return WiresharkFilter{}, sdk.InvalidParams("call_id %q holds a control character: a display filter escapes only \\ and \", "+
			"so no filter can select this Call-ID exactly (a filter that selects the wrong packets is worse than none)", answer.Clip(in.CallID))
	}
	src := answer.SourceState(d.capture.Status())
	sum, ok := d.capture.Dialogs().Lookup(in.CallID)
	if !ok {
		return WiresharkFilter{}, answer.UnknownCall("call_id", in.CallID)
	}
	media := in.IncludeMedia == nil || *in.IncludeMedia
	out := WiresharkFilter{
		CallID:          sum.CallID,
		SIPMessages:     sum.MsgCount + sum.Timing.Duplicates, // tshark selects every copy
		StreamsIncluded: []FilterStream{},
		Notes:           []string{},
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
		SchemaVersion:   wiresharkFilterSchemaVersion,
	}
	var streams []wsfilter.Stream
	var kinds []string
	var packets []uint64
	if media {
		if m := d.capture.Media(); m != nil {
			rtcp := false
			for _, s := range m.StreamsFor(sum.CallID) {
				fs, ok := filterStream(s.SSRC, s.Src, s.Dst, s.Kind)
				if !ok {
					continue
				}
				if r := s.EndpointReported; r != nil && r.SenderReports+r.ReceptionReports > 0 {
					rtcp = true
				}
				streams = append(streams, fs)
				kinds = append(kinds, s.Kind)
				packets = append(packets, s.Packets)
			}
			// The call's RTCP is selected per sender when the capture holds
			// any: a report about one stream is sent by the other party.
			for i := range streams {
				streams[i].RTCP = rtcp && !streams[i].Fax
			}
		}
	}
	// The filter names the first k streams: at most wsfilter.MaxStreams,
	// and no more than fit --mcp-max-response-bytes on the wire (each
	// stream adds a clause and a row); streams_omitted counts the rest.
	base := out
	assemble := func(k int) (WiresharkFilter, error) {
		out := base
		out.StreamsIncluded = []FilterStream{}
		out.Notes = []string{}
		f, err := wsfilter.ForCall(sum.CallID, streams[:k])
		if err != nil {
			if errors.Is(err, wsfilter.ErrControl) {
				return WiresharkFilter{}, sdk.InvalidParams("call_id %q holds a control character", answer.Clip(in.CallID))
			}
			return WiresharkFilter{}, sdk.Internal("building the filter: %v", err)
		}
		out.DisplayFilter = f.Display
		out.StreamsOmitted = len(streams) - len(f.Streams)
		for i, s := range f.Streams {
			out.StreamsIncluded = append(out.StreamsIncluded, FilterStream{
				SSRC: fmt.Sprintf("0x%08x", s.SSRC), Src: s.Src.String(), Dst: s.Dst.String(),
				Kind: kinds[i], Packets: packets[i], RTCP: s.RTCP,
			})
		}

		capture, capNote := captureArg(d)
		decode := sipDecodeAs(d, sum.CallID)
		out.Tshark = wsfilter.Command(capture, f.Display, wsfilter.Options{Heuristics: len(f.Streams) > 0, DecodeAs: decode})
		out.DecodeAs = decode
		out.Notes = append(out.Notes, "SIP is selected by Call-ID: every message under it (every leg, retransmissions, both sides of a proxy). "+
			"Other legs of the call (a B2BUA's far side) carry other Call-IDs: find_correlated lists them.")
		if capNote != "" {
			out.Notes = append(out.Notes, capNote)
		}
		switch {
		case !media:
			out.Notes = append(out.Notes, "media not included (include_media is false)")
		case len(f.Streams) == 0:
			out.Notes = append(out.Notes, "no RTP stream is tied to this call, so the filter selects SIP only")
		default:
			out.Notes = append(out.Notes, "RTP is selected by 5-tuple and SSRC (a frame on the 5-tuple that tshark does not read as RTP, "+
				"e.g. re-dissected as T.38 after an SDP offer, is selected too), RTCP by the sender's SSRC between the same hosts; "+
				"the -o rtp.heuristic_rtp:TRUE and rtcp.heuristic_rtcp:TRUE options let tshark decode media it cannot tie to SDP it saw")
		}
		if out.StreamsOmitted > 0 {
			out.Notes = append(out.Notes, fmt.Sprintf("%d streams past the first %d are not in the filter (at most %d, and what fits --mcp-max-response-bytes)",
				out.StreamsOmitted, len(f.Streams), wsfilter.MaxStreams))
		}
		if !src.Exhausted {
			out.Notes = append(out.Notes, "the capture is still being read: messages and streams seen later are not counted here")
		}
		out.Notes = append(out.Notes, transportNotes(d, sum.CallID)...)

		return out, nil
	}
	var buildErr error
	k, err := c.FitPage(min(len(streams), wsfilter.MaxStreams), 0, "stream", func(k int) any {
		w, err := assemble(k)
		buildErr = errors.Join(buildErr, err)
		return w
	})
	if buildErr != nil {
		return WiresharkFilter{}, buildErr
	}
	if err != nil {
		return WiresharkFilter{}, err
	}
	return assemble(k)
}

// sipDefaultPort is the port tshark's SIP dissector registers for UDP and
// TCP (tshark -G decodes: udp.port 5060, tcp.port 5060; TLS 5061 needs
// keys anyway).
const sipDefaultPort = 5060

// maxDecodeAs bounds the -d arguments of one command.
const maxDecodeAs = 8

// sipDecodeAs returns the tshark -d arguments ("tcp.port==6060,sip") that
// make tshark read every plain UDP or TCP SIP message of the call as SIP:
// for each message on neither port 5060, one of its ports, the port most
// of the call's messages share first (a server port covers both
// directions). Messages read out of HEP or from TLS are not on the wire
// as plain SIP and need none.
func sipDecodeAs(d *deps, callID string) []string {
	det, ok := d.capture.Dialogs().Get(callID)
	if !ok {
		return nil
	}
	type portKey struct {
		proto string
		port  uint16
	}
	type need struct{ a, b portKey }
	var needs []need
	count := map[portKey]int{}
	for i := range det.Messages {
		m := &det.Messages[i]
		if m.Origin == packet.OriginHEP || m.Origin == packet.OriginUprobe {
			continue
		}
		proto := ""
		switch m.Transport {
		case packet.TransportUDP:
			proto = "udp"
		case packet.TransportTCP:
			proto = "tcp"
		default:
			continue
		}
		sp, dp := m.Src.Port(), m.Dst.Port()
		if sp == sipDefaultPort || dp == sipDefaultPort || sp == 0 || dp == 0 {
			continue
		}
		n := need{portKey{proto, sp}, portKey{proto, dp}}
		needs = append(needs, n)
		count[n.a]++
		count[n.b]++
	}
	chosen := map[portKey]bool{}
	var out []string
	for _, n := range needs {
		if chosen[n.a] || chosen[n.b] {
			continue
		}
		p := n.b
		if count[n.a] > count[n.b] || (count[n.a] == count[n.b] && n.a.port < n.b.port) {
			p = n.a
		}
		if len(out) >= maxDecodeAs {
			break
		}
		chosen[p] = true
		out = append(out, fmt.Sprintf("%s.port==%d,sip", p.proto, p.port))
	}
	return out
}

// transportNotes say which of the call's messages tshark cannot select
// from the capture as plain SIP: encrypted ones, and ones sipnab read out
// of HEP envelopes.
func transportNotes(d *deps, callID string) []string {
	det, ok := d.capture.Dialogs().Get(callID)
	if !ok {
		return nil
	}
	enc, hep := 0, 0
	for i := range det.Messages {
		m := &det.Messages[i]
		switch {
		case m.Transport == packet.TransportTLS, m.Transport == packet.TransportWSS, m.Origin == packet.OriginUprobe:
			enc++
		}
		if m.Origin == packet.OriginHEP {
			hep++
		}
	}
	var notes []string
	if enc > 0 {
		notes = append(notes, sxPlural(enc, "message")+" travelled over TLS or secure WebSocket (or were read from a TLS library): tshark selects them only when given the session keys")
	}
	if hep > 0 {
		notes = append(notes, sxPlural(hep, "message")+" reached sipnab inside HEP envelopes: tshark selects them only with a HEP dissector, which Wireshark 4.0 lacks (it reads them as UDP data)")
	}
	return notes
}

// filterStream converts a stream of the media store.
func filterStream(ssrc, src, dst, kind string) (wsfilter.Stream, bool) {
	s, err1 := netip.ParseAddrPort(src)
	t, err2 := netip.ParseAddrPort(dst)
	n, err3 := strconv.ParseUint(strings.TrimPrefix(ssrc, "0x"), 16, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return wsfilter.Stream{}, false
	}
	return wsfilter.Stream{SSRC: uint32(n), Src: s, Dst: t, Fax: kind == "fax"}, true
}

// captureArg names the capture file for the tshark line: the file sipnab
// read, or a shell variable when there is no single file.
func captureArg(d *deps) (string, string) {
	files := d.capture.Status().Files
	switch len(files) {
	case 0:
		return "", "sipnab is not reading a capture file: save the traffic to a file and set CAPTURE to its path"
	case 1:
		return files[0].Path, ""
	}
	return files[0].Path, fmt.Sprintf("sipnab read %d capture files; the command names the first: run it on each, or merge them with mergecap first", len(files))
}
