package dialog

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestTableTotal: every (family, arrival, state) cell exists, carries a
// reason, and never moves a leg into a state its family does not have.
func TestTableTotal(t *testing.T) {
	cells := 0
	for f := Family(0); f < familyCount; f++ {
		for a := Arrival(0); a < arrivalCount; a++ {
			for s := State(0); s < stateCount; s++ {
				c := Decide(f, a, s)
				cells++
				if c.Reason == "" {
					t.Errorf("%s / %s / %q: empty reason", f, a, s)
				}
				if c.Next >= stateCount {
					t.Errorf("%s / %s / %q: next %d out of range", f, a, s, c.Next)
				}
				if c.Change != (c.Next != s) {
					t.Errorf("%s / %s / %q: Change=%v but next=%q", f, a, s, c.Change, c.Next)
				}
				if c.Next == StateNone && s != StateNone {
					t.Errorf("%s / %s / %q: moves back to no state", f, a, s)
				}
				if !foreign(f, s) && c.Change && foreign(f, c.Next) {
					t.Errorf("%s / %s / %q: moves to %q, which a %s dialog never enters", f, a, s, c.Next, f)
				}
			}
		}
	}
	// A leg's first message always gives it a state: every arrival that can
	// open a leg of a family moves it out of "no state".
	for a := Arrival(0); a < arrivalCount; a++ {
		f := seedFamily(a)
		if a == ReqAck && f == FamilyGeneric {
			continue
		}
		if c := Decide(f, a, StateNone); c.Next == StateNone {
			t.Errorf("%s opens a %s leg but leaves it without a state (%s)", a, f, c.Reason)
		}
	}
	if want := int(familyCount) * int(arrivalCount) * int(stateCount); cells != want {
		t.Fatalf("got %d cells, want %d", cells, want)
	}
}

// seedFamily is the family a leg opened by the arrival belongs to (what
// legFor computes from the method or CSeq method).
func seedFamily(a Arrival) Family {
	if t, _, ok := a.Response(); ok {
		switch t {
		case TxInvite, TxReInvite, TxBye, TxCancel, TxPrack:
			return FamilyInvite
		case TxRegister, TxUnregister:
			return FamilyRegister
		case TxSubscribe, TxNotify:
			return FamilySubscribe
		}
		return FamilyGeneric
	}
	switch a {
	case ReqInvite, ReqReInvite, ReqAck, ReqBye, ReqCancel, ReqPrack:
		return FamilyInvite
	case ReqRegister:
		return FamilyRegister
	case ReqSubscribe, ReqNotify, ReqNotifyActive, ReqNotifyPending, ReqNotifyTerminated:
		return FamilySubscribe
	}
	return FamilyGeneric
}

// TestTableRules pins the rules engine.md §5 states, cell by cell.
func TestTableRules(t *testing.T) {
	inv, reg, sub, gen := FamilyInvite, FamilyRegister, FamilySubscribe, FamilyGeneric
	r := RespArrival
	cases := []struct {
		name string
		f    Family
		a    Arrival
		s    State
		want State
	}{
		{"INVITE opens a call", inv, ReqInvite, StateNone, Trying},
		{"180 rings", inv, r(TxInvite, S18x), Trying, Ringing},
		{"183 rings", inv, r(TxInvite, S18x), StateNone, Ringing},
		{"100 does not ring", inv, r(TxInvite, S100), Trying, Trying},
		{"2xx to INVITE answers", inv, r(TxInvite, S2xx), Ringing, InCall},
		{"2xx to INVITE answers from trying", inv, r(TxInvite, S2xx), Trying, InCall},
		{"2xx to BYE ends the call without the BYE", inv, r(TxBye, S2xx), InCall, Completed},
		{"2xx to BYE seeds an ended call", inv, r(TxBye, S2xx), StateNone, Completed},
		{"2xx to CANCEL does not answer", inv, r(TxCancel, S2xx), Ringing, Ringing},
		{"2xx to CANCEL does not answer a cancelled call", inv, r(TxCancel, S2xx), Cancelled, Cancelled},
		{"CANCEL abandons", inv, ReqCancel, Ringing, Cancelled},
		{"487 cancels", inv, r(TxInvite, S487), Ringing, Cancelled},
		{"late 487 cannot un-answer", inv, r(TxInvite, S487), InCall, InCall},
		{"late CANCEL cannot un-answer", inv, ReqCancel, InCall, InCall},
		{"2xx beats CANCEL", inv, r(TxInvite, S2xx), Cancelled, InCall},
		{"3xx redirects", inv, r(TxInvite, S3xx), Trying, Redirected},
		{"4xx fails", inv, r(TxInvite, SFail), Ringing, Failed},
		{"6xx fails", inv, r(TxInvite, SFail), Trying, Failed},
		{"401 is intermediate", inv, r(TxInvite, SChallenge), Trying, Trying},
		{"407 seeds a pending call", inv, r(TxInvite, SChallenge), StateNone, Trying},
		{"BYE ends", inv, ReqBye, InCall, Completed},
		{"BYE after a failure changes nothing", inv, ReqBye, Failed, Failed},
		{"ACK seeds a call", inv, ReqAck, StateNone, InCall},
		{"BYE seeds a call", inv, ReqBye, StateNone, Completed},
		{"CANCEL seeds a call", inv, ReqCancel, StateNone, Cancelled},
		{"PRACK seeds a call", inv, ReqPrack, StateNone, Ringing},
		{"PRACK changes nothing", inv, ReqPrack, Ringing, Ringing},
		{"UPDATE changes nothing", inv, ReqUpdate, InCall, InCall},
		{"re-INVITE keeps the call", inv, ReqReInvite, InCall, InCall},
		{"re-INVITE proves a confirmed dialog", inv, ReqReInvite, Ringing, InCall},
		{"rejected re-INVITE keeps the call", inv, r(TxReInvite, SFail), InCall, InCall},
		{"re-INVITE 2xx keeps the call", inv, r(TxReInvite, S2xx), InCall, InCall},
		{"new INVITE after failure retries", inv, ReqInvite, Failed, Trying},
		{"REFER transfers", inv, ReqRefer, InCall, Transferring},
		{"REFER before answer", inv, ReqRefer, Ringing, Ringing},
		{"NOTIFY terminated ends the transfer", inv, ReqNotifyTerminated, Transferring, InCall},
		{"NOTIFY in a call", inv, ReqNotifyActive, InCall, InCall},
		{"BYE ends a transfer", inv, ReqBye, Transferring, Completed},
		{"REGISTER opens", reg, ReqRegister, StateNone, Trying},
		{"2xx registers", reg, r(TxRegister, S2xx), Trying, Registered},
		{"401 to REGISTER is intermediate", reg, r(TxRegister, SChallenge), Trying, Trying},
		{"403 to REGISTER fails", reg, r(TxRegister, SFail), Trying, Failed},
		{"2xx to unregister expires", reg, r(TxUnregister, S2xx), Registered, Expired},
		{"refresh keeps the binding", reg, ReqRegister, Registered, Registered},
		{"403 to a refresh fails: the last transaction decides", reg, r(TxRegister, SFail), Registered, Failed},
		{"401 to a refresh is intermediate", reg, r(TxRegister, SChallenge), Registered, Registered},
		{"2xx after a refused refresh registers again", reg, r(TxRegister, S2xx), Failed, Registered},
		{"SUBSCRIBE opens", sub, ReqSubscribe, StateNone, Trying},
		{"2xx to SUBSCRIBE activates", sub, r(TxSubscribe, S2xx), Trying, Active},
		{"NOTIFY active", sub, ReqNotifyActive, Pending, Active},
		{"NOTIFY pending", sub, ReqNotifyPending, Trying, Pending},
		{"NOTIFY terminated", sub, ReqNotifyTerminated, Active, Terminated},
		{"NOTIFY seeds a subscription", sub, ReqNotify, StateNone, Active},
		{"489 fails a subscription", sub, r(TxSubscribe, SFail), Trying, Failed},
		{"OPTIONS opens a transaction", gen, ReqOther, StateNone, Trying},
		{"2xx completes", gen, r(TxOther, S2xx), Trying, Completed},
		{"4xx fails", gen, r(TxOther, SFail), Trying, Failed},
		{"401 intermediate", gen, r(TxOther, SChallenge), Trying, Trying},
		{"INFO seeds generic", gen, ReqInfo, StateNone, Trying},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Decide(tc.f, tc.a, tc.s)
			if c.Next != tc.want {
				t.Errorf("%s / %s / %q: got %q (%s), want %q", tc.f, tc.a, tc.s, c.Next, c.Reason, tc.want)
			}
		})
	}
}

func TestFamilyOf(t *testing.T) {
	cases := map[string]Family{
		"INVITE": FamilyInvite, "ACK": FamilyInvite, "BYE": FamilyInvite, "CANCEL": FamilyInvite,
		"PRACK": FamilyInvite, "REGISTER": FamilyRegister, "SUBSCRIBE": FamilySubscribe,
		"NOTIFY": FamilySubscribe, "OPTIONS": FamilyGeneric, "INFO": FamilyGeneric,
		"UPDATE": FamilyGeneric, "REFER": FamilyGeneric, "MESSAGE": FamilyGeneric, "FOO": FamilyGeneric,
	}
	for m, want := range cases {
		if got := FamilyOf(m); got != want {
			t.Errorf("FamilyOf(%s): got %s, want %s", m, got, want)
		}
	}
}

func TestStatusOf(t *testing.T) {
	cases := map[int]Status{100: S100, 180: S18x, 183: S18x, 181: S18x, 199: S1xx, 101: S1xx,
		200: S2xx, 202: S2xx, 302: S3xx, 401: SChallenge, 407: SChallenge, 487: S487,
		404: SFail, 486: SFail, 503: SFail, 603: SFail}
	for code, want := range cases {
		if got := StatusOf(code); got != want {
			t.Errorf("StatusOf(%d): got %s, want %s", code, got, want)
		}
	}
}

func TestParseState(t *testing.T) {
	for _, n := range StateNames() {
		s, ok := ParseState(n)
		if !ok || s.String() != n {
			t.Errorf("ParseState(%q): got %q, %v", n, s, ok)
		}
	}
	if s, ok := ParseState("Canceled"); !ok || s != Cancelled {
		t.Errorf("Canceled: got %q, %v, want Cancelled", s, ok)
	}
	if _, ok := ParseState("incall"); ok {
		t.Errorf("state names are case-sensitive")
	}
	if got := len(StateNames()); got != 13 {
		t.Errorf("got %d state names, want 13", got)
	}
}

// TestTableGolden renders the whole table (every cell, grouped where
// consecutive states share an outcome) for review; -update rewrites it.
func TestTableGolden(t *testing.T) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Dialog transition table: family / arrival / state -> outcome (reason).\n")
	fmt.Fprintf(&b, "# \"-\" is the state of a leg before its first message. Generated by TestTableGolden.\n")
	for f := Family(0); f < familyCount; f++ {
		fmt.Fprintf(&b, "\n## %s\n", f)
		for a := Arrival(0); a < arrivalCount; a++ {
			fmt.Fprintf(&b, "%s\n", a)
			type group struct {
				states []string
				cell   Cell
			}
			var groups []group
			for s := State(0); s < stateCount; s++ {
				c := Decide(f, a, s)
				name := s.String()
				if s == StateNone {
					name = "-"
				}
				found := false
				for i := range groups {
					if groups[i].cell.Reason == c.Reason && groups[i].cell.Change == c.Change && (!c.Change || groups[i].cell.Next == c.Next) {
						groups[i].states = append(groups[i].states, name)
						found = true
						break
					}
				}
				if !found {
					groups = append(groups, group{[]string{name}, c})
				}
			}
			for _, g := range groups {
				out := "stay"
				if g.cell.Change {
					out = "-> " + g.cell.Next.String()
				}
				fmt.Fprintf(&b, "  %s: %s (%s)\n", strings.Join(g.states, ","), out, g.cell.Reason)
			}
		}
	}
	path := filepath.Join("testdata", "transitions.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run with -update): %v", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("transition table differs from %s; review the change and run go test -update", path)
	}
}
