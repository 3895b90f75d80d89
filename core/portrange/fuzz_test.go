package portrange

import "testing"

// FuzzParse: any text either is refused or parses to a set that writes
// back to a list parsing to the same ports.
func FuzzParse(f *testing.F) {
	for _, s := range []string{DefaultSIP, DefaultWS, "1-65535", "5060,5080-5090", "0", "5061-5060", " , "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(set.String())
		if err != nil {
			t.Fatalf("%q wrote back %q, which does not parse: %v", s, set.String(), err)
		}
		if again.bits != set.bits {
			t.Fatalf("%q and its write-back %q hold different ports", s, set.String())
		}
	})
}
