package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

type wantFrame struct {
	ts      time.Time
	invalid bool
	lt      uint16
	data    []byte
	orig    int
}

type gotFrame struct {
	ts      time.Time
	invalid bool
	lt      uint16
	data    []byte
	orig    int
	ordinal uint64
	source  string
}

var wallClock = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// readAll reads every frame of b (copying the borrowed data) and returns the
// error that ended the file (nil for a clean end).
func readAll(t *testing.T, b []byte, o Options) ([]gotFrame, *Reader, error) {
	t.Helper()
	if o.Now == nil {
		o.Now = func() time.Time { return wallClock }
	}
	r, err := NewReader(bytes.NewReader(b), o)
	if err != nil {
		return nil, nil, err
	}
	var out []gotFrame
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		out = append(out, gotFrame{ts: f.TS, invalid: f.InvalidTS, lt: f.LinkType, data: append([]byte(nil), f.Data...), orig: f.OrigLen, ordinal: f.Ordinal, source: f.Source})
	}
}

func checkFrames(t *testing.T, got []gotFrame, want []wantFrame) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.ts.Equal(w.ts) {
			t.Errorf("frame %d: got ts %v, want %v", i+1, g.ts.Format(time.RFC3339Nano), w.ts.Format(time.RFC3339Nano))
		}
		if g.invalid != w.invalid {
			t.Errorf("frame %d: got InvalidTS %v, want %v", i+1, g.invalid, w.invalid)
		}
		if g.lt != w.lt {
			t.Errorf("frame %d: got link type %d, want %d", i+1, g.lt, w.lt)
		}
		if !bytes.Equal(g.data, w.data) {
			t.Errorf("frame %d: got %d data bytes, want %d (or content differs)", i+1, len(g.data), len(w.data))
		}
		if g.orig != w.orig {
			t.Errorf("frame %d: got OrigLen %d, want %d", i+1, g.orig, w.orig)
		}
		if g.ordinal != uint64(i+1) {
			t.Errorf("frame %d: got ordinal %d", i+1, g.ordinal)
		}
	}
}

type formatCase struct {
	name   string
	bytes  []byte
	format Format
	want   []wantFrame
	// cut is a byte offset inside the last frame's record, for the
	// truncated copy.
	cut int
}

func formatCases(t *testing.T) []formatCase {
	t0 := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	sec := uint32(t0.Unix())
	var cases []formatCase

	// pcap: both resolutions, both byte orders, the modified variant
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, v := range []struct {
			name     string
			nano     bool
			modified bool
		}{{"us", false, false}, {"ns", true, false}, {"modified", false, true}} {
			spec := pcapSpec{order: order, nano: v.nano, modified: v.modified, linkType: 1}
			var want []wantFrame
			for i := 0; i < 3; i++ {
				frac := uint32(123456 + i)
				ns := int64(frac) * 1000
				if v.nano {
					frac = uint32(123456789 + i)
					ns = int64(frac)
				}
				d := payload(i, 60+i*7)
				spec.recs = append(spec.recs, pcapRec{sec: sec + uint32(i), frac: frac, data: d, origLen: uint32(len(d) + 10*i)})
				want = append(want, wantFrame{ts: time.Unix(int64(sec)+int64(i), ns).UTC(), lt: 1, data: d, orig: len(d) + 10*i})
			}
			b := buildPcap(spec)
			cases = append(cases, formatCase{name: "pcap " + v.name + " " + order.String(), bytes: b, format: FormatPcap, want: want, cut: len(b) - 20})
		}
	}

	// pcap with an out-of-range microsecond field, a linux cooked link type
	// and FCS bits in the link type field
	{
		spec := pcapSpec{order: binary.LittleEndian, linkType: 113 | 0x10000000 | 4<<28, recs: []pcapRec{
			{sec: sec, frac: 999999, data: payload(1, 40)},
			{sec: sec, frac: 1000000, data: payload(2, 41)},
			{sec: 0, frac: 0, data: payload(3, 42)},
		}}
		b := buildPcap(spec)
		cases = append(cases, formatCase{name: "pcap sll bad usec epoch zero", bytes: b, format: FormatPcap, cut: len(b) - 1, want: []wantFrame{
			{ts: time.Unix(int64(sec), 999999000).UTC(), lt: 113, data: payload(1, 40), orig: 40},
			{ts: wallClock, invalid: true, lt: 113, data: payload(2, 41), orig: 41},
			{ts: time.Unix(0, 0).UTC(), lt: 113, data: payload(3, 42), orig: 42},
		}})
	}

	// pcapng: two interfaces with different link types and timestamp
	// resolutions, both byte orders
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		spec := tNgSpec{order: order, ifaces: []tIface{
			{linkType: 1, tsresol: -1},                // default: microseconds
			{linkType: 276, tsresol: 9},               // SLL2, nanoseconds
			{linkType: 101, tsresol: 0x80 | 20},       // raw IP, 2^-20 s
			{linkType: 0, tsresol: 3, tsoffset: 1000}, // NULL, milliseconds, offset 1000 s
		}}
		us := uint64(t0.UnixMicro()) + 1
		ns := uint64(t0.UnixNano()) + 2
		bin := uint64(t0.Unix())<<20 | 1<<19 // +0.5 s
		ms := uint64(t0.UnixMilli()-1000*1000) + 7
		spec.pkts = []tPkt{
			{iface: 0, ts: us, data: payload(0, 60)},
			{iface: 1, ts: ns, data: payload(1, 61), origLen: 1500},
			{iface: 2, ts: bin, data: payload(2, 62)},
			{iface: 3, ts: ms, data: payload(3, 63)},
			{iface: 0, ts: us + 5, data: payload(4, 64)},
		}
		b := buildPcapng(spec)
		cases = append(cases, formatCase{name: "pcapng four interfaces " + order.String(), bytes: b, format: FormatPcapNG, cut: len(b) - 30, want: []wantFrame{
			{ts: t0.Add(time.Microsecond), lt: 1, data: payload(0, 60), orig: 60},
			{ts: t0.Add(2 * time.Nanosecond), lt: 276, data: payload(1, 61), orig: 1500},
			{ts: t0.Add(500 * time.Millisecond), lt: 101, data: payload(2, 62), orig: 62},
			{ts: t0.Add(7 * time.Millisecond), lt: 0, data: payload(3, 63), orig: 63},
			{ts: t0.Add(6 * time.Microsecond), lt: 1, data: payload(4, 64), orig: 64},
		}})
	}

	// pcapng with a name resolution block, an unknown custom block and a
	// simple packet block (no timestamp: wall clock substituted)
	{
		nrb := ngBlock(binary.LittleEndian, 4, append(ngOpt(binary.LittleEndian, 1, append([]byte{192, 0, 2, 1}, "pbx.example\x00"...)), 0, 0, 0, 0))
		custom := ngBlock(binary.LittleEndian, 0x00000BAD, []byte{1, 2, 3, 4, 5, 6, 7, 8})
		spec := tNgSpec{order: binary.LittleEndian, ifaces: []tIface{{linkType: 1, tsresol: 6}}, extra: [][]byte{nrb, custom}, pkts: []tPkt{
			{iface: 0, ts: uint64(t0.UnixMicro()), data: payload(0, 70)},
			{simple: true, data: payload(1, 71)},
		}}
		b := buildPcapng(spec)
		cases = append(cases, formatCase{name: "pcapng nrb custom spb", bytes: b, format: FormatPcapNG, cut: len(b) - 8, want: []wantFrame{
			{ts: t0, lt: 1, data: payload(0, 70), orig: 70},
			{ts: wallClock, invalid: true, lt: 1, data: payload(1, 71), orig: 71},
		}})
	}

	// gopacket's own writers: pcap (µs and ns) and pcapng with two
	// interfaces of different link types
	{
		var w1 bytes.Buffer
		pw := pcapgo.NewWriter(&w1)
		if err := pw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		var w2 bytes.Buffer
		pn := pcapgo.NewWriterNanos(&w2)
		if err := pn.WriteFileHeader(65535, layers.LinkTypeLinuxSLL); err != nil {
			t.Fatal(err)
		}
		var w3 bytes.Buffer
		ng, err := pcapgo.NewNgWriterInterface(&w3, pcapgo.NgInterface{Name: "eth0", LinkType: layers.LinkTypeEthernet, SnapLength: 65535}, pcapgo.DefaultNgWriterOptions)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ng.AddInterface(pcapgo.NgInterface{Name: "any", LinkType: layers.LinkTypeLinuxSLL2, SnapLength: 65535}); err != nil {
			t.Fatal(err)
		}
		var wantUS, wantNS, wantNg []wantFrame
		for i := 0; i < 4; i++ {
			ts := t0.Add(time.Duration(i)*time.Second + 987654321*time.Nanosecond)
			d := payload(i, 50+i)
			ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(d), Length: len(d)}
			if err := pw.WritePacket(ci, d); err != nil {
				t.Fatal(err)
			}
			if err := pn.WritePacket(ci, d); err != nil {
				t.Fatal(err)
			}
			ci.InterfaceIndex = i % 2
			if err := ng.WritePacket(ci, d); err != nil {
				t.Fatal(err)
			}
			wantUS = append(wantUS, wantFrame{ts: ts.Truncate(time.Microsecond), lt: 1, data: d, orig: len(d)})
			wantNS = append(wantNS, wantFrame{ts: ts, lt: 113, data: d, orig: len(d)})
			lt := uint16(1)
			if i%2 == 1 {
				lt = 276
			}
			wantNg = append(wantNg, wantFrame{ts: ts, lt: lt, data: d, orig: len(d)})
		}
		if err := ng.Flush(); err != nil {
			t.Fatal(err)
		}
		cases = append(cases,
			formatCase{name: "pcapgo writer us", bytes: w1.Bytes(), format: FormatPcap, want: wantUS, cut: w1.Len() - 10},
			formatCase{name: "pcapgo writer ns sll", bytes: w2.Bytes(), format: FormatPcap, want: wantNS, cut: w2.Len() - 10},
			formatCase{name: "pcapgo ngwriter two link types", bytes: w3.Bytes(), format: FormatPcapNG, want: wantNg, cut: w3.Len() - 10},
		)
	}
	return cases
}

func TestFormats(t *testing.T) {
	for _, tc := range formatCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("plain", func(t *testing.T) {
				got, r, err := readAll(t, tc.bytes, Options{Name: "x.bin"})
				if err != nil {
					t.Fatalf("got error %v, want a clean end", err)
				}
				if r.Format() != tc.format || r.Compressed() {
					t.Fatalf("got format %v compressed %v, want %v plain", r.Format(), r.Compressed(), tc.format)
				}
				checkFrames(t, got, tc.want)
				for _, g := range got {
					if g.source != "x.bin" {
						t.Fatalf("got source %q, want x.bin", g.source)
					}
				}
				var inv uint64
				for _, w := range tc.want {
					if w.invalid {
						inv++
					}
				}
				if r.InvalidTimestamps() != inv {
					t.Fatalf("got %d invalid timestamps, want %d", r.InvalidTimestamps(), inv)
				}
				if r.FileBytes() != int64(len(tc.bytes)) {
					t.Fatalf("got FileBytes %d, want %d", r.FileBytes(), len(tc.bytes))
				}
			})
			t.Run("gzip", func(t *testing.T) {
				got, r, err := readAll(t, gz(t, tc.bytes), Options{})
				if err != nil {
					t.Fatalf("got error %v, want a clean end", err)
				}
				if r.Format() != tc.format || !r.Compressed() {
					t.Fatalf("got format %v compressed %v, want %v compressed", r.Format(), r.Compressed(), tc.format)
				}
				checkFrames(t, got, tc.want)
			})
			for _, v := range []struct {
				name string
				b    []byte
			}{{"truncated", tc.bytes[:tc.cut]}, {"truncated gzip", gz(t, tc.bytes[:tc.cut])}} {
				t.Run(v.name, func(t *testing.T) {
					got, _, err := readAll(t, v.b, Options{Name: "cut.pcap"})
					if !errors.Is(err, ErrTruncated) {
						t.Fatalf("got error %v, want ErrTruncated", err)
					}
					if !strings.Contains(err.Error(), "cut.pcap") {
						t.Fatalf("error %q does not name the file", err)
					}
					checkFrames(t, got, tc.want[:len(tc.want)-1])
				})
			}
			t.Run("gzip stream cut", func(t *testing.T) {
				z := gz(t, tc.bytes)
				got, _, err := readAll(t, z[:len(z)-12], Options{})
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("got error %v, want ErrTruncated", err)
				}
				if len(got) > len(tc.want) {
					t.Fatalf("got %d frames from a cut stream, want at most %d", len(got), len(tc.want))
				}
			})
		})
	}
}

func TestRefusedFormats(t *testing.T) {
	cases := []struct {
		name    string
		b       []byte
		wantMsg string
	}{
		{"netmon 2", []byte("GMBU\x00\x02\x01\x00rest of header"), "Microsoft NetMon 2.x"},
		{"netmon 1", []byte("RTSS\x01\x01\x00\x00rest"), "Microsoft NetMon 1.x"},
		{"snoop", []byte("snoop\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x04"), "snoop"},
		{"zip", []byte("PK\x03\x04\x14\x00\x00\x00"), "zip archive"},
		{"xz", []byte("\xfd7zXZ\x00\x00\x04"), "xz-compressed"},
		{"unknown", []byte("hello world\n"), "unknown capture format (magic 0x68656c6c)"},
		{"empty", nil, "empty file"},
		{"short", []byte{0xd4, 0xc3}, "file has only 2 bytes"},
		{"netmon inside gzip", gz(t, []byte("GMBU\x00\x02rest")), "gzip-compressed Microsoft NetMon 2.x"},
		{"gzip inside gzip", gz(t, gz(t, []byte("GMBU"))), "gzip inside gzip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tc.b), Options{Name: "file.pcap"})
			if !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("got error %v, want ErrUnsupportedFormat", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), "file.pcap") {
				t.Fatalf("got %q, want it to contain %q and the file name", err, tc.wantMsg)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	good := buildPcap(pcapSpec{order: binary.LittleEndian, linkType: 1, recs: []pcapRec{{sec: 1, data: payload(0, 10)}}})
	huge := append([]byte(nil), good...)
	huge = append(huge, make([]byte, 16)...)
	binary.LittleEndian.PutUint32(huge[len(huge)-8:], 300000) // caplen
	badVersion := append([]byte(nil), good...)
	binary.LittleEndian.PutUint16(badVersion[4:], 3)
	ngBadIface := buildPcapng(tNgSpec{order: binary.LittleEndian, ifaces: []tIface{{linkType: 1, tsresol: -1}}, pkts: []tPkt{{iface: 0, data: payload(0, 8)}, {iface: 7, data: payload(1, 8)}}})
	cases := []struct {
		name       string
		b          []byte
		wantFrames int
		openErr    bool
	}{
		{"record longer than 256 KiB", huge, 1, false},
		{"pcap version 3", badVersion, 0, true},
		{"pcapng unknown interface", ngBadIface, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := readAll(t, tc.b, Options{})
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got error %v, want ErrMalformed", err)
			}
			if len(got) != tc.wantFrames {
				t.Fatalf("got %d frames, want %d", len(got), tc.wantFrames)
			}
		})
	}
}

func TestInflateLimit(t *testing.T) {
	var recs []pcapRec
	for i := 0; i < 100; i++ {
		recs = append(recs, pcapRec{sec: uint32(i + 1), data: make([]byte, 1000)})
	}
	z := gz(t, buildPcap(pcapSpec{order: binary.LittleEndian, linkType: 1, recs: recs}))
	got, _, err := readAll(t, z, Options{MaxInflate: 24 + 10*1016})
	if !errors.Is(err, ErrInflateLimit) {
		t.Fatalf("got error %v, want ErrInflateLimit", err)
	}
	if len(got) != 10 {
		t.Fatalf("got %d frames before the ceiling, want 10", len(got))
	}
	// exactly at the ceiling is not past it
	got, _, err = readAll(t, z, Options{MaxInflate: 24 + 100*1016})
	if err != nil || len(got) != 100 {
		t.Fatalf("at the ceiling: got %d frames, error %v; want 100, nil", len(got), err)
	}
	if DefaultMaxInflate != 1<<30 {
		t.Fatalf("default ceiling %d, want 1 GiB", DefaultMaxInflate)
	}
}

// TestInterfaceTableFlood floods one pcapng section with interface
// descriptions (attacker-keyed: a packet block names its interface by
// index). The section holds at most ngMaxIfs: a packet on the last one is
// read, one more description is refused as malformed after the frames
// before it, and a new section header starts an empty table again.
func TestInterfaceTableFlood(t *testing.T) {
	o := binary.LittleEndian
	flood := func(n int, pkts []tPkt) []byte {
		ifs := make([]tIface, n)
		for i := range ifs {
			ifs[i] = tIface{linkType: uint16(i % 300), tsresol: -1}
		}
		return buildPcapng(tNgSpec{order: o, ifaces: ifs, pkts: pkts})
	}
	last := uint32(ngMaxIfs - 1)
	full := flood(ngMaxIfs, []tPkt{{iface: 0, ts: 1, data: payload(0, 8)}, {iface: last, ts: 2, data: payload(1, 8)}})
	over := append(append([]byte(nil), full...), ngBlock(o, 1, []byte{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0})...)
	// A second section with one interface: index 1 no longer exists.
	second := buildPcapng(tNgSpec{order: o, ifaces: []tIface{{linkType: 1, tsresol: -1}}, pkts: []tPkt{{iface: 0, ts: 3, data: payload(2, 8)}, {iface: 1, ts: 4, data: payload(3, 8)}}})
	reset := append(append([]byte(nil), full...), second...)
	for _, tc := range []struct {
		name      string
		b         []byte
		frames    int
		wantErr   error
		errPhrase string
		lastLink  uint32
	}{
		{"a full table is read", full, 2, nil, "", last % 300},
		{"one interface more is refused", over, 2, ErrMalformed, fmt.Sprintf("more than %d interfaces", ngMaxIfs), last % 300},
		{"a new section starts an empty table", reset, 3, ErrMalformed, "the section describes 1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.b), Options{})
			if err != nil {
				t.Fatal(err)
			}
			frames, lastLink := 0, uint32(0)
			for {
				f, err := r.Next()
				if err == io.EOF {
					if tc.wantErr != nil {
						t.Fatalf("got a clean end, want %v", tc.wantErr)
					}
					break
				}
				if err != nil {
					if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errPhrase) {
						t.Fatalf("got error %v, want %v naming %q", err, tc.wantErr, tc.errPhrase)
					}
					break
				}
				frames++
				lastLink = uint32(f.LinkType)
			}
			if frames != tc.frames {
				t.Fatalf("got %d frames, want %d", frames, tc.frames)
			}
			if lastLink != tc.lastLink {
				t.Errorf("last frame has link type %d, want %d", lastLink, tc.lastLink)
			}
			if n := len(r.ng.ifaces); n > ngMaxIfs {
				t.Errorf("interface table holds %d, cap %d", n, ngMaxIfs)
			}
		})
	}
}
