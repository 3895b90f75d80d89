package capture

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// nrbRecord is one Name Resolution Block record: type, address, names.
func nrbRecord(order binary.ByteOrder, typ uint16, addr []byte, names ...string) []byte {
	v := append([]byte(nil), addr...)
	for _, n := range names {
		v = append(append(v, n...), 0)
	}
	return ngOpt(order, typ, v)
}

// A pcapng file's Name Resolution Blocks are read: TakeNames hands each
// name once, before the frame after its block, in both byte orders; a
// second block's names come with the frame after it.
func TestReaderTakesNamesOfNameResolutionBlocks(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		body := append(nrbRecord(order, 1, []byte{192, 0, 2, 1}, "pbx.example", "sbc.example"), nrbRecord(order, 2, netip.MustParseAddr("2001:db8::5").AsSlice(), "v6.example")...)
		body = append(nrbRecord(order, 99, []byte{1, 2, 3}, "unknown-type"), body...)
		first := ngBlock(order, 4, append(body, 0, 0, 0, 0))
		spec := tNgSpec{order: order, ifaces: []tIface{{linkType: 1, tsresol: 6}}, extra: [][]byte{first}, pkts: []tPkt{
			{iface: 0, ts: uint64(t0.UnixMicro()), data: bytes.Repeat([]byte{1}, 60)},
			{iface: 0, ts: uint64(t0.UnixMicro()) + 1, data: bytes.Repeat([]byte{2}, 60)},
		}}
		r, err := NewReader(bytes.NewReader(buildPcapng(spec)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range r.TakeNames() {
			got = append(got, n.Addr.String()+"="+n.Name)
		}
		want := "192.0.2.1=pbx.example 192.0.2.1=sbc.example 2001:db8::5=v6.example"
		if strings.Join(got, " ") != want {
			t.Errorf("%v: names %v, want %s", order, got, want)
		}
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if again := r.TakeNames(); again != nil {
			t.Errorf("%v: names handed twice: %v", order, again)
		}
	}
}

// Hostile Name Resolution Blocks: a record overrunning its block, empty
// and overlong names, and more names than MaxNames are cut, counted and
// never panic.
func TestNameTableBoundsHostileBlocks(t *testing.T) {
	le := binary.LittleEndian
	var tb nameTable
	tb.parseNRB(le, []byte{1, 0, 200, 0, 192, 0, 2, 1}) // overruns
	tb.parseNRB(le, nrbRecord(le, 1, []byte{192, 0, 2, 1}, "", strings.Repeat("x", MaxNameBytes+1), "ok.example"))
	tb.parseNRB(le, nrbRecord(le, 2, []byte{1, 2, 3}, "short-address"))
	if len(tb.fresh) != 1 || tb.fresh[0].Name != "ok.example" || tb.dropped != 2 {
		t.Fatalf("kept %v, dropped %d; want [ok.example] and 2", tb.fresh, tb.dropped)
	}
	var many []byte
	for i := range MaxNames + 10 {
		many = append(many, nrbRecord(le, 1, []byte{10, byte(i >> 16), byte(i >> 8), byte(i)}, "h.example")...)
	}
	tb.parseNRB(le, many)
	if tb.kept != MaxNames || tb.dropped != 2+11 {
		t.Fatalf("kept %d, dropped %d; want %d and 13", tb.kept, tb.dropped, MaxNames)
	}
}

func FuzzNameTable(f *testing.F) {
	f.Add(nrbRecord(binary.LittleEndian, 1, []byte{192, 0, 2, 1}, "pbx.example"))
	f.Add([]byte{2, 0, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'a', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var tb nameTable
		tb.parseNRB(binary.LittleEndian, b)
		if tb.kept > MaxNames || tb.bytes > maxNameTotal {
			t.Fatalf("kept %d names, %d bytes", tb.kept, tb.bytes)
		}
		for _, n := range tb.fresh {
			if n.Name == "" || strings.IndexByte(n.Name, 0) >= 0 || !n.Addr.IsValid() {
				t.Fatalf("bad name %+v", n)
			}
		}
	})
}
