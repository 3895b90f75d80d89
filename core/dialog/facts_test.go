package dialog

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestSignalingFactsOf(t *testing.T) {
	reg := func(cseq int, branch string, extra ...string) hdr {
		return hdr{callID: "r", fromTag: "f1", cseq: cseq, cseqMeth: "REGISTER", branch: branch, extra: extra}
	}
	tests := []struct {
		name  string
		steps []step
		check func(t *testing.T, sf SignalingFacts)
	}{
		{
			name: "challenge then credentials then 200 with a shorter expiry",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg(1, "b1", "Contact: <sip:alice@10.0.0.1:5060>;expires=3600"))},
				{1, proxy, alice, resp(401, reg(1, "b1"))},
				{2, alice, proxy, req("REGISTER", reg(2, "b2", "Contact: <sip:alice@10.0.0.1:5060>", "Expires: 3600", `Authorization: Digest username="alice"`))},
				// the registrar lists another device's binding first
				{3, proxy, alice, resp(200, reg(2, "b2", "Contact: <sip:alice@10.0.0.9:5060>;expires=60, <sip:alice@10.0.0.1:5060>;expires=600"))},
			},
			check: func(t *testing.T, sf SignalingFacts) {
				if !sf.Read || len(sf.Transactions) != 2 {
					t.Fatalf("got read %v, %d transactions, want 2", sf.Read, len(sf.Transactions))
				}
				a, b := sf.Transactions[0], sf.Transactions[1]
				if a.Authorized || a.Challenges != 1 || a.FinalCode != 401 || a.RequestedExpiry != 3600 || !slices.Equal(a.ChallengeIndexes, []int{1}) {
					t.Errorf("first: got %+v", a)
				}
				if !b.Authorized || b.FinalCode != 200 || b.FinalIndex != 3 || b.RequestedExpiry != 3600 || b.GrantedExpiry != 600 {
					t.Errorf("second: got authorized %v final %d@%d requested %d granted %d, want true 200@3 3600 600",
						b.Authorized, b.FinalCode, b.FinalIndex, b.RequestedExpiry, b.GrantedExpiry)
				}
			},
		},
		{
			name: "2xx retransmitted, ACK of its own, failure with Reason and Warning elsewhere",
			steps: []step{
				{0, alice, bob, req("INVITE", hdr{callID: "c", fromTag: "a", cseq: 1, branch: "i1"})},
				{10, bob, alice, resp(180, hdr{callID: "c", fromTag: "a", toTag: "b", cseq: 1, branch: "i1", cseqMeth: "INVITE"})},
				{20, bob, alice, resp(200, hdr{callID: "c", fromTag: "a", toTag: "b", cseq: 1, branch: "i1", cseqMeth: "INVITE"})},
				{520, bob, alice, resp(200, hdr{callID: "c", fromTag: "a", toTag: "b", cseq: 1, branch: "i1", cseqMeth: "INVITE"})},
				{600, alice, bob, req("ACK", hdr{callID: "c", fromTag: "a", toTag: "b", cseq: 1, branch: "k1"})},
				{700, alice, bob, req("INVITE", hdr{callID: "c", fromTag: "a", toTag: "b", cseq: 2, branch: "i2"})},
				{710, bob, alice, resp(488, hdr{callID: "c", fromTag: "a", toTag: "b", cseq: 2, branch: "i2", cseqMeth: "INVITE",
					extra: []string{`Reason: Q.850;cause=88;text="Incompatible destination"`, `Warning: 305 bob "Incompatible media format"`}})},
			},
			check: func(t *testing.T, sf SignalingFacts) {
				if len(sf.Transactions) != 3 {
					t.Fatalf("got %d transactions, want 3", len(sf.Transactions))
				}
				inv, ack, re := sf.Transactions[0], sf.Transactions[1], sf.Transactions[2]
				if inv.FinalCode != 200 || inv.FinalCopies != 2 || !slices.Equal(inv.FinalIndexes, []int{2, 3}) || inv.RingingIndex != 1 || inv.InDialog {
					t.Errorf("INVITE: got %+v", inv)
				}
				if ack.Method != "ACK" || ack.CSeq != 1 || ack.Requests != 1 {
					t.Errorf("ACK: got %+v", ack)
				}
				if !re.InDialog || re.FinalCode != 488 || re.FinalReasonHeader != `Q.850;cause=88;text="Incompatible destination"` ||
					re.FinalWarning != `305 bob "Incompatible media format"` {
					t.Errorf("re-INVITE: got %+v", re)
				}
			},
		},
		{
			name: "copies of an unanswered request",
			steps: []step{
				{0, alice, bob, req("OPTIONS", hdr{callID: "o", fromTag: "x", cseq: 7, branch: "p"})},
				{500, alice, bob, req("OPTIONS", hdr{callID: "o", fromTag: "x", cseq: 7, branch: "p"})},
				{1500, alice, bob, req("OPTIONS", hdr{callID: "o", fromTag: "x", cseq: 7, branch: "p"})},
			},
			check: func(t *testing.T, sf SignalingFacts) {
				x := sf.Transactions[0]
				if x.Requests != 3 || x.Responses != 0 || x.LastRequestAt.Sub(x.FirstRequestAt) != 1500*time.Millisecond || !slices.Equal(x.RequestIndexes, []int{0, 1, 2}) {
					t.Errorf("got %+v", x)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{})
			play(t, s, tc.steps)
			ids := s.CallIDs()
			if len(ids) != 1 {
				t.Fatalf("got %d Call-IDs, want 1", len(ids))
			}
			d, _ := s.Get(ids[0])
			tc.check(t, SignalingFactsOf(&d))
			if got, want := s.LastMessageAt(), t0.Add(time.Duration(tc.steps[len(tc.steps)-1].ms)*time.Millisecond); !got.Equal(want) {
				t.Errorf("LastMessageAt: got %v, want %v", got, want)
			}
		})
	}
}

func TestSignalingFactsWithoutMessages(t *testing.T) {
	s := New(Config{})
	play(t, s, []step{{0, alice, bob, req("INVITE", hdr{callID: "c", fromTag: "a", cseq: 1, branch: "i1"})}})
	d, _ := s.GetWith("c", Options{NoMessages: true})
	if sf := SignalingFactsOf(&d); sf.Read || len(sf.Transactions) != 0 {
		t.Errorf("got %+v, want nothing read", sf)
	}
}

// TestSignalingFactsBounded: a flood of challenges keeps at most 16 indexes
// per transaction while the counts stay exact.
func TestSignalingFactsBounded(t *testing.T) {
	s := New(Config{})
	var steps []step
	steps = append(steps, step{0, alice, bob, req("REGISTER", hdr{callID: "r", fromTag: "f", cseq: 1, branch: "b"})})
	for i := 0; i < 100; i++ {
		// distinct To tags: none is a retransmission of another
		steps = append(steps, step{i + 1, bob, alice, resp(401, hdr{callID: "r", fromTag: "f", toTag: fmt.Sprint("t", i), cseq: 1, branch: "b", cseqMeth: "REGISTER"})})
	}
	play(t, s, steps)
	d, _ := s.Get("r")
	x := SignalingFactsOf(&d).Transactions[0]
	if x.Challenges != 100 || len(x.ChallengeIndexes) != maxFactIndexes || x.FinalCopies != 100 || len(x.FinalIndexes) != maxFactIndexes {
		t.Errorf("got challenges %d (%d indexes), copies %d (%d indexes), want 100 (16), 100 (16)",
			x.Challenges, len(x.ChallengeIndexes), x.FinalCopies, len(x.FinalIndexes))
	}
}
