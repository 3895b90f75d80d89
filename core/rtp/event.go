package rtp

import "errors"

// Event is one RFC 4733 named telephone-event payload.
type Event struct {
	Code     uint8  // 0-9, 10 '*', 11 '#', 12-15 A-D, others (flash, tones)
	End      bool   // the E bit: this packet ends the event
	Volume   uint8  // 0..63, -dBm0
	Duration uint16 // in timestamp units of the event clock
}

var errEventShort = errors.New("rtp: telephone-event payload shorter than 4 bytes")

// ParseEvent reads the first RFC 4733 event of a telephone-event payload.
func ParseEvent(payload []byte) (Event, error) {
	if len(payload) < 4 {
		return Event{}, errEventShort
	}
	return Event{
		Code:     payload[0],
		End:      payload[1]&0x80 != 0,
		Volume:   payload[1] & 0x3f,
		Duration: be16(payload[2:]),
	}, nil
}

// IsDTMF reports whether the event code is a DTMF digit (0-9, *, #, A-D).
// Digit values are never rendered: callers mask them.
func (e Event) IsDTMF() bool { return e.Code <= 15 }
