package sdp_test

import (
	"fmt"

	"github.com/sipnab/sipnab/core/sdp"
)

func ExampleFromBody() {
	body := []byte("v=0\r\no=- 20518 0 IN IP4 203.0.113.1\r\ns=-\r\nc=IN IP4 203.0.113.1\r\nt=0 0\r\n" +
		"m=audio 54400 RTP/AVP 0 96\r\na=rtpmap:96 opus/48000/2\r\na=ptime:20\r\na=sendonly\r\n")
	s, ok := sdp.FromBody("application/sdp", body)
	if !ok {
		return
	}
	m := s.Media[0]
	fmt.Println(m.Conn, m.Port, m.Direction, m.Ptime)
	for _, f := range m.Formats {
		fmt.Println(f.PayloadType, f.Encoding, f.ClockRate, f.Channels, f.Static)
	}
	// Output:
	// 203.0.113.1 54400 sendonly 20
	// 0 PCMU 8000 1 true
	// 96 opus 48000 2 false
}
