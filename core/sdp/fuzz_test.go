package sdp

import (
	"reflect"
	"testing"
)

// FuzzSDP feeds arbitrary bodies to Parse and FromBody. Beyond not
// panicking it checks the round-trip property: a body that parses without
// errors gives, through Marshal and Parse again, the same Session; ParseText
// gives what Parse gives.
// Seeds: testdata/fuzz/FuzzSDP (SDP bodies of the public captures) and the
// hand-written bodies below.
func FuzzSDP(f *testing.F) {
	f.Add([]byte(offer))
	f.Add([]byte("v=0\r\no=- 1 1 IN IP4 h\r\ns=-\r\nt=0 0\r\nm=audio 1/2 RTP/AVP 0 96\r\na=rtpmap:96 AMR/8000/1\r\na=fmtp:96 mode-set=0,2\r\n"))
	f.Add([]byte("v=0\nm=image 0 udptl t38\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = FromBody("multipart/mixed;boundary=x", b)
		s, err := Parse(b)
		if s2, err2 := ParseText(string(b)); (err == nil) != (err2 == nil) || !reflect.DeepEqual(s, s2) {
			t.Fatalf("ParseText gave %#v (%v), Parse %#v (%v)", s2, err2, s, err)
		}
		if err != nil {
			return
		}
		if len(s.Errors) > MaxErrors+1 {
			t.Fatalf("%d errors", len(s.Errors))
		}
		for _, m := range s.Media {
			if m.Port < 0 || m.Port > 65535 || m.RTCPPort < 0 || m.RTCPPort > 65535 {
				t.Fatalf("port out of range: %d / %d", m.Port, m.RTCPPort)
			}
			for _, f := range m.Formats {
				if f.PayloadType < -1 || f.PayloadType > 127 {
					t.Fatalf("payload type %d", f.PayloadType)
				}
			}
			if m.Direction == "" {
				t.Fatal("empty effective direction")
			}
		}
		if len(s.Errors) != 0 {
			return
		}
		out := s.Marshal()
		s2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse: %v\n%q", err, out)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip differs\n in: %q\nout: %q\n first %#v\nsecond %#v", b, out, s, s2)
		}
	})
}
