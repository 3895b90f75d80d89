package host

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/mos"
)

func loadWithFile(t *testing.T, name, text string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig([]string{"--config", path}, nil, &bytes.Buffer{})
	if err == nil {
		err = checkAnalysis(cfg)
	}
	return cfg, err
}

// TestCodecIeSectionReachesTheStore: [media.codec_ie] in TOML and YAML, as
// a bare Ie or a table with Bpl, becomes the store's declarations keyed by
// lowercase codec name.
func TestCodecIeSectionReachesTheStore(t *testing.T) {
	want := map[string]mos.Declared{"g722": {Ie: 13}, "amr": {Ie: 5, Bpl: 4.3}, "evs": {Ie: 0}}
	for _, tc := range []struct{ name, text string }{
		{"c.toml", "[media.codec_ie]\nG722 = 13\namr = { ie = 5, bpl = 4.3 }\nevs = 0\n"},
		{"c.yaml", "media:\n  codec_ie:\n    G722: 13\n    amr: {ie: 5, bpl: 4.3}\n    evs: 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadWithFile(t, tc.name, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := engineConfig(cfg).Media.CodecIe; !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	cfg, err := loadConfig(nil, nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := engineConfig(cfg).Media.CodecIe; got != nil {
		t.Errorf("without the section: got %v, want none", got)
	}
}

// TestCodecIeBadKeysAreRefusedWithTheirLine: every malformed entry is a
// usage error naming the file and line of the key.
func TestCodecIeBadKeysAreRefusedWithTheirLine(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"Ie of 95 is out of G.107's range", "[media]\n[media.codec_ie]\ng722 = 95\n", "c.toml:3: key \"media.codec_ie.g722\": Ie 95 out of range"},
		{"negative Ie", "[media.codec_ie]\ng722 = -1\n", "c.toml:2: key \"media.codec_ie.g722\": Ie -1 out of range"},
		{"Ie that is text", "[media.codec_ie]\n\ng722 = \"low\"\n", "c.toml:3: key \"media.codec_ie.g722\": want a number, got \"low\""},
		{"Bpl of zero", "[media.codec_ie]\namr = { ie = 5, bpl = 0 }\n", "c.toml:2: key \"media.codec_ie.amr.bpl\": Bpl 0 out of range"},
		{"unknown field in a codec table", "[media.codec_ie]\namr = { ie = 5, bdl = 3 }\n", "c.toml:2: unknown key \"media.codec_ie.amr.bdl\""},
		{"a table without ie", "[media.codec_ie.amr]\nbpl = 4\n", "c.toml:1: key \"media.codec_ie.amr\": a codec's table needs ie"},
		{"one codec spelled twice", "[media.codec_ie]\nAMR = 5\namr = 6\n", "declared twice"},
		{"a name with a dot", "[media.codec_ie]\n\"g723.1\" = 15\n", "c.toml:2: unknown key \"media.codec_ie.g723.1\": a codec's table holds ie and bpl (and a codec name holds no dot"},
		{"the section as a number", "[media]\ncodec_ie = 5\n", "c.toml:2: key \"media.codec_ie\": want a table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadWithFile(t, "c.toml", tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if _, ok := err.(usageError); !ok {
				t.Errorf("got %T, want a usage error (exit 2)", err)
			}
		})
	}
}

// TestAMRWBListeningIsMonoticOrDiotic: the listening context reaches the
// store; anything else is a usage error naming the flag.
func TestAMRWBListeningIsMonoticOrDiotic(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want mos.Listening
		err  string
	}{
		{nil, mos.Monotic, ""},
		{[]string{"--amr-wb-listening", "diotic"}, mos.Diotic, ""},
		{[]string{"--amr-wb-listening", "binaural"}, "", "--amr-wb-listening \"binaural\": want monotic or diotic"},
	} {
		cfg, err := loadConfig(tc.args, nil, &bytes.Buffer{})
		if err == nil {
			err = checkAnalysis(cfg)
		}
		if tc.err != "" {
			if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: got %v, want a usage error %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := engineConfig(cfg).Media.WidebandListening; got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.args, got, tc.want)
		}
	}
}
