package media

import (
	"testing"
	"unsafe"
)

// TestEndpointBlockFitsItsSizeClass: an SDP endpoint with room for three
// formats is one allocation per announced address, held for the call's
// life; it stays within the 320-byte size class (objects of at most 512
// bytes carry no malloc header), and a format within 32 bytes.
func TestEndpointBlockFitsItsSizeClass(t *testing.T) {
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"format", unsafe.Sizeof(format{}), 32},
		{"endpoint with its inline formats", unsafe.Sizeof(endpointBlock{}), 320},
	} {
		if c.got > c.want {
			t.Errorf("%s: %d bytes, over %d", c.what, c.got, c.want)
		}
	}
}
