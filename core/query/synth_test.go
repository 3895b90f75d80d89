package query

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

var synthT0 = time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)

// synthKind is what synthetic dialog i is: its messages follow from i.
type synthKind int

const (
	kCall     synthKind = iota // INVITE, 180, 200: InCall
	kBusy                      // INVITE, 180, 486: Failed
	kRegister                  // REGISTER, 200: Registered
	kOptions                   // OPTIONS, 200
	kDenied                    // INVITE, 403: Failed
)

func kindOf(i int) synthKind {
	switch i % 10 {
	case 0, 1, 2, 3:
		return kCall
	case 4:
		return kBusy
	case 5, 6, 7:
		return kRegister
	case 8:
		return kOptions
	}
	return kDenied
}

// synthWant is the exact per-method and per-state counts of n synthetic
// dialogs.
func synthWant(n int) (methods, states map[string]int) {
	methods, states = map[string]int{}, map[string]int{}
	for i := 0; i < n; i++ {
		switch kindOf(i) {
		case kCall:
			methods["INVITE"]++
			states["InCall"]++
		case kBusy, kDenied:
			methods["INVITE"]++
			states["Failed"]++
		case kRegister:
			methods["REGISTER"]++
			states["Registered"]++
		case kOptions:
			methods["OPTIONS"]++
			states["Completed"]++
		}
	}
	return methods, states
}

func synthMsg(start, callID, method string, i int, fromTag, toTag, ua string) string {
	var b strings.Builder
	b.WriteString(start + "\r\n")
	fmt.Fprintf(&b, "Via: SIP/2.0/UDP 192.0.2.%d:5060;branch=z9hG4bK%d\r\n", 10+i%200, i)
	fmt.Fprintf(&b, "From: <sip:u%d@example.com>;tag=%s\r\n", i%500, fromTag)
	to := fmt.Sprintf("To: <sip:d%d@example.net>", i%50)
	if toTag != "" {
		to += ";tag=" + toTag
	}
	b.WriteString(to + "\r\n")
	fmt.Fprintf(&b, "Call-ID: %s\r\nCSeq: 1 %s\r\n", callID, method)
	if ua != "" {
		b.WriteString(ua + "\r\n")
	}
	b.WriteString("Content-Length: 0\r\n\r\n")
	return b.String()
}

// synthStore fills a dialog store with n dialogs, tie of them opening on
// each millisecond (so rows share created_at), Call-IDs not in time order.
func synthStore(tb testing.TB, n, tie int) *dialog.Store {
	tb.Helper()
	s := dialog.New(dialog.Config{MaxDialogs: n})
	for i := 0; i < n; i++ {
		synthDialog(tb, s, i, tie)
	}
	return s
}

// synthDialog applies the messages of synthetic dialog i.
func synthDialog(tb testing.TB, s *dialog.Store, i, tie int) {
	apply := func(ts time.Time, src, dst string, text string) {
		m, err := sip.Parse([]byte(text))
		if err != nil {
			tb.Fatalf("synthetic message: %v\n%s", err, text)
		}
		s.Apply(dialog.Observation{Msg: m, TS: ts, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
			Transport: packet.TransportUDP, Origin: packet.OriginWire})
	}
	// Call-IDs in reverse numeric order within a tie group.
	id := fmt.Sprintf("c%07d@synth", (i/tie)*tie+tie-1-i%tie)
	ts := synthT0.Add(time.Duration(i/tie) * time.Millisecond)
	caller := fmt.Sprintf("192.0.2.%d:5060", 10+i%200)
	gw := fmt.Sprintf("198.51.100.%d:5060", 20+i%8)
	ft, tt := fmt.Sprintf("f%d", i), fmt.Sprintf("t%d", i)
	switch k := kindOf(i); k {
	case kCall, kBusy, kDenied:
		uri := fmt.Sprintf("INVITE sip:d%d@example.net SIP/2.0", i%50)
		apply(ts, caller, gw, synthMsg(uri, id, "INVITE", i, ft, "", "User-Agent: synth-ua/"+fmt.Sprint(i%3)))
		if k == kDenied {
			apply(ts.Add(2*time.Millisecond), gw, caller, synthMsg("SIP/2.0 403 Forbidden", id, "INVITE", i, ft, tt, "Server: gw"))
			return
		}
		apply(ts.Add(time.Duration(1+i%7)*time.Second), gw, caller, synthMsg("SIP/2.0 180 Ringing", id, "INVITE", i, ft, tt, ""))
		final := "SIP/2.0 200 OK"
		if k == kBusy {
			final = "SIP/2.0 486 Busy Here"
		}
		apply(ts.Add(8*time.Second), gw, caller, synthMsg(final, id, "INVITE", i, ft, tt, ""))
	case kRegister:
		apply(ts, caller, "203.0.113.10:5060", synthMsg("REGISTER sip:example.com SIP/2.0", id, "REGISTER", i, ft, "", "User-Agent: phone"))
		apply(ts.Add(time.Millisecond), "203.0.113.10:5060", caller, synthMsg("SIP/2.0 200 OK", id, "REGISTER", i, ft, tt, ""))
	case kOptions:
		apply(ts, caller, gw, synthMsg("OPTIONS sip:gw SIP/2.0", id, "OPTIONS", i, ft, "", ""))
		apply(ts.Add(time.Millisecond), gw, caller, synthMsg("SIP/2.0 200 OK", id, "OPTIONS", i, ft, tt, ""))
	}
}

func synthBodyMsg(t *testing.T, body string) *sip.Message {
	t.Helper()
	text := "INVITE sip:b@x SIP/2.0\r\nCall-ID: body\r\nCSeq: 1 INVITE\r\nContent-Type: application/sdp\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	m, err := sip.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fuzzMsg wraps a body in a minimal request; nil when the parser refuses.
func fuzzMsg(body string) *sip.Message {
	text := "MESSAGE sip:b@x SIP/2.0\r\nCall-ID: fuzz\r\nCSeq: 1 MESSAGE\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	m, err := sip.Parse([]byte(text))
	if err != nil {
		return nil
	}
	return m
}
