package sdp

import (
	"reflect"
	"strings"
	"testing"
)

const offer = `v=0
o=alice 2890844526 2890844527 IN IP4 host.atlanta.example.com
s=-
c=IN IP4 192.0.2.10
t=0 0
a=sendrecv
m=audio 49170 RTP/AVP 0 8 97 101
a=rtpmap:97 iLBC/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-15
a=fmtp:97 mode=30
a=ptime:20
a=maxptime:150
a=rtcp:49171 IN IP4 192.0.2.11
a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20|1:32
a=sendonly
m=video 51372 RTP/AVPF 31 96
c=IN IP6 2001:db8::20
a=rtpmap:96 H264/90000
a=fmtp:96 profile-level-id=42e01f;packetization-mode=1
a=rtcp-mux
a=label:main
m=image 5000 udptl t38
a=T38FaxVersion:0
a=T38FaxRateManagement:transferredTCF
`

func TestParseOffer(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n"} {
		s, err := Parse([]byte(strings.ReplaceAll(offer, "\n", eol)))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Errors) != 0 {
			t.Fatalf("Errors: %q", s.Errors)
		}
		want := Origin{"alice", "2890844526", "2890844527", "IN", "IP4", "host.atlanta.example.com"}
		if !s.HasOrigin || s.Origin != want {
			t.Errorf("Origin: got %+v", s.Origin)
		}
		if s.Conn != "192.0.2.10" || s.ConnAddrType != "IP4" || s.Direction != SendRecv || s.Timing != "0 0" || s.Name != "-" {
			t.Errorf("session: conn %q %q dir %q timing %q name %q", s.Conn, s.ConnAddrType, s.Direction, s.Timing, s.Name)
		}
		if len(s.Media) != 3 {
			t.Fatalf("media: got %d, want 3", len(s.Media))
		}
		a, v, img := s.Media[0], s.Media[1], s.Media[2]
		wantFormats := []Format{
			{PayloadType: 0, Encoding: "PCMU", ClockRate: 8000, Channels: 1, Fmt: "0", Static: true},
			{PayloadType: 8, Encoding: "PCMA", ClockRate: 8000, Channels: 1, Fmt: "8", Static: true},
			{PayloadType: 97, Encoding: "iLBC", ClockRate: 8000, Fmtp: "mode=30", Fmt: "97"},
			{PayloadType: 101, Encoding: "telephone-event", ClockRate: 8000, Fmtp: "0-15", Fmt: "101"},
		}
		if !reflect.DeepEqual(a.Formats, wantFormats) {
			t.Errorf("audio formats:\n got %+v\nwant %+v", a.Formats, wantFormats)
		}
		checks := []struct {
			name      string
			got, want any
		}{
			{"audio type", a.Type, "audio"},
			{"audio port", a.Port, 49170},
			{"audio proto", a.Proto, "RTP/AVP"},
			{"audio conn inherited", a.Conn, "192.0.2.10"},
			{"audio conn type", a.ConnAddrType, "IP4"},
			{"audio direction (media wins)", a.Direction, SendOnly},
			{"audio ptime", a.Ptime, 20},
			{"audio maxptime", a.MaxPtime, 150},
			{"audio rtcp port", a.RTCPPort, 49171},
			{"audio rtcp addr", a.RTCPAddr, "192.0.2.11"},
			{"audio rtcp-mux", a.RTCPMux, false},
			{"audio crypto", len(a.Crypto), 1},
			{"audio attrs", len(a.Attrs), 9},
			{"video conn own", v.Conn, "2001:db8::20"},
			{"video conn type", v.ConnAddrType, "IP6"},
			{"video direction (session)", v.Direction, SendRecv},
			{"video rtcp-mux", v.RTCPMux, true},
			{"video label", v.Label, "main"},
			{"video static 31", v.Formats[0], Format{PayloadType: 31, Encoding: "H261", ClockRate: 90000, Fmt: "31", Static: true}},
			{"video 96", v.Formats[1].Encoding + "/" + v.Formats[1].Fmtp, "H264/profile-level-id=42e01f;packetization-mode=1"},
			{"image t38", img.IsT38(), true},
			{"image format", img.Formats, []Format{{PayloadType: -1, Fmt: "t38"}}},
			{"audio not t38", a.IsT38(), false},
		}
		for _, c := range checks {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
			}
		}
		if pm, _ := v.Formats[1].FmtpParam("PACKETIZATION-MODE"); pm != "1" {
			t.Errorf("FmtpParam: got %q", pm)
		}
		if f, ok := a.Format(101); !ok || f.Encoding != "telephone-event" {
			t.Errorf("Format(101): %+v %v", f, ok)
		}
		if _, ok := a.Format(55); ok {
			t.Error("Format(55): present")
		}
	}
}

func TestAMRFmtp(t *testing.T) {
	s, err := Parse([]byte("v=0\r\no=- 1 1 IN IP4 1.2.3.4\r\ns=-\r\nc=IN IP4 1.2.3.4\r\nt=0 0\r\nm=audio 4000 RTP/AVP 96\r\na=rtpmap:96 AMR/8000/1\r\na=fmtp:96 mode-set=0,2,4,7; octet-align=1 ;interleaving=0;robust-sorting\r\n"))
	if err != nil || len(s.Errors) != 0 {
		t.Fatal(err, s.Errors)
	}
	f := s.Media[0].Formats[0]
	cases := []struct {
		name, want string
		ok         bool
	}{
		{"mode-set", "0,2,4,7", true},
		{"octet-align", "1", true},
		{"interleaving", "0", true},
		{"robust-sorting", "", true},
		{"max-red", "", false},
	}
	for _, c := range cases {
		if got, ok := f.FmtpParam(c.name); got != c.want || ok != c.ok {
			t.Errorf("FmtpParam(%q): got %q %v, want %q %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if f.Channels != 1 || f.ClockRate != 8000 || f.Static {
		t.Errorf("AMR format: %+v", f)
	}
}

func TestDirection(t *testing.T) {
	cases := []struct {
		name    string
		session string
		media   string
		want    Direction
	}{
		{"default", "", "", SendRecv},
		{"session only", "a=inactive\n", "", Inactive},
		{"media overrides", "a=sendonly\n", "a=recvonly\n", RecvOnly},
		{"media only", "", "a=sendonly\n", SendOnly},
		{"valued attr ignored", "", "a=sendonly:x\n", SendRecv},
		{"blanks around the name", "a= inactive\n", "a=\tsendonly \n", SendOnly},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := "v=0\no=- 1 1 IN IP4 h\ns=-\nt=0 0\n" + c.session + "m=audio 1 RTP/AVP 0\n" + c.media
			s, err := Parse([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Media[0].Direction; got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseTolerance(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		errors []string
	}{
		{"clean", "v=0\no=- 1 1 IN IP4 h\ns=-\nt=0 0\nm=audio 1 RTP/AVP 0\n", nil},
		{"trailing blank lines and spaces", "v=0  \no=- 1 1 IN IP4 h\ns=-\nt=0 0\nm=audio 1 RTP/AVP 0\n\n\n", nil},
		{"missing o s t", "v=0\nm=audio 1 RTP/AVP 0\n", []string{"line 0: missing o= line", "line 0: missing s= line", "line 0: missing t= line"}},
		{"bad port", "v=0\no=- 1 1 IN IP4 h\ns=-\nt=0 0\nm=audio 99999 RTP/AVP 0\n", []string{"line 5: bad m= port"}},
		{"garbage line", "v=0\no=- 1 1 IN IP4 h\ns=-\nt=0 0\nhello\n", []string{"line 5: not a type=value line"}},
		{"unknown type", "v=0\no=- 1 1 IN IP4 h\ns=-\nt=0 0\nq=1\n", []string{`line 5: unknown line type "q"`}},
		{"short origin", "v=0\no=- 1 1\ns=-\nt=0 0\n", []string{"line 2: o= line has 3 fields, want 6"}},
		{"bad c", "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4\nt=0 0\n", []string{"line 4: bad c= line"}},
		{"bad rtpmap", "v=0\no=- 1 1 IN IP4 h\ns=-\nt=0 0\nm=audio 1 RTP/AVP 96\na=rtpmap:96 opus\n", []string{"line 6: rtpmap without clock rate \"96 opus\""}},
		{"bad ptime", "v=0\no=- 1 1 IN IP4 h\ns=-\nt=0 0\nm=audio 1 RTP/AVP 0\na=ptime:x\n", []string{`line 6: bad ptime "x"`}},
		{"known ignored types", "v=0\no=- 1 1 IN IP4 h\ns=-\ni=info\nu=http://x\ne=a@b\np=+1\nb=AS:64\nt=0 0\nr=7d 1h 0 25h\nz=0 0\nk=clear:x\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Errors, c.errors) {
				t.Errorf("Errors: got %q, want %q", s.Errors, c.errors)
			}
		})
	}
	for _, body := range []string{"", "hello world", "\x00\x01", "GET / HTTP/1.1\r\n"} {
		if _, err := Parse([]byte(body)); err != ErrNotSDP {
			t.Errorf("Parse(%q): got %v, want ErrNotSDP", body, err)
		}
	}
	// Errors are capped.
	s, _ := Parse([]byte("v=0\n" + strings.Repeat("junk\n", 100)))
	if len(s.Errors) != MaxErrors+1 || s.Errors[MaxErrors] != "too many errors" {
		t.Errorf("error cap: got %d errors", len(s.Errors))
	}
}

func TestStaticPayload(t *testing.T) {
	cases := []struct {
		pt    int
		enc   string
		clock int
		ok    bool
	}{
		{0, "PCMU", 8000, true}, {3, "GSM", 8000, true}, {4, "G723", 8000, true},
		{8, "PCMA", 8000, true}, {9, "G722", 8000, true}, {13, "CN", 8000, true},
		{18, "G729", 8000, true}, {10, "L16", 44100, true}, {34, "H263", 90000, true},
		{1, "", 0, false}, {2, "", 0, false}, {19, "", 0, false}, {35, "", 0, false},
		{96, "", 0, false}, {-1, "", 0, false}, {200, "", 0, false},
	}
	for _, c := range cases {
		enc, clock, ok := StaticPayload(c.pt)
		if enc != c.enc || clock != c.clock || ok != c.ok {
			t.Errorf("StaticPayload(%d): got %q %d %v, want %q %d %v", c.pt, enc, clock, ok, c.enc, c.clock, c.ok)
		}
	}
}

func TestFromBody(t *testing.T) {
	sdp := "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n"
	mp := "--b1\r\nContent-Type: application/rs-metadata+xml\r\n\r\n<x/>\r\n--b1\r\nContent-Type: application/sdp\r\n\r\n" + sdp + "\r\n--b1--\r\n"
	cases := []struct {
		name string
		ct   string
		body string
		ok   bool
	}{
		{"sdp", "application/sdp", sdp, true},
		{"sdp upper case with params", "Application/SDP; charset=utf-8", sdp, true},
		{"multipart", `multipart/mixed; boundary="b1"`, mp, true},
		{"multipart no sdp", `multipart/mixed; boundary=b1`, strings.Replace(mp, "application/sdp", "text/plain", 1), false},
		{"other type", "application/pidf+xml", sdp, false},
		{"empty", "application/sdp", "", false},
		{"not sdp", "application/sdp", "garbage", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ok := FromBody(c.ct, []byte(c.body))
			if ok != c.ok {
				t.Fatalf("ok: got %v, want %v", ok, c.ok)
			}
			if ok && (len(s.Media) != 1 || s.Media[0].Port != 4000 || s.Media[0].Conn != "192.0.2.1") {
				t.Errorf("session: %+v", s)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for _, body := range []string{offer, "v=0\no=- 1 1 IN IP4 h\ns=\nt=0 0\nm=audio 0/2 RTP/SAVP 0\nc=IN IP4 10.0.0.1/127\na=:odd\na=\na=key:\n",
		// FuzzSDP: a name of blanks with an empty value wrote "a= ", which
		// reads back as an empty name.
		"v=0\no=0 0 0 0 0 0\ns=\nt=0\na= :\na=\t:x\na=k \t:\n"} {
		s1, err := Parse([]byte(body))
		if err != nil || len(s1.Errors) != 0 {
			t.Fatalf("parse: %v %q", err, s1.Errors)
		}
		out := s1.Marshal()
		s2, err := Parse(out)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s1, s2) {
			t.Errorf("round trip differs:\n%s\n first %+v\nsecond %+v", out, s1, s2)
		}
		if s1.String() != string(out) {
			t.Error("String differs from Marshal")
		}
	}
}

// TestFieldsSplitAsStringsFields holds the allocation-free field splitter
// and the t= normalization to strings.Fields and strings.Join.
func TestFieldsSplitAsStringsFields(t *testing.T) {
	for _, v := range []string{
		"", " ", "0 0", "  0\t0 ", "a b c d e", "IN IP4 192.0.2.1", "a\u00a0b c", "x\u2003y",
		"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", "0  0", "0\t0", "\v0\f0\r",
	} {
		var buf [4]string
		got, want := fields(v, buf[:]), strings.Fields(v)
		if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("fields(%q) = %q, strings.Fields %q", v, got, want)
		}
		if got, want := joinFields(got, v), strings.Join(want, " "); got != want {
			t.Errorf("joinFields(%q) = %q, want %q", v, got, want)
		}
	}
}
