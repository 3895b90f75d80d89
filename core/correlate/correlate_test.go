package correlate

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

var t0 = time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)

// leg describes one crafted INVITE dialog: INVITE, 200, ACK, BYE, 200.
type leg struct {
	callID string
	at     time.Duration // start, after t0
	span   time.Duration // INVITE to the BYE's 200 (default 10 s)
	a, b   string        // caller and callee addresses (default 10.0.0.1/10.0.0.2)
	method string        // opening method (default INVITE)
	// extra headers on the INVITE and on its 200
	invite, answer []string
	// branches of the INVITE's Via stack, top first (default one fresh)
	vias []string
	// SDP bodies of the INVITE and of its 200 ("" for none)
	offer, answerSDP string
	// From and To users (default alice-<callID>, bob-<callID>: no two
	// legs share them unless a case says so)
	fromUser, toUser string
	// From tag and To tag (default a-<callID>, b-<callID>)
	fromTag, toTag string
}

func (l leg) messages() []dialog.Observation {
	if l.a == "" {
		l.a = "10.0.0.1:5060"
	}
	if l.b == "" {
		l.b = "10.0.0.2:5060"
	}
	if l.span == 0 {
		l.span = 10 * time.Second
	}
	if l.method == "" {
		l.method = "INVITE"
	}
	if l.fromUser == "" {
		l.fromUser, l.toUser = "alice-"+l.callID, "bob-"+l.callID
	}
	if l.fromTag == "" {
		l.fromTag = "a-" + l.callID
	}
	if l.toTag == "" {
		l.toTag = "b-" + l.callID
	}
	if len(l.vias) == 0 {
		l.vias = []string{"z9hG4bK-" + l.callID}
	}
	var vias string
	for _, v := range l.vias {
		vias += "Via: SIP/2.0/UDP 192.0.2.9:5060;branch=" + v + "\r\n"
	}
	build := func(start, toTag string, cseq int, method string, extra []string, body string) *sip.Message {
		var b strings.Builder
		b.WriteString(start + "\r\n" + vias)
		b.WriteString("From: \"Alice\" <sip:" + l.fromUser + "@example.com>;tag=" + l.fromTag + "\r\n")
		to := "To: <sip:" + l.toUser + "@example.com>"
		if toTag != "" {
			to += ";tag=" + toTag
		}
		b.WriteString(to + "\r\nCall-ID: " + l.callID + "\r\n")
		fmt.Fprintf(&b, "CSeq: %d %s\r\n", cseq, method)
		for _, e := range extra {
			b.WriteString(e + "\r\n")
		}
		if body != "" {
			b.WriteString("Content-Type: application/sdp\r\n")
			body = strings.ReplaceAll(body, "\n", "\r\n")
		}
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
		m, err := sip.Parse([]byte(b.String()))
		if err != nil {
			panic(err)
		}
		return m
	}
	a, b := netip.MustParseAddrPort(l.a), netip.MustParseAddrPort(l.b)
	start := t0.Add(l.at)
	obs := func(off time.Duration, m *sip.Message, src, dst netip.AddrPort) dialog.Observation {
		return dialog.Observation{Msg: m, TS: start.Add(off), Src: src, Dst: dst, Transport: packet.TransportUDP, Origin: packet.OriginWire}
	}
	if l.method != "INVITE" {
		return []dialog.Observation{
			obs(0, build(l.method+" sip:bob@example.com SIP/2.0", "", 1, l.method, l.invite, ""), a, b),
			obs(l.span, build("SIP/2.0 200 OK", l.toTag, 1, l.method, l.answer, ""), b, a),
		}
	}
	return []dialog.Observation{
		obs(0, build("INVITE sip:bob@example.com SIP/2.0", "", 1, "INVITE", l.invite, l.offer), a, b),
		obs(100*time.Millisecond, build("SIP/2.0 200 OK", l.toTag, 1, "INVITE", l.answer, l.answerSDP), b, a),
		obs(200*time.Millisecond, build("ACK sip:bob@example.com SIP/2.0", l.toTag, 1, "ACK", nil, ""), a, b),
		obs(l.span-100*time.Millisecond, build("BYE sip:bob@example.com SIP/2.0", l.toTag, 2, "BYE", nil, ""), a, b),
		obs(l.span, build("SIP/2.0 200 OK", l.toTag, 2, "BYE", nil, ""), b, a),
	}
}

// storeOf applies every leg's messages in time order.
func storeOf(t testing.TB, legs ...leg) *dialog.Store {
	t.Helper()
	var all []dialog.Observation
	for _, l := range legs {
		all = append(all, l.messages()...)
	}
	// stable insertion sort by time keeps each leg's order
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].TS.Before(all[j-1].TS); j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	s := dialog.New(dialog.Config{})
	for _, o := range all {
		s.Apply(o)
	}
	return s
}

func sdpBody(origin, addr string, port int) string {
	return fmt.Sprintf("v=0\no=%s\ns=-\nc=IN IP4 %s\nt=0 0\nm=audio %d RTP/AVP 0\na=sendrecv\n", origin, addr, port)
}

const (
	uuidA = "ab30317f1a784dc48ff824d0d3715d86"
	uuidB = "47755a9de7794ba387653f2099600ef2"
	uuidC = "00112233445566778899aabbccddeeff"
	uuidD = "ffeeddccbbaa99887766554433221100"
	nilID = "00000000000000000000000000000000"
)

// far is a caller and callee pair no other test leg shares, so no timing
// guess can tie its legs to anything.
func far(n int) (string, string) {
	return fmt.Sprintf("198.51.100.%d:5060", n), fmt.Sprintf("203.0.113.%d:5060", n)
}

// got renders a result as "call_id strategy score [gap]" lines.
func got(r Result) []string {
	out := []string{}
	for _, l := range r.Legs {
		s := fmt.Sprintf("%s %s %d", l.CallID, l.Strategy, l.Score)
		if !l.IdentifierMatch {
			s += fmt.Sprintf(" gap=%dms", l.GapMs)
		}
		out = append(out, s)
	}
	return out
}

func TestStrategies(t *testing.T) {
	a1, b1 := far(1)
	a2, b2 := far(2)
	a3, b3 := far(3)
	a4, b4 := far(4)
	cases := []struct {
		name   string
		cfg    Config
		legs   []leg
		source string
		want   []string
	}{
		{
			name: "session_id halves swapped across a B2BUA",
			legs: []leg{
				{callID: "A", a: a1, b: b1, invite: []string{"Session-ID: " + uuidA + ";remote=" + nilID}, answer: []string{"Session-ID: " + uuidB + ";remote=" + uuidA}},
				{callID: "B", a: a2, b: b2, at: 5 * time.Second, invite: []string{"Session-ID: " + uuidB + ";remote=" + uuidA}},
			},
			source: "A", want: []string{"B session_id 100"},
		},
		{
			name: "session_id upper-case hex matches lower-case",
			legs: []leg{
				{callID: "A", a: a1, b: b1, invite: []string{"Session-ID: " + strings.ToUpper(uuidA)}},
				{callID: "B", a: a2, b: b2, invite: []string{"Session-ID: " + uuidC + ";remote=" + uuidA}},
			},
			source: "B", want: []string{"A session_id 100"},
		},
		{
			name: "nil halves never match",
			legs: []leg{
				{callID: "A", a: a1, b: b1, invite: []string{"Session-ID: " + uuidA + ";remote=" + nilID}},
				{callID: "B", a: a2, b: b2, invite: []string{"Session-ID: " + uuidC + ";remote=" + nilID}},
				{callID: "C", a: a3, b: b3, invite: []string{"Session-ID: " + nilID + ";remote=" + nilID}},
			},
			source: "A", want: []string{},
		},
		{
			name: "x_call_id names the other leg, both ways",
			legs: []leg{
				{callID: "orig-1@pbx", a: a1, b: b1},
				{callID: "leg-2@sbc", a: a2, b: b2, invite: []string{"X-Call-ID: orig-1@pbx"}},
			},
			source: "orig-1@pbx", want: []string{"leg-2@sbc x_call_id 100"},
		},
		{
			name: "x_call_id from the naming leg",
			legs: []leg{
				{callID: "orig-1@pbx", a: a1, b: b1},
				{callID: "leg-2@sbc", a: a2, b: b2, invite: []string{"X-Call-ID: orig-1@pbx"}},
			},
			source: "leg-2@sbc", want: []string{"orig-1@pbx x_call_id 100"},
		},
		{
			name: "x_call_id siblings naming one Call-ID that was not captured",
			legs: []leg{
				{callID: "fork-1", a: a1, b: b1, invite: []string{"X-Call-ID: uncaptured"}},
				{callID: "fork-2", a: a2, b: b2, invite: []string{"X-Call-ID: uncaptured"}},
			},
			source: "fork-1", want: []string{"fork-2 x_call_id 100"},
		},
		{
			name: "x_call_id header list is configurable",
			cfg:  Config{XCallIDHeaders: []string{"X-Orig-Call-ID"}},
			legs: []leg{
				{callID: "orig", a: a1, b: b1},
				{callID: "named-by-default", a: a2, b: b2, invite: []string{"X-Call-ID: orig"}},
				{callID: "named-by-config", a: a3, b: b3, invite: []string{"x-orig-call-id: orig"}},
			},
			source: "orig", want: []string{"named-by-config x_call_id 100"},
		},
		{
			name: "P-Charging-Vector related-icid names the other leg's icid-value",
			legs: []leg{
				{callID: "A", a: a1, b: b1, invite: []string{"P-Charging-Vector: icid-value=1234bc9876e;icid-generated-at=192.0.6.8"}},
				{callID: "B", a: a2, b: b2, invite: []string{"P-Charging-Vector: icid-value=ffff0000;related-icid=1234bc9876e;orig-ioi=home1.net"}},
			},
			source: "A", want: []string{"B charging_vector_related_icid 95"},
		},
		{
			name: "P-Charging-Vector shared icid-value, quoted and bare",
			legs: []leg{
				{callID: "A", a: a1, b: b1, invite: []string{"P-Charging-Vector: icid-value=\"AyretyU0dm+6O2IrT5tAFrbHLso=023551024\";orig-ioi=home1.net"}},
				{callID: "B", a: a2, b: b2, answer: []string{"P-Charging-Vector: icid-value=AyretyU0dm+6O2IrT5tAFrbHLso=023551024"}},
			},
			source: "B", want: []string{"A charging_vector_icid 85"},
		},
		{
			name: "related-icid outranks the shared icid-value",
			legs: []leg{
				{callID: "A", a: a1, b: b1, invite: []string{"P-Charging-Vector: icid-value=X1"}},
				{callID: "B", a: a2, b: b2, invite: []string{"P-Charging-Vector: icid-value=X1;related-icid=X1"}},
			},
			source: "A", want: []string{"B charging_vector_related_icid 95"},
		},
		{
			name: "sdp_origin shared tuple, version moved",
			legs: []leg{
				{callID: "A", a: a1, b: b1, offer: sdpBody("GW 751047051 751046929 IN IP4 10.33.6.101", "10.33.6.101", 6000)},
				{callID: "B", a: a2, b: b2, at: time.Second, offer: sdpBody("GW 751047051 751046930 IN IP4 10.33.6.101", "10.33.6.102", 7000)},
			},
			source: "A", want: []string{"B sdp_origin 90"},
		},
		{
			name: "sdp_origin with sess-id 0 identifies the phone, not the session",
			legs: []leg{
				{callID: "A", a: a1, b: b1, offer: sdpBody("Z 0 0 IN IP4 172.16.98.1", "172.16.98.1", 8000)},
				{callID: "B", a: a2, b: b2, at: time.Second, offer: sdpBody("Z 0 1 IN IP4 172.16.98.1", "172.16.98.1", 8000)},
			},
			source: "A", want: []string{},
		},
		{
			name: "sdp_origin between legs that never coexisted is no match",
			legs: []leg{
				{callID: "A", a: a1, b: b1, offer: sdpBody("alice 2890844526 2890844526 IN IP4 10.0.0.1", "10.0.0.1", 6000)},
				{callID: "B", a: a2, b: b2, at: time.Minute, offer: sdpBody("alice 2890844526 2890844527 IN IP4 10.0.0.1", "10.0.0.1", 6000)},
			},
			source: "A", want: []string{},
		},
		{
			name: "sdp_origin differing in address is no match",
			legs: []leg{
				{callID: "A", a: a1, b: b1, offer: sdpBody("root 555055307 555055307 IN IP4 172.16.98.101", "172.16.98.101", 18010)},
				{callID: "B", a: a2, b: b2, offer: sdpBody("root 555055307 555055308 IN IP4 172.16.98.1", "172.16.98.1", 8000)},
			},
			source: "A", want: []string{},
		},
		{
			name: "via_branch kept by a proxy that changed the Call-ID",
			legs: []leg{
				{callID: "up", a: a1, b: b1, vias: []string{"z9hG4bKac751052981"}},
				{callID: "down", a: a2, b: b2, vias: []string{"z9hG4bKac49822475", "z9hG4bKac751052981"}},
			},
			source: "down", want: []string{"up via_branch 80"},
		},
		{
			name: "via_branch too short to identify",
			legs: []leg{
				{callID: "up", a: a1, b: b1, vias: []string{"1"}},
				{callID: "down", a: a2, b: b2, vias: []string{"z9hG4bKother1", "1"}},
			},
			source: "down", want: []string{},
		},
		{
			name: "timing within the window, sharing an address",
			legs: []leg{
				{callID: "A", a: "10.0.0.1:5060", b: "10.0.0.100:5060"},
				{callID: "B", a: "10.0.0.100:5060", b: "10.0.0.3:5060", at: 1500 * time.Millisecond},
			},
			source: "A", want: []string{"B timing_heuristic 50 gap=1500ms"},
		},
		{
			name: "timing on the window edge",
			legs: []leg{
				{callID: "A", a: "10.0.0.1:5060", b: "10.0.0.100:5060", at: 2 * time.Second},
				{callID: "B", a: "10.0.0.100:5060", b: "10.0.0.3:5060"},
			},
			source: "A", want: []string{"B timing_heuristic 50 gap=2000ms"},
		},
		{
			name: "timing outside the window",
			legs: []leg{
				{callID: "A", a: "10.0.0.1:5060", b: "10.0.0.100:5060"},
				{callID: "B", a: "10.0.0.100:5060", b: "10.0.0.3:5060", at: 2001 * time.Millisecond},
			},
			source: "A", want: []string{},
		},
		{
			name: "timing with a narrower configured window",
			cfg:  Config{Window: time.Second},
			legs: []leg{
				{callID: "A", a: "10.0.0.1:5060", b: "10.0.0.100:5060"},
				{callID: "B", a: "10.0.0.100:5060", b: "10.0.0.3:5060", at: 1500 * time.Millisecond},
			},
			source: "A", want: []string{},
		},
		{
			name: "timing needs a shared address",
			legs: []leg{
				{callID: "A", a: a1, b: b1},
				{callID: "B", a: a2, b: b2, at: 100 * time.Millisecond},
			},
			source: "A", want: []string{},
		},
		{
			name: "timing needs the same kind of dialog",
			legs: []leg{
				{callID: "A", a: "10.0.0.1:5060", b: "10.0.0.100:5060"},
				{callID: "R", a: "10.0.0.1:5060", b: "10.0.0.100:5060", at: 100 * time.Millisecond, method: "REGISTER"},
			},
			source: "A", want: []string{},
		},
		{
			name: "first match per leg in descending score, then sorted by score",
			legs: []leg{
				{callID: "A", a: "10.0.0.1:5060", b: "10.0.0.100:5060", vias: []string{"z9hG4bK-shared-1"},
					invite: []string{"Session-ID: " + uuidA, "P-Charging-Vector: icid-value=I1"}},
				// matches on via_branch and by timing: reported as via_branch
				{callID: "V", a: "10.0.0.100:5060", b: "10.0.0.3:5060", at: 300 * time.Millisecond, vias: []string{"z9hG4bK-v", "z9hG4bK-shared-1"}},
				// matches on session_id and on icid: reported as session_id
				{callID: "S", a: a4, b: b4, at: 500 * time.Millisecond, invite: []string{"Session-ID: " + uuidD + ";remote=" + uuidA, "P-Charging-Vector: icid-value=I1"}},
				// timing only
				{callID: "T", a: "10.0.0.100:5060", b: "10.0.0.7:5060", at: 900 * time.Millisecond},
				// icid only
				{callID: "I", a: a3, b: b3, at: 30 * time.Second, invite: []string{"P-Charging-Vector: icid-value=I1"}},
			},
			source: "A",
			want:   []string{"S session_id 100", "I charging_vector_icid 85", "V via_branch 80", "T timing_heuristic 50 gap=900ms"},
		},
		{
			name: "sdp_origin across an SBC's address rewrite: sess-id and version",
			legs: []leg{
				{callID: "A", a: a1, b: b1, offer: sdpBody("alice 770011 3 IN IP4 10.1.1.1", "10.1.1.1", 6000)},
				{callID: "B", a: a2, b: b2, at: 40 * time.Millisecond, offer: sdpBody("alice 770011 3 IN IP4 203.0.113.9", "203.0.113.9", 40000)},
			},
			source: "A", want: []string{"B sdp_origin 90"},
		},
		{
			name: "a sess-id both phones of one call send is a constant, not an identifier",
			legs: []leg{
				{callID: "P", a: a1, b: b1, offer: sdpBody("phone 4242 1 IN IP4 10.2.0.1", "10.2.0.1", 6000),
					answerSDP: sdpBody("phone 4242 1 IN IP4 10.2.0.2", "10.2.0.2", 6000)},
				{callID: "Q", a: a2, b: b2, at: 50 * time.Millisecond, offer: sdpBody("phone 4242 1 IN IP4 10.3.0.1", "10.3.0.1", 6000)},
			},
			source: "Q", want: []string{},
		},
		{
			name: "a sess-id under three origins is a constant",
			legs: []leg{
				{callID: "P", a: a1, b: b1, offer: sdpBody("x 5151 1 IN IP4 10.2.0.1", "10.2.0.1", 6000)},
				{callID: "Q", a: a2, b: b2, at: 50 * time.Millisecond, offer: sdpBody("y 5151 1 IN IP4 10.3.0.1", "10.3.0.1", 6000)},
				{callID: "R", a: a3, b: b3, at: 90 * time.Millisecond, offer: sdpBody("z 5151 1 IN IP4 10.4.0.1", "10.4.0.1", 6000)},
			},
			source: "P", want: []string{},
		},
		{
			name: "the RFC 4566 example sess-id identifies nothing, even as the same tuple",
			legs: []leg{
				{callID: "A", a: a1, b: b1, offer: sdpBody("jdoe 2890844526 2890842807 IN IP4 10.47.16.5", "10.47.16.5", 6000)},
				{callID: "B", a: a2, b: b2, at: time.Second, offer: sdpBody("jdoe 2890844526 2890842807 IN IP4 10.47.16.5", "10.47.16.5", 6000)},
			},
			source: "A", want: []string{},
		},
		{
			name: "embedded_tag: the far leg's From tag carries the near leg's",
			legs: []leg{
				{callID: "A", a: a1, b: b1, fromTag: "as6f0c91d2"},
				{callID: "B", a: a2, b: b2, at: 30 * time.Millisecond, fromTag: "b2b-as6f0c91d2-1"},
			},
			source: "B", want: []string{"A embedded_tag 75"},
		},
		{
			name: "same_users across a number rewrite within the window is a guess",
			legs: []leg{
				{callID: "A", a: a1, b: b1, fromUser: "+49301234567", toUser: "2001"},
				{callID: "B", a: a2, b: b2, at: 120 * time.Millisecond, fromUser: "0301234567", toUser: "2001"},
				{callID: "C", a: a3, b: b3, at: 5 * time.Second, fromUser: "0301234567", toUser: "2001"},
			},
			source: "A", want: []string{"B same_users 60 gap=120ms"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(storeOf(t, tc.legs...), tc.cfg)
			r, ok := c.Find(tc.source)
			if !ok {
				t.Fatalf("Find(%q): unknown", tc.source)
			}
			if g := got(r); strings.Join(g, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got legs\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestUnknownCallID(t *testing.T) {
	c := New(storeOf(t, leg{callID: "A"}), Config{})
	r, ok := c.Find("nope")
	if ok || len(r.Legs) != 0 {
		t.Fatalf("got ok %v legs %v, want unknown and none", ok, r.Legs)
	}
	if _, ok := c.Tree("nope", 10); ok {
		t.Fatal("Tree of an unknown Call-ID: got ok, want not found")
	}
}

// TestSnapshotFollowsTheStore: a leg that arrives after a first query is
// found by the next one, and an evicted leg is forgotten.
func TestSnapshotFollowsTheStore(t *testing.T) {
	a1, b1 := far(1)
	a2, b2 := far(2)
	s := dialog.New(dialog.Config{MaxDialogs: 2, NoRotate: false})
	for _, o := range (leg{callID: "A", a: a1, b: b1, invite: []string{"X-Call-ID: B"}}).messages() {
		s.Apply(o)
	}
	c := New(s, Config{})
	if r, _ := c.Find("A"); len(r.Legs) != 0 {
		t.Fatalf("before B: got %v, want no legs", got(r))
	}
	for _, o := range (leg{callID: "B", a: a2, b: b2, at: time.Second}).messages() {
		s.Apply(o)
	}
	if r, _ := c.Find("A"); strings.Join(got(r), ",") != "B x_call_id 100" {
		t.Fatalf("after B: got %v, want B x_call_id 100", got(r))
	}
	// keys: the Call-ID A names, and each INVITE's Via branch
	if st := c.Stats(); st.Dialogs != 2 || st.Keys != 3 {
		t.Errorf("got stats %+v, want 2 dialogs and 3 keys", st)
	}
}

func TestTreeDoesNotWalkTimingEdges(t *testing.T) {
	a9, b9 := far(9)
	// A -x_call_id- B -via_branch- C: the identifier chain.
	// T1 starts 1.5 s after A on a shared address: a timing leaf of A.
	// T2 starts 1.5 s after T1 (3 s after A, outside A's window): only a
	// guess of a guess, never reached. X is tied to T1 by Session-ID: an
	// identifier match hanging off a timing leaf, never reached either.
	legs := []leg{
		{callID: "A", a: "10.0.0.1:5060", b: "10.0.0.100:5060"},
		{callID: "B", a: a9, b: b9, at: 10 * time.Minute, invite: []string{"X-Call-ID: A"}, vias: []string{"z9hG4bK-bc-chain"}},
		{callID: "C", a: "172.16.0.1:5060", b: "172.16.0.2:5060", at: 10 * time.Minute, vias: []string{"z9hG4bK-c-own", "z9hG4bK-bc-chain"}},
		{callID: "T1", a: "10.0.0.100:5060", b: "10.0.0.5:5060", at: 1500 * time.Millisecond, invite: []string{"Session-ID: " + uuidB}},
		{callID: "T2", a: "10.0.0.5:5060", b: "10.0.0.6:5060", at: 3 * time.Second},
		{callID: "X", a: "172.16.1.1:5060", b: "172.16.1.2:5060", at: 20 * time.Minute, invite: []string{"Session-ID: " + uuidC + ";remote=" + uuidB}},
	}
	c := New(storeOf(t, legs...), Config{})
	// T1 itself sees both further legs.
	if r, _ := c.Find("T1"); strings.Join(got(r), ",") != "X session_id 100,A timing_heuristic 50 gap=1500ms,T2 timing_heuristic 50 gap=1500ms" {
		t.Fatalf("Find(T1): got %v", got(r))
	}
	tr, ok := c.Tree("A", 50)
	if !ok {
		t.Fatal("Tree(A): unknown")
	}
	var lines []string
	for _, n := range tr.Nodes {
		s := fmt.Sprintf("%s depth=%d parent=%s followed=%v", n.CallID, n.Depth, n.Parent, n.Followed)
		if n.Edge != nil {
			s += " " + string(n.Edge.Strategy)
		}
		lines = append(lines, s)
	}
	want := []string{
		"A depth=0 parent= followed=true",
		"B depth=1 parent=A followed=true x_call_id",
		"C depth=2 parent=B followed=true via_branch",
		"T1 depth=1 parent=A followed=false timing_heuristic",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got tree\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if tr.HeuristicEdges != 1 || tr.MaxDepth != 2 || tr.Truncated {
		t.Errorf("got heuristic_edges %d max_depth %d truncated %v, want 1, 2, false", tr.HeuristicEdges, tr.MaxDepth, tr.Truncated)
	}
}

func TestTreeLimit(t *testing.T) {
	// A chain A - B - C - D tied by X-Call-ID, each naming the previous.
	var legs []leg
	prev := ""
	for i, id := range []string{"A", "B", "C", "D"} {
		a, b := far(10 + i)
		l := leg{callID: id, a: a, b: b, at: time.Duration(i) * time.Minute}
		if prev != "" {
			l.invite = []string{"X-Call-ID: " + prev}
		}
		legs = append(legs, l)
		prev = id
	}
	c := New(storeOf(t, legs...), Config{})
	cases := []struct {
		limit     int
		want      string
		truncated bool
	}{
		{1, "A:true", true},
		{2, "A:true B:false", true},
		{3, "A:true B:true C:false", true},
		{4, "A:true B:true C:true D:false", true},
		{5, "A:true B:true C:true D:true", false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint("limit ", tc.limit), func(t *testing.T) {
			tr, _ := c.Tree("A", tc.limit)
			var parts []string
			for _, n := range tr.Nodes {
				parts = append(parts, fmt.Sprintf("%s:%v", n.CallID, n.Followed))
			}
			if g := strings.Join(parts, " "); g != tc.want || tr.Truncated != tc.truncated {
				t.Errorf("got %q truncated %v, want %q truncated %v", g, tr.Truncated, tc.want, tc.truncated)
			}
		})
	}
}

// TestIndexCap floods the index with unique attacker-chosen values and
// checks the cap after every insertion.
func TestIndexCap(t *testing.T) {
	c := New(dialog.New(dialog.Config{}), Config{MaxKeys: 1000, MaxPostings: 3})
	e := &entry{callID: "flood"}
	for i := range 50000 {
		c.post(key{kindBranch, fmt.Sprintf("z9hG4bK-flood-%d", i)}, e)
		if len(c.index) > 1000 {
			t.Fatalf("after %d values: %d keys indexed, cap 1000", i+1, len(c.index))
		}
	}
	if c.stats.KeysRefused != 49000 {
		t.Errorf("got %d keys refused, want 49000", c.stats.KeysRefused)
	}
	// one value shared by many dialogs keeps MaxPostings of them
	for i := range 50000 {
		c.post(key{kindBranch, "z9hG4bK-flood-0"}, &entry{callID: fmt.Sprint(i)})
		if n := len(c.index[key{kindBranch, "z9hG4bK-flood-0"}]); n > 3 {
			t.Fatalf("after %d postings: %d dialogs under one value, cap 3", i+1, n)
		}
	}
	if c.stats.PostingsRefused != 50000-2 {
		t.Errorf("got %d postings refused, want %d", c.stats.PostingsRefused, 50000-2)
	}
}

// TestPerDialogCap: a dialog carrying thousands of distinct values
// contributes at most MaxKeysPerDialog of each kind.
func TestPerDialogCap(t *testing.T) {
	var hdrs []string
	for i := range 150 {
		hdrs = append(hdrs, fmt.Sprintf("X-Call-ID: named-%d", i))
	}
	c := New(storeOf(t, leg{callID: "A", invite: hdrs}), Config{MaxKeysPerDialog: 16})
	c.Find("A")
	st := c.Stats()
	// 16 named Call-IDs and the INVITE's Via branch
	if st.Keys != 17 || st.DialogKeysDropped != 150-16 {
		t.Errorf("got %d keys, %d dropped; want 17 and %d", st.Keys, st.DialogKeysDropped, 150-16)
	}
}

func TestClock(t *testing.T) {
	cases := []struct {
		name   string
		state  int
		status int32
		sync   bool
	}{
		{"synchronized", 0, 0x2001, true},
		{"unsync status bit", 0, 0x0040, false},
		{"time error state", 5, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := clockFrom(tc.state, tc.status, 295000, 1200)
			if !c.Available || c.Synchronized != tc.sync || *c.MaxErrorUs != 295000 || *c.EstErrorUs != 1200 {
				t.Errorf("got %+v, want available, synchronized %v, 295000/1200 us", c, tc.sync)
			}
		})
	}
	if c := ReadClock(); !c.Available || c.MaxErrorUs == nil || c.EstErrorUs == nil {
		t.Errorf("ReadClock on Linux: got %+v, want an available reading", c)
	}
}
