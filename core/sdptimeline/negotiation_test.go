package sdptimeline

import (
	"reflect"
	"strings"
	"testing"
)

// neg is the part of a negotiation the tables check.
type neg struct {
	offer, answer             int // message indices; -1 = none
	offered, answered, common string
	result                    string
	code                      int // rejected code
}

func negRow(n Negotiation) neg {
	a := -1
	if n.AnswerMessage != nil {
		a = *n.AnswerMessage
	}
	return neg{offer: n.OfferMessage, answer: a, offered: strings.Join(n.Offered, ","),
		answered: strings.Join(n.Answered, ","), common: strings.Join(n.Common, ","), result: n.Result, code: n.RejectedCode}
}

// TestNegotiateCaptures checks each verdict against the SDP read by hand
// (see TestCaptures for the frames).
func TestNegotiateCaptures(t *testing.T) {
	tests := []struct {
		name, file, callID string
		result             string
		setup              *neg
		all                int
		noteHas            string
	}{
		{
			// Frames 7-13: INVITE (CSeq 20) refused 401, the credentialed
			// INVITE (CSeq 21, message 3) refused 488; neither response
			// carries SDP. The offer's only stream has port 0 (c=0.0.0.0,
			// inactive). The setup is the retry, rejected with 488.
			name: "sip-488-codec-reject", file: "sip-488-codec-reject.pcapng", callID: "NA4y5nr9Jk",
			result: ResultRejected, all: 2,
			setup:   &neg{offer: 3, answer: -1, offered: "PCMU/8000", result: ResultRejected, code: 488},
			noteHas: "refused with 488",
		},
		{
			name: "codec-negotiation setup settles on PCMU", file: "codec-negotiation.pcap", callID: "1-3685341@127.0.0.1",
			result: ResultOK, all: 2,
			setup: &neg{offer: 0, answer: 3, offered: "PCMU/8000,PCMA/8000,G722/8000", answered: "PCMU/8000", common: "PCMU/8000", result: ResultOK},
		},
		{
			name: "sip_call has no SDP", file: "sip_call.pcap", callID: "test-call-1@10.0.0.1",
			result: ResultNoSDP,
		},
		{
			// Frame 4, the 200 to an OPTIONS ping, lists capabilities.
			name: "OPTIONS 200 with SDP is not an offer", file: "sip-488-codec-reject.pcapng", callID: "9ebf99be-3dd0-4a4a-bbac-d755918fe789",
			result: ResultNoSDP, noteHas: "outside offer/answer",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			det := loadDetail(t, tc.file, tc.callID)
			tl := For(&det)
			c := Negotiate(&tl)
			if c.Result != tc.result {
				t.Errorf("got result %q, want %q", c.Result, tc.result)
			}
			if len(c.All) != tc.all {
				t.Errorf("got %d negotiations, want %d", len(c.All), tc.all)
			}
			switch {
			case tc.setup == nil && c.Setup != nil:
				t.Errorf("got setup %+v, want none", *c.Setup)
			case tc.setup != nil && c.Setup == nil:
				t.Errorf("got no setup, want %+v", *tc.setup)
			case tc.setup != nil:
				if got := negRow(*c.Setup); !reflect.DeepEqual(got, *tc.setup) {
					t.Errorf("got setup %+v, want %+v", got, *tc.setup)
				}
			}
			if tc.noteHas != "" {
				notes := strings.Join(c.Notes, "|")
				if c.Setup != nil {
					notes += "|" + strings.Join(c.Setup.Notes, "|")
				}
				if !strings.Contains(notes, tc.noteHas) {
					t.Errorf("got notes %q, want one mentioning %q", notes, tc.noteHas)
				}
			}
		})
	}
}

func TestNegotiateCrafted(t *testing.T) {
	call := func(offer, answer string) func(t *testing.T) *builder {
		return func(t *testing.T) *builder {
			b := &builder{t: t}
			b.req("INVITE", 1, alice, bob, false, offer)
			if answer != "" {
				b.resp(200, "INVITE", 1, bob, alice, answer)
			} else {
				b.resp(488, "INVITE", 1, bob, alice, "")
			}
			return b
		}
	}
	tests := []struct {
		name    string
		build   func(t *testing.T) *builder
		want    neg
		noteHas string
	}{
		{
			name:  "no common codec",
			build: call(sdpBody("10.0.0.1", audio(4000, "", "0")), sdpBody("10.0.0.2", audio(5000, "", "18"))),
			want:  neg{offer: 0, answer: 1, offered: "PCMU/8000", answered: "G729/8000", common: "", result: ResultNoCommonCodec},
		},
		{
			name:    "the answer rejects every stream",
			build:   call(sdpBody("10.0.0.1", audio(4000, "", "0")), sdpBody("10.0.0.2", audio(0, "", "0"))),
			want:    neg{offer: 0, answer: 1, offered: "PCMU/8000", answered: "", common: "", result: ResultNoCommonCodec},
			noteHas: "rejected every media stream",
		},
		{
			name: "only telephone-event in common",
			build: call(sdpBody("10.0.0.1", audio(4000, "", "0", "101")+"a=rtpmap:101 telephone-event/8000\r\n"),
				sdpBody("10.0.0.2", audio(5000, "", "18", "101")+"a=rtpmap:101 telephone-event/8000\r\n")),
			want:    neg{offer: 0, answer: 1, offered: "PCMU/8000,telephone-event/8000", answered: "G729/8000,telephone-event/8000", common: "telephone-event/8000", result: ResultNoCommonCodec},
			noteHas: "carry no media",
		},
		{
			name:  "codec names match case-insensitively, channels 1 implied",
			build: call(sdpBody("10.0.0.1", audio(4000, "", "96")+"a=rtpmap:96 OPUS/48000/2\r\n"), sdpBody("10.0.0.2", audio(5000, "", "111")+"a=rtpmap:111 opus/48000/2\r\n")),
			want:  neg{offer: 0, answer: 1, offered: "OPUS/48000/2", answered: "opus/48000/2", common: "OPUS/48000/2", result: ResultOK},
		},
		{
			name: "an offer without m= lines",
			build: func(t *testing.T) *builder {
				return (&builder{t: t}).req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1"))
			},
			want: neg{offer: 0, answer: -1, result: ResultNoCodecs},
		},
		{
			name: "an offer without a final response has no answer",
			build: func(t *testing.T) *builder {
				return (&builder{t: t}).req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0")))
			},
			want: neg{offer: 0, answer: -1, offered: "PCMU/8000", result: ResultNoAnswer},
		},
		{
			name:    "an offer refused 488 without an answer is rejected with its code",
			build:   call(sdpBody("10.0.0.1", audio(4000, "", "0")), ""),
			want:    neg{offer: 0, answer: -1, offered: "PCMU/8000", result: ResultRejected, code: 488},
			noteHas: "RFC 3261 §14.1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := Build(tc.build(t).msgs)
			c := Negotiate(&tl)
			if c.Setup == nil {
				t.Fatalf("got no setup negotiation")
			}
			if got := negRow(*c.Setup); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if c.Result != tc.want.result {
				t.Errorf("got result %q, want %q", c.Result, tc.want.result)
			}
			if tc.noteHas != "" && !strings.Contains(strings.Join(c.Setup.Notes, "|"), tc.noteHas) {
				t.Errorf("got notes %q, want one mentioning %q", c.Setup.Notes, tc.noteHas)
			}
		})
	}
	t.Run("re-offers refused 606 and 491 are rejected, the setup stays ok", func(t *testing.T) {
		b := &builder{t: t}
		b.req("INVITE", 1, alice, bob, false, sdpBody("10.0.0.1", audio(4000, "", "0"))).
			resp(200, "INVITE", 1, bob, alice, sdpBody("10.0.0.2", audio(5000, "", "0"))).
			req("ACK", 1, alice, bob, true, "").
			req("INVITE", 2, alice, bob, true, sdpBody("10.0.0.1", audio(4000, "", "18"))).
			resp(606, "INVITE", 2, bob, alice, "").
			req("UPDATE", 3, bob, alice, true, sdpBody("10.0.0.2", audio(5000, "", "8"))).
			resp(491, "UPDATE", 3, alice, bob, "")
		tl := Build(b.msgs)
		c := Negotiate(&tl)
		got := []neg{}
		for _, n := range c.All {
			got = append(got, negRow(n))
		}
		want := []neg{
			{offer: 0, answer: 1, offered: "PCMU/8000", answered: "PCMU/8000", common: "PCMU/8000", result: ResultOK},
			{offer: 3, answer: -1, offered: "G729/8000", result: ResultRejected, code: 606},
			{offer: 5, answer: -1, offered: "PCMA/8000", result: ResultRejected, code: 491},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got\n%+v\nwant\n%+v", got, want)
		}
		if c.Result != ResultOK {
			t.Errorf("got setup result %q, want ok", c.Result)
		}
	})
	t.Run("T.38 refused 488, then the fallback to audio", func(t *testing.T) {
		tl := Build(t38Refused(t).msgs)
		c := Negotiate(&tl)
		if len(c.All) != 3 {
			t.Fatalf("got %d negotiations, want 3", len(c.All))
		}
		fax, back := c.All[1], c.All[2]
		if fax.Result != ResultRejected || fax.RejectedCode != 488 || fax.T38 != T38Refused {
			t.Errorf("got T.38 offer %+v, want rejected 488, t38 refused", fax)
		}
		if back.Result != ResultOK || !strings.Contains(strings.Join(back.Notes, "|"), "fallback to audio: the T.38 offer at message 3 was refused with 488") {
			t.Errorf("got audio re-offer %+v, want ok with the fallback note", back)
		}
	})
	t.Run("unreadable SDP only", func(t *testing.T) {
		b := &builder{t: t}
		tl := Build(b.req("INVITE", 1, alice, bob, false, "garbage").msgs)
		if c := Negotiate(&tl); c.Result != ResultNoCodecs || c.Setup != nil {
			t.Errorf("got %q (setup %v), want %q and no setup", c.Result, c.Setup, ResultNoCodecs)
		}
	})
}
