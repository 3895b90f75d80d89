package dialog

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sip"
)

var t0 = time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)

const (
	alice = "10.0.0.1:5060"
	proxy = "10.0.0.2:5060"
	bob   = "10.0.0.3:5060"
)

// hdr is the common header set of a test message.
type hdr struct {
	callID   string
	fromTag  string
	toTag    string
	cseq     int
	cseqMeth string
	branch   string
	extra    []string
	body     string
	ctype    string
}

func (h hdr) text(start string) string {
	var b strings.Builder
	b.WriteString(start + "\r\n")
	if h.branch != "" {
		fmt.Fprintf(&b, "Via: SIP/2.0/UDP 10.0.0.1:5060;branch=%s\r\n", h.branch)
	}
	from := "From: \"Alice\" <sip:alice@example.com>"
	if h.fromTag != "" {
		from += ";tag=" + h.fromTag
	}
	to := "To: <sip:bob@example.com>"
	if h.toTag != "" {
		to += ";tag=" + h.toTag
	}
	b.WriteString(from + "\r\n" + to + "\r\n")
	if h.callID != "" {
		fmt.Fprintf(&b, "Call-ID: %s\r\n", h.callID)
	}
	if h.cseqMeth != "" {
		fmt.Fprintf(&b, "CSeq: %d %s\r\n", h.cseq, h.cseqMeth)
	}
	for _, e := range h.extra {
		b.WriteString(e + "\r\n")
	}
	if h.ctype != "" {
		fmt.Fprintf(&b, "Content-Type: %s\r\n", h.ctype)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(h.body), h.body)
	return b.String()
}

func req(method string, h hdr) string {
	if h.cseqMeth == "" {
		h.cseqMeth = method
	}
	return h.text(method + " sip:bob@example.com SIP/2.0")
}

func resp(code int, h hdr) string {
	phrase, _ := sip.StatusText(code)
	if phrase == "" {
		phrase = "Whatever"
	}
	return h.text(fmt.Sprintf("SIP/2.0 %d %s", code, phrase))
}

// step is one message of a scripted flow.
type step struct {
	ms       int // milliseconds after t0
	src, dst string
	text     string
}

func play(t *testing.T, s *Store, steps []step) []Result {
	t.Helper()
	var out []Result
	for i, st := range steps {
		m, err := sip.Parse([]byte(st.text))
		if err != nil {
			t.Fatalf("step %d: parse: %v\n%s", i, err, st.text)
		}
		out = append(out, s.Apply(Observation{
			Msg: m, TS: t0.Add(time.Duration(st.ms) * time.Millisecond),
			Src: netip.MustParseAddrPort(st.src), Dst: netip.MustParseAddrPort(st.dst),
			Transport: packet.TransportUDP, Origin: packet.OriginWire,
			Frame: packet.FrameRef{Source: "test.pcap", Ordinal: uint64(i + 1), Digest: [8]byte{1}},
		}))
	}
	return out
}

func i64(v int64) *int64 { return &v }

func eqPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func fmtPtr(p *int64) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}

// basicCall is INVITE/100/180/200/ACK/BYE/200 between alice and bob.
func basicCall(cid string) []step {
	h := hdr{callID: cid, fromTag: "a1", cseq: 1, branch: "z9hG4bK-inv"}
	ht := h
	ht.toTag = "b1"
	ack := ht
	ack.branch = "z9hG4bK-ack"
	ack.cseqMeth = "ACK"
	bye := ht
	bye.branch, bye.cseq = "z9hG4bK-bye", 2
	return []step{
		{0, alice, bob, req("INVITE", h)},
		{40, bob, alice, resp(100, withMeth(h, "INVITE"))},
		{1500, bob, alice, resp(180, withMeth(ht, "INVITE"))},
		{4000, bob, alice, resp(200, withMeth(ht, "INVITE"))},
		{4010, alice, bob, req("ACK", ack)},
		{64000, alice, bob, req("BYE", bye)},
		{64030, bob, alice, resp(200, withMeth(bye, "BYE"))},
	}
}

func withMeth(h hdr, m string) hdr { h.cseqMeth = m; return h }

func TestBasicCall(t *testing.T) {
	s := New(Config{})
	play(t, s, basicCall("call-1"))
	d, ok := s.Get("call-1")
	if !ok {
		t.Fatal("dialog not found")
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"state", d.State, "Completed"},
		{"method", d.Method, "INVITE"},
		{"msg_count", d.MsgCount, 7},
		{"final_status_code", d.FinalStatusCode, 200},
		{"final_reason", d.FinalReason, "OK"},
		{"from_user", d.FromUser, "alice"},
		{"to_user", d.ToUser, "bob"},
		{"duration_sec", d.DurationSec, 64.03},
		{"retransmits", d.Timing.Retransmits, 0},
		{"frame", d.Frame, "test.pcap#1@0100000000000000"},
		{"input_origin", d.InputOrigin, "wire"},
		{"legs", len(d.Legs), 1},
		{"retained", d.Retained, 7},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	times := []struct {
		name      string
		got, want *int64
	}{
		{"pdd_ms", d.Timing.PDDMs, i64(1500)},
		{"setup_ms", d.Timing.SetupMs, i64(4000)},
		{"duration_ms", d.Timing.DurationMs, i64(60000)},
		{"trying_ms", d.TimingDetail.TryingMs, i64(40)},
		{"ring_ms", d.TimingDetail.RingMs, i64(2500)},
		{"teardown_ms", d.TimingDetail.TeardownMs, i64(30)},
	}
	for _, c := range times {
		if !eqPtr(c.got, c.want) {
			t.Errorf("%s: got %s, want %s", c.name, fmtPtr(c.got), fmtPtr(c.want))
		}
	}
	var path []string
	for _, tr := range d.Legs[0].Transitions {
		path = append(path, tr.To)
	}
	if got, want := strings.Join(path, ">"), "Trying>Ringing>InCall>Completed"; got != want {
		t.Errorf("transitions: got %s, want %s", got, want)
	}
	if len(d.Legs[0].Forks) != 1 || d.Legs[0].Forks[0].Tag != "b1" {
		t.Errorf("forks: got %+v, want one fork b1", d.Legs[0].Forks)
	}
}

func TestFlows(t *testing.T) {
	inv := hdr{callID: "c", fromTag: "a1", cseq: 1, branch: "z9hG4bK-1"}
	invB := inv
	invB.toTag = "b1"
	cancel := inv
	cancel.cseqMeth = "CANCEL"
	ack1 := invB
	ack1.cseqMeth = "ACK"
	inv2 := inv
	inv2.cseq, inv2.branch = 2, "z9hG4bK-2"
	inv2B := inv2
	inv2B.toTag = "b1"
	reg := hdr{callID: "c", fromTag: "r1", cseq: 1, branch: "z9hG4bK-r1"}
	regB := reg
	regB.toTag = "rb"
	reg2 := reg
	reg2.cseq, reg2.branch = 2, "z9hG4bK-r2"
	reg2B := reg2
	reg2B.toTag = "rb"

	cases := []struct {
		name      string
		steps     []step
		state     string
		final     int
		retrans   int
		msgs      int
		noFinal   bool
		onlyChall bool
	}{
		{
			name: "cancelled before answer",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{100, bob, alice, resp(180, withMeth(invB, "INVITE"))},
				{2000, alice, bob, req("CANCEL", cancel)},
				{2010, bob, alice, resp(200, withMeth(invB, "CANCEL"))},
				{2020, bob, alice, resp(487, withMeth(invB, "INVITE"))},
				{2030, alice, bob, req("ACK", ack1)},
			},
			state: "Cancelled", final: 487, msgs: 6,
		},
		{
			name: "2xx beats the CANCEL",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{100, bob, alice, resp(180, withMeth(invB, "INVITE"))},
				{2000, alice, bob, req("CANCEL", cancel)},
				{2001, bob, alice, resp(200, withMeth(invB, "INVITE"))},
				{2010, bob, alice, resp(200, withMeth(invB, "CANCEL"))},
			},
			state: "InCall", final: 200, msgs: 5,
		},
		{
			name: "only ever challenged reads Failed",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(407, withMeth(invB, "INVITE"))},
				{20, alice, bob, req("ACK", ack1)},
			},
			state: "Failed", final: 407, msgs: 3, onlyChall: true,
		},
		{
			name: "challenge then answered",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(401, withMeth(invB, "INVITE"))},
				{20, alice, bob, req("ACK", ack1)},
				{30, alice, bob, req("INVITE", inv2)},
				{40, bob, alice, resp(100, withMeth(inv2, "INVITE"))},
				{50, bob, alice, resp(200, withMeth(inv2B, "INVITE"))},
			},
			state: "InCall", final: 200, msgs: 6,
		},
		{
			name: "challenge then retry pending",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(401, withMeth(invB, "INVITE"))},
				{30, alice, bob, req("INVITE", inv2)},
			},
			state: "Trying", final: 401, msgs: 3,
		},
		{
			name: "challenge then 488",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(401, withMeth(invB, "INVITE"))},
				{30, alice, bob, req("INVITE", inv2)},
				{40, bob, alice, resp(488, withMeth(inv2B, "INVITE"))},
			},
			state: "Failed", final: 488, msgs: 4,
		},
		{
			name: "retransmitted INVITE and 100",
			steps: []step{
				// Timer A re-sends the INVITE after T1; the server
				// transaction answers the copy with its last provisional
				// again (RFC 3261 §17.2.1).
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(100, withMeth(inv, "INVITE"))},
				{500, alice, bob, req("INVITE", inv)},
				{510, bob, alice, resp(100, withMeth(inv, "INVITE"))},
				{600, bob, alice, resp(486, withMeth(invB, "INVITE"))},
			},
			state: "Failed", final: 486, retrans: 2, msgs: 5,
		},
		{
			name: "mid-call capture: BYE first",
			steps: []step{
				{0, bob, alice, req("BYE", hdr{callID: "c", fromTag: "b1", toTag: "a1", cseq: 7, branch: "z9hG4bK-b"})},
				{10, alice, bob, resp(200, hdr{callID: "c", fromTag: "b1", toTag: "a1", cseq: 7, cseqMeth: "BYE", branch: "z9hG4bK-b"})},
			},
			state: "Completed", msgs: 2, noFinal: true,
		},
		{
			name: "mid-call capture: 2xx to BYE only",
			steps: []step{
				{10, alice, bob, resp(200, hdr{callID: "c", fromTag: "b1", toTag: "a1", cseq: 7, cseqMeth: "BYE", branch: "z9hG4bK-b"})},
			},
			state: "Completed", msgs: 1, noFinal: true,
		},
		{
			name: "mid-call capture: ACK first then re-INVITE rejected",
			steps: []step{
				{0, alice, bob, req("ACK", ack1)},
				{10, alice, bob, req("INVITE", hdr{callID: "c", fromTag: "a1", toTag: "b1", cseq: 5, branch: "z9hG4bK-re"})},
				{20, bob, alice, resp(488, hdr{callID: "c", fromTag: "a1", toTag: "b1", cseq: 5, cseqMeth: "INVITE", branch: "z9hG4bK-re"})},
			},
			state: "InCall", msgs: 3, noFinal: true,
		},
		{
			name: "REGISTER challenged then registered",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg)},
				{5, proxy, alice, resp(401, withMeth(regB, "REGISTER"))},
				{10, alice, proxy, req("REGISTER", reg2)},
				{15, proxy, alice, resp(200, withMeth(reg2B, "REGISTER"))},
			},
			state: "Registered", msgs: 4, noFinal: true,
		},
		{
			name: "REGISTER challenged then forbidden",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg)},
				{5, proxy, alice, resp(401, withMeth(regB, "REGISTER"))},
				{10, alice, proxy, req("REGISTER", reg2)},
				{15, proxy, alice, resp(403, withMeth(reg2B, "REGISTER"))},
			},
			state: "Failed", msgs: 4, noFinal: true,
		},
		{
			name: "de-registration expires the binding",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg)},
				{5, proxy, alice, resp(200, withMeth(regB, "REGISTER"))},
				{10, alice, proxy, req("REGISTER", func() hdr { h := reg2; h.extra = []string{"Expires: 0"}; return h }())},
				{15, proxy, alice, resp(200, withMeth(reg2B, "REGISTER"))},
			},
			state: "Expired", msgs: 4, noFinal: true,
		},
		{
			name: "OPTIONS ping",
			steps: []step{
				{0, alice, proxy, req("OPTIONS", hdr{callID: "c", fromTag: "o1", cseq: 1, branch: "z9hG4bK-o"})},
				{5, proxy, alice, resp(200, hdr{callID: "c", fromTag: "o1", toTag: "p", cseq: 1, cseqMeth: "OPTIONS", branch: "z9hG4bK-o"})},
			},
			state: "Completed", msgs: 2, noFinal: true,
		},
		{
			name: "SUBSCRIBE pending then active then terminated",
			steps: []step{
				{0, alice, proxy, req("SUBSCRIBE", hdr{callID: "c", fromTag: "s1", cseq: 1, branch: "z9hG4bK-s", extra: []string{"Event: presence"}})},
				{5, proxy, alice, resp(202, hdr{callID: "c", fromTag: "s1", toTag: "n1", cseq: 1, cseqMeth: "SUBSCRIBE", branch: "z9hG4bK-s"})},
				{6, proxy, alice, req("NOTIFY", hdr{callID: "c", fromTag: "n1", toTag: "s1", cseq: 1, branch: "z9hG4bK-n1", extra: []string{"Subscription-State: pending;expires=600"}})},
				{7, proxy, alice, req("NOTIFY", hdr{callID: "c", fromTag: "n1", toTag: "s1", cseq: 2, branch: "z9hG4bK-n2", extra: []string{"Subscription-State: active;expires=600"}})},
				{8, proxy, alice, req("NOTIFY", hdr{callID: "c", fromTag: "n1", toTag: "s1", cseq: 3, branch: "z9hG4bK-n3", extra: []string{"Subscription-State: terminated;reason=timeout"}})},
			},
			state: "Terminated", msgs: 5, noFinal: true,
		},
		{
			name: "SUBSCRIBE refused",
			steps: []step{
				{0, alice, proxy, req("SUBSCRIBE", hdr{callID: "c", fromTag: "s1", cseq: 1, branch: "z9hG4bK-s"})},
				{5, proxy, alice, resp(489, hdr{callID: "c", fromTag: "s1", toTag: "n1", cseq: 1, cseqMeth: "SUBSCRIBE", branch: "z9hG4bK-s"})},
			},
			state: "Failed", msgs: 2, noFinal: true,
		},
		{
			name: "transfer by REFER",
			steps: append(basicCall("c")[:5],
				step{5000, alice, bob, req("REFER", hdr{callID: "c", fromTag: "a1", toTag: "b1", cseq: 3, branch: "z9hG4bK-ref"})},
				step{5010, bob, alice, resp(202, hdr{callID: "c", fromTag: "a1", toTag: "b1", cseq: 3, cseqMeth: "REFER", branch: "z9hG4bK-ref"})},
			),
			state: "Transferring", final: 200, msgs: 7,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{})
			play(t, s, tc.steps)
			d, ok := s.Get("c")
			if !ok {
				t.Fatal("dialog not found")
			}
			if d.State != tc.state {
				var tr []string
				for _, l := range d.Legs {
					for _, x := range l.Transitions {
						tr = append(tr, x.To+" ("+x.Reason+")")
					}
				}
				t.Errorf("state: got %s, want %s; transitions %v", d.State, tc.state, tr)
			}
			if tc.noFinal {
				if d.FinalStatusCode != 0 {
					t.Errorf("final_status_code: got %d, want absent", d.FinalStatusCode)
				}
			} else if d.FinalStatusCode != tc.final {
				t.Errorf("final_status_code: got %d, want %d", d.FinalStatusCode, tc.final)
			}
			if d.Timing.Retransmits != tc.retrans {
				t.Errorf("retransmits: got %d, want %d", d.Timing.Retransmits, tc.retrans)
			}
			if d.MsgCount != tc.msgs {
				t.Errorf("msg_count: got %d, want %d", d.MsgCount, tc.msgs)
			}
			if got := d.Legs[0].OnlyChalleng; got != tc.onlyChall {
				t.Errorf("only_challenged: got %v, want %v", got, tc.onlyChall)
			}
		})
	}
}

// TestStatefulProxyHops replays sip-proxy.pcap's shape: one dialog seen on
// both sides of a stateful proxy with the same tags. Neither hop's messages
// are retransmissions of the other's.
func TestStatefulProxyHops(t *testing.T) {
	cid := "75104938772201062721@10.33.6.101"
	up := hdr{callID: cid, fromTag: "A", cseq: 1, branch: "z9hG4bK-up"}
	dn := up
	dn.branch = "z9hG4bK-dn"
	upB, dnB := up, dn
	upB.toTag, dnB.toTag = "B", "B"
	ack := hdr{callID: cid, fromTag: "A", toTag: "B", cseq: 1, cseqMeth: "ACK", branch: "z9hG4bK-ack"}
	bye := hdr{callID: cid, fromTag: "B", toTag: "A", cseq: 1, cseqMeth: "BYE", branch: "z9hG4bK-bye"}
	s := New(Config{})
	play(t, s, []step{
		{0, alice, proxy, req("INVITE", up)},
		{24, proxy, alice, resp(100, withMeth(up, "INVITE"))},
		{36, proxy, bob, req("INVITE", dn)},
		{76, bob, proxy, resp(100, withMeth(dnB, "INVITE"))},
		{95, bob, proxy, resp(180, withMeth(dnB, "INVITE"))},
		{121, proxy, alice, resp(180, withMeth(upB, "INVITE"))},
		{708, bob, proxy, resp(200, withMeth(dnB, "INVITE"))},
		{725, proxy, alice, resp(200, withMeth(upB, "INVITE"))},
		{747, alice, bob, req("ACK", ack)},
		{2957, bob, alice, req("BYE", bye)},
		{2970, alice, bob, resp(200, bye)},
	})
	d, _ := s.Get(cid)
	if d.MsgCount != 11 || d.Timing.Retransmits != 0 || d.State != "Completed" || d.FinalStatusCode != 200 || len(d.Legs) != 1 {
		t.Errorf("got msgs %d retrans %d state %s final %d legs %d, want 11 0 Completed 200 1",
			d.MsgCount, d.Timing.Retransmits, d.State, d.FinalStatusCode, len(d.Legs))
	}
	// Timing is the caller's: the 18x and 2xx the proxy sent back to alice
	// (121, 725 ms), not the ones bob sent to the proxy (95, 708 ms).
	if !eqPtr(d.Timing.PDDMs, i64(121)) || !eqPtr(d.Timing.SetupMs, i64(725)) || !eqPtr(d.TimingDetail.TryingMs, i64(24)) {
		t.Errorf("pdd %s setup %s trying %s, want 121 725 24", fmtPtr(d.Timing.PDDMs), fmtPtr(d.Timing.SetupMs), fmtPtr(d.TimingDetail.TryingMs))
	}
}

// TestForks: two remote tags answer one INVITE through a forking proxy; the
// second 180 is not a retransmission, each fork is recorded.
func TestForks(t *testing.T) {
	inv := hdr{callID: "c", fromTag: "a1", cseq: 1, branch: "z9hG4bK-1"}
	f1, f2 := inv, inv
	f1.toTag, f2.toTag = "b1", "b2"
	s := New(Config{})
	play(t, s, []step{
		{0, alice, proxy, req("INVITE", inv)},
		{100, proxy, alice, resp(180, withMeth(f1, "INVITE"))},
		{110, proxy, alice, resp(180, withMeth(f2, "INVITE"))},
		{900, proxy, alice, resp(200, withMeth(f2, "INVITE"))},
	})
	d, _ := s.Get("c")
	if d.Timing.Retransmits != 0 {
		t.Errorf("retransmits: got %d, want 0", d.Timing.Retransmits)
	}
	forks := d.Legs[0].Forks
	if len(forks) != 2 || forks[0].Tag != "b1" || forks[0].LastStatus != 180 || forks[1].Tag != "b2" || forks[1].LastStatus != 200 || forks[1].Messages != 2 {
		t.Errorf("forks: got %+v", forks)
	}
	if d.State != "InCall" {
		t.Errorf("state: got %s, want InCall", d.State)
	}
}

// TestSharedCallID: a load generator reuses a Call-ID for a REGISTER and an
// INVITE with different From tags (sipp-branch-scenario.pcapng): two legs,
// and the row describes the call (docs/data-model.md): method INVITE, the
// INVITE leg's state and final code, the REGISTER listed in other_legs; the
// per-method counts and the first-message facts follow the INVITE leg.
func TestSharedCallID(t *testing.T) {
	cid := "1-4461@127.0.1.1"
	reg := hdr{callID: cid, fromTag: "4461SIPpTag071", cseq: 1, branch: "z9hG4bK-4461-1-0"}
	regB := withMeth(reg, "REGISTER")
	regB.toTag = "4384SIPpTag08817"
	inv := hdr{callID: cid, fromTag: "4461SIPpTag07b1", cseq: 1, branch: "z9hG4bK-4461-1-3"}
	invB := withMeth(inv, "INVITE")
	invB.toTag = "4384SIPpTag08b817"
	bye := hdr{callID: cid, fromTag: "4461SIPpTag07b1", toTag: "4384SIPpTag08b817", cseq: 2, cseqMeth: "BYE", branch: "z9hG4bK-4461-1-11"}
	a, b, registrar := "127.0.0.1:5061", "127.0.0.1:5060", "127.0.0.9:5060"
	s := New(Config{})
	play(t, s, []step{
		{0, a, registrar, req("REGISTER", reg)},
		{1, registrar, a, resp(200, regB)},
	})
	if r, _ := s.Lookup(cid); r.Method != "REGISTER" || r.State != "Registered" || len(r.OtherLegs) != 0 {
		t.Errorf("before the INVITE: got %s/%s %+v, want REGISTER/Registered and no other legs", r.Method, r.State, r.OtherLegs)
	}
	if got := s.Tally(TallyMethod).Text; got["REGISTER"] != 1 || got["INVITE"] != 0 {
		t.Errorf("by method before the INVITE: got %v, want REGISTER 1", got)
	}
	play(t, s, []step{
		{2, a, b, req("INVITE", inv)},
		{3, b, a, resp(180, invB)},
		{4, b, a, resp(403, invB)},
		{5, a, b, req("BYE", bye)},
		{6, b, a, resp(200, bye)},
	})
	d, _ := s.Get(cid)
	if len(d.Legs) != 2 {
		t.Fatalf("legs: got %d, want 2", len(d.Legs))
	}
	got := fmt.Sprintf("%s/%s/%d %s:%s:%d:%v %s:%s:%d:%v", d.Method, d.State, d.FinalStatusCode,
		d.Legs[0].Method, d.Legs[0].State, d.Legs[0].FinalStatusCode, d.Legs[0].Primary,
		d.Legs[1].Method, d.Legs[1].State, d.Legs[1].FinalStatusCode, d.Legs[1].Primary)
	if want := "INVITE/Failed/403 REGISTER:Registered:200:false INVITE:Failed:403:true"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if want := []LegBrief{{Method: "REGISTER", State: "Registered", FinalStatusCode: 200}}; !reflect.DeepEqual(d.OtherLegs, want) {
		t.Errorf("other_legs: got %+v, want %+v", d.OtherLegs, want)
	}
	if d.MsgCount != 7 || d.Legs[0].MsgCount != 2 || d.Legs[1].MsgCount != 5 {
		t.Errorf("counts: got %d (%d+%d), want 7 (2+5)", d.MsgCount, d.Legs[0].MsgCount, d.Legs[1].MsgCount)
	}
	if d.Family != "INVITE" {
		t.Errorf("family: got %s, want INVITE", d.Family)
	}
	if got := s.Tally(TallyMethod).Text; got["INVITE"] != 1 || got["REGISTER"] != 0 {
		t.Errorf("by method: got %v, want INVITE 1", got)
	}
	if got := s.Tally(TallyState).Text; got["Failed"] != 1 || got["Registered"] != 0 {
		t.Errorf("by state: got %v, want Failed 1", got)
	}
	if got := s.Tally(TallyDstAddr).Addrs; got[netip.MustParseAddr("127.0.0.1")] != 1 {
		t.Errorf("by dst: got %v, want the INVITE's destination 127.0.0.1", got)
	}
	e, _ := s.Extra(cid)
	if e.Dst.String() != b || e.NextHop.String() != b {
		t.Errorf("extra: dst %s next hop %s, want the INVITE's %s", e.Dst, e.NextHop, b)
	}
	if c := s.Count(time.Time{}); c.ByState["Failed"] != 1 || c.ByState["Registered"] != 0 {
		t.Errorf("count by state: got %v, want Failed 1", c.ByState)
	}
}

// TestLastTransaction: a leg's outcome follows its last transaction. A
// challenge answered by a credentialed retry is counted, not the outcome;
// a retry under a new From tag takes the row over from the leg it retries.
func TestLastTransaction(t *testing.T) {
	reg := hdr{callID: "c", fromTag: "r1", cseq: 1, branch: "z9hG4bK-r1"}
	regB := withMeth(reg, "REGISTER")
	regB.toTag = "rb"
	reg2 := reg
	reg2.cseq, reg2.branch = 2, "z9hG4bK-r2"
	reg2B := withMeth(reg2, "REGISTER")
	reg2B.toTag = "rb"
	reg3 := reg
	reg3.cseq, reg3.branch = 3, "z9hG4bK-r3"
	reg3B := withMeth(reg3, "REGISTER")
	reg3B.toTag = "rb"
	inv := hdr{callID: "c", fromTag: "a1", cseq: 1, branch: "z9hG4bK-1"}
	invB := withMeth(inv, "INVITE")
	invB.toTag = "b1"
	ack := invB
	ack.cseqMeth = "ACK"
	inv2 := hdr{callID: "c", fromTag: "a2", cseq: 2, branch: "z9hG4bK-2"}
	inv2B := withMeth(inv2, "INVITE")
	inv2B.toTag = "b2"
	cases := []struct {
		name       string
		steps      []step
		method     string
		state      string
		final      int
		challenges int
		other      []LegBrief
	}{
		{
			name: "REGISTER 401 then credentials 200: registered, challenge counted",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg)},
				{5, proxy, alice, resp(401, regB)},
				{10, alice, proxy, req("REGISTER", reg2)},
				{15, proxy, alice, resp(200, reg2B)},
			},
			method: "REGISTER", state: "Registered", challenges: 1,
		},
		{
			name: "REGISTER 200 then a refresh refused 403: failed",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg)},
				{5, proxy, alice, resp(200, regB)},
				{10, alice, proxy, req("REGISTER", reg2)},
				{15, proxy, alice, resp(403, reg2B)},
			},
			method: "REGISTER", state: "Failed",
		},
		{
			name: "REGISTER refused then registered again",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg)},
				{5, proxy, alice, resp(403, regB)},
				{10, alice, proxy, req("REGISTER", reg2)},
				{15, proxy, alice, resp(401, reg2B)},
				{20, alice, proxy, req("REGISTER", reg3)},
				{25, proxy, alice, resp(200, reg3B)},
			},
			method: "REGISTER", state: "Registered", challenges: 1,
		},
		{
			name: "INVITE 407 then credentials 200: answered, final 200",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(407, invB)},
				{20, alice, bob, req("ACK", ack)},
				{30, alice, bob, req("INVITE", func() hdr { h := inv; h.cseq, h.branch = 2, "z9hG4bK-1b"; return h }())},
				{40, bob, alice, resp(200, func() hdr { h := invB; h.cseq, h.branch = 2, "z9hG4bK-1b"; return h }())},
			},
			method: "INVITE", state: "InCall", final: 200, challenges: 1,
		},
		{
			name: "INVITE 407 then a retry under a new From tag answered 200",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(407, invB)},
				{20, alice, bob, req("ACK", ack)},
				{30, alice, bob, req("INVITE", inv2)},
				{40, bob, alice, resp(200, inv2B)},
			},
			method: "INVITE", state: "InCall", final: 200, challenges: 1,
			other: []LegBrief{{Method: "INVITE", State: "Failed", FinalStatusCode: 407, Challenges: 1}},
		},
		{
			name: "INVITE refused 403 then a new attempt under a new From tag answered 200",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(403, invB)},
				{20, alice, bob, req("ACK", ack)},
				{30, alice, bob, req("INVITE", inv2)},
				{40, bob, alice, resp(200, inv2B)},
			},
			method: "INVITE", state: "InCall", final: 200,
			other: []LegBrief{{Method: "INVITE", State: "Failed", FinalStatusCode: 403}},
		},
		{
			name: "INVITE answered, then another INVITE leg refused: the row keeps the answered call",
			steps: []step{
				{0, alice, bob, req("INVITE", inv)},
				{10, bob, alice, resp(200, invB)},
				{30, alice, bob, req("INVITE", inv2)},
				{40, bob, alice, resp(486, inv2B)},
			},
			method: "INVITE", state: "InCall", final: 200,
			other: []LegBrief{{Method: "INVITE", State: "Failed", FinalStatusCode: 486}},
		},
		{
			name: "REGISTER 401 then a retry under a new From tag answered 200",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg)},
				{5, proxy, alice, resp(401, regB)},
				{10, alice, proxy, req("REGISTER", func() hdr { h := reg2; h.fromTag = "r2"; return h }())},
				{15, proxy, alice, resp(200, func() hdr { h := reg2B; h.fromTag = "r2"; return h }())},
			},
			method: "REGISTER", state: "Registered", challenges: 1,
			other: []LegBrief{{Method: "REGISTER", State: "Failed", FinalStatusCode: 401, Challenges: 1}},
		},
		{
			name: "REGISTER then INVITE answered: the row is the call",
			steps: []step{
				{0, alice, proxy, req("REGISTER", reg)},
				{5, proxy, alice, resp(401, regB)},
				{10, alice, proxy, req("REGISTER", reg2)},
				{15, proxy, alice, resp(200, reg2B)},
				{20, alice, bob, req("INVITE", inv)},
				{30, bob, alice, resp(200, invB)},
			},
			method: "INVITE", state: "InCall", final: 200,
			other: []LegBrief{{Method: "REGISTER", State: "Registered", FinalStatusCode: 200, Challenges: 1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{})
			play(t, s, tc.steps)
			r, ok := s.Lookup("c")
			if !ok {
				t.Fatal("dialog not found")
			}
			if r.Method != tc.method || r.State != tc.state || r.FinalStatusCode != tc.final || r.Challenges != tc.challenges {
				t.Errorf("got %s/%s/%d challenges %d, want %s/%s/%d challenges %d",
					r.Method, r.State, r.FinalStatusCode, r.Challenges, tc.method, tc.state, tc.final, tc.challenges)
			}
			if !reflect.DeepEqual(r.OtherLegs, tc.other) {
				t.Errorf("other_legs: got %+v, want %+v", r.OtherLegs, tc.other)
			}
			if got := s.Tally(TallyMethod).Text; len(got) != 1 || got[tc.method] != 1 {
				t.Errorf("by method: got %v, want %s 1", got, tc.method)
			}
		})
	}
}

func TestTerminationCause(t *testing.T) {
	cases := []struct {
		name   string
		extra  [][]string // extra headers on the BYE, then on its 200
		code   int
		proto  string
		header string
		text   string
		none   bool
	}{
		{"no cause", [][]string{nil, nil}, 0, "", "", "", true},
		{"Q.850 beats SIP in one message",
			[][]string{{`Reason: SIP;cause=200;text="Call completed elsewhere", Q.850;cause=16;text="Normal call clearing"`}, nil},
			16, "Q.850", "Reason", "Normal call clearing", false},
		{"SIP cause alone", [][]string{{`Reason: SIP ;cause=480 ;text="Temporarily Unavailable"`}, nil},
			480, "SIP", "Reason", "Temporarily Unavailable", false},
		{"Asterisk header beats SIP", [][]string{{`Reason: SIP;cause=200`, `X-Asterisk-HangupCauseCode: 17`}, nil},
			17, "Q.850", "X-Asterisk-HangupCauseCode", "", false},
		{"last message naming a cause wins",
			[][]string{{`Reason: Q.850;cause=16`}, {`Reason: Q.850;cause=31;text="Normal, unspecified"`}},
			31, "Q.850", "Reason", "Normal, unspecified", false},
		{"text cut at 200 characters", [][]string{{`Reason: Q.850;cause=16;text="` + strings.Repeat("é", 250) + `"`}, nil},
			16, "Q.850", "Reason", strings.Repeat("é", 200), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			steps := basicCall("c")
			bye := hdr{callID: "c", fromTag: "a1", toTag: "b1", cseq: 2, cseqMeth: "BYE", branch: "z9hG4bK-bye", extra: tc.extra[0]}
			ok := bye
			ok.extra = tc.extra[1]
			steps[5].text = req("BYE", bye)
			steps[6].text = resp(200, ok)
			s := New(Config{})
			play(t, s, steps)
			d, _ := s.Get("c")
			if tc.none {
				if d.Termination != nil {
					t.Errorf("termination: got %+v, want absent", d.Termination)
				}
				return
			}
			c := d.Termination
			if c == nil {
				t.Fatal("termination absent")
			}
			if c.Code != tc.code || c.Protocol != tc.proto || c.SourceHeader != tc.header || c.Text != tc.text {
				t.Errorf("got %d %s %s %q, want %d %s %s %q", c.Code, c.Protocol, c.SourceHeader, c.Text, tc.code, tc.proto, tc.header, tc.text)
			}
			if c.FrameRef == "" {
				t.Errorf("frame_ref absent")
			}
		})
	}
}

func TestInfoDTMF(t *testing.T) {
	steps := basicCall("c")[:5]
	for i, dg := range []string{"5", "#"} {
		h := hdr{callID: "c", fromTag: "a1", toTag: "b1", cseq: 10 + i, cseqMeth: "INFO", branch: fmt.Sprintf("z9hG4bK-info%d", i),
			ctype: "application/dtmf-relay", body: "Signal=" + dg + "\r\nDuration=160\r\n"}
		steps = append(steps, step{5000 + i*1000, alice, bob, req("INFO", h)})
	}
	s := New(Config{})
	play(t, s, steps)
	d, _ := s.Get("c")
	if len(d.InfoDTMF) != 2 || d.InfoDTMF[0].Digit != "x" || d.InfoDTMF[1].DurationMs != 160 {
		t.Errorf("masked: got %+v", d.InfoDTMF)
	}
	r, _ := s.GetWith("c", Options{RevealDigits: true})
	if r.InfoDTMF[0].Digit != "5" || r.InfoDTMF[1].Digit != "#" {
		t.Errorf("revealed: got %+v", r.InfoDTMF)
	}
	if d.State != "InCall" {
		t.Errorf("INFO changed the state to %s", d.State)
	}
}

func TestRetransmittedNoResponse(t *testing.T) {
	inv := hdr{callID: "c", fromTag: "a1", cseq: 1, branch: "z9hG4bK-1"}
	s := New(Config{})
	play(t, s, []step{
		{0, alice, bob, req("INVITE", inv)},
		{500, alice, bob, req("INVITE", inv)},
		{1500, alice, bob, req("INVITE", inv)},
	})
	d, _ := s.Get("c")
	if len(d.RetransmittedNoResponse) != 1 {
		t.Fatalf("got %+v", d.RetransmittedNoResponse)
	}
	u := d.RetransmittedNoResponse[0]
	if u.Count != 3 || u.SpanMs != 1500 || u.Method != "INVITE" || u.Branch != "z9hG4bK-1" || d.Timing.Retransmits != 2 {
		t.Errorf("got %+v retransmits %d, want count 3 span 1500 INVITE z9hG4bK-1, 2 retransmits", u, d.Timing.Retransmits)
	}
	if d.State != "Trying" {
		t.Errorf("state: got %s, want Trying", d.State)
	}
}

func TestMessageCap(t *testing.T) {
	s := New(Config{MaxMessages: 500})
	var steps []step
	for i := 0; i < 600; i++ {
		steps = append(steps, step{i, alice, proxy, req("OPTIONS", hdr{callID: "c", fromTag: "o", cseq: i + 1, branch: fmt.Sprintf("z9hG4bK-%d", i)})})
	}
	play(t, s, steps)
	d, _ := s.Get("c")
	if d.MsgCount != 600 || d.Retained != 500 || len(d.Messages) != 500 || d.Bounds.MessagesNotRetained != 100 {
		t.Errorf("got msg_count %d retained %d (%d) dropped %d, want 600 500 100", d.MsgCount, d.Retained, len(d.Messages), d.Bounds.MessagesNotRetained)
	}
	if got := s.Stats().MessagesNotRetained; got != 100 {
		t.Errorf("store messages_not_retained: got %d, want 100", got)
	}
}

func TestNoCallID(t *testing.T) {
	s := New(Config{})
	m, err := sip.Parse([]byte("SIP/2.0 200 OK\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Apply(Observation{Msg: m, TS: t0})
	if !r.NoCallID || s.Len() != 0 || s.Stats().WithoutCallID != 1 {
		t.Errorf("got %+v len %d stats %+v", r, s.Len(), s.Stats())
	}
}

func parsed(t testing.TB, text string) *sip.Message {
	m, err := sip.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDialogFlood: 50k unique Call-IDs against a cap of 1000. The store never
// holds more than the cap, evicts in batches of cap/100 from the least
// recently updated end, and counts every eviction.
func TestDialogFlood(t *testing.T) {
	const limit, n = 1000, 50000
	s := New(Config{MaxDialogs: limit})
	gen := s.Generation()
	for i := 0; i < n; i++ {
		m := parsed(t, req("OPTIONS", hdr{callID: fmt.Sprintf("flood-%d", i), fromTag: "f", cseq: 1, branch: "z9hG4bK-f"}))
		r := s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Millisecond)})
		if r.Evicted != 0 && r.Evicted != limit/100 {
			t.Fatalf("step %d: evicted %d, want a batch of %d", i, r.Evicted, limit/100)
		}
		if got := s.Len(); got > limit {
			t.Fatalf("step %d: %d dialogs, over the cap %d", i, got, limit)
		}
	}
	st := s.Stats()
	if st.Evicted != uint64(n-st.Dialogs) {
		t.Errorf("evicted %d, want %d", st.Evicted, n-st.Dialogs)
	}
	if s.Generation() == gen {
		t.Errorf("generation did not move on eviction")
	}
	// The newest survive; the oldest went.
	if _, ok := s.Lookup(fmt.Sprintf("flood-%d", n-1)); !ok {
		t.Errorf("newest dialog evicted")
	}
	if _, ok := s.Lookup("flood-0"); ok {
		t.Errorf("oldest dialog kept")
	}
}

// TestEvictionIsLRU: a dialog updated recently survives eviction even if it
// was created first.
func TestEvictionIsLRU(t *testing.T) {
	s := New(Config{MaxDialogs: 100})
	apply := func(id string, cseq int, ms int) {
		m := parsed(t, req("OPTIONS", hdr{callID: id, fromTag: "f", cseq: cseq, branch: fmt.Sprintf("z9hG4bK-%d", cseq)}))
		s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(ms) * time.Millisecond)})
	}
	for i := 0; i < 100; i++ {
		apply(fmt.Sprintf("d%d", i), 1, i)
	}
	apply("d0", 2, 200) // touch the oldest
	apply("new", 1, 300)
	if _, ok := s.Lookup("d0"); !ok {
		t.Errorf("recently updated d0 was evicted")
	}
	if _, ok := s.Lookup("d1"); ok {
		t.Errorf("least recently updated d1 survived")
	}
	if s.Len() != 100 {
		t.Errorf("len %d, want 100", s.Len())
	}
}

func TestNoRotate(t *testing.T) {
	s := New(Config{MaxDialogs: 10, NoRotate: true})
	for i := 0; i < 50000; i++ {
		m := parsed(t, req("OPTIONS", hdr{callID: fmt.Sprintf("n%d", i), fromTag: "f", cseq: 1, branch: "z9hG4bK"}))
		s.Apply(Observation{Msg: m, TS: t0})
		if s.Len() > 10 {
			t.Fatalf("step %d: %d dialogs over the cap", i, s.Len())
		}
	}
	st := s.Stats()
	if st.Refused != 49990 || st.Evicted != 0 {
		t.Errorf("refused %d evicted %d, want 49990 0", st.Refused, st.Evicted)
	}
	if _, ok := s.Lookup("n0"); !ok {
		t.Errorf("no-rotate dropped an old dialog")
	}
}

// TestPerDialogFloods: the per-dialog attacker-keyed sets (retransmission
// identities, transactions, legs) stay under their caps at every step of a
// 50k-key flood within one Call-ID.
func TestPerDialogFloods(t *testing.T) {
	const n = 50000
	cases := []struct {
		name string
		msg  func(i int) string
		size func(d *dialog) int
		cap  int
	}{
		{"identities", func(i int) string {
			return req("OPTIONS", hdr{callID: "c", fromTag: "f", cseq: i + 1, branch: "z9hG4bK-same"})
		}, func(d *dialog) int { return d.seenCount() }, DefaultMaxSeen},
		{"transactions", func(i int) string {
			return req("OPTIONS", hdr{callID: "c", fromTag: "f", cseq: 1, branch: fmt.Sprintf("z9hG4bK-%d", i)})
		}, func(d *dialog) int { return len(d.txOrder) }, maxTxs},
		{"legs", func(i int) string {
			return req("OPTIONS", hdr{callID: "c", fromTag: fmt.Sprintf("t%d", i), cseq: 1, branch: "z9hG4bK"})
		}, func(d *dialog) int { return len(d.legs) }, maxLegs},
		{"forks", func(i int) string {
			return resp(180, hdr{callID: "c", fromTag: "a", toTag: fmt.Sprintf("b%d", i), cseq: 1, cseqMeth: "INVITE", branch: "z9hG4bK"})
		}, func(d *dialog) int { return len(d.legs[0].forks) }, maxForks},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{MaxMessages: 10})
			for i := 0; i < n; i++ {
				s.Apply(Observation{Msg: parsed(t, tc.msg(i)), TS: t0})
				s.mu.RLock()
				size := tc.size(s.lookup("c"))
				s.mu.RUnlock()
				if size > tc.cap {
					t.Fatalf("step %d: %d entries over the cap %d", i, size, tc.cap)
				}
			}
			d, _ := s.Get("c")
			if d.MsgCount != n {
				t.Errorf("msg_count %d, want %d", d.MsgCount, n)
			}
			b := d.Bounds
			if b.IdentitiesNotRemember+b.TransactionsDropped+b.LegsDropped+d.Legs[0].ForksDropped == 0 {
				t.Errorf("nothing counted as shed: %+v", b)
			}
		})
	}
}

func TestListAndCursor(t *testing.T) {
	s := New(Config{})
	// Three dialogs share one created_at; a fourth is later.
	for i, id := range []string{"b", "a", "c"} {
		m := parsed(t, req("OPTIONS", hdr{callID: id, fromTag: "f", cseq: 1, branch: "z9hG4bK"}))
		s.Apply(Observation{Msg: m, TS: t0})
		_ = i
	}
	m := parsed(t, req("OPTIONS", hdr{callID: "d", fromTag: "f", cseq: 1, branch: "z9hG4bK"}))
	s.Apply(Observation{Msg: m, TS: t0.Add(time.Second)})

	var got []string
	var cur *Cursor
	for pages := 0; pages < 10; pages++ {
		p := s.List(Query{Order: ByCreated, After: cur, Limit: 2})
		if p.TotalMatched != 4 {
			t.Errorf("total_matched %d, want 4", p.TotalMatched)
		}
		for _, r := range p.Rows {
			got = append(got, r.CallID)
		}
		if !p.More {
			break
		}
		text := p.Next.String()
		c, err := ParseCursor(text)
		if err != nil {
			t.Fatalf("cursor %q: %v", text, err)
		}
		cur = &c
	}
	if strings.Join(got, ",") != "a,b,c,d" {
		t.Errorf("pages: got %v, want a,b,c,d", got)
	}
	// the same pages through the filtering path
	var viaMatch []string
	cur = nil
	for pages := 0; pages < 10; pages++ {
		p := s.List(Query{Order: ByCreated, After: cur, Limit: 2, Match: func(*Summary) bool { return true }})
		for _, r := range p.Rows {
			viaMatch = append(viaMatch, r.CallID)
		}
		if !p.More {
			break
		}
		cur = &p.Next
	}
	if strings.Join(viaMatch, ",") != "a,b,c,d" {
		t.Errorf("pages through Match: got %v, want a,b,c,d", viaMatch)
	}
	// a bare timestamp pages strictly after that instant
	bare, err := ParseCursor(t0.Format(time.RFC3339Nano))
	if err != nil {
		t.Fatal(err)
	}
	for _, match := range []func(*Summary) bool{nil, func(*Summary) bool { return true }} {
		p := s.List(Query{After: &bare, Match: match})
		if len(p.Rows) != 1 || p.Rows[0].CallID != "d" {
			t.Errorf("bare cursor: got %+v, want only d", p.Rows)
		}
	}
	if _, err := ParseCursor("yesterday|x"); err == nil {
		t.Errorf("bad cursor accepted")
	}
	p := s.List(Query{Match: func(r *Summary) bool { return r.CallID != "b" }})
	if p.TotalMatched != 3 || len(p.Rows) != 3 || p.More {
		t.Errorf("filtered: got %d rows of %d, more %v", len(p.Rows), p.TotalMatched, p.More)
	}
}

func TestCount(t *testing.T) {
	s := New(Config{})
	play(t, s, basicCall("done"))
	play(t, s, basicCall("up")[:4])
	play(t, s, basicCall("ringing")[:3])
	old := t0.Add(10 * time.Second)
	c := s.Count(time.Time{})
	if c.Total != 3 || c.ByState["Completed"] != 1 || c.ByState["InCall"] != 1 || c.ByState["Ringing"] != 1 || c.Active != 2 || c.ActiveCalls != 1 {
		t.Errorf("got %+v", c)
	}
	// only dialogs updated in the window count as active
	if c := s.Count(old); c.Active != 0 {
		t.Errorf("idle dialogs counted active: %+v", c)
	}
}

// TestConcurrentReaders reads every view while one goroutine writes (run
// with -race).
func TestConcurrentReaders(t *testing.T) {
	s := New(Config{MaxDialogs: 500})
	msgs := make([]*sip.Message, 0, 2000)
	for i := 0; i < 2000; i++ {
		msgs = append(msgs, parsed(t, basicCall(fmt.Sprintf("c%d", i%700))[i%7].text))
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				rev := s.Revision()
				for _, row := range s.List(Query{Limit: 20}).Rows {
					if d, ok := s.Get(row.CallID); ok && d.MsgCount < 1 {
						t.Errorf("empty dialog %s", row.CallID)
					}
				}
				_ = s.Stats()
				_ = s.CallIDs()
				if s.Revision() < rev {
					t.Errorf("revision went backwards")
				}
			}
		}()
	}
	for i, m := range msgs {
		s.Apply(Observation{Msg: m, TS: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	close(done)
	wg.Wait()
	if got := s.Revision(); got != uint64(len(msgs)) {
		t.Errorf("revision %d, want %d (one per applied message)", got, len(msgs))
	}
}

func TestMessageView(t *testing.T) {
	sdpBody := "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n"
	steps := basicCall("mv")
	h := hdr{callID: "mv", fromTag: "a1", cseq: 1, branch: "z9hG4bK-inv", ctype: "application/sdp", body: sdpBody,
		extra: []string{"Contact: <sip:alice@10.0.0.1>", "User-Agent: phone/1.0"}}
	steps[0].text = req("INVITE", h)
	s := New(Config{})
	play(t, s, steps)
	d, _ := s.Get("mv")
	v := d.Messages[0].View()
	if v.SchemaVersion != MessageSchemaVersion || v.Index != 0 || v.CallID != "mv" || !v.IsRequest || v.Method != "INVITE" ||
		v.CSeq == nil || v.CSeq.Number != 1 || v.CSeq.Method != "INVITE" || v.From != `"Alice" <sip:alice@example.com>;tag=a1` ||
		v.To != "<sip:bob@example.com>" || v.Contact != "<sip:alice@10.0.0.1>" || v.UA != "phone/1.0" ||
		v.Src != "10.0.0.1" || v.SrcPort != 5060 || v.Dst != "10.0.0.3" || v.Transport != "UDP" || v.InputOrigin != "wire" ||
		v.Frame != "test.pcap#1@0100000000000000" || v.SDP != strings.ReplaceAll(sdpBody, "\r\n", "\n") || v.DSCP != nil {
		t.Errorf("request view: %+v", v)
	}
	r := d.Messages[3].View()
	if r.IsRequest || r.StatusCode != 200 || r.Reason != "OK" || r.Method != "" || r.Index != 3 || r.SDP != "" {
		t.Errorf("response view: %+v", r)
	}
}
