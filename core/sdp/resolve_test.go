package sdp

import (
	"fmt"
	"strings"
	"testing"
)

// TestRtpmapAndFmtpNameTheFirstFormatOfTheirType checks that a payload
// type listed twice on the m= line gets its rtpmap and fmtp on its first
// listing only, and that a second rtpmap or fmtp for a type is ignored:
// with a few formats (looked up by a scan) and with more than
// linearFormats (looked up through the index by payload type).
func TestRtpmapAndFmtpNameTheFirstFormatOfTheirType(t *testing.T) {
	for _, extra := range []int{0, 3, linearFormats, linearFormats + 5} {
		t.Run(fmt.Sprintf("%d other formats", extra), func(t *testing.T) {
			fmts := []string{"96", "0", "96", "101"}
			for i := 0; i < extra; i++ {
				fmts = append(fmts, fmt.Sprint(110+i))
			}
			body := "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\n" +
				"m=audio 4000 RTP/AVP " + strings.Join(fmts, " ") + "\r\n" +
				"a=rtpmap:96 opus/48000/2\r\n" +
				"a=rtpmap:96 AMR/8000\r\n" +
				"a=fmtp:96 useinbandfec=1\r\n" +
				"a=fmtp:96 stereo=1\r\n" +
				"a=rtpmap:101 telephone-event/8000\r\n" +
				"a=fmtp:101 0-15\r\n" +
				"a=rtpmap:7 LPC/8000\r\n" // a type the m= line does not list
			s, err := ParseText(body)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Errors) != 0 {
				t.Fatalf("errors %q", s.Errors)
			}
			got := s.Media[0].Formats
			if len(got) != len(fmts) {
				t.Fatalf("%d formats, want %d", len(got), len(fmts))
			}
			want := []Format{
				{PayloadType: 96, Encoding: "opus", ClockRate: 48000, Channels: 2, Fmtp: "useinbandfec=1", Fmt: "96"},
				{PayloadType: 0, Encoding: "PCMU", ClockRate: 8000, Channels: 1, Fmt: "0", Static: true},
				{PayloadType: 96, Fmt: "96"},
				{PayloadType: 101, Encoding: "telephone-event", ClockRate: 8000, Fmtp: "0-15", Fmt: "101"},
			}
			for i, w := range want {
				if got[i] != w {
					t.Errorf("format %d: %+v, want %+v", i, got[i], w)
				}
			}
			for _, f := range got[len(want):] {
				if f.Encoding != "" || f.Fmtp != "" {
					t.Errorf("format %s: %+v, want no rtpmap or fmtp", f.Fmt, f)
				}
			}
		})
	}
}
