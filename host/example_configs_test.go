package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/v2"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestFullConfigSaysTheDefaults: configs/full.toml says it holds the
// defaults ("default limits", "these are the defaults"): every value it sets
// is its option's default, except mcp.enabled, which the example turns on.
// An example that drifts from the defaults would teach wrong numbers.
func TestFullConfigSaysTheDefaults(t *testing.T) {
	path := filepath.Join(testcap.Root(), "configs", "full.toml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "these are the defaults") {
		t.Fatalf("%s no longer says it holds the defaults: drop or change this test", path)
	}
	k := koanf.New(".")
	if err := k.Load(rawBytes(raw), toml.Parser()); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]option{}
	for _, o := range options {
		byKey[o.key] = o
	}
	n := 0
	for _, key := range k.Keys() {
		if key == "mcp.enabled" {
			continue
		}
		o, ok := byKey[key]
		if !ok {
			t.Errorf("%s sets %s, which is no option", path, key)
			continue
		}
		n++
		if got, want := fmt.Sprint(k.Get(key)), fmt.Sprint(o.def); got != want && !sameNumber(k.Get(key), o.def) {
			t.Errorf("%s: %s = %s, but the default is %s", path, key, got, want)
		}
	}
	if n < 10 {
		t.Errorf("%s: checked %d keys, want at least 10", path, n)
	}
}

// sameNumber compares a TOML integer with a float default (pdd_threshold = 11
// is 11.0).
func sameNumber(a, b any) bool {
	fa, oka := asFloat(a)
	fb, okb := asFloat(b)
	return oka && okb && fa == fb
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// rawBytes is a koanf provider of bytes.
type rawBytes []byte

func (r rawBytes) ReadBytes() ([]byte, error) { return r, nil }
func (r rawBytes) Read() (map[string]any, error) {
	return nil, fmt.Errorf("rawBytes: Read is not supported")
}
