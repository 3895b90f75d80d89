package report

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// encodeRow is what the row appender stands for: encoding/json with HTML
// escaping off, compact, or indented by json.Indent at prefix.
func encodeRow(r *DialogRow, indent bool, prefix string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	compact := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if !indent {
		return compact, nil
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, prefix, "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// rowMismatch says how the appender's bytes for r differ from
// encoding/json's, compact and indented, and how the two writers that use
// it (WriteJSON's rowElem, --json-dialogs' writeRow) differ from their
// encoding/json paths; "" when nothing differs. A row whose frame pointer
// is held as a FrameRef (dialog.Store.EachRow) is compared with
// encoding/json's bytes for the row with Frame its string.
func rowMismatch(r *DialogRow) string {
	want := *r
	if want.Frame == "" && !want.frame.IsZero() {
		want.Frame = want.frame.String()
	}
	var why []string
	for _, m := range []struct {
		indent bool
		prefix string
	}{{false, ""}, {true, "    "}} {
		want, werr := encodeRow(&want, m.indent, m.prefix)
		got, ok := appendRowJSON([]byte("keep:"), r, m.indent)
		switch {
		case werr != nil && ok:
			why = append(why, "encoding/json refuses the row ("+werr.Error()+"), the appender wrote "+string(got))
		case werr == nil && !ok:
			why = append(why, "the appender refused a row encoding/json writes: "+string(want))
		case werr == nil && !bytes.Equal(got, append([]byte("keep:"), want...)):
			why = append(why, "indent "+strings.Repeat("+", len(m.prefix))+"\n got "+string(got)+"\nwant keep:"+string(want))
		}
	}
	// WriteJSON's element and the --json-dialogs line, with their
	// encoding/json fallbacks and errors (each writer gets its own copy
	// of r: a fallback sets Frame on the row it is given).
	var fast, slow bytes.Buffer
	jf, js := newJSONWriter(&fast), newJSONWriter(&slow)
	for range 2 {
		rf, rs := *r, want
		jf.rowElem(&rf)
		js.elem(&rs)
	}
	ef, es := jf.flush(), js.flush()
	if errString(ef) != errString(es) || !bytes.Equal(fast.Bytes(), slow.Bytes()) {
		why = append(why, "jsonWriter.rowElem differs from elem: "+errString(ef)+" vs "+errString(es)+"\n got "+fast.String()+"\nwant "+slow.String())
	}
	fast.Reset()
	slow.Reset()
	nf, ns := newNDJSON(&fast), newNDJSON(&slow)
	rf, rs := *r, want
	ef, es = nf.writeRow(&rf), ns.line(&rs)
	if ef == nil {
		ef = nf.flush()
	}
	if es == nil {
		es = ns.flush()
	}
	if errString(ef) != errString(es) || !bytes.Equal(fast.Bytes(), slow.Bytes()) {
		why = append(why, "ndjson.writeRow differs from line: "+errString(ef)+" vs "+errString(es)+"\n got "+fast.String()+"\nwant "+slow.String())
	}
	return strings.Join(why, "\n")
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// captureFiles are the captures under testdata/, and the scaled signaling
// workload when SIPNAB_BENCH_PCAP names it.
func captureFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(testcap.Root(), "testdata"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".pcap") || strings.HasSuffix(p, ".pcapng")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("SIPNAB_BENCH_PCAP"); p != "" {
		out = append(out, p)
	}
	return out
}

// TestRowAppenderWritesEveryCapturedRowAsEncodingJSON: every dialog row of
// every capture under testdata/ (and of $SIPNAB_BENCH_PCAP) comes out of
// the appender, compact and indented, as encoding/json writes it: the row
// as EachSummary makes it (Frame a string) and as EachRow makes it (the
// frame pointer beside it), which must be the same row.
func TestRowAppenderWritesEveryCapturedRowAsEncodingJSON(t *testing.T) {
	files := captureFiles(t)
	if len(files) < 50 {
		t.Fatalf("found %d captures under testdata/, want the 54 or more there are", len(files))
	}
	total := 0
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			c := engine.New(engine.Config{Node: "test-node"}, nil)
			if err := c.LoadFiles(context.Background(), []string{p}); err != nil {
				t.Skip(err) // refused before loading: no rows
			}
			c.Wait()
			rs := newRows(c)
			bad := 0
			var sums []dialog.Summary
			err := c.Dialogs().EachSummary(dialog.ByCreated, func(s *dialog.Summary) error {
				sums = append(sums, *s)
				r := rs.row(s)
				total++
				if why := rowMismatch(&r); why != "" {
					if bad++; bad <= 3 {
						t.Errorf("row %q: %s", r.CallID, why)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			err = c.Dialogs().EachRow(dialog.ByCreated, func(s *dialog.Summary, ref packet.FrameRef) error {
				if i >= len(sums) {
					t.Fatalf("EachRow gave more rows than EachSummary's %d", len(sums))
				}
				if s.Frame != "" {
					t.Fatalf("row %q: EachRow set Frame %q", s.CallID, s.Frame)
				}
				whole := *s
				whole.Frame = ref.String()
				if !reflect.DeepEqual(whole, sums[i]) {
					t.Fatalf("EachRow's row with its pointer differs from EachSummary's:\n got %+v\nwant %+v", whole, sums[i])
				}
				i++
				r := rs.rowRef(s, ref)
				if why := rowMismatch(&r); why != "" {
					if bad++; bad <= 3 {
						t.Errorf("row %q (EachRow): %s", r.CallID, why)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if i != len(sums) {
				t.Errorf("EachRow gave %d rows, EachSummary %d", i, len(sums))
			}
			if bad > 0 {
				t.Errorf("%d rows differ", bad)
			}
		})
	}
	if total < 1400 {
		t.Errorf("compared %d rows in all, want the 1,450 the captures hold", total)
	}
}

// A field of the row types is reached from a DialogRow by at, and set to
// its sample values by samples.
type rowField struct {
	path string
	at   func(root reflect.Value) reflect.Value
}

// rowFields walks the row types by reflection: every exported field,
// inside structs, pointers and slices (an element made when needed). A
// kind the row appender was not written for fails the test, so a field of
// a new shape is met here first.
func rowFields(t *testing.T) []rowField {
	t.Helper()
	var out []rowField
	timeType := reflect.TypeFor[time.Time]()
	var walk func(typ reflect.Type, path string, at func(reflect.Value) reflect.Value)
	walk = func(typ reflect.Type, path string, at func(reflect.Value) reflect.Value) {
		out = append(out, rowField{path, at})
		switch typ.Kind() {
		case reflect.Struct:
			if typ == timeType {
				return
			}
			for i := range typ.NumField() {
				f := typ.Field(i)
				if !f.IsExported() && !f.Anonymous {
					continue // encoding/json writes no unexported field
				}
				walk(f.Type, path+"."+f.Name, func(root reflect.Value) reflect.Value { return at(root).Field(i) })
			}
		case reflect.Pointer:
			walk(typ.Elem(), path+"*", func(root reflect.Value) reflect.Value {
				p := at(root)
				if p.IsNil() {
					p.Set(reflect.New(typ.Elem()))
				}
				return p.Elem()
			})
		case reflect.Slice:
			walk(typ.Elem(), path+"[0]", func(root reflect.Value) reflect.Value {
				s := at(root)
				if s.Len() == 0 {
					s.Set(reflect.MakeSlice(typ, 1, 1))
				}
				return s.Index(0)
			})
		case reflect.String, reflect.Bool, reflect.Float64,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			t.Fatalf("%s is a %s: the row appender (rowjson.go) and this test know no such field; teach both", path, typ.Kind())
		}
	}
	walk(reflect.TypeFor[DialogRow](), "DialogRow", func(root reflect.Value) reflect.Value { return root })
	return out
}

// hostileStrings are strings encoding/json escapes, or must not.
var hostileStrings = []string{
	"x", "",
	`quote" backslash\ slash/`,
	"<script>&amp;</script>",
	"\x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f\x20\x7f",
	"\xff", "\xfe\xff\x80", "trunc\xe2\x80", "\xed\xa0\x80 surrogate", "\xc0\xaf overlong",
	"sep\u2028para\u2029", "\u2027\u202a\u202e bidi",
	"ünïcødé ☎ 😀", "\ufffd real replacement",
	strings.Repeat("long ", 500),
}

var hostileFloats = []float64{
	1.5, 0, math.Copysign(0, -1), -1.25, 0.001, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 5e-324,
	1e20, 1e21, 123456789012345678901234.0, -1e21, math.MaxFloat64, -math.SmallestNonzeroFloat64,
	0.1 + 0.2, 1.0 / 3, 86400.123,
	math.NaN(), math.Inf(1), math.Inf(-1), // refused by encoding/json
}

var hostileInts = []int64{1, 0, -1, 7, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32, 1 << 53}

var hostileTimes = []time.Time{
	time.Unix(1700000000, 123456789).UTC(),
	{},
	time.Unix(1700000000, 0).UTC(),
	time.Unix(1700000000, 100).In(time.FixedZone("IST", 5*3600+1800)),
	time.Unix(1700000000, 120000000).In(time.FixedZone("", -7*3600)),
	time.Unix(1700000000, 1).In(time.FixedZone("odd", 3600+17)),
	time.Unix(1700000000, 0).Local(),
	time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),    // refused by encoding/json
	time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),       // refused
	time.Unix(0, 0).In(time.FixedZone("", 24*3600)), // refused: zone hour 24
}

// setSamples sets the field v to each of its kind's hostile values in
// turn, calling check after each.
func setSamples(t *testing.T, v reflect.Value, check func(what string)) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		for _, tm := range hostileTimes {
			v.Set(reflect.ValueOf(tm))
			check(tm.String())
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		for _, s := range hostileStrings {
			v.SetString(s)
			check(shortQuote(s))
		}
	case reflect.Bool:
		for _, b := range []bool{true, false} {
			v.SetBool(b)
			check("bool")
		}
	case reflect.Float64:
		for _, f := range hostileFloats {
			v.SetFloat(f)
			check("float")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		for _, n := range hostileInts {
			if !v.OverflowInt(n) {
				v.SetInt(n)
				check("int")
			}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		for _, n := range []uint64{1, 0, math.MaxUint64, math.MaxUint32} {
			if !v.OverflowUint(n) {
				v.SetUint(n)
				check("uint")
			}
		}
	case reflect.Pointer:
		v.Set(reflect.Zero(v.Type()))
		check("nil")
		v.Set(reflect.New(v.Type().Elem()))
		check("pointer to zero")
	case reflect.Slice:
		v.Set(reflect.Zero(v.Type()))
		check("nil")
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		check("empty")
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		check("one zero element")
		v.Set(reflect.MakeSlice(v.Type(), 3, 3))
		check("three zero elements")
	case reflect.Struct:
		check("zero struct")
	default:
		t.Fatalf("no samples for a %s", v.Kind())
	}
}

func shortQuote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// setNonZero sets v, and everything below it, to non-zero values.
func setNonZero(v reflect.Value) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Unix(1700000000, 5e8).UTC()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("v<&>\"\x01")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(2.75)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(4)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		setNonZero(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		setNonZero(v.Index(0))
		setNonZero(v.Index(1))
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				setNonZero(v.Field(i))
			}
		}
	}
}

// TestRowAppenderWritesEveryFieldOfTheRowTypes walks DialogRow's types by
// reflection and sets each field alone to each of its kind's hostile
// values (control characters, invalid UTF-8, U+2028, -0, 1e21, NaN, the
// largest and smallest integers, times outside RFC 3339, nil and empty
// slices, pointers to zero): the appender must write what encoding/json
// writes, or refuse what it refuses. A field added to a row type and not
// to the appender fails here, named.
func TestRowAppenderWritesEveryFieldOfTheRowTypes(t *testing.T) {
	fields := rowFields(t)
	if len(fields) < 25 {
		t.Fatalf("walked %d fields, want all of DialogRow's", len(fields))
	}
	for _, f := range fields {
		root := reflect.New(reflect.TypeFor[DialogRow]()).Elem()
		v := f.at(root)
		setSamples(t, v, func(what string) {
			r := root.Addr().Interface().(*DialogRow)
			if why := rowMismatch(r); why != "" {
				t.Errorf("%s = %s: the appender (rowjson.go) does not write it as encoding/json does; add the field there:\n%s", f.path, what, why)
			}
		})
	}
}

// TestRowAppenderWritesARowWithEveryFieldSet: every field of the row
// types set at once, each visible in encoding/json's output (none is left
// out by omitempty), and the appender writes the same.
func TestRowAppenderWritesARowWithEveryFieldSet(t *testing.T) {
	var r DialogRow
	setNonZero(reflect.ValueOf(&r).Elem())
	if why := rowMismatch(&r); why != "" {
		t.Fatal(why)
	}
	got, _ := appendRowJSON(nil, &r, false)
	for _, f := range rowFields(t) {
		name := f.path[strings.LastIndexByte(f.path, '.')+1:]
		sf, ok := fieldByPath(f.path)
		if !ok || sf.Anonymous {
			continue
		}
		key := strings.Split(sf.Tag.Get("json"), ",")[0]
		if key == "" {
			key = name
		}
		if key != "-" && !bytes.Contains(got, []byte(`"`+key+`":`)) {
			t.Errorf("%s: key %q is not in the row %s", f.path, key, got)
		}
	}
	var zero DialogRow
	if why := rowMismatch(&zero); why != "" {
		t.Fatalf("zero row: %s", why)
	}
}

// fieldByPath finds the struct field a rowFields path ends in.
func fieldByPath(path string) (reflect.StructField, bool) {
	typ := reflect.TypeFor[DialogRow]()
	var sf reflect.StructField
	found := false
	for _, part := range strings.Split(path, ".")[1:] {
		part = strings.TrimRight(strings.ReplaceAll(part, "[0]", ""), "*")
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		f, ok := typ.FieldByName(part)
		if !ok {
			return sf, false
		}
		sf, found, typ = f, true, f.Type
	}
	if strings.HasSuffix(path, "*") || strings.HasSuffix(path, "[0]") {
		return sf, false // the element, not the field
	}
	return sf, found
}

// TestAppendJSONStringAndFloatAgreeWithEncodingJSON: the scalar forms
// alone, over every byte and the float thresholds.
func TestAppendJSONStringAndFloatAgreeWithEncodingJSON(t *testing.T) {
	strs := append([]string{}, hostileStrings...)
	for c := range 256 {
		strs = append(strs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	for _, s := range strs {
		want := marshalNoHTML(t, s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("string %q: got %s want %s", s, got, want)
		}
	}
	floats := append([]float64{}, hostileFloats...)
	for e := -330; e <= 310; e++ {
		f := math.Pow(10, float64(e))
		floats = append(floats, f, -f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)), 1.2345*f)
	}
	for _, f := range floats {
		want, err := json.Marshal(f)
		got, ok := appendJSONFloat(nil, f)
		if (err == nil) != ok || (ok && !bytes.Equal(got, want)) {
			t.Errorf("float %v: got %s (ok %v) want %s (err %v)", f, got, ok, want, err)
		}
	}
}

func marshalNoHTML(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// FuzzRowAppender: rows built from fuzzed strings, numbers, times and
// shapes come out of the appender as encoding/json writes them, through
// both writers, errors included.
func FuzzRowAppender(f *testing.F) {
	for i, s := range hostileStrings {
		f.Add(s, "InCall", "sip:"+s, uint16(i*97), int64(i)-3, hostileFloats[i%len(hostileFloats)], int64(1700000000e9)+int64(i), hostileInts[i%len(hostileInts)])
	}
	f.Add("", "", "", uint16(0xffff), int64(0), 0.0, int64(0), int64(0))
	f.Add("src\xe2\x80\u2028\"#@", "", "", uint16(0x0800), int64(1), 0.5, int64(7), int64(-1))
	f.Add("a\u2028", "\xff", "<>", uint16(0x5555), int64(-1), math.Inf(1), int64(math.MinInt64), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, shape uint16, n int64, fl float64, ns int64, ms int64) {
		bit := func(i int) bool { return shape&(1<<i) != 0 }
		ptr := func(i int, v int64) *int64 {
			if !bit(i) {
				return nil
			}
			return &v
		}
		r := DialogRow{Summary: dialog.Summary{
			CallID: s1, State: s2, Method: s3, MsgCount: int(n),
			DurationSec: fl,
			CreatedAt:   time.Unix(0, ns).UTC(),
			UpdatedAt:   time.Unix(0, ns).Add(time.Duration(ms)).In(time.FixedZone("", int(n%100000))),
			Timing: dialog.Timing{
				PDDMs: ptr(0, ms), SetupMs: ptr(1, -ms), AuthWaitMs: ptr(2, 0),
				Retransmits: int(ms), DurationMs: ptr(3, n),
			},
			FinalStatusCode:        int(ms % 700),
			InputOrigin:            s3,
			DurationToCaptureEndMs: ptr(4, ms),
		}}
		if bit(5) {
			r.FromUser, r.ToUser, r.Frame = s2, s1, s3+"#"+s1
		}
		if bit(11) {
			// the pointer as EachRow gives it: Frame written from it
			r.Frame = ""
			r.frame = packet.FrameRef{Source: s1, Ordinal: uint64(ns)}
			binary.BigEndian.PutUint64(r.frame.Digest[:], uint64(ms))
		}
		if bit(6) {
			r.Challenges, r.Timing.Duplicates = int(n), int(ms)
		}
		if bit(7) {
			e := bit(8)
			r.Ended = &e
		}
		switch {
		case bit(9):
			r.OtherLegs = []dialog.LegBrief{}
		case bit(10):
			r.OtherLegs = []dialog.LegBrief{{Method: s1, State: s3, FinalStatusCode: int(n), Challenges: int(shape)}, {}}
		}
		if why := rowMismatch(&r); why != "" {
			t.Fatal(why)
		}
	})
}
