package portrange

import (
	"strings"
	"testing"
)

func TestParseReadsPortsAndRangesAndWritesThemBackMerged(t *testing.T) {
	cases := []struct {
		in, out string
		in1     []uint16
		out1    []uint16
	}{
		{DefaultSIP, "5060-5061", []uint16{5060, 5061}, []uint16{5059, 5062, 80}},
		{DefaultWS, "80,443,8080,8443", []uint16{80, 443, 8080, 8443}, []uint16{81, 8081, 5060}},
		{" 5080 , 5060-5061 ", "5060-5061,5080", []uint16{5060, 5061, 5080}, []uint16{5062, 5079, 5081}},
		{"5060-5070,5065-5080,5081", "5060-5081", []uint16{5060, 5075, 5081}, []uint16{5082}},
		{"1-65535", "1-65535", []uint16{1, 65535, 5060}, []uint16{0}},
	}
	for _, c := range cases {
		s, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		if got := s.String(); got != c.out {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got, c.out)
		}
		for _, p := range c.in1 {
			if !s.Contains(p) {
				t.Errorf("Parse(%q) lacks %d", c.in, p)
			}
		}
		for _, p := range c.out1 {
			if s.Contains(p) {
				t.Errorf("Parse(%q) holds %d", c.in, p)
			}
		}
	}
}

func TestParseRefusesWhatIsNotAPortList(t *testing.T) {
	for _, in := range []string{"", " ", "0", "65536", "5061-5060", "50a0", "5060-", "-5060", "5060,,5061",
		strings.Repeat("1,", MaxEntries) + "2"} {
		if s, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, s)
		}
	}
}

func TestNilSetHoldsNothing(t *testing.T) {
	var s *Set
	if s.Contains(5060) || s.String() != "" || s.Ranges() != nil {
		t.Fatal("a nil set should hold nothing")
	}
}
