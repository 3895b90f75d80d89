package sip

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sipnab/sipnab/bench/gen"
	"github.com/sipnab/sipnab/internal/benchload"
	"github.com/sipnab/sipnab/internal/testcap"
)

// diffLimits are the limits the differential tests parse with besides the
// default ones: small enough that real messages hit the header and line
// limits.
var diffLimits = []Limits{{}, {MaxHeaders: 5, MaxLineBytes: 48}}

// sameAsReference parses b with Parse, ParseLimits and a reused Parser and
// with the reference parser (reference_test.go), and reports the first
// difference ("" when every field of every Message is the same).
func sameAsReference(ps *Parser, b []byte) string {
	for _, lim := range diffLimits {
		want, wantErr := refParseLimits(b, lim)
		got, err := ParseLimits(b, lim)
		if !errors.Is(err, wantErr) {
			return fmt.Sprintf("limits %+v: error %v, reference %v", lim, err, wantErr)
		}
		if d := messageDiff(got, want); d != "" {
			return fmt.Sprintf("limits %+v: %s", lim, d)
		}
		if lim == (Limits{}) {
			reused, err := ps.Parse(b)
			if !errors.Is(err, wantErr) {
				return fmt.Sprintf("reused Parser: error %v, reference %v", err, wantErr)
			}
			if d := messageDiff(reused, want); d != "" {
				return "reused Parser: " + d
			}
		}
	}
	return ""
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

// TestParseMatchesReferenceOnPublicCaptures parses every UDP payload and
// every TCP-framed message of every public capture with the parser and with
// the reference parser: the Messages are the same field for field, at the
// default limits and at small ones.
func TestParseMatchesReferenceOnPublicCaptures(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil || len(names) == 0 {
		t.Skipf("public captures not available: %v", err)
	}
	ps := NewParser(Limits{})
	total := 0
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
		keys := make([]string, 0, len(c.tcp))
		for k := range c.tcp {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
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
		for i, b := range inputs {
			if Looks(b) {
				total++
			}
			if d := sameAsReference(ps, b); d != "" {
				t.Fatalf("%s input %d: %s\n%q", name, i, d, b[:min(len(b), 400)])
			}
		}
	}
	if total < 1000 {
		t.Fatalf("only %d SIP messages in the public captures: the comparison proves little", total)
	}
	t.Logf("%d SIP messages compared", total)
}

// TestParseMatchesReferenceOnSignalingWorkload parses every message of the
// signaling-only benchmark workload (bench/README.md; scaled down under the
// race detector) with the parser and the reference parser: the same
// Message, field for field.
func TestParseMatchesReferenceOnSignalingWorkload(t *testing.T) {
	msgs := signalingWorkload(t)
	ps := NewParser(Limits{})
	n := 0
	for i := 0; i < len(msgs); i++ {
		if d := sameAsReference(ps, msgs[i].Payload); d != "" {
			t.Fatalf("message %d: %s\n%q", i, d, msgs[i].Payload)
		}
		n++
	}
	t.Logf("%d of %d messages compared", n, len(msgs))
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

// FuzzParseMatchesReference checks, on arbitrary bytes, that the parser
// (with its fast paths) gives the Message the reference parser gives, at
// the default limits and at small ones, and through a reused Parser.
// Seeds: FuzzParse's corpus, the PROTOS INVITEs and FuzzParse's hand-written
// messages.
func FuzzParseMatchesReference(f *testing.F) {
	for _, b := range fuzzSeeds(f, "testdata/fuzz/FuzzParse") {
		f.Add(b)
	}
	f.Add([]byte(crlf(inviteText)))
	f.Add([]byte(minimal("Subject: a\r\n b")))
	f.Add([]byte("\r\n\r\nSIP/2.0 200 OK\r\nl: 10\r\n\r\nabc"))
	ps := NewParser(Limits{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if d := sameAsReference(ps, b); d != "" {
			t.Fatalf("%s\n%q", d, b)
		}
	})
}
