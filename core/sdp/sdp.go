// Package sdp parses Session Description Protocol bodies (RFC 4566/8866)
// tolerantly, including SDP found inside multipart bodies.
//
// This file holds the public types other packages code against.
package sdp

// Direction is a media direction attribute.
type Direction string

const (
	SendRecv Direction = "sendrecv"
	SendOnly Direction = "sendonly"
	RecvOnly Direction = "recvonly"
	Inactive Direction = "inactive"
)

// Origin is the o= line.
type Origin struct {
	Username       string
	SessionID      string
	SessionVersion string
	NetType        string
	AddrType       string
	Address        string
}

// Format is one payload format of a media line with what rtpmap/fmtp say.
type Format struct {
	PayloadType int    // 0..127; -1 when the format is not a payload type number (t38, *)
	Encoding    string // from rtpmap, e.g. "PCMU", "opus", "telephone-event"; for a static type without rtpmap the RFC 3551 name (Static); "" when unknown
	ClockRate   int    // from rtpmap (or the RFC 3551 table when Static); 0 when unknown
	Channels    int    // from rtpmap (or the RFC 3551 table when Static); 0 when absent
	Fmtp        string // raw fmtp parameters
	Fmt         string // the format token as written on the m= line ("0", "96", "t38")
	// Static is true when Encoding/ClockRate/Channels come from the RFC 3551
	// static payload table because no rtpmap named this type.
	Static bool
}

// Media is one m= section.
type Media struct {
	Type         string // audio, video, image, application, ...
	Port         int
	NumPorts     int
	Proto        string // RTP/AVP, RTP/SAVP, udptl, ...
	Formats      []Format
	Conn         string    // effective connection address (media c= or session c=); "" when none
	ConnAddrType string    // IP4 / IP6
	Direction    Direction // effective direction (media attribute, else session, else sendrecv)
	Ptime        int       // ms; 0 when absent
	MaxPtime     int
	RTCPPort     int // a=rtcp port; 0 when absent
	RTCPAddr     string
	RTCPMux      bool
	Crypto       []string // a=crypto values (SDES)
	Label        string
	Attrs        []Attr // every a= line of the section, in order
}

// Attr is one a= line.
type Attr struct {
	Key   string
	Value string // "" for flag attributes
}

// Session is a parsed SDP body.
type Session struct {
	Version   int
	Origin    Origin
	HasOrigin bool
	Name      string
	Conn      string // session-level c= address; "" when none
	// ConnAddrType is the session-level c= address type (IP4, IP6); "" when none.
	ConnAddrType string
	// Timing is the first t= line's value, whitespace-normalized ("0 0"); "" when none.
	Timing    string
	Direction Direction // session-level direction attribute; "" when none
	Media     []Media
	Attrs     []Attr
	// Errors lists tolerated problems ("line 7: bad m= port"). A Session
	// with errors is still returned when anything useful was read.
	Errors []string
}
