package captures

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/sdk"
)

// listSchemaVersion is list_captures' response schema version.
const listSchemaVersion = 1

// maxListed bounds the capture rows of one answer (each costs an open and
// a read of its first frames).
const maxListed = 1000

// lookahead is how many leading frames list_captures decodes to tell an
// encrypted capture: a listing reads the head of each file, never the
// whole of it (a listing that costs a full read of every capture in the
// root is a listing nobody runs).
const lookahead = 64

// sipTLSPort is SIP over TLS's registered port (RFC 3261 §19.1.2).
const sipTLSPort = 5061

// CaptureFile is one capture in the file root.
type CaptureFile struct {
	Filename string `json:"filename" desc:"file name in the file root"`
	Bytes    int64  `json:"bytes" desc:"file size in bytes (compressed size for .gz)"`
	// FirstPacket is the capture time of the file's first record only;
	// null when the file has no record or the record's time is unusable.
	FirstPacket *time.Time `json:"first_packet" desc:"capture time of the first record only; null when there is none or it is unusable"`
	// Encrypted: TLS records on port 5061 among the first 64 frames. Absent
	// when the file could not be read.
	Encrypted *bool `json:"encrypted,omitempty" desc:"TLS records to or from port 5061 among the first 64 frames (SIP over TLS this server cannot read without keys); absent when unreadable"`
	// Format is pcap or pcapng once the header was read.
	Format string `json:"format,omitempty" enum:"pcap|pcapng" desc:"file format, from its leading bytes"`
	// Compressed: gzip.
	Compressed bool `json:"compressed,omitempty" desc:"gzip-compressed"`
	// Unreadable says why the file could not be read as a capture.
	Unreadable string `json:"unreadable,omitempty" desc:"why the file is not a readable capture"`
}

// CaptureList is list_captures' answer.
type CaptureList struct {
	Captures []CaptureFile `json:"captures" nonnull:"true" desc:"captures in the file root, sorted by filename"`
	Returned int           `json:"returned" desc:"captures listed"`
	// Truncated: the root holds more captures (or files) than one answer
	// lists.
	Truncated bool `json:"truncated" desc:"more captures than listed (over 1000 captures, over 10000 files in the root, or past --mcp-max-response-bytes)"`
	// NotListed counts the entries of the root that are not listed, so
	// nothing is left out silently.
	NotListed NotListed `json:"not_listed" desc:"entries of the file root not listed, by why"`
	// Note says what the listing covers.
	Note          string `json:"note" desc:"what the listing covers"`
	SchemaVersion int    `json:"schema_version" desc:"response schema version"`
}

// NotListed counts the root's entries list_captures does not list.
type NotListed struct {
	OtherFiles int `json:"other_files" desc:"regular files without a capture extension"`
	Symlinks   int `json:"symlinks" desc:"symbolic links: never followed by a listing"`
	Other      int `json:"other" desc:"directories, FIFOs, sockets and devices"`
}

const listNote = "Captures are .pcap, .pcapng and .cap files and their .gz forms, directly in the file root; " +
	"archives (.tar, .tgz, .zip) are not read by this build. first_packet and encrypted come from the head of each file, not a full read."

func listCapturesTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "list_captures",
		Title: "List capture files",
		Description: "Capture files (.pcap, .pcapng, .cap and .gz forms) in the file root, sorted by filename: size, " +
			"first_packet (first record only) and encrypted (TLS on 5061 in the first 64 frames). No archives; no full read.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		StrictArgs:  true,
		Examples:    []sdk.Example{{Title: "The captures in the file root"}},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "the server was started without --mcp-file-root (\"file tools are disabled\")"},
		},
	}, func(ctx context.Context, c *sdk.Call, in struct{}) (CaptureList, error) {
		out, err := listCaptures(ctx, d.root)
		if err != nil {
			return CaptureList{}, err
		}
		// Rows past --mcp-max-response-bytes are left out: truncated.
		rows := out.Captures
		build := func(k int) any {
			o := out
			o.Captures, o.Returned, o.Truncated = rows[:k], k, out.Truncated || k < len(rows)
			return o
		}
		k, err := c.FitPage(len(rows), 0, "capture", build)
		if err != nil {
			return CaptureList{}, err
		}
		return build(k).(CaptureList), nil
	})
}

func listCaptures(ctx context.Context, root sdk.FileRoot) (CaptureList, error) {
	l, err := root.List(0)
	if err != nil {
		return CaptureList{}, err
	}
	out := CaptureList{Captures: []CaptureFile{}, Truncated: l.Truncated, Note: listNote, SchemaVersion: listSchemaVersion,
		NotListed: NotListed{Symlinks: l.Symlinks, Other: l.Other}}
	for _, f := range l.Files {
		if !isCaptureName(f.Name) {
			out.NotListed.OtherFiles++
			continue
		}
		if len(out.Captures) == maxListed {
			out.Truncated = true
			break
		}
		if err := ctx.Err(); err != nil {
			return CaptureList{}, sdk.Unavailable("list_captures: %v", err)
		}
		out.Captures = append(out.Captures, examine(root, f))
	}
	out.Returned = len(out.Captures)
	return out, nil
}

// examine reads the head of one capture: its first record's time and
// whether its first frames carry TLS on port 5061.
func examine(root sdk.FileRoot, e sdk.FileEntry) CaptureFile {
	cf := CaptureFile{Filename: e.Name, Bytes: e.Size}
	r, f, err := openCapture(root, e.Name)
	if err != nil {
		cf.Unreadable = clipReason(sdk.AsError(err).Message)
		return cf
	}
	defer f.Close()
	defer r.Close()
	cf.Format, cf.Compressed = r.Format().String(), r.Compressed()
	enc := false
	dec := decode.New(decode.Config{MaxEntries: 64, MaxReassemblyBytes: 1 << 20})
	sink := packet.SinkFunc(func(p *packet.Packet) {
		if !enc && (p.Transport == packet.TransportTCP || p.Transport == packet.TransportUDP) &&
			(p.Src.Port() == sipTLSPort || p.Dst.Port() == sipTLSPort) && tlsRecord(p.Payload) {
			enc = true
		}
	})
	for i := 0; i < lookahead; i++ {
		fr, err := r.Next()
		if err != nil {
			if i == 0 && !errors.Is(err, io.EOF) {
				cf.Unreadable = clipReason(err.Error())
				return cf
			}
			break
		}
		if i == 0 && !fr.InvalidTS {
			ts := fr.TS.UTC()
			cf.FirstPacket = &ts
		}
		dec.Decode(fr, sink)
	}
	cf.Encrypted = &enc
	return cf
}

// tlsRecord reports whether b starts with a TLS (or DTLS) record header:
// content type 20–23 (change_cipher_spec, alert, handshake, application
// data; RFC 8446 §5.1) and major version 3 (TLS), or 254 (DTLS, RFC 9147).
func tlsRecord(b []byte) bool {
	return len(b) >= 5 && b[0] >= 20 && b[0] <= 23 && (b[1] == 3 || b[1] == 254)
}
