package host

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/sipnab/sipnab/core/mos"
)

// The [media.codec_ie] config section (docs/media-quality.md): an
// operator's E-model equipment impairment for a codec, by its RTP encoding
// name, as a number (Ie) or a table { ie = .., bpl = .. }. Config file only:
// no flag or variable sets it.
//
//	[media.codec_ie]
//	g722 = 13
//	amr = { ie = 5, bpl = 10 }

// codecIeSection is the section's key.
const codecIeSection = "media.codec_ie"

// checkCodecIeKeys refuses every malformed [media.codec_ie] key of a config
// file: a field other than ie and bpl, a value that
// is no number, Ie outside [0, 95), Bpl outside (0, 100], a table without
// ie, and two spellings of one codec. add reports at the key's file line.
func checkCodecIeKeys(keys []string, get func(string) any, add func(key, format string, a ...any)) {
	hasIe := map[string]bool{}
	tables := map[string]bool{} // codecs declared as a table
	spelled := map[string]string{}
	bad := map[string]bool{} // codecs with a refused field: no second error
	for _, key := range keys {
		v := get(key)
		if key == codecIeSection {
			add(key, "key %q: want a table of codec = Ie or codec = { ie = .., bpl = .. }, got %s", key, describe(v))
			continue
		}
		rest := strings.TrimPrefix(key, codecIeSection+".")
		name, field, table := strings.Cut(rest, ".")
		if strings.Contains(field, ".") {
			add(key, "key %q: a codec name holds no dot and a codec's table holds only ie and bpl", key)
			continue
		}
		lower := strings.ToLower(name)
		if prev, ok := spelled[lower]; ok && prev != name {
			add(key, "key %q: codec %q is declared twice (as %q too; names are case-insensitive)", key, name, prev)
			continue
		}
		spelled[lower] = name
		if !table {
			field = "ie"
		} else {
			tables[name] = true
		}
		x, ok := number(v)
		switch {
		case field != "ie" && field != "bpl":
			add(key, "unknown key %q: a codec's table holds ie and bpl (and a codec name holds no dot: G723 for G.723.1)", key)
			bad[name] = true
		case !ok:
			add(key, "key %q: want a number, got %s", key, describe(v))
		case field == "ie" && (x < 0 || x >= 95):
			add(key, "key %q: Ie %v out of range: want 0 ≤ Ie < 95 (G.107)", key, x)
		case field == "bpl" && (x <= 0 || x > 100):
			add(key, "key %q: Bpl %v out of range: want 0 < Bpl ≤ 100", key, x)
		}
		if field == "ie" {
			hasIe[name] = true
		}
	}
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !hasIe[n] && !bad[n] {
			add(codecIeSection+"."+n, "key %q: a codec's table needs ie (bpl alone declares nothing)", codecIeSection+"."+n)
		}
	}
}

// number is a config value as a float64 (TOML and YAML give integers and
// floats); ok is false for anything else.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return 0, false
}

// codecIe converts the checked section to the store's declarations, keyed
// by lowercase codec name.
func codecIe(section map[string]any) (map[string]mos.Declared, error) {
	if len(section) == 0 {
		return nil, nil
	}
	out := make(map[string]mos.Declared, len(section))
	for name, v := range section {
		var d mos.Declared
		switch x := v.(type) {
		case map[string]any:
			ie, ok := number(x["ie"])
			if !ok {
				return nil, fmt.Errorf("[%s] %s: want ie", codecIeSection, name)
			}
			d.Ie = ie
			if b, ok := x["bpl"]; ok {
				if d.Bpl, ok = number(b); !ok {
					return nil, fmt.Errorf("[%s] %s: bpl is not a number", codecIeSection, name)
				}
			}
		default:
			ie, ok := number(x)
			if !ok {
				return nil, fmt.Errorf("[%s] %s: want a number", codecIeSection, name)
			}
			d.Ie = ie
		}
		out[strings.ToLower(name)] = d
	}
	return out, nil
}
