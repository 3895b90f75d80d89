package sdp

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// corpusBodies returns the bodies of the FuzzSDP seed corpus (the SDP
// bodies of the public captures and the fuzzer's finds).
func corpusBodies(t testing.TB) []string {
	files, err := filepath.Glob("testdata/fuzz/FuzzSDP/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no FuzzSDP corpus: %v", err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, v, ok := strings.Cut(string(b), "\n")
		v = strings.TrimSpace(v)
		if !ok || !strings.HasPrefix(v, "[]byte(") || !strings.HasSuffix(v, ")") {
			t.Fatalf("%s: not a []byte corpus entry", f)
		}
		s, err := strconv.Unquote(v[len("[]byte(") : len(v)-1])
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, s)
	}
	return out
}

// TestParserReusedGivesParseText: a Parser reused across bodies gives for
// each exactly what ParseText gives, whatever the body before it left in
// the reused Session (more sections, attributes, formats, errors, crypto).
func TestParserReusedGivesParseText(t *testing.T) {
	many := "v=0\r\no=- 1 1 IN IP4 h\r\ns=-\r\nt=0 0\r\n" + strings.Repeat("a=x:1\r\n", 12) +
		"m=audio 1 RTP/AVP 0 8 9 18 96 97\r\na=rtpmap:96 AMR/8000\r\na=crypto:1 k\r\n" +
		"m=video 2 RTP/AVP 31\r\nm=image 3 udptl t38\r\n"
	bodies := []string{
		offer, strings.ReplaceAll(offer, "\n", "\r\n"), many, signalingOfferForTest, "",
		"v=0\r\n", "m=audio 0 RTP/AVP 0\r\n", "garbage\r\nx\r\n", many, "v=0\nm=image 0 udptl t38\n",
		"v=0\r\nbad\r\nm=audio x RTP/AVP\r\na=rtpmap:zz\r\n", signalingOfferForTest,
	}
	bodies = append(bodies, corpusBodies(t)...)
	var p Parser
	for round := 0; round < 2; round++ { // every body after every other kind
		for i, b := range bodies {
			want, wantErr := ParseText(b)
			got, gotErr := p.ParseText(b)
			if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d body %d %q:\nreused %#v (%v)\n   new %#v (%v)", round, i, b, got, gotErr, want, wantErr)
			}
		}
		for i, j := 0, len(bodies)-1; i < j; i, j = i+1, j-1 {
			bodies[i], bodies[j] = bodies[j], bodies[i]
		}
	}
}

// signalingOfferForTest is the offer of bench/gen's signaling workload.
const signalingOfferForTest = "v=0\r\no=- 1672239231 1672239231 IN IP4 192.0.2.10\r\ns=-\r\nc=IN IP4 192.0.2.10\r\nt=0 0\r\n" +
	"m=audio 16384 RTP/AVP 0 8 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n" +
	"a=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\na=ptime:20\r\na=sendrecv\r\n"

// FuzzParserReuse parses two bodies with one Parser: the second gives
// what ParseText gives for it.
func FuzzParserReuse(f *testing.F) {
	f.Add([]byte(offer), []byte(signalingOfferForTest))
	f.Add([]byte(signalingOfferForTest), []byte("v=0\nm=image 0 udptl t38\n"))
	f.Add([]byte("v=0\r\na=a\r\na=b\r\na=c\r\na=d\r\na=e\r\na=f\r\na=g\r\na=h\r\na=i\r\nm=audio 1 RTP/AVP 0 8 9 18 4\r\n"), []byte("m=audio 1 RTP/AVP 0\r\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var p Parser
		_, _ = p.ParseText(string(a))
		got, gotErr := p.ParseText(string(b))
		want, wantErr := ParseText(string(b))
		if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("after %q, %q:\nreused %#v (%v)\n   new %#v (%v)", a, b, got, gotErr, want, wantErr)
		}
	})
}
