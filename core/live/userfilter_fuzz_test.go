package live

import (
	"testing"

	"golang.org/x/net/bpf"
)

// FuzzParseFilterFile: any text is refused or gives a program the machine
// runs over any frame without failing.
func FuzzParseFilterFile(f *testing.F) {
	f.Add("1\n6 0 0 262144\n", []byte{1, 2, 3})
	f.Add("9\n40 0 0 12\n21 0 6 2048\n48 0 0 23\n21 0 4 17\n40 0 0 36\n21 1 0 5060\n21 0 1 5061\n6 0 0 262144\n6 0 0 0\n", make([]byte, 60))
	f.Add("2\n32 0 0 4294963200\n6 0 0 1\n", []byte{})
	f.Add("3\n177 0 0 14\n80 0 0 0\n22 0 0 0\n", make([]byte, 20))
	f.Fuzz(func(t *testing.T, text string, frame []byte) {
		prog, err := ParseFilterFile(text)
		if err != nil {
			return
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("accepted a program the machine refuses: %v", err)
		}
		_, _ = vm.Run(frame)
	})
}
