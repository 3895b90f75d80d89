package sdptimeline

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/internal/testcap"
)

// loadDetail runs a public capture through the engine and returns one
// dialog with its messages.
func loadDetail(t *testing.T, file, callID string) dialog.Detail {
	t.Helper()
	c := engine.New(engine.Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{testcap.Public(file)}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	det, ok := c.Dialogs().Get(callID)
	if !ok {
		t.Fatalf("%s: no dialog %q", file, callID)
	}
	return det
}

// row is the part of an exchange the capture tables check.
type row struct {
	msg       int
	dir, tx   string
	codecs    string
	addr      string
	port      int
	mode      string
	events    string
	answersTo int
}

func rows(tl Timeline) []row {
	out := []row{}
	for _, e := range tl.Exchanges {
		out = append(out, row{e.MessageIndex, e.Direction, e.Transaction, strings.Join(e.Codecs, ","),
			e.MediaAddr, e.MediaPort, e.Mode, strings.Join(e.Events, ","), e.AnswersExchange})
	}
	return out
}

// TestCaptures checks the timeline of real calls against their SDP, read
// by hand with `tshark -r FILE -Y sdp -T fields -e frame.number -e
// sip.Status-Line -e sip.Method -e sdp.connection_info -e sdp.media -e
// sdp.media_attr` (message index = position of the frame among the Call-ID's
// SIP frames, from 0).
func TestCaptures(t *testing.T) {
	tests := []struct {
		name, file, callID string
		want               []row
		hopCopies          int
	}{
		{
			// Frames 3 (INVITE, PCMU 5094), 6 (200, PCMU 5084), 162
			// (re-INVITE, opus 5094), 163 (200, opus 5084); every body
			// sendrecv on 127.0.0.1: a codec change, no hold.
			name: "G.711u then an Opus re-INVITE", file: "register-invite-reinvite-bye.pcap", callID: "1-3812687@127.0.0.1",
			want: []row{
				{0, Offer, "INVITE", "PCMU/8000", "127.0.0.1", 5094, "sendrecv", "", -1},
				{3, Answer, "INVITE", "PCMU/8000", "127.0.0.1", 5084, "sendrecv", "", 0},
				{5, Offer, "re-INVITE", "opus/48000", "127.0.0.1", 5094, "sendrecv", "CodecChange", -1},
				{6, Answer, "re-INVITE", "opus/48000", "127.0.0.1", 5084, "sendrecv", "CodecChange", 2},
			},
		},
		{
			// Frames 1 (INVITE: 0 8 9), 4 (200: 0), 308 (re-INVITE: 9 0),
			// 309 (200: 9).
			name: "G.711u then a G.722 re-INVITE", file: "codec-negotiation.pcap", callID: "1-3685341@127.0.0.1",
			want: []row{
				{0, Offer, "INVITE", "PCMU/8000,PCMA/8000,G722/8000", "127.0.0.1", 5084, "sendrecv", "", -1},
				{3, Answer, "INVITE", "PCMU/8000", "127.0.0.1", 5094, "sendrecv", "", 0},
				{5, Offer, "re-INVITE", "G722/8000,PCMU/8000", "127.0.0.1", 5084, "sendrecv", "CodecChange", -1},
				{6, Answer, "re-INVITE", "G722/8000", "127.0.0.1", 5094, "sendrecv", "CodecChange", 2},
			},
		},
		{
			// Frames 7 and 10: the same offer before and after the 401
			// challenge, m=audio 0 RTP/AVP 0, c=0.0.0.0, a=inactive; the 401
			// and the 488 carry no body. The retry is not a hold.
			name: "offer with every stream disabled, no answer", file: "sip-488-codec-reject.pcapng", callID: "NA4y5nr9Jk",
			want: []row{
				{0, Offer, "INVITE", "PCMU/8000", "0.0.0.0", 0, "inactive", "", -1},
				{3, Offer, "INVITE", "PCMU/8000", "0.0.0.0", 0, "inactive", "", -1},
			},
		},
		{
			// Frames 1 and 4: audio (PCMA first, ptime 20) beside an
			// active T.38 image stream from the start: no switch.
			name: "audio and T.38 offered together", file: "sip-sdp-example.pcap", callID: "1450530377152201062221@10.33.6.101",
			want: []row{
				{0, Offer, "INVITE", "PCMA/8000,G729/8000,G723/8000,telephone-event/8000", "10.33.6.101", 6020, "sendrecv", "", -1},
				{3, Answer, "INVITE", "PCMA/8000,telephone-event/8000", "10.33.6.100", 6010, "sendrecv", "", 0},
			},
		},
		{
			// The INVITE and its 200 cross a stateful proxy: each body is
			// seen on both hops and listed once.
			name: "proxy hops listed once", file: "sip-proxy.pcap", callID: "75104938772201062721@10.33.6.101",
			want: []row{
				{0, Offer, "INVITE", "PCMA/8000,telephone-event/8000", "10.33.6.101", 6010, "sendrecv", "", -1},
				{6, Answer, "INVITE", "PCMA/8000,telephone-event/8000", "10.33.6.100", 6000, "sendrecv", "", 0},
			},
			hopCopies: 2,
		},
		{
			name: "no SDP at all", file: "sip_call.pcap", callID: "test-call-1@10.0.0.1",
			want: []row{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			det := loadDetail(t, tc.file, tc.callID)
			tl := For(&det)
			if got := rows(tl); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
			if tl.HopCopies != tc.hopCopies {
				t.Errorf("got %d hop copies, want %d", tl.HopCopies, tc.hopCopies)
			}
		})
	}
}

// party is one side of a crafted dialog.
type party struct {
	tag  string
	addr netip.AddrPort
}

var (
	alice = party{"a1", netip.MustParseAddrPort("10.0.0.1:5060")}
	bob   = party{"b2", netip.MustParseAddrPort("10.0.0.2:5060")}
)

// sdpBody builds a one- or two-stream SDP.
func sdpBody(conn string, media ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=x 1 1 IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\n", conn, conn)
	for _, m := range media {
		b.WriteString(m)
	}
	return b.String()
}

func audio(port int, mode string, pts ...string) string {
	s := fmt.Sprintf("m=audio %d RTP/AVP %s\r\n", port, strings.Join(pts, " "))
	if mode != "" {
		s += "a=" + mode + "\r\n"
	}
	return s
}

const t38 = "m=image 6000 udptl t38\r\n"

// builder crafts a dialog message by message.
type builder struct {
	t    *testing.T
	msgs []dialog.Message
	at   time.Time
}

// req adds a request from p to q; toTag marks an in-dialog request.
func (b *builder) req(method string, cseq int, from, to party, inDialog bool, body string, extra ...string) *builder {
	toTag := ""
	if inDialog {
		toTag = ";tag=" + to.tag
	}
	hdr := fmt.Sprintf("%s sip:x@example.com SIP/2.0\r\nVia: SIP/2.0/UDP %s;branch=z9hG4bK%d%s\r\n"+
		"From: <sip:%s@example.com>;tag=%s\r\nTo: <sip:%s@example.com>%s\r\nCall-ID: c1\r\nCSeq: %d %s\r\n",
		method, from.addr, cseq, method, from.tag, from.tag, to.tag, toTag, cseq, method)
	return b.add(hdr, body, from, to, extra)
}

// resp adds a response from p (the responder) to q (the requester).
func (b *builder) resp(code int, method string, cseq int, responder, requester party, body string, extra ...string) *builder {
	hdr := fmt.Sprintf("SIP/2.0 %d X\r\nVia: SIP/2.0/UDP %s;branch=z9hG4bK%d%s\r\n"+
		"From: <sip:%s@example.com>;tag=%s\r\nTo: <sip:%s@example.com>;tag=%s\r\nCall-ID: c1\r\nCSeq: %d %s\r\n",
		code, requester.addr, cseq, method, requester.tag, requester.tag, responder.tag, responder.tag, cseq, method)
	return b.add(hdr, body, responder, requester, extra)
}

func (b *builder) add(hdr, body string, src, dst party, extra []string) *builder {
	b.t.Helper()
	for _, e := range extra {
		hdr += e + "\r\n"
	}
	if body != "" {
		hdr += "Content-Type: application/sdp\r\n"
	}
	raw := fmt.Sprintf("%sContent-Length: %d\r\n\r\n%s", hdr, len(body), body)
	m, err := sip.Parse([]byte(raw))
	if err != nil {
		b.t.Fatal(err)
	}
	if b.at.IsZero() {
		b.at = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	b.at = b.at.Add(time.Second)
	b.msgs = append(b.msgs, dialog.Message{Msg: m, TS: b.at, Src: src.addr, Dst: dst.addr, Index: len(b.msgs)})
	return b
}

// retransmitted marks the last message a retransmission.
func (b *builder) retransmitted() *builder {
	b.msgs[len(b.msgs)-1].Retransmission = true
	return b
}

// t38Refused is a G.711 call whose callee re-INVITEs to T.38 (m=audio 0
// plus m=image), is refused 488, then re-INVITEs audio again.
func t38Refused(t *testing.T) *builder {
	b := &builder{t: t}
	return b.req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0", "8"))).
		resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
		req("ACK", 1, alice, bob, true, "").
		req("INVITE", 1, bob, alice, true, sdpBody("10.0.0.2", audio(0, "", "0"), t38)).
		resp(488, "INVITE", 1, alice, bob, "").
		req("ACK", 1, bob, alice, true, "").
		req("INVITE", 2, bob, alice, true, sdpBody("10.0.0.2", audio(5002, "", "0"))).
		resp(200, "INVITE", 2, alice, bob, sdpBody("10.0.0.1", audio(4000, "", "0")))
}

// TestOfferOutcomes checks what became of each offer: a refused offer
// changes nothing (RFC 3261 §14.1), its would-be events are proposed only.
func TestOfferOutcomes(t *testing.T) {
	type out struct {
		msg              int
		outcome          string
		code             int
		t38              string
		events, proposed string
	}
	tests := []struct {
		name  string
		build func(t *testing.T) *builder
		want  []out
	}{
		{
			name:  "T.38 re-INVITE refused 488, then an audio re-INVITE: no T38Switch, a T38Fallback",
			build: t38Refused,
			want: []out{
				{0, OutcomeAnswered, 0, "", "", ""},
				{3, OutcomeRejected, 488, T38Refused, "", "T38Switch"},
				{6, OutcomeAnswered, 0, "", "MediaAnchorChange,T38Fallback", ""},
			},
		},
		{
			name: "T.38 offered and accepted, then audio again: T38Switch, T38End",
			build: func(t *testing.T) *builder {
				b := &builder{t: t}
				return b.req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0"))).
					resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					req("INVITE", 2, alice, bob, true, sdpBody("10.0.0.1", audio(0, "", "0"), t38)).
					resp(200, "INVITE", 2, bob, alice, sdpBody("10.0.0.2", audio(0, "", "0"), t38)).
					req("INVITE", 3, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "", "0"))).
					resp(200, "INVITE", 3, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0")))
			},
			want: []out{
				{0, OutcomeAnswered, 0, "", "", ""},
				{2, OutcomeAnswered, 0, T38Accepted, "T38Switch", ""},
				{4, OutcomeAnswered, 0, "", "T38End", ""},
			},
		},
		{
			name: "T.38 declined by an answer with image port 0: refused, no switch, no codec change",
			build: func(t *testing.T) *builder {
				b := &builder{t: t}
				return b.req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0"))).
					resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					req("INVITE", 2, alice, bob, true, sdpBody("10.0.0.1", audio(0, "", "0"), t38)).
					resp(200, "INVITE", 2, bob, alice, sdpBody("10.0.0.2", audio(0, "", "0"), "m=image 0 udptl t38\r\n"))
			},
			want: []out{
				{0, OutcomeAnswered, 0, "", "", ""},
				{2, OutcomeAnswered, 0, T38Refused, "", "T38Switch"},
			},
		},
		{
			name: "T.38 offered, no response captured",
			build: func(t *testing.T) *builder {
				b := &builder{t: t}
				return b.req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0"))).
					resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					req("INVITE", 2, alice, bob, true, sdpBody("10.0.0.1", t38))
			},
			want: []out{
				{0, OutcomeAnswered, 0, "", "", ""},
				{2, OutcomeNoAnswer, 0, T38Offered, "T38Switch", ""},
			},
		},
		{
			name: "a hold re-INVITE refused 491 does not hold; the retry does",
			build: func(t *testing.T) *builder {
				b := &builder{t: t}
				return b.req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0"))).
					resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					req("INVITE", 2, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "sendonly", "0"))).
					resp(491, "INVITE", 2, bob, alice, "").
					req("INVITE", 3, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "sendonly", "0"))).
					resp(200, "INVITE", 3, bob, alice, sdpBody("10.0.0.2", audio(5000, "recvonly", "0")))
			},
			want: []out{
				{0, OutcomeAnswered, 0, "", "", ""},
				{2, OutcomeRejected, 491, "", "", "Hold"},
				{4, OutcomeAnswered, 0, "", "Hold", ""},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := Build(tc.build(t).msgs)
			got := []out{}
			for _, e := range tl.Exchanges {
				if e.Direction == Offer {
					got = append(got, out{e.MessageIndex, e.Outcome, e.RejectedCode, e.T38, strings.Join(e.Events, ","), strings.Join(e.Proposed, ",")})
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestCrafted(t *testing.T) {
	base := func(t *testing.T) *builder {
		b := &builder{t: t}
		return b.req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0", "8"))).
			resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
			req("ACK", 1, alice, bob, true, "")
	}
	tests := []struct {
		name  string
		build func(t *testing.T) *builder
		want  []row
		extra func(t *testing.T, tl Timeline)
	}{
		{
			name: "hold with sendonly, resume with sendrecv (RFC 3264 §8.4)",
			build: func(t *testing.T) *builder {
				return base(t).
					req("INVITE", 2, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "sendonly", "0"))).
					resp(200, "INVITE", 2, bob, alice, sdpBody("10.0.0.2", audio(5000, "recvonly", "0"))).
					req("INVITE", 3, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "sendrecv", "0"))).
					resp(200, "INVITE", 3, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0")))
			},
			want: []row{
				{0, Offer, "INVITE", "PCMU/8000,PCMA/8000", "10.0.0.1", 4000, "sendrecv", "", -1},
				{1, Answer, "INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "", 0},
				{3, Offer, "re-INVITE", "PCMU/8000", "10.0.0.1", 4000, "sendonly", "Hold", -1},
				{4, Answer, "re-INVITE", "PCMU/8000", "10.0.0.2", 5000, "recvonly", "", 2},
				{5, Offer, "re-INVITE", "PCMU/8000", "10.0.0.1", 4000, "sendrecv", "Resume", -1},
				{6, Answer, "re-INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "", 4},
			},
		},
		{
			name: "hold with c=0.0.0.0 (RFC 2543), inactive is still held, resume",
			build: func(t *testing.T) *builder {
				return base(t).
					req("INVITE", 2, bob, alice, true, sdpBody("0.0.0.0", audio(5000, "", "0"))).
					resp(200, "INVITE", 2, alice, bob, sdpBody("10.0.0.1", audio(4000, "", "0"))).
					req("UPDATE", 3, bob, alice, true, sdpBody("10.0.0.2", audio(5000, "inactive", "0"))).
					resp(200, "UPDATE", 3, alice, bob, sdpBody("10.0.0.1", audio(4000, "inactive", "0"))).
					req("INVITE", 4, bob, alice, true, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					resp(200, "INVITE", 4, alice, bob, sdpBody("10.0.0.1", audio(4000, "", "0")))
			},
			want: []row{
				{0, Offer, "INVITE", "PCMU/8000,PCMA/8000", "10.0.0.1", 4000, "sendrecv", "", -1},
				{1, Answer, "INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "", 0},
				{3, Offer, "re-INVITE", "PCMU/8000", "0.0.0.0", 5000, "sendrecv", "Hold", -1},
				{4, Answer, "re-INVITE", "PCMU/8000", "10.0.0.1", 4000, "sendrecv", "", 2},
				{5, Offer, "UPDATE", "PCMU/8000", "10.0.0.2", 5000, "inactive", "", -1},
				{6, Answer, "UPDATE", "PCMU/8000", "10.0.0.1", 4000, "inactive", "", 4},
				{7, Offer, "re-INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "Resume", -1},
				{8, Answer, "re-INVITE", "PCMU/8000", "10.0.0.1", 4000, "sendrecv", "", 6},
			},
		},
		{
			name: "switch to T.38 and back",
			build: func(t *testing.T) *builder {
				return base(t).
					req("INVITE", 1, bob, alice, true, sdpBody("10.0.0.2", audio(0, "", "0"), t38)).
					resp(200, "INVITE", 1, alice, bob, sdpBody("10.0.0.1", audio(0, "", "0"), t38)).
					req("INVITE", 2, bob, alice, true, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					resp(200, "INVITE", 2, alice, bob, sdpBody("10.0.0.1", audio(4000, "", "0")))
			},
			want: []row{
				{0, Offer, "INVITE", "PCMU/8000,PCMA/8000", "10.0.0.1", 4000, "sendrecv", "", -1},
				{1, Answer, "INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "", 0},
				{3, Offer, "re-INVITE", "t38", "10.0.0.2", 6000, "sendrecv", "T38Switch", -1},
				{4, Answer, "re-INVITE", "t38", "10.0.0.1", 6000, "sendrecv", "T38Switch", 2},
				{5, Offer, "re-INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "T38End", -1},
				{6, Answer, "re-INVITE", "PCMU/8000", "10.0.0.1", 4000, "sendrecv", "T38End", 4},
			},
		},
		{
			name: "media anchor moves and the codec changes in one re-offer",
			build: func(t *testing.T) *builder {
				return base(t).
					req("INVITE", 2, alice, bob, true, sdpBody("192.0.2.9", audio(4100, "", "8")))
			},
			want: []row{
				{0, Offer, "INVITE", "PCMU/8000,PCMA/8000", "10.0.0.1", 4000, "sendrecv", "", -1},
				{1, Answer, "INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "", 0},
				{3, Offer, "re-INVITE", "PCMA/8000", "192.0.2.9", 4100, "sendrecv", "MediaAnchorChange,CodecChange", -1},
			},
		},
		{
			name: "delayed offer: the 200 offers, the ACK answers",
			build: func(t *testing.T) *builder {
				b := &builder{t: t}
				return b.req("INVITE", 1, alice, bob, false, "").
					resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0", "18"))).
					req("ACK", 1, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "", "18")))
			},
			want: []row{
				{1, Offer, "INVITE", "PCMU/8000,G729/8000", "10.0.0.2", 5000, "sendrecv", "", -1},
				{2, Answer, "ACK", "G729/8000", "10.0.0.1", 4000, "sendrecv", "", 0},
			},
		},
		{
			name: "reliable 183 offers, PRACK answers, UPDATE re-offers (RFC 3262, RFC 3311)",
			build: func(t *testing.T) *builder {
				b := &builder{t: t}
				return b.req("INVITE", 1, alice, bob, false, "").
					resp(183, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0")), "RSeq: 1", "Require: 100rel").
					req("PRACK", 2, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "", "0")), "RAck: 1 1 INVITE").
					resp(200, "PRACK", 2, bob, alice, "").
					req("UPDATE", 3, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "", "8", "0"))).
					resp(200, "UPDATE", 3, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "8")))
			},
			want: []row{
				{1, Offer, "INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "", -1},
				{2, Answer, "PRACK", "PCMU/8000", "10.0.0.1", 4000, "sendrecv", "", 0},
				{4, Offer, "UPDATE", "PCMA/8000,PCMU/8000", "10.0.0.1", 4000, "sendrecv", "CodecChange", -1},
				{5, Answer, "UPDATE", "PCMA/8000", "10.0.0.2", 5000, "sendrecv", "CodecChange", 2},
			},
		},
		{
			name: "183 and 200 both answer; a retransmitted 200 and a proxy's copy are not listed again",
			build: func(t *testing.T) *builder {
				b := &builder{t: t}
				b.req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0"))).
					req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0"))). // second hop
					resp(183, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).retransmitted()
				b.msgs[1].Src = netip.MustParseAddrPort("10.0.0.3:5060")
				return b
			},
			want: []row{
				{0, Offer, "INVITE", "PCMU/8000", "10.0.0.1", 4000, "sendrecv", "", -1},
				{2, Answer, "INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "", 0},
				{3, Answer, "INVITE", "PCMU/8000", "10.0.0.2", 5000, "sendrecv", "", 0},
			},
			extra: func(t *testing.T, tl Timeline) {
				if tl.HopCopies != 1 {
					t.Errorf("got %d hop copies, want 1", tl.HopCopies)
				}
			},
		},
		{
			name: "SDP outside offer/answer and an unreadable body are counted, not listed",
			build: func(t *testing.T) *builder {
				b := &builder{t: t}
				return b.req("OPTIONS", 1, alice, bob, false, "").
					resp(200, "OPTIONS", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
					req("INVITE", 2, alice, bob, false, "not sdp at all")
			},
			want: []row{},
			extra: func(t *testing.T, tl Timeline) {
				if tl.OutsideOfferAnswer != 1 || tl.Unreadable != 1 {
					t.Errorf("got outside %d, unreadable %d; want 1 and 1", tl.OutsideOfferAnswer, tl.Unreadable)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := Build(tc.build(t).msgs)
			if got := rows(tl); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
			if tc.extra != nil {
				tc.extra(t, tl)
			}
		})
	}
}
