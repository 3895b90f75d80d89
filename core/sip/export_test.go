package sip

import "testing"

// CaptureMessages returns the SIP messages of a public capture (UDP
// payloads for which Looks is true and messages framed out of TCP streams),
// for the external tests of this package.
func CaptureMessages(t *testing.T, path string) ([]*Message, error) {
	t.Helper()
	c, err := readCapture(t, path)
	if err != nil {
		return nil, err
	}
	return messagesOf(t, c), nil
}

// ErrNotPcap is readCapture's error for files in another format.
var ErrNotPcap = errNotPcap
