package captures

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/pcapout"
	"github.com/sipnab/sipnab/sdk"
)

// exportSchemaVersion is export_capture's response schema version.
const exportSchemaVersion = 1

// maxExportBytes bounds the file export_capture builds in memory before
// writing it (the held SIP is already in memory; this bounds the copy).
const maxExportBytes = 512 << 20

type exportCaptureIn struct {
	Filename string `json:"filename" desc:"new file in the file root, e.g. calls.pcap; never overwrites"`
}

// ExportSkipped counts held messages the export could not rebuild.
type ExportSkipped struct {
	NoAddress   int `json:"no_address" desc:"messages without a source or destination address"`
	MixedFamily int `json:"mixed_family" desc:"messages whose addresses are IPv4 on one side and IPv6 on the other"`
	TooLarge    int `json:"too_large" desc:"messages longer than one UDP datagram holds"`
}

// ExportCapture is export_capture's answer.
type ExportCapture struct {
	// Path is the file's name in the root (never the server's path).
	Path     string `json:"path" desc:"the file written, by its name in the file root"`
	Messages int    `json:"messages" desc:"SIP messages written, one frame each"`
	Bytes    int    `json:"bytes" desc:"bytes written"`
	Dialogs  int    `json:"dialogs" desc:"Call-IDs whose messages were written"`
	// Skipped counts held messages that are not in the file.
	Skipped ExportSkipped `json:"skipped" desc:"held messages not written, by why"`
	// MessagesNotRetained are messages the store never held (past the
	// per-dialog retention cap): absent from the file too.
	MessagesNotRetained uint64 `json:"messages_not_retained" desc:"messages past the per-dialog retention cap: never held, not in the file"`
	Note                string `json:"note" desc:"what the file is and is not"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

const exportNote = "Rebuilt frames, not the wire: each held SIP message (retransmissions included, capture duplicates once) as one Ethernet/IP/UDP frame " +
	"with its captured addresses, ports and time, whatever transport carried it (TCP, TLS, WebSocket: now UDP). No RTP, RTCP or non-SIP traffic; " +
	"messages evicted or past the retention cap are absent. Classic pcap, nanosecond timestamps."

func exportCaptureTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "export_capture",
		Title: "Export the held SIP as a pcap",
		Description: "Write the SIP messages the capture holds to a new pcap in the file root, rebuilt as Ethernet/IP/UDP frames in capture order " +
			"(no RTP, RTCP or non-SIP; TCP/TLS/WS messages become UDP). Never overwrites; answers the file name, messages and bytes.",
		Annotations: sdk.Annotations{Effect: sdk.Writes, Idempotency: sdk.Idempotent, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples:    []sdk.Example{{Title: "The held SIP to a new pcap", Args: map[string]any{"filename": "exported-sip.pcap"}}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
			{Code: sdk.CodeInvalidParams, When: "a filename that is not one file name, or a name already taken in the file root (a dangling symlink included) or a capture the server reads"},
			{Code: sdk.CodeInvalidParams, When: "an export larger than 512 MiB"},
		},
	}, func(ctx context.Context, c *sdk.Call, in exportCaptureIn) (ExportCapture, error) {
		return exportCapture(ctx, d, in)
	})
}

// heldMessage is one held SIP message to write.
type heldMessage struct {
	ts       time.Time
	src, dst netip.AddrPort
	raw      []byte
	frame    packet.FrameRef
	callID   string
	index    int
}

func exportCapture(ctx context.Context, d *deps, in exportCaptureIn) (ExportCapture, error) {
	if err := d.needRoot(); err != nil {
		return ExportCapture{}, err
	}
	if err := sdk.CheckName(in.Filename); err != nil {
		return ExportCapture{}, err
	}
	src := answer.SourceState(d.capture.Status())
	store := d.capture.Dialogs()
	out := ExportCapture{Path: in.Filename, Note: exportNote, SourceFlags: src.Flags(), CaptureIdentity: src.Identity,
		MessagesNotRetained: store.Stats().MessagesNotRetained, SchemaVersion: exportSchemaVersion}
	var msgs []heldMessage
	size := 24
	dialogs := map[string]bool{}
	for _, id := range store.CallIDs() {
		if err := ctx.Err(); err != nil {
			return ExportCapture{}, sdk.Unavailable("export_capture: %v", err)
		}
		for pos := 0; ; pos++ {
			m, ok := store.MessageAt(id, pos)
			if !ok {
				break
			}
			h := heldMessage{ts: m.TS, src: unmap(m.Src), dst: unmap(m.Dst), raw: m.Msg.Raw, frame: m.Frame, callID: id, index: m.Index}
			switch {
			case !h.src.IsValid() || !h.dst.IsValid():
				out.Skipped.NoAddress++
				continue
			case h.src.Addr().Is4() != h.dst.Addr().Is4():
				out.Skipped.MixedFamily++
				continue
			case h.src.Addr().Is4() && len(h.raw) > pcapout.MaxUDP4Payload, len(h.raw) > pcapout.MaxUDP6Payload:
				out.Skipped.TooLarge++
				continue
			}
			size += 16 + 14 + 40 + 8 + len(h.raw)
			if size > maxExportBytes {
				return ExportCapture{}, sdk.Refuse(sdk.KindInvalidArgument, "", "the held SIP is over %d MiB as a pcap: too large to export in one call", maxExportBytes>>20)
			}
			msgs = append(msgs, h)
			dialogs[id] = true
		}
	}
	slices.SortStableFunc(msgs, func(a, b heldMessage) int {
		if c := a.ts.Compare(b.ts); c != 0 {
			return c
		}
		if a.frame.Source == b.frame.Source && a.frame.Ordinal != b.frame.Ordinal {
			if a.frame.Ordinal < b.frame.Ordinal {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.callID, b.callID); c != 0 {
			return c
		}
		return a.index - b.index
	})
	file, err := buildPcap(msgs, size)
	if err != nil {
		return ExportCapture{}, sdk.Internal("export_capture: rebuilding frames: %v", err)
	}
	n, err := d.root.WriteNew(in.Filename, file)
	if err != nil {
		return ExportCapture{}, err
	}
	out.Messages, out.Bytes, out.Dialogs = len(msgs), n, len(dialogs)
	return out, nil
}

// unmap turns an IPv4-mapped IPv6 address into IPv4.
func unmap(a netip.AddrPort) netip.AddrPort {
	if !a.IsValid() {
		return a
	}
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// buildPcap writes msgs as a classic pcap (nanosecond timestamps,
// LINKTYPE_ETHERNET), one rebuilt Ethernet/IP/UDP frame per message
// (core/pcapout.UDPFrame: lengths and checksums computed).
func buildPcap(msgs []heldMessage, size int) ([]byte, error) {
	out := pcapout.AppendPcapHeader(make([]byte, 0, size), 1)
	for _, m := range msgs {
		b, err := pcapout.UDPFrame(m.src, m.dst, m.raw)
		if err != nil {
			return nil, err
		}
		out = pcapout.AppendPcapRecord(out, &packet.Frame{TS: m.ts, Data: b})
	}
	return out, nil
}
