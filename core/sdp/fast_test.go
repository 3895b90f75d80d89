package sdp

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzFastPathsChangeNothing parses each body with the fast paths for the
// usual line shapes (fast.go) and without them: the Sessions, Errors
// included, must be equal whatever the body.
// Seeds: testdata/fuzz/FuzzSDP's bodies (the public captures'), the
// signaling workload's offer and the near misses below, each a usual line
// bent one way.
func FuzzFastPathsChangeNothing(f *testing.F) {
	for _, b := range fastPathBodies {
		f.Add([]byte(b))
	}
	for _, b := range corpusBodies(f) {
		f.Add([]byte(b))
	}
	f.Add([]byte(offer))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, fastErr := parseWith(string(b), &sessionBlock{}, false)
		general, generalErr := parseWith(string(b), &sessionBlock{}, true)
		if fastErr != generalErr || !reflect.DeepEqual(fast, general) {
			t.Fatalf("%q:\n   fast %#v (%v)\ngeneral %#v (%v)", b, fast, fastErr, general, generalErr)
		}
	})
}

// fastPathBodies are the signaling workload's offer and, for each line the
// fast paths read, the line bent one way (a blank too many, a tab, a
// non-ASCII byte, a field too few or too many, leading zeros, a zero
// clock...), which the general code must read.
var fastPathBodies = func() []string {
	head := "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\n"
	out := []string{signalingOfferForTest}
	for _, o := range []string{"- 1 1 IN IP4 192.0.2.1 x", "- 1 1 IN IP4", "-  1 1 IN IP4 h", "- 1 1 IN\tIP4 h", "- 1 1 IN IP4 h\u00a0", " - 1 1 IN IP4 h", ""} {
		out = append(out, strings.Replace(head, "- 1 1 IN IP4 192.0.2.1", o, 1)+"m=audio 1 RTP/AVP 0\r\n")
	}
	for _, c := range []string{"IN IP4 192.0.2.1/127/2", "IN IP4 /127", "IN IP4", "IN  IP4 h", "IN IP4 h x", "in IP4 h", "IN IP4\th", "IN IP6 ::1"} {
		out = append(out, strings.Replace(head, "c=IN IP4 192.0.2.1", "c="+c, 1)+"m=audio 1 RTP/AVP 0\r\nc="+c+"\r\nc=IN IP4 192.0.2.9\r\n")
	}
	for _, tm := range []string{"0 0", "0", "", " 0 0", "0  0", "0\t0", "0 0\u00a0", "3034423619 3042462419"} {
		out = append(out, strings.Replace(head, "t=0 0", "t="+tm, 1)+"t=1 1\r\nm=audio 1 RTP/AVP 0\r\n")
	}
	for _, m := range []string{
		"audio 4000 RTP/AVP 0 8 101", "audio 4000 RTP/AVP", "audio 4000 RTP/AVP ", "audio  4000 RTP/AVP 0",
		"audio 4000/2 RTP/AVP 0", "audio 65536 RTP/AVP 0", "audio 065535 RTP/AVP 0", "audio -1 RTP/AVP 0",
		"audio 4000 RTP/AVP 0096 0128 1000 128 +1 -1 t38 *", "audio 4000 rtp/avp 0", "audio 4000 RTP/AVP 0 8 9 18 96 97",
		"audio 4000 RTP/AVP 0\t8", "audio 4000 udptl t38", "audio\u00a04000 RTP/AVP 0", "image 0 udptl t38",
	} {
		out = append(out, head+"m="+m+"\r\na=rtpmap:0 PCMU/8000\r\n")
	}
	for _, r := range []string{
		"96 opus/48000/2", "96 opus/48000", "96 opus/48000/0", "96 opus/0", "96 opus/08000", "96 opus/48000/2/1",
		"96 opus", "96 /8000", "96  opus/8000", "96\topus/8000", "96 opus /8000", "96 opus/8000 ", "096 opus/8000",
		"0096 opus/8000", "128 opus/8000", "96x opus/8000", " 96 opus/8000", "96 op\u00e9/8000", "96 opus/1234567890",
		"96 opus/8000/", "96 opus//8000", "96", "",
	} {
		out = append(out, head+"m=audio 4000 RTP/AVP 0 96\r\na=rtpmap:"+r+"\r\na=rtpmap:96 AMR/8000\r\na=fmtp:"+r+"\r\n")
	}
	for _, a := range []string{"sendonly", " sendonly", "sendonly:", ":x", "", "ptime:20", "ptime: 20", "ptime:20.5", "ptime:0020", "ptime:1234567",
		"fmtp:96", "fmtp:96 ", "fmtp:96 a=1 ", "fmtp:96  a=1", "fmtp:96\ta=1", "fmtp:t38 x", "x\u00a0:1", "rtcp:4001 IN IP4 192.0.2.2"} {
		out = append(out, head+"a="+a+"\r\nm=audio 4000 RTP/AVP 0 96\r\na="+a+"\r\n")
	}
	return out
}()

// TestFastPathsReadTheUsualBody: the signaling workload's offer is read by
// the fast paths (each of its o=, m= and rtpmap lines), and gives what the
// general code gives.
func TestFastPathsReadTheUsualBody(t *testing.T) {
	p := parser{s: &Session{}}
	if !p.originFast("- 1672239231 1672239231 IN IP4 192.0.2.10") || p.s.Origin.Address != "192.0.2.10" {
		t.Errorf("o= line not read by the fast path: %+v", p.s.Origin)
	}
	if !p.mediaFast("audio 16384 RTP/AVP 0 8 101") || len(p.s.Media) != 1 || len(p.s.Media[0].Formats) != 3 {
		t.Errorf("m= line not read by the fast path: %+v", p.s.Media)
	}
	if addr, typ, ok := connFast("IN IP4 192.0.2.10"); !ok || addr != "192.0.2.10" || typ != "IP4" {
		t.Errorf("c= line not read by the fast path: %q %q %v", addr, typ, ok)
	}
	if !spacedTokens("0 0") {
		t.Error("t= line not read by the fast path")
	}
	for _, v := range []string{"rtpmap:0 PCMU/8000", "fmtp:101 0-16", "ptime:20", "sendrecv"} {
		if a, ok := attrFast(v); !ok || a != parseAttr(v) {
			t.Errorf("a=%s not read by the fast path: %+v %v", v, a, ok)
		}
	}
	if pt, rest, ok := ptAndRestFast("101 0-16"); !ok || pt != 101 || rest != "0-16" {
		t.Errorf("fmtp value not read by the fast path: %d %q %v", pt, rest, ok)
	}
	for _, c := range []struct {
		v    string
		pt   int
		want rtpmap
	}{
		{"0 PCMU/8000", 0, rtpmap{"PCMU", 8000, 0}},
		{"101 telephone-event/8000", 101, rtpmap{"telephone-event", 8000, 0}},
		{"111 opus/48000/2", 111, rtpmap{"opus", 48000, 2}},
	} {
		if pt, r, ok := rtpmapFast(c.v); !ok || pt != c.pt || r != c.want {
			t.Errorf("rtpmapFast(%q) = %d %+v %v, want %d %+v", c.v, pt, r, ok, c.pt, c.want)
		}
	}
	fast, _ := parseWith(signalingOfferForTest, &sessionBlock{}, false)
	general, _ := parseWith(signalingOfferForTest, &sessionBlock{}, true)
	if !reflect.DeepEqual(fast, general) || len(fast.Errors) != 0 {
		t.Fatalf("fast %#v\ngeneral %#v", fast, general)
	}
}

// TestFastPathsLeaveTheUnusualToTheGeneralCode: each bent line of
// fastPathBodies, and every body of the FuzzSDP corpus, parses the same
// with the fast paths and without.
func TestFastPathsLeaveTheUnusualToTheGeneralCode(t *testing.T) {
	for _, b := range append(append([]string{}, fastPathBodies...), corpusBodies(t)...) {
		fast, fastErr := parseWith(b, &sessionBlock{}, false)
		general, generalErr := parseWith(b, &sessionBlock{}, true)
		if fastErr != generalErr || !reflect.DeepEqual(fast, general) {
			t.Errorf("%q:\n   fast %#v (%v)\ngeneral %#v (%v)", b, fast, fastErr, general, generalErr)
		}
	}
}
