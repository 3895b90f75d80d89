package captures

import (
	"bytes"
	"context"
	"net/netip"
	"strings"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/sdk"
)

// decodeSchemaVersion is decode_evidence's response schema version.
const decodeSchemaVersion = 1

type decodeEvidenceIn struct {
	FrameRef string `json:"frame_ref" desc:"one evidence pointer <source>#<ordinal>@<digest>"`
	Field    string `json:"field,omitempty" desc:"only the headers of this name (case-insensitive; a compact form matches its long form, e.g. i or Call-ID)"`
}

// Network is the transport addressing of the decoded payload.
type Network struct {
	SrcAddr   string `json:"src_addr" desc:"source address"`
	SrcPort   uint16 `json:"src_port" desc:"source port"`
	DstAddr   string `json:"dst_addr" desc:"destination address"`
	DstPort   uint16 `json:"dst_port" desc:"destination port"`
	Transport string `json:"transport" enum:"UDP|TCP|SCTP|TLS|WS|WSS" desc:"transport"`
}

// DecodedHeader is one header line of the SIP message, with the byte range
// the parser recorded as it walked the message (core/sip Header.Start/End:
// the logical line, folds included, CRLF excluded).
type DecodedHeader struct {
	Name  string `json:"name" desc:"header name as spelled on the wire"`
	Value string `json:"value" desc:"unfolded value (sender text, fenced)"`
	Index int    `json:"index" desc:"position among the message's headers, from 0"`
	// The message-relative range is absent for a header that came from no
	// bytes; the frame-relative one also when the payload does not sit at
	// exactly one offset of the frame.
	MessageByteStart *int `json:"message_byte_start,omitempty" desc:"start of the header line within the SIP message"`
	MessageByteEnd   *int `json:"message_byte_end,omitempty" desc:"end (exclusive, before CRLF) within the SIP message"`
	FrameByteStart   *int `json:"frame_byte_start,omitempty" desc:"start within the frame's captured bytes"`
	FrameByteEnd     *int `json:"frame_byte_end,omitempty" desc:"end (exclusive) within the frame's captured bytes"`
}

// DecodedSIP is the SIP message of the payload.
type DecodedSIP struct {
	HeaderCount     int             `json:"header_count" desc:"headers the message carries"`
	HeadersReturned int             `json:"headers_returned" desc:"headers in headers (those matching field)"`
	Headers         []DecodedHeader `json:"headers" desc:"header lines in wire order"`
	IsRequest       bool            `json:"is_request" desc:"request (true) or response"`
	Method          string          `json:"method,omitempty" desc:"request method (requests only)"`
	StartLine       string          `json:"start_line" desc:"the start line (sender text, fenced)"`
	// RangesUnavailable: the frame-relative ranges were dropped because the
	// payload does not sit at exactly one offset of the frame (reassembled
	// from several frames, or its bytes occur twice).
	RangesUnavailable bool `json:"ranges_unavailable,omitempty" desc:"frame-relative ranges dropped: the payload is not at exactly one offset of the frame"`
	// HeadersTruncated: the headers past the response cap are left out.
	HeadersTruncated bool `json:"headers_truncated,omitempty" desc:"headers past --mcp-max-response-bytes left out; field asks for one"`
}

// DecodeEvidence is decode_evidence's answer. It carries no timestamp: the
// frame is re-read without its capture record's time being vouched for,
// and a manufactured time on an evidence surface is what the pointer
// exists to prevent.
type DecodeEvidence struct {
	Pointer string `json:"pointer" desc:"the pointer as given"`
	Status  string `json:"status" enum:"verified|unverified|unresolvable" desc:"verified: read from the file, digest matches; unresolvable: nothing decoded"`
	Source  string `json:"source" desc:"the file looked up: the source's final path component"`
	Ordinal uint64 `json:"ordinal" desc:"frame number within the file, from 1"`
	Reason  string `json:"reason,omitempty" desc:"why the pointer is unresolvable"`
	// The rest comes with a verified frame.
	FrameBytes *int     `json:"frame_bytes,omitempty" desc:"captured bytes of the frame"`
	LinkType   *uint16  `json:"link_type,omitempty" desc:"LINKTYPE_* of the frame (1 Ethernet, 113 Linux cooked...)"`
	Network    *Network `json:"network,omitempty" desc:"addressing of the payload"`
	// ViaHEP: the payload was carried in a HEP envelope inside the frame;
	// network is the envelope's addressing.
	ViaHEP        bool `json:"via_hep,omitempty" desc:"the SIP came inside a HEP envelope; network is the envelope's"`
	PayloadBytes  *int `json:"payload_bytes,omitempty" desc:"transport payload bytes"`
	PayloadOffset *int `json:"payload_offset,omitempty" desc:"where the payload starts in the frame; absent unless at exactly one offset"`
	// JunkPrefixBytes are payload bytes before the SIP start line.
	JunkPrefixBytes   int         `json:"junk_prefix_bytes,omitempty" desc:"payload bytes before the SIP start line"`
	SIP               *DecodedSIP `json:"sip,omitempty" desc:"the SIP message of the payload"`
	DecodeUnavailable string      `json:"decode_unavailable,omitempty" desc:"why the frame gave no transport payload"`
	NotSIP            string      `json:"not_sip,omitempty" desc:"why the payload is not read as SIP"`
	SchemaVersion     int         `json:"schema_version" desc:"response schema version"`
}

func decodeEvidenceTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "decode_evidence",
		Title: "Decode the frame behind a pointer",
		Description: "Decode the frame behind one evidence pointer, re-read and digest-checked from the file root: addressing, payload offset, " +
			"and each SIP header with its byte range in the message and the frame (from the parser). No timestamp.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples: []sdk.Example{
			{Title: "Decode the first INVITE's frame", Args: map[string]any{"frame_ref": samplePointer}},
			{Title: "Only its Call-ID header", Args: map[string]any{"frame_ref": samplePointer, "field": "Call-ID"}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "a frame_ref that is not <source>#<ordinal>@<16 hex digits>"},
		},
	}, func(ctx context.Context, c *sdk.Call, in decodeEvidenceIn) (DecodeEvidence, error) {
		return decodeEvidence(ctx, d, c, in)
	})
}

func decodeEvidence(ctx context.Context, d *deps, c *sdk.Call, in decodeEvidenceIn) (DecodeEvidence, error) {
	if err := d.needRoot(); err != nil {
		return DecodeEvidence{}, err
	}
	if _, err := packet.ParseFrameRef(in.FrameRef); err != nil {
		return DecodeEvidence{}, sdk.Refuse(sdk.KindInvalidArgument, "frame_ref", "frame_ref %q: %v", answer.Clip(in.FrameRef), err)
	}
	r := d.resolve(ctx, []string{in.FrameRef})[0]
	out := DecodeEvidence{Pointer: r.pointer, Status: r.status, Source: r.file, Ordinal: r.ref.Ordinal, SchemaVersion: decodeSchemaVersion}
	if r.status == statusUnresolvable {
		out.Reason = r.reason
		return out, nil
	}
	n, lt := len(r.data), r.linkType
	out.FrameBytes, out.LinkType = &n, &lt
	fr := &packet.Frame{Data: r.data, LinkType: r.linkType, OrigLen: n, Source: r.ref.Source, Ordinal: r.ref.Ordinal}
	p, why := decodeFrame(fr)
	if p == nil {
		out.DecodeUnavailable = why
		return out, nil
	}
	payload := p.payload
	out.Network = &Network{SrcAddr: addrString(p.src.Addr().String(), p.src.IsValid()), SrcPort: p.src.Port(),
		DstAddr: addrString(p.dst.Addr().String(), p.dst.IsValid()), DstPort: p.dst.Port(), Transport: p.transport.String()}
	// A HEP envelope is unwrapped first, as the engine's router does
	// (its SIP would otherwise read as SIP behind junk).
	if hep.Looks(payload) {
		var m hep.Message
		var hd hep.Decoder
		if err := hd.DecodeInto(payload, &m); err == nil && len(m.Payload) > 0 && sip.Looks(m.Payload) {
			out.ViaHEP = true
			payload = bytes.Clone(m.Payload)
			tr := p.transport
			switch m.Protocol {
			case 17:
				tr = packet.TransportUDP
			case 6:
				tr = packet.TransportTCP
			case 132:
				tr = packet.TransportSCTP
			}
			out.Network = &Network{SrcAddr: addrString(m.Src.Addr().String(), m.Src.Addr().IsValid()), SrcPort: m.Src.Port(),
				DstAddr: addrString(m.Dst.Addr().String(), m.Dst.Addr().IsValid()), DstPort: m.Dst.Port(), Transport: tr.String()}
		}
	}
	pl := len(payload)
	out.PayloadBytes = &pl
	off := -1
	if !p.reassembled {
		off = soleOffset(r.data, payload)
	}
	if off >= 0 {
		out.PayloadOffset = &off
	}
	m, err := sip.Parse(payload)
	if err != nil {
		out.NotSIP = "the payload holds no SIP start line"
		return out, nil
	}
	out.JunkPrefixBytes = m.JunkPrefixBytes
	s := &DecodedSIP{HeaderCount: len(m.Headers), Headers: []DecodedHeader{}, IsRequest: m.IsRequest, StartLine: c.Fence(m.StartLine),
		RangesUnavailable: off < 0}
	if m.IsRequest {
		s.Method = answer.Unfenced(m.Method)
	}
	want := strings.TrimSpace(in.Field)
	wantID := sip.LookupHeader(want)
	for i, h := range m.Headers {
		if want != "" && !strings.EqualFold(h.Name, want) && (wantID == sip.HdrExtension || h.ID != wantID) {
			continue
		}
		dh := DecodedHeader{Name: answer.Unfenced(h.Name), Value: c.Fence(h.Value), Index: i}
		if h.HasRange() {
			ms, me := h.Start, h.End
			dh.MessageByteStart, dh.MessageByteEnd = &ms, &me
			if off >= 0 {
				fs, fe := off+m.JunkPrefixBytes+h.Start, off+m.JunkPrefixBytes+h.End
				dh.FrameByteStart, dh.FrameByteEnd = &fs, &fe
			}
		}
		s.Headers = append(s.Headers, dh)
	}
	// Headers past --mcp-max-response-bytes are left out, and said so
	// (headers_truncated; field asks for one header).
	all := s.Headers
	build := func(k int) any {
		o, sc := out, *s
		sc.Headers, sc.HeadersReturned, sc.HeadersTruncated = all[:k], k, k < len(all)
		o.SIP = &sc
		return o
	}
	k, err := c.FitPage(len(all), 0, "header", build)
	if err != nil {
		return DecodeEvidence{}, err
	}
	return build(k).(DecodeEvidence), nil
}

// addrString is an address's text, "" when it is absent.
func addrString(s string, valid bool) string {
	if !valid {
		return ""
	}
	return s
}

// soleOffset is where payload sits in frame when it sits at exactly one
// offset, else -1: with two candidate offsets frame[start:end] would be a
// coin toss (design notes, decode_evidence).
func soleOffset(frame, payload []byte) int {
	if len(payload) == 0 {
		return -1
	}
	i := bytes.Index(frame, payload)
	if i < 0 || bytes.Contains(frame[i+1:], payload) {
		return -1
	}
	return i
}

// decoded is the transport payload decodeFrame found, copied out of the
// decoder's borrowed packet.
type decoded struct {
	src, dst    netip.AddrPort
	transport   packet.Transport
	payload     []byte
	reassembled bool
}

// decodeFrame decodes one frame alone with a fresh decoder (core/decode:
// the same link, tunnel and transport walk the engine's load makes) and
// returns its first payload that looks like SIP, else its first payload;
// nil and why when the frame gives none (a TCP segment that needs the
// segments before it, a fragment, a link type without a decoder).
func decodeFrame(f *packet.Frame) (*decoded, string) {
	dec := decode.New(decode.Config{MaxEntries: 16, MaxReassemblyBytes: 1 << 20})
	var first, sipP *decoded
	sink := packet.SinkFunc(func(p *packet.Packet) {
		if len(p.Payload) == 0 || sipP != nil {
			return
		}
		dp := &decoded{src: p.Src, dst: p.Dst, transport: p.Transport, payload: bytes.Clone(p.Payload), reassembled: p.Reassembled || p.Frame == nil}
		if first == nil {
			first = dp
		}
		if sip.Looks(dp.payload) {
			sipP = dp
		}
	})
	dec.Decode(f, sink)
	dec.Flush(sink)
	if sipP != nil {
		return sipP, ""
	}
	if first != nil {
		return first, ""
	}
	st := dec.Stats()
	switch {
	case len(st.Undecodable) > 0:
		return nil, "the frame could not be decoded: " + st.Undecodable[0].Name
	case len(st.OtherTraffic) > 0:
		return nil, "the frame carries no SIP or RTP: " + st.OtherTraffic[0].Name
	}
	return nil, "the frame alone gives no transport payload (an empty segment, a fragment, or part of a TCP stream that needs the segments before it)"
}
