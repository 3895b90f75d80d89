package filter

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestReferenceGolden(t *testing.T) {
	th := Thresholds{PDDSeconds: 11, ShortCallSeconds: 3, LossPct: 5, JitterMs: 50, Retransmits: 3}
	got := Reference(th)
	path := filepath.Join("testdata", "reference.golden.md")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("Reference differs from %s (run with -update after checking the change)", path)
	}
	// The reference follows the run's thresholds.
	other := Reference(Thresholds{PDDSeconds: 4, ShortCallSeconds: 3, LossPct: 5, JitterMs: 50, Retransmits: 3})
	if !strings.Contains(other, "| `slow-setup` | `pdd > 4` |") {
		t.Error("reference does not expand slow-setup with the run's threshold")
	}
	// Its example compiles.
	mustCompile(t, "problems and method == INVITE and not src.ip == 10.0.0.1")
	for _, f := range Fields() {
		if !strings.Contains(got, "| `"+f.Name+"` |") {
			t.Errorf("reference lacks field %s", f.Name)
		}
	}
}
