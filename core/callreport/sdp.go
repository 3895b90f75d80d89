package callreport

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sdp"
)

// SDP timeline events.
const (
	EventHold              = "Hold"
	EventResume            = "Resume"
	EventMediaAnchorChange = "MediaAnchorChange"
	EventCodecChange       = "CodecChange"
	EventT38Switch         = "T38Switch"
)

// SDPExchange is one SDP offer or answer of a dialog, in wire order.
// Codecs are sender-written (rtpmap names); addresses are verbatim.
type SDPExchange struct {
	// Direction is offer or answer (RFC 3264), read from where the SDP
	// travelled: a request's SDP is an offer unless it answers an offer
	// made in a response (ACK, PRACK); a response's SDP answers the
	// request's offer, or is an offer when the request carried none.
	Direction string `json:"direction" enum:"offer|answer" desc:"offer or answer (RFC 3264)"`
	// Codecs are the encodings of the first media section, in preference
	// order.
	Codecs []string `json:"codecs" desc:"encodings of the first media section, in preference order"`
	// MediaType is the first media section's type (audio, video, image).
	MediaType string `json:"media_type,omitempty" desc:"type of the first media section"`
	// MediaAddr and MediaPort are where the sender asks to receive media
	// (the first media section's effective c= and port).
	MediaAddr string `json:"media_addr,omitempty" desc:"connection address of the first media section"`
	MediaPort int    `json:"media_port" desc:"port of the first media section"`
	// Mode is the first media section's direction.
	Mode string `json:"mode" enum:"sendrecv|sendonly|recvonly|inactive" desc:"media direction"`
	// PtimeMs is the a=ptime of the first media section; absent when none.
	PtimeMs int `json:"ptime_ms,omitempty" desc:"a=ptime, ms"`
	// Timestamp is when the message carrying the SDP was captured.
	Timestamp time.Time `json:"timestamp" desc:"capture time of the message"`
	// Event names what changed against the same sender's previous SDP:
	// Hold, Resume, MediaAnchorChange, CodecChange or T38Switch; absent
	// when nothing did.
	Event string `json:"event,omitempty" enum:"Hold|Resume|MediaAnchorChange|CodecChange|T38Switch" desc:"what changed against the sender's previous SDP"`
	// MessageIndex is the index of the message carrying the SDP.
	MessageIndex int `json:"message_index" desc:"index of the message in the dialog"`
	// Message is the message's method, or its status code for a response.
	Message string `json:"message" desc:"method, or status code of a response"`
	// Src and Dst are the message's addresses.
	Src string `json:"src,omitempty" desc:"source address of the message"`
	Dst string `json:"dst,omitempty" desc:"destination address of the message"`
}

// sdpState follows one sender's SDP across a dialog.
type sdpState struct {
	addr   string
	port   int
	codecs string
	hold   bool
	t38    bool
}

// SDPTimeline reads the offers and answers of a dialog's retained messages,
// retransmissions skipped. It never returns nil.
func SDPTimeline(msgs []dialog.Message) []SDPExchange {
	out := []SDPExchange{}
	offered := map[string]bool{} // transactions whose request carried an offer
	offerInResponse := false     // a response made an offer the next ACK/PRACK answers
	prev := map[string]*sdpState{}
	for i := range msgs {
		m := &msgs[i]
		msg := m.Msg
		if msg == nil || m.Retransmission {
			continue
		}
		body, ok := msg.SDPBody()
		if !ok || len(body) == 0 {
			continue
		}
		s, err := sdp.Parse(body)
		if err != nil {
			continue
		}
		tx := fmt.Sprintf("%d %s", msg.CSeq.Number, msg.CSeq.Method)
		x := SDPExchange{Codecs: []string{}, Timestamp: m.TS, MessageIndex: m.Index, Mode: string(sdp.SendRecv)}
		if m.Src.IsValid() {
			x.Src = m.Src.String()
		}
		if m.Dst.IsValid() {
			x.Dst = m.Dst.String()
		}
		if msg.IsRequest {
			x.Message = msg.Method
			switch {
			case (msg.Method == "ACK" || msg.Method == "PRACK") && offerInResponse:
				x.Direction, offerInResponse = "answer", false
			default:
				x.Direction = "offer"
				offered[tx] = true
			}
		} else {
			x.Message = fmt.Sprint(msg.StatusCode)
			if offered[tx] {
				x.Direction = "answer"
			} else {
				x.Direction, offerInResponse = "offer", true
			}
		}
		st := &sdpState{}
		if len(s.Media) > 0 {
			md := &s.Media[0]
			x.MediaType, x.MediaPort, x.PtimeMs = md.Type, md.Port, md.Ptime
			x.MediaAddr = md.Conn
			if md.Direction != "" {
				x.Mode = string(md.Direction)
			}
			for _, f := range md.Formats {
				name := f.Encoding
				if name == "" {
					name = f.Fmt
				}
				x.Codecs = append(x.Codecs, name)
			}
			st.t38 = md.IsT38()
		}
		st.addr, st.port, st.codecs = x.MediaAddr, x.MediaPort, strings.Join(x.Codecs, ",")
		st.hold = x.Mode == string(sdp.SendOnly) || x.Mode == string(sdp.Inactive) || unspecified(x.MediaAddr)
		author := sdpAuthor(s, m)
		if p := prev[author]; p != nil {
			x.Event = sdpEvent(p, st)
		}
		prev[author] = st
		out = append(out, x)
	}
	return out
}

// sdpAuthor names the sender of an SDP across its versions: the o= username
// and sess-id (RFC 4566: constant over a session's versions), else the
// signaling source.
func sdpAuthor(s *sdp.Session, m *dialog.Message) string {
	if s.HasOrigin {
		return "o " + s.Origin.Username + " " + s.Origin.SessionID
	}
	return "src " + m.Src.String()
}

func sdpEvent(p, c *sdpState) string {
	switch {
	case c.t38 && !p.t38:
		return EventT38Switch
	case c.hold && !p.hold:
		return EventHold
	case !c.hold && p.hold:
		return EventResume
	case !c.hold && (c.addr != p.addr || c.port != p.port):
		return EventMediaAnchorChange
	case c.codecs != p.codecs:
		return EventCodecChange
	}
	return ""
}

func unspecified(a string) bool {
	ip, err := netip.ParseAddr(strings.TrimSpace(a))
	return err == nil && ip.IsUnspecified()
}
