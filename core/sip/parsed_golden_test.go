package sip

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"hash"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/internal/benchload"
	"github.com/sipnab/sipnab/internal/testcap"
)

// updateParsed rewrites testdata/parsed.golden from the parser as it is.
var updateParsed = flag.Bool("update", false, "rewrite testdata/parsed.golden")

// parsedGolden holds, per public capture and for the signaling workload, a
// SHA-256 of every Message the parser made of its inputs (every field,
// unexported ones included, at the default and at small limits, errors
// too). It was written by the parser before its fast paths (the version of
// core/sip at 193b9b3) and checked equal to the fast parser on every input,
// so a parser change that moves any field of any real message fails here.
const parsedGolden = "testdata/parsed.golden"

// diffLimits are the limits the golden is made with besides the default
// ones: small enough that real messages hit the header and line limits.
var diffLimits = []Limits{{}, {MaxHeaders: 5, MaxLineBytes: 48}}

// digestParsed writes into h what ParseLimits makes of b at each of
// diffLimits, and checks that a reused Parser makes the same Message as
// ParseLimits at the default limits ("" when it does).
func digestParsed(h hash.Hash, ps *Parser, b []byte) string {
	for _, lim := range diffLimits {
		m, err := ParseLimits(b, lim)
		fmt.Fprintf(h, "err %v\n", err)
		if m != nil {
			v := reflect.ValueOf(m).Elem()
			for i := 0; i < v.NumField(); i++ {
				name := v.Type().Field(i).Name
				fmt.Fprintf(h, "%s %+v\n", name, fieldOf(v, i))
				for _, lf := range lazyFields[name] {
					fmt.Fprintf(h, "%s %+v\n", lf.name, lf.get(m))
				}
			}
		}
		if lim == (Limits{}) {
			reused, rerr := ps.Parse(b)
			if !errors.Is(rerr, err) {
				return fmt.Sprintf("reused Parser: error %v, ParseLimits %v", rerr, err)
			}
			if d := messageDiff(reused, m); d != "" {
				return "reused Parser: " + d
			}
		}
	}
	return ""
}

// lazyField is a value the parser once kept in a Message field and now
// parses on demand: the digest reads it through its accessor and writes
// it where the field was, as the field printed, so the golden written by
// the eager parser proves the lazy value equal to the eager one.
type lazyField struct {
	name string
	get  func(*Message) any
}

// lazyFields are the lazy values by the field they followed.
var lazyFields = map[string][]lazyField{
	// Contact was a *NameAddr (nil without a Contact), printed as its
	// pointee.
	"Vias": {{"Contact", func(m *Message) any {
		if c, ok := m.Contact(); ok {
			return fmt.Sprintf("%+v", c)
		}
		return nil
	}}},
	// contact was the NameAddr Contact pointed at (zero without one).
	"Malformed": {{"contact", func(m *Message) any {
		c, _ := m.Contact()
		return c
	}}},
}

// readParsedGolden returns the golden's lines by key (none when the file
// is absent).
func readParsedGolden() map[string]string {
	out := map[string]string{}
	data, err := os.ReadFile(parsedGolden)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			out[k] = v
		}
	}
	return out
}

// group is a golden key's group: what comes before its first "/".
func group(k string) string {
	g, _, _ := strings.Cut(k, "/")
	return g
}

// checkParsedGolden compares the digests with testdata/parsed.golden (or
// rewrites it under -update).
func checkParsedGolden(t *testing.T, got map[string]string) {
	t.Helper()
	if *updateParsed {
		// Each test owns the keys of its group ("capture/", "workload/"):
		// the other group's lines are kept as they are.
		all := readParsedGolden()
		for k := range all {
			for g := range got {
				if group(k) == group(g) {
					delete(all, k)
				}
			}
		}
		for k, v := range got {
			all[k] = v
		}
		var keys []string
		for k := range all {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s %s\n", k, all[k])
		}
		if err := os.WriteFile(parsedGolden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readParsedGolden()
	if len(want) == 0 {
		t.Fatalf("%s is missing or empty", parsedGolden)
	}
	for k, v := range got {
		if w, ok := want[k]; !ok {
			t.Errorf("%s: not in %s (run with -update and read the diff)", k, parsedGolden)
		} else if w != v {
			t.Errorf("%s: parsed messages digest %s, golden %s: a field of a parsed message moved", k, v, w)
		}
	}
}

// messageDiff names the first field in which got and want differ.
func messageDiff(got, want *Message) string {
	if got == nil || want == nil {
		if got != want {
			return fmt.Sprintf("got %v, reference %v", got, want)
		}
		return ""
	}
	if reflect.DeepEqual(got, want) {
		return ""
	}
	g, w := reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem()
	for i := 0; i < g.NumField(); i++ {
		if name := g.Type().Field(i).Name; !reflect.DeepEqual(fieldOf(g, i), fieldOf(w, i)) {
			return fmt.Sprintf("%s: got %+v, reference %+v", name, fieldOf(g, i), fieldOf(w, i))
		}
	}
	return "messages differ"
}

// fieldOf returns field i of struct value v (unexported fields included)
// as an interface for comparison and printing.
func fieldOf(v reflect.Value, i int) any {
	f := v.Field(i)
	switch f.Kind() {
	case reflect.Pointer:
		if f.IsNil() {
			return nil
		}
		return fmt.Sprintf("%+v", reflect.NewAt(f.Type().Elem(), f.UnsafePointer()).Elem().Interface())
	default:
		return reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem().Interface()
	}
}

// TestParsedPublicCapturesMatchTheGolden parses every UDP payload and every
// TCP-framed message of every public capture: the Messages are those of
// testdata/parsed.golden field for field, at the default limits and at
// small ones, and a reused Parser makes the same ones.
func TestParsedPublicCapturesMatchTheGolden(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil || len(names) == 0 {
		t.Skipf("public captures not available: %v", err)
	}
	ps := NewParser(Limits{})
	total := 0
	digests := map[string]string{}
	for _, name := range names {
		c, err := readCapture(t, testcap.Public(name))
		if errors.Is(err, errNotPcap) {
			continue
		}
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		var inputs [][]byte
		inputs = append(inputs, c.udp...)
		for _, k := range slices.Sorted(maps.Keys(c.tcp)) {
			stream := c.tcp[k]
			inputs = append(inputs, stream) // a whole stream, junk and all
			for len(stream) > 0 {
				n, err := MessageLen(stream)
				if err != nil {
					break
				}
				inputs = append(inputs, stream[:n])
				stream = stream[n:]
			}
		}
		h := sha256.New()
		for i, b := range inputs {
			if Looks(b) {
				total++
			}
			if d := digestParsed(h, ps, b); d != "" {
				t.Fatalf("%s input %d: %s\n%q", name, i, d, b[:min(len(b), 400)])
			}
		}
		digests["capture/"+name] = fmt.Sprintf("%d %s", len(inputs), hex.EncodeToString(h.Sum(nil)))
	}
	checkParsedGolden(t, digests)
	if total < 1000 {
		t.Fatalf("only %d SIP messages in the public captures: the comparison proves little", total)
	}
	t.Logf("%d SIP messages compared", total)
}

// TestParsedSignalingWorkloadMatchesTheGolden parses every message of the
// signaling-only benchmark workload (bench/README.md), scaled down to 1,500
// calls and 75 REGISTERs (every kind of message of the full one appears):
// the Messages are those of testdata/parsed.golden, field for field.
func TestParsedSignalingWorkloadMatchesTheGolden(t *testing.T) {
	msgs := smallSignalingWorkload(t)
	ps := NewParser(Limits{})
	h := sha256.New()
	for i := range msgs {
		if d := digestParsed(h, ps, msgs[i].Payload); d != "" {
			t.Fatalf("message %d: %s\n%q", i, d, msgs[i].Payload)
		}
	}
	checkParsedGolden(t, map[string]string{"workload/signaling-1500-75": fmt.Sprintf("%d %s", len(msgs), hex.EncodeToString(h.Sum(nil)))})
}

var smallSignaling struct {
	once sync.Once
	msgs []gen.SIPMessage
	err  error
}

// signalingWorkload returns the messages of the signaling-only benchmark
// workload; under the race detector (which slows generating and parsing
// about tenfold) or -short, the same preset scaled down to 1,500 calls and
// 75 REGISTERs, in which every kind of message of the full one appears.
func signalingWorkload(t *testing.T) []gen.SIPMessage {
	if !raceEnabled && !testing.Short() {
		return benchload.SignalingMessages(t)
	}
	return smallSignalingWorkload(t)
}

// smallSignalingWorkload is the signaling preset (seed 1) scaled down to
// 1,500 calls and 75 REGISTERs.
func smallSignalingWorkload(t *testing.T) []gen.SIPMessage {
	smallSignaling.once.Do(func() {
		cfg := gen.Signaling(1)
		cfg.Calls, cfg.Registers = 1500, 75
		smallSignaling.msgs, smallSignaling.err = gen.SIPMessages(cfg)
	})
	if smallSignaling.err != nil {
		t.Fatal(smallSignaling.err)
	}
	return smallSignaling.msgs
}

// fuzzSeeds returns the inputs of a fuzz corpus directory (files in the
// "go test fuzz v1" format holding one []byte).
func fuzzSeeds(t testing.TB, dir string) [][]byte {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(data), "\n", 3)
		if len(lines) < 2 || lines[0] != "go test fuzz v1" {
			continue
		}
		v := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		s, err := strconv.Unquote(v)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, []byte(s))
	}
	return out
}
