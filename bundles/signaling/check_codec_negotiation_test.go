package signaling

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

// TestCheckCodecNegotiationCaptures checks each verdict against the SDP
// read by hand (tshark -Y sdp, see TestGetSDPTimelineCaptures).
//
//   - sip-488-codec-reject.pcapng, NA4y5nr9Jk: named a codec rejection, but
//     its SDP says something else. Both INVITEs (frame 7, and frame 10 after
//     the 401) offer m=audio 0 RTP/AVP 0 with c=0.0.0.0 and a=inactive:
//     PCMU on a stream whose port 0 disables it (RFC 3264 §5.1). The 401
//     and the 488 carry no body. So: the first offer rejected 401, the
//     setup offer rejected 488 (never no_answer), and a note that the
//     offer proposed no usable media.
//   - codec-negotiation.pcap: PCMU/PCMA/G722 offered, PCMU answered; the
//     re-INVITE offers G722/PCMU and G722 is answered.
//   - sip_call.pcap: no body at all: no_sdp_in_capture, not no_answer.
//   - sip-488-codec-reject.pcapng, the OPTIONS ping whose 200 (frame 4)
//     lists capabilities in SDP: no offer/answer either.
func TestCheckCodecNegotiationCaptures(t *testing.T) {
	tests := []struct {
		name, file, callID        string
		result                    string
		offered, answered, common string
		exchanges, final          int
		rejected                  int
		offerMsg, answerMsg       int // -1 = absent
		negotiations              []string
		noteHas                   string
	}{
		{
			name: "488 to an offer with every stream disabled", file: "sip-488-codec-reject.pcapng", callID: "NA4y5nr9Jk",
			result: "rejected", rejected: 488, offered: "PCMU/8000", exchanges: 2, final: 488, offerMsg: 3, answerMsg: -1,
			negotiations: []string{"INVITE rejected 401", "INVITE rejected 488"}, noteHas: "port 0",
		},
		{
			name: "PCMU at setup, G722 after the re-INVITE", file: "codec-negotiation.pcap", callID: "1-3685341@127.0.0.1",
			result: "ok", offered: "PCMU/8000,PCMA/8000,G722/8000", answered: "PCMU/8000", common: "PCMU/8000",
			exchanges: 4, final: 200, offerMsg: 0, answerMsg: 3,
			negotiations: []string{"INVITE ok 0", "re-INVITE ok 0"},
		},
		{
			name: "no SDP in the call", file: "sip_call.pcap", callID: "test-call-1@10.0.0.1",
			result: "no_sdp_in_capture", exchanges: 0, final: 200, offerMsg: -1, answerMsg: -1, negotiations: []string{},
		},
		{
			name: "capability SDP in an OPTIONS 200", file: "sip-488-codec-reject.pcapng", callID: "9ebf99be-3dd0-4a4a-bbac-d755918fe789",
			result: "no_sdp_in_capture", exchanges: 0, offerMsg: -1, answerMsg: -1, negotiations: []string{}, noteHas: "OPTIONS 200",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := sxLoad(t, tc.file)
			var got CodecNegotiation
			sxCall(t, checkCodecNegotiationTool(&deps{capture: c}), `{"call_id":`+sxJSON(tc.callID)+`}`, &got)
			if got.Result != tc.result || sxUnfenceAll(got.Offered) != tc.offered || sxUnfenceAll(got.Answered) != tc.answered || sxUnfenceAll(got.Common) != tc.common {
				t.Errorf("got %s offered %q answered %q common %q, want %s %q %q %q", got.Result,
					sxUnfenceAll(got.Offered), sxUnfenceAll(got.Answered), sxUnfenceAll(got.Common), tc.result, tc.offered, tc.answered, tc.common)
			}
			if got.RejectedCode != tc.rejected {
				t.Errorf("got rejected_code %d, want %d", got.RejectedCode, tc.rejected)
			}
			if got.SDPExchangeCount != tc.exchanges || got.FinalStatusCode != tc.final {
				t.Errorf("got %d exchanges, final %d; want %d and %d", got.SDPExchangeCount, got.FinalStatusCode, tc.exchanges, tc.final)
			}
			if sxIdx(got.OfferMessageIndex) != tc.offerMsg || sxIdx(got.AnswerMessageIndex) != tc.answerMsg {
				t.Errorf("got offer at %d, answer at %d; want %d and %d", sxIdx(got.OfferMessageIndex), sxIdx(got.AnswerMessageIndex), tc.offerMsg, tc.answerMsg)
			}
			negs := []string{}
			for _, n := range got.Negotiations {
				negs = append(negs, fmt.Sprintf("%s %s %d", n.Transaction, n.Result, n.RejectedCode))
			}
			if strings.Join(negs, "|") != strings.Join(tc.negotiations, "|") {
				t.Errorf("got negotiations %q, want %q", negs, tc.negotiations)
			}
			if tc.noteHas != "" && !strings.Contains(strings.Join(got.Notes, "|"), tc.noteHas) {
				t.Errorf("got notes %q, want one mentioning %q", got.Notes, tc.noteHas)
			}
			if got.Offered == nil || got.Answered == nil || got.Common == nil || got.Notes == nil || got.Negotiations == nil {
				t.Errorf("got a null list in %+v: lists are [] when empty", got)
			}
			if !got.SourceExhausted || got.CaptureIdentity.Node != "test" {
				t.Errorf("got flags %+v identity %+v", got.SourceFlags, got.CaptureIdentity)
			}
		})
	}
}

func sxIdx(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func TestCheckCodecNegotiationRefusals(t *testing.T) {
	tool := checkCodecNegotiationTool(&deps{capture: sxLoad(t, "sip_call.pcap")})
	for _, tc := range []struct{ name, args, want string }{
		{"unknown call", `{"call_id":"nope"}`, "unknown call_id"},
		{"empty call", `{"call_id":""}`, "call_id is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e := sxCallErr(t, tool, tc.args); e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Errorf("got %d %q, want -32602 mentioning %q", e.Code, e.Message, tc.want)
			}
		})
	}
}
