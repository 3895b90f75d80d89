package filter

import "strconv"

// Field identifies one of the 32 filter fields. Field values are small
// integers (1..NumFields) so a Record adapter can switch on them or index an
// array with them; the zero Field is invalid.
type Field uint8

// The 32 fields. The order is the documentation order of Fields().
const (
	FieldFromUser Field = iota + 1
	FieldToUser
	FieldMethod
	FieldUA
	FieldCallID
	FieldPayload
	FieldSrcIP
	FieldDstIP
	FieldState
	FieldRTPCodec
	FieldRTPSSRC
	FieldSrcPort
	FieldDstPort
	FieldDuration
	FieldMsgCount
	FieldPDD
	FieldSetupTime
	FieldRetransmits
	FieldFinalStatusCode
	FieldRTPMOS
	FieldRTPJitter
	FieldRTPLoss
	FieldRTPPackets
	FieldRTPOrphaned
	FieldOneWay
	FieldNATMismatch
	FieldNoMedia
	FieldCodecAsymmetry
	FieldPtimeAsymmetry
	FieldPayloadAsymmetry
	FieldDurationAsymmetry
	FieldLateMedia

	fieldEnd
)

// NumFields is the number of fields; valid fields are 1..NumFields.
const NumFields = int(fieldEnd) - 1

// Type is the value type of a field.
type Type uint8

// Field types. A string field is read with Record.Str (or Record.Each when
// it is multi-valued), a number field with Record.Num, a boolean field with
// Record.Bool.
const (
	TypeString Type = iota + 1
	TypeNumber
	TypeBool
)

// String returns "string", "number" or "boolean".
func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeNumber:
		return "number"
	case TypeBool:
		return "boolean"
	}
	return "invalid"
}

// FieldInfo describes one field for documentation and completions.
type FieldInfo struct {
	Field Field  // the field id passed to a Record
	Name  string // the name written in an expression, e.g. "from.user"
	Type  Type   // string, number or boolean
	// Multi is true when the field can hold several values for one dialog
	// (payload: every message; rtp.codec and rtp.ssrc: every linked stream).
	// A Record yields such a field through Each, and a comparison matches
	// when any one value matches.
	Multi bool
	Unit  string // the unit of a number field ("s", "ms", "%"), "" otherwise
	Doc   string // one sentence for a person or an agent
}

var fieldTable = [fieldEnd]FieldInfo{
	FieldFromUser:          {Name: "from.user", Type: TypeString, Doc: "User part of the From URI of the first message of the row's leg (the call when the Call-ID holds one)."},
	FieldToUser:            {Name: "to.user", Type: TypeString, Doc: "User part of the To URI of the first message of the row's leg (the call when the Call-ID holds one)."},
	FieldMethod:            {Name: "method", Type: TypeString, Doc: "Method that opened the row's leg, upper-case as on the wire (INVITE, REGISTER, OPTIONS, ...): INVITE whenever the Call-ID holds a call (docs/data-model.md); reach other legs' requests with payload =~ \"^REGISTER \"."},
	FieldUA:                {Name: "ua", Type: TypeString, Doc: "First non-empty User-Agent (or Server) header seen in the dialog."},
	FieldCallID:            {Name: "call_id", Type: TypeString, Doc: "The dialog's Call-ID."},
	FieldPayload:           {Name: "payload", Type: TypeString, Multi: true, Doc: "Raw text of each SIP message of the dialog; matches when any message matches (use =~)."},
	FieldSrcIP:             {Name: "src.ip", Type: TypeString, Doc: "Source IP address of the first message of the row's leg (the call when the Call-ID holds one); ==, !=, <, > compare addresses, =~ matches the text."},
	FieldDstIP:             {Name: "dst.ip", Type: TypeString, Doc: "Destination IP address of the first message of the row's leg (the call when the Call-ID holds one); ==, !=, <, > compare addresses, =~ matches the text."},
	FieldState:             {Name: "state", Type: TypeString, Doc: "State of the row's leg (the call when the Call-ID holds one), case-sensitive: Trying, Ringing, InCall, Completed, Cancelled, Failed, Redirected, Registered, Expired, Pending, Active, Terminated, Transferring."},
	FieldRTPCodec:          {Name: "rtp.codec", Type: TypeString, Multi: true, Doc: "Codec name of each RTP stream linked to the dialog (e.g. PCMU, G722, opus); matches when any stream matches."},
	FieldRTPSSRC:           {Name: "rtp.ssrc", Type: TypeString, Multi: true, Doc: "SSRC of each RTP stream linked to the dialog, written 0x followed by lowercase hex (0x1a2b3c4d); matches when any stream matches."},
	FieldSrcPort:           {Name: "src.port", Type: TypeNumber, Doc: "Source port of the first message of the row's leg (the call when the Call-ID holds one)."},
	FieldDstPort:           {Name: "dst.port", Type: TypeNumber, Doc: "Destination port of the first message of the row's leg (the call when the Call-ID holds one)."},
	FieldDuration:          {Name: "duration", Type: TypeNumber, Unit: "s", Doc: "Call duration in seconds; absent when not measured."},
	FieldMsgCount:          {Name: "msg_count", Type: TypeNumber, Doc: "Number of SIP messages in the dialog."},
	FieldPDD:               {Name: "pdd", Type: TypeNumber, Unit: "s", Doc: "Post-dial delay in seconds, from the routed INVITE (after a 401/407, the credentialed retry) to the first 18x (100 Trying excluded); the caller's wait after a challenge is not counted; absent when not measured."},
	FieldSetupTime:         {Name: "setup_time", Type: TypeNumber, Unit: "s", Doc: "Setup time in seconds, from the routed INVITE (after a 401/407, the credentialed retry) to the 2xx; absent when the call was never answered."},
	FieldRetransmits:       {Name: "retransmits", Type: TypeNumber, Doc: "Number of SIP messages of the dialog re-sent by their sender (capture duplicates excluded)."},
	FieldFinalStatusCode:   {Name: "final_status_code", Type: TypeNumber, Doc: "Final response code of the row's call (docs/data-model.md): from the INVITE transactions that open or retry it, the first 2xx, else the last non-challenge final, else the last 401/407; absent when none was seen (a REGISTER or OPTIONS row, a call still ringing). Also written status."},
	FieldRTPMOS:            {Name: "rtp.mos", Type: TypeNumber, Doc: "Worst estimated MOS among the dialog's RTP streams; absent without media."},
	FieldRTPJitter:         {Name: "rtp.jitter", Type: TypeNumber, Unit: "ms", Doc: "Worst interarrival jitter in milliseconds among the dialog's RTP streams; absent without media."},
	FieldRTPLoss:           {Name: "rtp.loss", Type: TypeNumber, Unit: "%", Doc: "Worst packet loss in percent among the dialog's RTP streams; absent without media."},
	FieldRTPPackets:        {Name: "rtp.packets", Type: TypeNumber, Doc: "Total RTP packets over the dialog's streams; absent without media."},
	FieldRTPOrphaned:       {Name: "rtp.orphaned", Type: TypeBool, Doc: "True when an RTP stream has no associated dialog; a dialog's own streams never are, so no dialog matches rtp.orphaned == true."},
	FieldOneWay:            {Name: "one_way", Type: TypeBool, Doc: "True when an established call carried media in one direction only."},
	FieldNATMismatch:       {Name: "nat_mismatch", Type: TypeBool, Doc: "True when RTP came from an address other than the one the SDP (or Contact/Via) announced."},
	FieldNoMedia:           {Name: "no_media", Type: TypeBool, Doc: "True when SDP was negotiated and the call established but no RTP was seen."},
	FieldCodecAsymmetry:    {Name: "codec_asymmetry", Type: TypeBool, Doc: "True when the two media legs used different codecs."},
	FieldPtimeAsymmetry:    {Name: "ptime_asymmetry", Type: TypeBool, Doc: "True when the two media legs used different packetization times."},
	FieldPayloadAsymmetry:  {Name: "payload_asymmetry", Type: TypeBool, Doc: "True when the two media legs used different RTP payload types."},
	FieldDurationAsymmetry: {Name: "duration_asymmetry", Type: TypeBool, Doc: "True when the two media legs' durations differ by at least 5 % and at least 2 s."},
	FieldLateMedia:         {Name: "late_media", Type: TypeBool, Doc: "True when the first RTP came more than 500 ms after the 200 OK."},
}

func init() {
	for f := Field(1); f < fieldEnd; f++ {
		fieldTable[f].Field = f
		fieldByName[fieldTable[f].Name] = f
	}
}

var fieldByName = make(map[string]Field, NumFields)

// fieldSynonyms are other names a field may be written under ("which calls
// got 503" as status == 503). The compiled filter's String
// writes the field's own name.
var fieldSynonyms = map[string]Field{
	"status": FieldFinalStatusCode,
}

// FieldByName returns the field written name in an expression (its name or
// a synonym such as status for final_status_code). Names are lowercase and
// matched exactly.
func FieldByName(name string) (Field, bool) {
	if f, ok := fieldByName[name]; ok {
		return f, true
	}
	f, ok := fieldSynonyms[name]
	return f, ok
}

// Valid reports whether f is one of the 32 fields.
func (f Field) Valid() bool { return f >= 1 && f < fieldEnd }

// String returns the field's name in the language ("from.user"), or
// "Field(n)" for an invalid field.
func (f Field) String() string {
	if !f.Valid() {
		return "Field(" + strconv.Itoa(int(f)) + ")"
	}
	return fieldTable[f].Name
}

// Type returns the field's value type (0 for an invalid field).
func (f Field) Type() Type {
	if !f.Valid() {
		return 0
	}
	return fieldTable[f].Type
}

// Multi reports whether the field is multi-valued (read with Record.Each).
func (f Field) Multi() bool { return f.Valid() && fieldTable[f].Multi }

// Info returns the field's description (the zero FieldInfo for an invalid
// field).
func (f Field) Info() FieldInfo {
	if !f.Valid() {
		return FieldInfo{}
	}
	return fieldTable[f]
}

// Fields returns the 32 fields in documentation order: strings, numbers,
// booleans. The slice is a fresh copy.
func Fields() []FieldInfo {
	out := make([]FieldInfo, 0, NumFields)
	for f := Field(1); f < fieldEnd; f++ {
		out = append(out, fieldTable[f])
	}
	return out
}

// States lists the 13 dialog states a state comparison accepts, in
// documentation order. States are case-sensitive.
func States() []string {
	return append([]string(nil), states...)
}

var states = []string{
	"Trying", "Ringing", "InCall", "Completed", "Cancelled", "Failed", "Redirected",
	"Registered", "Expired", "Pending", "Active", "Terminated", "Transferring",
}

func isState(s string) bool {
	for _, st := range states {
		if st == s {
			return true
		}
	}
	return false
}
