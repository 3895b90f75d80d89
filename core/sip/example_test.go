package sip_test

import (
	"fmt"

	"github.com/sipnab/sipnab/core/sip"
)

func ExampleParse() {
	b := []byte("\r\nINVITE sip:bob@biloxi.example.com SIP/2.0\r\n" +
		"v: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds\r\n" +
		"f: \"Alice\" <sip:alice@atlanta.example.com>;tag=1928301774\r\n" +
		"t: <sip:bob@biloxi.example.com>\r\n" +
		"i: a84b4c76e66710\r\n" +
		"CSeq: 314159 INVITE\r\n" +
		"Subject: lunch\r\n tomorrow?\r\n" +
		"l: 0\r\n\r\n")
	if !sip.Looks(b) {
		return
	}
	m, err := sip.Parse(b)
	if err != nil {
		return
	}
	fmt.Println(m.Method, m.CallID, m.From.User, m.From.Tag, m.TopBranch(), m.CSeq.Number)
	subject, _ := m.Header(sip.HdrSubject)
	fmt.Printf("%q junk=%d malformed=%v\n", subject, m.JunkPrefixBytes, m.Malformed)
	h := m.Headers[5]
	fmt.Printf("%s at [%d,%d): %q\n", h.ID, h.Start, h.End, m.Raw[h.Start:h.End])
	// Output:
	// INVITE a84b4c76e66710 alice 1928301774 z9hG4bK776asdhds 314159
	// "lunch tomorrow?" junk=2 malformed=[]
	// Subject at [240,266): "Subject: lunch\r\n tomorrow?"
}

func ExampleStatusClass() {
	for _, code := range []int{180, 200, 302, 407, 487, 603, 503} {
		phrase, _ := sip.StatusText(code)
		fmt.Println(code, phrase, sip.StatusClass(code))
	}
	// Output:
	// 180 Ringing provisional
	// 200 OK success
	// 302 Moved Temporarily redirect
	// 407 Proxy Authentication Required challenge
	// 487 Request Terminated canceled
	// 603 Decline declined
	// 503 Service Unavailable failure
}
