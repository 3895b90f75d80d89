package dialog

import (
	"testing"
	"time"
)

// authRetryCall is INVITE, 407, ACK, then after waitMs the credentialed
// INVITE (CSeq 2, new branch), 100, 180 after ringMs, 200 after answerMs,
// ACK, BYE, 200. When retransmit, the first INVITE is re-sent (same branch
// and CSeq) 500 ms after the 407, before the retry.
func authRetryCall(cid string, waitMs, ringMs, answerMs int, retransmit bool) []step {
	inv1 := hdr{callID: cid, fromTag: "a1", cseq: 1, branch: "z9hG4bK-inv1"}
	ch := inv1
	ch.toTag = "px"
	ack1 := ch
	ack1.cseqMeth = "ACK"
	inv2 := hdr{callID: cid, fromTag: "a1", cseq: 2, branch: "z9hG4bK-inv2",
		extra: []string{`Proxy-Authorization: Digest username="alice", realm="example.com", nonce="n1", uri="sip:bob@example.com", response="00"`}}
	ok2 := inv2
	ok2.toTag, ok2.extra = "b1", nil
	ack2 := ok2
	ack2.branch, ack2.cseqMeth = "z9hG4bK-ack2", "ACK"
	bye := ok2
	bye.branch, bye.cseq = "z9hG4bK-bye", 3
	r := 50 + waitMs
	steps := []step{
		{0, alice, bob, req("INVITE", inv1)},
		{50, bob, alice, resp(407, withMeth(ch, "INVITE"))},
		{60, alice, bob, req("ACK", ack1)},
	}
	if retransmit {
		steps = append(steps, step{550, alice, bob, req("INVITE", inv1)})
	}
	return append(steps,
		step{r, alice, bob, req("INVITE", inv2)},
		step{r + 20, bob, alice, resp(100, withMeth(hdr{callID: cid, fromTag: "a1", cseq: 2, branch: "z9hG4bK-inv2"}, "INVITE"))},
		step{r + ringMs, bob, alice, resp(180, withMeth(ok2, "INVITE"))},
		step{r + answerMs, bob, alice, resp(200, withMeth(ok2, "INVITE"))},
		step{r + answerMs + 10, alice, bob, req("ACK", ack2)},
		step{r + answerMs + 5000, alice, bob, req("BYE", bye)},
		step{r + answerMs + 5030, bob, alice, resp(200, withMeth(bye, "BYE"))},
	)
}

// TestPDDAfterAuthChallenge: a 407 ends the first INVITE's delay (RFC 6076
// §4.3); PDD, setup and trying are measured from the credentialed INVITE,
// and the caller's wait from the 407 to the retry is auth_wait_ms, in the
// row and the detail alike.
func TestPDDAfterAuthChallenge(t *testing.T) {
	cases := []struct {
		name                  string
		waitMs, ring, answer  int
		retransmit            bool
		pdd, setup, wait, try int64
	}{
		{"long client wait, quick ring", 14000, 1200, 4000, false, 1200, 4000, 14000, 20},
		{"slow routed INVITE", 2000, 13000, 15000, false, 13000, 15000, 2000, 20},
		{"first INVITE retransmitted after the 407", 14000, 1200, 4000, true, 1200, 4000, 14000, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{})
			play(t, s, authRetryCall("auth-1", c.waitMs, c.ring, c.answer, c.retransmit))
			d, ok := s.Get("auth-1")
			if !ok {
				t.Fatal("dialog not found")
			}
			if d.State != "Completed" || d.FinalStatusCode != 200 {
				t.Errorf("state %s final %d, want Completed 200", d.State, d.FinalStatusCode)
			}
			for _, v := range []struct {
				name      string
				got, want *int64
			}{
				{"row pdd_ms", d.Timing.PDDMs, i64(c.pdd)},
				{"row setup_ms", d.Timing.SetupMs, i64(c.setup)},
				{"row auth_wait_ms", d.Timing.AuthWaitMs, i64(c.wait)},
				{"pdd_ms", d.TimingDetail.PDDMs, i64(c.pdd)},
				{"setup_ms", d.TimingDetail.SetupMs, i64(c.setup)},
				{"trying_ms", d.TimingDetail.TryingMs, i64(c.try)},
				{"auth_wait_ms", d.TimingDetail.AuthWaitMs, i64(c.wait)},
				{"ring_ms", d.TimingDetail.RingMs, i64(int64(c.answer - c.ring))},
			} {
				if !eqPtr(v.got, v.want) {
					t.Errorf("%s: got %s, want %s", v.name, fmtPtr(v.got), fmtPtr(v.want))
				}
			}
			if f := d.TimingDetail.FirstInviteAt; f == nil || !f.Equal(t0) {
				t.Errorf("first_invite_at %v, want %v", f, t0)
			}
			if i := d.TimingDetail.InviteAt; i == nil || !i.Equal(t0.Add(time.Duration(50+c.waitMs)*time.Millisecond)) {
				t.Errorf("invite_at %v, want the credentialed INVITE at +%d ms", i, 50+c.waitMs)
			}
		})
	}
}

// TestNoAuthRetryKeepsFirstInvite: without a challenge nothing restarts
// the clock, and a call only ever challenged has no PDD and no auth wait.
func TestNoAuthRetryKeepsFirstInvite(t *testing.T) {
	s := New(Config{})
	play(t, s, basicCall("plain"))
	d, _ := s.Get("plain")
	if d.Timing.AuthWaitMs != nil || d.TimingDetail.FirstInviteAt != nil {
		t.Errorf("auth fields on an unchallenged call: %+v", d.TimingDetail)
	}
	steps := authRetryCall("only-challenged", 0, 0, 0, false)[:3]
	play(t, s, steps)
	d, _ = s.Get("only-challenged")
	if d.State != "Failed" || d.Timing.PDDMs != nil || d.Timing.SetupMs != nil || d.Timing.AuthWaitMs != nil {
		t.Errorf("only challenged: state %s pdd %s setup %s wait %s, want Failed and no timing",
			d.State, fmtPtr(d.Timing.PDDMs), fmtPtr(d.Timing.SetupMs), fmtPtr(d.Timing.AuthWaitMs))
	}
}

// TestPDDAfterAuthChallengeThroughProxy: a proxy seen on both sides
// challenges alice, then forwards her credentialed INVITE to bob. The
// clock restarts once, on alice's retry (the forwarded copy does not
// restart it), and PDD and setup are alice's: the 180 and 200 the proxy
// sent back to her.
func TestPDDAfterAuthChallengeThroughProxy(t *testing.T) {
	cid := "proxy-auth"
	up1 := hdr{callID: cid, fromTag: "A", cseq: 1, branch: "z9hG4bK-up1"}
	ch := up1
	ch.toTag = "px"
	ack1 := ch
	ack1.cseqMeth = "ACK"
	up2 := hdr{callID: cid, fromTag: "A", cseq: 2, branch: "z9hG4bK-up2", extra: []string{`Proxy-Authorization: Digest username="alice"`}}
	dn2 := hdr{callID: cid, fromTag: "A", cseq: 2, branch: "z9hG4bK-dn2"}
	up2B, dn2B := up2, dn2
	up2B.toTag, dn2B.toTag, up2B.extra = "B", "B", nil
	s := New(Config{})
	play(t, s, []step{
		{0, alice, proxy, req("INVITE", up1)},
		{10, proxy, alice, resp(407, withMeth(ch, "INVITE"))},
		{12, alice, proxy, req("ACK", ack1)},
		{9012, alice, proxy, req("INVITE", up2)},
		{9030, proxy, alice, resp(100, withMeth(hdr{callID: cid, fromTag: "A", cseq: 2, branch: "z9hG4bK-up2"}, "INVITE"))},
		{9040, proxy, bob, req("INVITE", dn2)},
		{9500, bob, proxy, resp(180, withMeth(dn2B, "INVITE"))},
		{9520, proxy, alice, resp(180, withMeth(up2B, "INVITE"))},
		{12000, bob, proxy, resp(200, withMeth(dn2B, "INVITE"))},
		{12020, proxy, alice, resp(200, withMeth(up2B, "INVITE"))},
	})
	d, _ := s.Get(cid)
	for _, v := range []struct {
		name      string
		got, want *int64
	}{
		{"pdd_ms", d.Timing.PDDMs, i64(508)},
		{"setup_ms", d.Timing.SetupMs, i64(3008)},
		{"trying_ms", d.TimingDetail.TryingMs, i64(18)},
		{"auth_wait_ms", d.Timing.AuthWaitMs, i64(9002)},
	} {
		if !eqPtr(v.got, v.want) {
			t.Errorf("%s: got %s, want %s", v.name, fmtPtr(v.got), fmtPtr(v.want))
		}
	}
}
