package sdptimeline

import (
	"testing"
)

// FuzzBuild feeds arbitrary SDP bodies through a small dialog (INVITE,
// 183, 200, ACK, re-INVITE, UPDATE) and checks Build and Negotiate never
// panic and keep their invariants: every answer points at an earlier offer,
// every negotiation's common codecs were both offered and answered.
func FuzzBuild(f *testing.F) {
	f.Add("v=0\r\nc=IN IP4 10.0.0.1\r\nm=audio 4000 RTP/AVP 0 8\r\n", "v=0\r\nc=IN IP4 0.0.0.0\r\nm=audio 5000 RTP/AVP 0\r\na=sendonly\r\n", "m=image 6000 udptl t38\r\n")
	f.Add("", "v=0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 opus/48000/2\r\n", "v=0\r\nm=audio 1 RTP/AVP\r\n")
	f.Add("garbage", "m=", "v=0\nc=IN IP6 ::\nm=audio 4000 RTP/SAVP 9 101\na=rtpmap:101 telephone-event/8000\na=inactive\n")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		bl := &builder{t: t}
		bl.req("INVITE", 1, alice, bob, false, a).
			resp(183, "INVITE", 1, bob, alice, b).
			resp(200, "INVITE", 1, bob, alice, c).
			req("ACK", 1, alice, bob, true, b).
			req("INVITE", 2, bob, alice, true, c).
			resp(200, "INVITE", 2, alice, bob, a).
			req("UPDATE", 3, alice, bob, true, b)
		tl := Build(bl.msgs)
		for i, e := range tl.Exchanges {
			if e.Direction != Offer && e.Direction != Answer {
				t.Fatalf("exchange %d: direction %q", i, e.Direction)
			}
			if e.AnswersExchange >= 0 && (e.AnswersExchange >= i || tl.Exchanges[e.AnswersExchange].Direction != Offer) {
				t.Fatalf("exchange %d answers %d, which is not an earlier offer", i, e.AnswersExchange)
			}
		}
		ck := Negotiate(&tl)
		for _, n := range ck.All {
			for _, x := range n.Common {
				if !contains(n.Offered, x) {
					t.Fatalf("common %q not offered in %+v", x, n)
				}
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if CodecKey(x) == CodecKey(s) {
			return true
		}
	}
	return false
}
