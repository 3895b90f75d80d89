package endpoint

import (
	"net/netip"
	"strconv"
	"testing"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/sip"
)

// TestTallyCapsItsKeysAndCountsWhatItDropped: a sender choosing a new key
// per dialog fills the table to MaxKeys; past it each key is counted as
// dropped with its credit, never silently lost.
func TestTallyCapsItsKeysAndCountsWhatItDropped(t *testing.T) {
	tl := NewTally(ByPrefix, MaxPrefixDigits)
	for i := 0; i < MaxKeys+3; i++ {
		d := dialog.Detail{Summary: dialog.Summary{ToUser: strconv.Itoa(100000 + i), MsgCount: 1}}
		tl.Credit(&d)
	}
	tl.Credit(&dialog.Detail{Summary: dialog.Summary{ToUser: strconv.Itoa(100000 + MaxKeys), MsgCount: 1}})
	if tl.Distinct() != MaxKeys || tl.KeysDropped != 3 || tl.CreditsDropped != 4 || tl.Dialogs != MaxKeys+4 {
		t.Errorf("distinct %d dropped keys %d credits %d dialogs %d; want %d, 3, 4, %d",
			tl.Distinct(), tl.KeysDropped, tl.CreditsDropped, tl.Dialogs, MaxKeys, MaxKeys+4)
	}
}

// TestPrefixKey: leading digits after an optional '+', sipnab's literals
// for a missing or non-numeric dialed user.
func TestPrefixKey(t *testing.T) {
	for _, tc := range []struct {
		user   string
		digits int
		want   string
	}{
		{"15551234000", 4, "1555"},
		{"+15551234000", 4, "1555"},
		{"2302", 6, "2302"},
		{"12ab", 4, "12"},
		{"support", 4, NonNumericDestination},
		{"+", 4, NonNumericDestination},
		{"", 4, NoDestination},
	} {
		if got := PrefixKey(tc.user, tc.digits); got != tc.want {
			t.Errorf("PrefixKey(%q, %d) = %q, want %q", tc.user, tc.digits, got, tc.want)
		}
	}
}

// TestFingerprintNamesALibraryOnTwoAgreeingObservations: pjproject's and
// chan_sip's request syntax are told apart; one agreeing observation, or a
// tie, infers nothing; a responder's disagreement shows as mixed.
func TestFingerprintNamesALibraryOnTwoAgreeingObservations(t *testing.T) {
	type req struct{ branch, tag, callID string }
	for _, tc := range []struct {
		name       string
		reqs       []req
		inference  string
		confidence int
		cookie     string
		mixed      bool
	}{
		{"pjproject, all three", []req{{"z9hG4bKPj5f2c9e1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "5f2c9e1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "5f2c9e1a3b4d"}}, StackPJProject, 3, "z9hG4bKPj", false},
		{"chan_sip, all three", []req{{"z9hG4bK1a2b3c4d", "as1a2b3c4d", "0123abcd@pbx.example:5060"}}, StackChanSIP, 3, "z9hG4bK", false},
		{"two of three still infer", []req{{"z9hG4bKPjabc", "5f2c9e1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "abc@pbx.example"}}, StackPJProject, 2, "z9hG4bKPj", false},
		// sipp (testdata/sip-rtp-g711.pcap): z9hG4bK-1966-1-0, tag 1966SIPpTag001,
		// Call-ID 1-1966@10.0.2.20: only callid_has_host agrees with anything.
		{"one observation is not evidence", []req{{"z9hG4bK-1966-1-0", "1966SIPpTag001", "1-1966@10.0.2.20"}}, "", 0, "z9hG4bK", false},
		{"no request, no inference", nil, "", 0, "", false},
		{"disagreeing requests are mixed", []req{{"z9hG4bK1a2b", "as1a2b", "x@h"}, {"z9hG4bKPjzz", "as1a2c", "x@h"}, {"z9hG4bK3c4d", "as99", "y@h"}}, StackChanSIP, 3, "z9hG4bK", true},
	} {
		var a FingerprintAcc
		for _, r := range tc.reqs {
			a.Observe(r.branch, r.tag, r.callID)
		}
		f := a.Finish()
		if f.Inference != tc.inference || f.Confidence != tc.confidence || f.BranchCookie != tc.cookie || f.Mixed != tc.mixed || f.RequestsRead != len(tc.reqs) {
			t.Errorf("%s: got %+v", tc.name, f)
		}
	}
}

// TestContactObservation: a private Contact from a public source needs a
// rewrite; the finding needs a later request sent to the private host.
func TestContactObservation(t *testing.T) {
	parse := func(contact string) *sip.Message {
		raw := "REGISTER sip:example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.168.1.50;branch=z9hG4bK1\r\nFrom: <sip:alice@example.com>;tag=1\r\nTo: <sip:alice@example.com>\r\nCall-ID: r1\r\nCSeq: 1 REGISTER\r\nContact: " + contact + "\r\nContent-Length: 0\r\n\r\n"
		m, err := sip.Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	public, private := netip.MustParseAddr("203.0.113.9"), netip.MustParseAddr("192.168.1.1")
	yes, no := true, false
	for _, tc := range []struct {
		contact   string
		src       netip.Addr
		host      string
		priv      *bool
		srcPublic bool
		required  bool
	}{
		{"<sip:alice@192.168.1.50:5060>", public, "192.168.1.50:5060", &yes, true, true},
		{"\"Alice\" <sip:alice@10.1.2.3>;expires=3600", public, "10.1.2.3", &yes, true, true},
		{"<sip:alice@100.64.1.1>", public, "100.64.1.1", &yes, true, true},
		{"<sip:alice@192.168.1.50>", private, "192.168.1.50", &yes, false, false},
		{"<sip:alice@198.51.100.7>", public, "198.51.100.7", &no, true, false},
		{"<sip:alice@pbx.example.com>", public, "pbx.example.com", nil, true, false},
		{"*", public, "", nil, true, false},
	} {
		o := ObserveContact(parse(tc.contact), tc.src)
		if o.ContactHost != tc.host || (o.ContactHostPrivate == nil) != (tc.priv == nil) ||
			tc.priv != nil && *o.ContactHostPrivate != *tc.priv || o.SourcePublic != tc.srcPublic || o.RewriteRequired != tc.required {
			t.Errorf("%s from %s: got %+v", tc.contact, tc.src, o)
		}
	}
	o := ObserveContact(parse("<sip:alice@192.168.1.50>"), public)
	for _, tc := range []struct {
		toContact, toSource int
		verdict             string
		finding             bool
	}{
		{0, 12, VerdictRewritten, false},
		{9, 0, VerdictNotRewritten, true},
		{1, 99, VerdictNotRewritten, true}, // any request to the private host is one nobody receives
		{0, 0, VerdictNoLaterRequests, false},
	} {
		r := Corroborate(o, tc.toContact, tc.toSource)
		if r.Verdict != tc.verdict || r.IsFinding != tc.finding {
			t.Errorf("%d/%d: got %s %v, want %s %v", tc.toContact, tc.toSource, r.Verdict, r.IsFinding, tc.verdict, tc.finding)
		}
	}
}

// TestParseSelectorWantsExactlyOne: neither, both and a bad address are
// errors; an IPv4-mapped address reads as IPv4.
func TestParseSelectorWantsExactlyOne(t *testing.T) {
	for _, tc := range []struct{ ip, user string }{{"", ""}, {"10.0.0.1", "alice"}, {"not-an-ip", ""}} {
		if _, err := ParseSelector(tc.ip, tc.user); err == nil {
			t.Errorf("ParseSelector(%q, %q): no error", tc.ip, tc.user)
		}
	}
	s, err := ParseSelector("::ffff:10.0.0.1", "")
	if err != nil || s.Kind() != "ip" || s.Value() != "10.0.0.1" {
		t.Errorf("mapped address: %+v %v", s, err)
	}
}
