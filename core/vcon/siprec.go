package vcon

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sdp"
	"github.com/sipnab/sipnab/core/sip"
)

// SIPREC recording metadata (RFC 7866 §6.1: the session recording client
// sends it as an application/rs-metadata+xml body part of its INVITE,
// beside the SDP; RFC 7865 is the model; the XML namespace is
// urn:ietf:params:xml:ns:recording:1, RFC 7866 §12.1).

// MetadataMediaType is the body part's media type (RFC 7866 §12.2).
const MetadataMediaType = "application/rs-metadata+xml"

// Bounds of one metadata document: it is sender-written, so nothing in it
// sizes an allocation and every table is capped.
const (
	// MaxMetadataBytes is the largest document parsed (a SIP message
	// fits in far less; a larger part is refused, not cut).
	MaxMetadataBytes = 64 << 10
	// MaxMetadataElements caps the elements read.
	MaxMetadataElements = 4096
	// maxMetadataDepth caps element nesting.
	maxMetadataDepth = 32
	// MaxParticipants and MaxStreams cap the rows kept; the rest are
	// counted.
	MaxParticipants = 256
	MaxStreams      = 256
	// maxValueBytes cuts one attribute or text value.
	maxValueBytes = 1024
)

// Participant is one <participant> of the metadata.
type Participant struct {
	ID string
	// AoR is the nameID's aor attribute; Name its <name> text, "" when
	// none (a participant known by address only).
	AoR  string
	Name string
}

// Stream is one <stream> of the metadata, with the participant that sends
// it (its <participantstreamassoc>'s <send>), "" when none does.
type Stream struct {
	ID            string
	Label         string
	SessionID     string
	ParticipantID string
}

// Metadata is what siprec_metadata reports of one document.
type Metadata struct {
	// Mode is <datamode>: complete or partial (RFC 7866 §6.1.1: a partial
	// update carries only what changed).
	Mode      string
	SessionID string
	// Sessions counts <session> elements; SessionID is the first's.
	Sessions     int
	Participants []Participant
	Streams      []Stream
	// ParticipantsDropped and StreamsDropped count rows past the caps.
	ParticipantsDropped int
	StreamsDropped      int
}

// ErrMetadataTooLarge refuses a document over MaxMetadataBytes.
var ErrMetadataTooLarge = fmt.Errorf("recording metadata larger than %d bytes", MaxMetadataBytes)

// ParseMetadata reads a recording metadata document with encoding/xml
// (no external entities, no DTD expansion), bounded in bytes, elements
// and depth. Hostile input is an error, never a panic.
func ParseMetadata(doc []byte) (Metadata, error) {
	if len(doc) > MaxMetadataBytes {
		return Metadata{}, ErrMetadataTooLarge
	}
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	var (
		md       Metadata
		stack    []string
		elements int
		sawRoot  bool
		text     strings.Builder
		// current rows being read
		part   *Participant
		stream *Stream
		// participant_id of the open participantstreamassoc
		assoc string
		sends = map[string]string{} // stream_id -> participant_id
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Metadata{}, fmt.Errorf("recording metadata: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			elements++
			if elements > MaxMetadataElements {
				return Metadata{}, fmt.Errorf("recording metadata: more than %d elements", MaxMetadataElements)
			}
			if len(stack) >= maxMetadataDepth {
				return Metadata{}, fmt.Errorf("recording metadata: nested deeper than %d", maxMetadataDepth)
			}
			name := t.Name.Local
			if len(stack) == 0 {
				if name != "recording" {
					return Metadata{}, fmt.Errorf("recording metadata: root element <%s>, want <recording>", cut(name))
				}
				sawRoot = true
			}
			text.Reset()
			parent := ""
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			switch {
			case name == "session" && parent == "recording":
				md.Sessions++
				if md.SessionID == "" {
					md.SessionID = attr(t, "session_id")
				}
			case name == "participant" && parent == "recording":
				part = &Participant{ID: attr(t, "participant_id")}
			case name == "nameID" && part != nil:
				part.AoR = attr(t, "aor")
			case name == "stream" && parent == "recording":
				stream = &Stream{ID: attr(t, "stream_id"), SessionID: attr(t, "session_id")}
			case name == "participantstreamassoc" && parent == "recording":
				assoc = attr(t, "participant_id")
			}
			stack = append(stack, name)
		case xml.CharData:
			if text.Len() < maxValueBytes {
				text.Write(t[:min(len(t), maxValueBytes-text.Len())])
			}
		case xml.EndElement:
			if len(stack) == 0 {
				return Metadata{}, errors.New("recording metadata: unbalanced end element")
			}
			name := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			parent := ""
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			val := strings.TrimSpace(text.String())
			switch {
			case name == "datamode" && parent == "recording":
				md.Mode = cut(val)
			case name == "name" && parent == "nameID" && part != nil && part.Name == "":
				part.Name = cut(val)
			case name == "participant" && parent == "recording" && part != nil:
				if len(md.Participants) < MaxParticipants {
					md.Participants = append(md.Participants, *part)
				} else {
					md.ParticipantsDropped++
				}
				part = nil
			case name == "label" && parent == "stream" && stream != nil:
				stream.Label = cut(val)
			case name == "stream" && parent == "recording" && stream != nil:
				if len(md.Streams) < MaxStreams {
					md.Streams = append(md.Streams, *stream)
				} else {
					md.StreamsDropped++
				}
				stream = nil
			case name == "send" && parent == "participantstreamassoc" && assoc != "":
				if _, seen := sends[val]; !seen && len(sends) < MaxStreams {
					sends[cut(val)] = assoc
				}
			case name == "participantstreamassoc":
				assoc = ""
			}
			text.Reset()
		}
	}
	if !sawRoot {
		return Metadata{}, errors.New("recording metadata: no <recording> element")
	}
	for i := range md.Streams {
		md.Streams[i].ParticipantID = sends[md.Streams[i].ID]
	}
	return md, nil
}

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return cut(a.Value)
		}
	}
	return ""
}

// cut bounds a sender-written value at maxValueBytes.
func cut(s string) string {
	if len(s) > maxValueBytes {
		return s[:maxValueBytes]
	}
	return s
}

// SDPLabel is one labelled media section of the SDP beside the metadata
// (RFC 4574's a=label; RFC 7866 §8.1.1: each recorded stream's label in
// the metadata names the m= line that carries it).
type SDPLabel struct {
	// Index is the m= line's 0-based position; Media its type and port.
	Index int
	Media string
	Port  int
}

// Found is a dialog's SIPREC metadata: the latest message of the Call-ID
// whose metadata part parses.
type Found struct {
	Metadata Metadata
	// Message is the index of that message in the dialog's messages, and
	// Frame its evidence pointer ("" when unknown).
	Message int
	Frame   string
	// Labels are the SDP's labelled m= lines of the same message, by
	// label.
	Labels map[string]SDPLabel
	// Carrying counts the messages with a metadata part; Unreadable those
	// whose part did not parse, LastError the latest such error.
	Carrying   int
	Unreadable int
	LastError  string
	// RequireSIPREC: a request carried Require: siprec (RFC 7866 §6.1.1)
	// or a Contact with the +sip.src feature tag (§6.1.1).
	RequireSIPREC bool
}

// FindMetadata looks through a dialog's messages for SIPREC metadata. ok
// is false when no message's metadata parses; Found then still says how
// many carried a part and why it did not parse.
func FindMetadata(det dialog.Detail) (Found, bool) {
	var f Found
	ok := false
	for i := range det.Messages {
		m := det.Messages[i].Msg
		if m == nil {
			continue
		}
		if m.IsRequest {
			for _, v := range m.HeaderValues(sip.HdrRequire) {
				if hasToken(v, "siprec") {
					f.RequireSIPREC = true
				}
			}
			if c, has := m.Contact(); has && strings.Contains(strings.ToLower(c.Params), "+sip.src") {
				f.RequireSIPREC = true
			}
		}
		part, has := m.BodyPart(MetadataMediaType)
		if !has {
			continue
		}
		f.Carrying++
		md, err := ParseMetadata(part)
		if err != nil {
			f.Unreadable++
			f.LastError = err.Error()
			continue
		}
		ok = true
		f.Metadata = md
		f.Message = i
		f.Frame = ""
		if !det.Messages[i].Frame.IsZero() {
			f.Frame = det.Messages[i].Frame.String()
		}
		f.Labels = sdpLabels(m)
	}
	return f, ok
}

func hasToken(list, token string) bool {
	for _, t := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(t), token) {
			return true
		}
	}
	return false
}

// sdpLabels reads the a=label of each m= line of a message's SDP.
func sdpLabels(m *sip.Message) map[string]SDPLabel {
	body, ok := m.SDPBody()
	if !ok {
		return nil
	}
	s, err := sdp.Parse(body)
	if err != nil {
		return nil
	}
	out := map[string]SDPLabel{}
	for i, md := range s.Media {
		if md.Label != "" {
			if _, dup := out[md.Label]; !dup {
				out[md.Label] = SDPLabel{Index: i, Media: md.Type, Port: md.Port}
			}
		}
	}
	return out
}
