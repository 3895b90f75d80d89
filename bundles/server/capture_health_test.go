package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/internal/testpcap"
	"github.com/sipnab/sipnab/sdk"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// ether is an Ethernet II frame of EtherType et carrying payload.
func ether(et uint16, payload []byte) []byte {
	b := make([]byte, 14, 14+len(payload))
	copy(b[0:6], []byte{0x02, 0, 0, 0, 0, 2})
	copy(b[6:12], []byte{0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:14], et)
	return append(b, payload...)
}

// ipv4 is an IPv4 header (no options, checksum set) of protocol proto
// followed by payload.
func ipv4(proto uint8, payload []byte) []byte {
	h := make([]byte, 20, 20+len(payload))
	h[0], h[8], h[9] = 0x45, 64, proto
	binary.BigEndian.PutUint16(h[2:4], uint16(20+len(payload)))
	copy(h[12:16], []byte{192, 0, 2, 10})
	copy(h[16:20], []byte{198, 51, 100, 20})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:12], ^uint16(sum))
	return append(h, payload...)
}

// undecodableCaptures writes two crafted captures whose undecodable frames
// are known by construction (core/decode/stats.go, reason.otherTraffic):
//
//	ether.pcap (link type 1): 2 MACsec frames (EtherType 0x88e5: reason 2,
//	number 0x88e5; MACsec may carry SIP, so undecodable), 1 IPv4 ESP packet
//	(IP protocol 50: reason 3, number 50), 1 frame cut inside its IPv4
//	header (reason 4), 1 ARP frame (other traffic, never undecodable);
//	user0.pcap (link type 147, USER0): 3 frames no decoder reads (reason 1,
//	number 147).
//
// 7 frames undecodable of 8 read.
func undecodableCaptures(t *testing.T) []string {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "ether.pcap"), filepath.Join(dir, "user0.pcap")
	testpcap.WriteFile(t, a, layers.LinkTypeEthernet, false, []testpcap.Frame{
		{TS: t0, Data: ether(0x88e5, make([]byte, 40))},
		{TS: t0.Add(time.Millisecond), Data: ether(0x88e5, make([]byte, 40))},
		{TS: t0.Add(2 * time.Millisecond), Data: ether(0x0800, ipv4(50, make([]byte, 16)))},
		{TS: t0.Add(3 * time.Millisecond), Data: ether(0x0800, ipv4(17, nil)[:10])},
		{TS: t0.Add(4 * time.Millisecond), Data: ether(0x0806, make([]byte, 28))},
	})
	testpcap.WriteFile(t, b, layers.LinkType(147), false, []testpcap.Frame{
		{TS: t0, Data: []byte("opaque-1")}, {TS: t0.Add(time.Second), Data: []byte("opaque-2")}, {TS: t0.Add(2 * time.Second), Data: []byte("opaque-3")},
	})
	return []string{a, b}
}

// TestCaptureHealthNumbersTheUndecodableFrames: the totals are the
// engine's own counters (what capture_status reports: undecodable_frames
// and its undecodable map), split by numbered reason, and agree with the
// captures' construction.
func TestCaptureHealthNumbersTheUndecodableFrames(t *testing.T) {
	c := testengine.Load(t, engine.Config{}, undecodableCaptures(t)...)
	noWait(t, nil)
	var got CaptureHealth
	call(t, tools(t, c, nil, sdk.FileRoot{})["capture_health"], `{"sample_seconds": 1}`, &got)
	want := []ReasonFrames{{Reason: 1, Number: 147, Frames: 3}, {Reason: 2, Number: 0x88e5, Frames: 2},
		{Reason: 3, Number: 50, Frames: 1}, {Reason: 4, Number: 0, Frames: 1}}
	if fmt.Sprint(got.UndecodableByReason) != fmt.Sprint(want) {
		t.Errorf("by reason %+v, want %+v", got.UndecodableByReason, want)
	}
	st := c.Status()
	if got.Totals.UndecodableFrames != 7 || st.UndecodableFrames != 7 || got.Totals.Packets != 8 || st.FramesRead != 8 ||
		got.OtherTrafficFrames != 1 || got.UndecodableReasonsDropped != 0 {
		t.Errorf("totals %+v other %d (engine: %d undecodable of %d): want 7 of 8, 1 ARP", got.Totals, got.OtherTrafficFrames, st.UndecodableFrames, st.FramesRead)
	}
	var named uint64
	for _, n := range st.Undecodable {
		named += n
	}
	if named != got.Totals.UndecodableFrames {
		t.Errorf("capture_status's undecodable map sums %d, capture_health %d", named, got.Totals.UndecodableFrames)
	}
	if got.UndecodedFraction == nil || *got.UndecodedFraction != 7.0/8 || got.UndecodedFractionInWindow != nil {
		t.Errorf("fractions %v %v, want 7/8 and null (no frame in the window)", got.UndecodedFraction, got.UndecodedFractionInWindow)
	}
	if got.Attachment != attachFile || !got.SourceExhausted {
		t.Errorf("attachment %d exhausted %v", got.Attachment, got.SourceExhausted)
	}
}

// TestCaptureHealthCountsTheWindow: frames routed between the two readings
// are in_window (one MACsec frame and one truncated IPv4 frame arriving as
// a live source would deliver them); the window asked is clamped to 1-30.
func TestCaptureHealthCountsTheWindow(t *testing.T) {
	c := testengine.Load(t, engine.Config{}, undecodableCaptures(t)...)
	tl := tools(t, c, nil, sdk.FileRoot{})["capture_health"]
	asked := noWait(t, func() {
		for i, data := range [][]byte{ether(0x88e5, make([]byte, 40)), ether(0x0800, ipv4(17, nil)[:10])} {
			c.HandleFrame(&packet.Frame{TS: t0.Add(time.Duration(i) * time.Second), Data: data, OrigLen: len(data),
				LinkType: uint16(layers.LinkTypeEthernet), Source: "test", Ordinal: uint64(i + 1)})
		}
	})
	var got CaptureHealth
	call(t, tl, `{"sample_seconds": 99}`, &got)
	if got.Window.RequestedSeconds != 99 || got.Window.AppliedSeconds != 30 || len(*asked) != 1 || (*asked)[0] != 30 {
		t.Errorf("window %+v asked %v, want 99 clamped to 30", got.Window, *asked)
	}
	if got.InWindow.Packets != 2 || got.InWindow.UndecodableFrames != 2 || got.Totals.UndecodableFrames != 9 {
		t.Errorf("in window %+v totals %+v, want 2 of 2 in the window, 9 in all", got.InWindow, got.Totals)
	}
	if got.UndecodedFractionInWindow == nil || *got.UndecodedFractionInWindow != 1 {
		t.Errorf("in-window fraction %v, want 1", got.UndecodedFractionInWindow)
	}
	for _, r := range got.UndecodableByReason {
		want := map[int]uint64{2: 1, 4: 1}[r.Reason]
		if r.FramesInWindow != want {
			t.Errorf("reason %d/%d: %d in the window, want %d", r.Reason, r.Number, r.FramesInWindow, want)
		}
	}
}

// TestCaptureHealthRefusesWithoutAWindow: sample_seconds is required and at
// least 1 (no default window: a rate needs its interval), -32602.
func TestCaptureHealthRefusesWithoutAWindow(t *testing.T) {
	tl := tools(t, engine.New(engine.Config{}, nil), nil, sdk.FileRoot{})["capture_health"]
	for _, args := range []string{`{}`, `{"sample_seconds": 0}`, `{"sample_seconds": -3}`} {
		if e := callErr(t, tl, args); e.Code != sdk.CodeInvalidParams {
			t.Errorf("%s: got %+v, want -32602", args, e)
		}
	}
}

// TestCaptureHealthAttachment: 1 with nothing attached, 3 for a file, 2
// with a HEP listener (a live feed); never 0.
func TestCaptureHealthAttachment(t *testing.T) {
	noWait(t, nil)
	empty := engine.New(engine.Config{}, nil)
	file := testengine.Load(t, engine.Config{}, filepath.Join(testcap.Root(), "testdata", "sip-rtp-g711.pcap"))
	hep := engine.New(engine.Config{}, nil)
	if _, err := hep.StartHEP(context.Background(), heplisten.Config{UDP: heptest.FreeAddr(t)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hep.Close() })
	for _, tc := range []struct {
		name string
		c    *engine.Capture
		want int
	}{{"none", empty, attachNone}, {"file", file, attachFile}, {"hep", hep, attachLive}} {
		var got CaptureHealth
		call(t, tools(t, tc.c, nil, sdk.FileRoot{})["capture_health"], `{"sample_seconds": 1}`, &got)
		if got.Attachment != tc.want {
			t.Errorf("%s: attachment %d, want %d", tc.name, got.Attachment, tc.want)
		}
		if (got.HEP != nil) != (tc.name == "hep") {
			t.Errorf("%s: hep %+v", tc.name, got.HEP)
		}
	}
}

// TestAPopulatedCaptureHealthResponseCarriesNoStringValueAnywhere: the
// answer with every block filled (undecodable reasons, in-window counts,
// a HEP listener with a sender, the clock) holds numbers, booleans and
// nulls only, at any depth: it cannot carry packet content (design notes,
// a_populated_capture_health_response_carries_no_string_value_anywhere).
func TestAPopulatedCaptureHealthResponseCarriesNoStringValueAnywhere(t *testing.T) {
	c := testengine.Load(t, engine.Config{}, undecodableCaptures(t)...)
	addr := heptest.FreeAddr(t)
	if _, err := c.StartHEP(context.Background(), heplisten.Config{UDP: addr, TCP: addr}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	heptest.Send(t, addr, []heptest.Message{{Version: 3, Text: "OPTIONS sip:a@example.net SIP/2.0\r\nCall-ID: x\r\nCSeq: 1 OPTIONS\r\n\r\n"}})
	waitFor(t, func() bool { return c.Status().HEP.Datagrams >= 1 })
	noWait(t, func() {
		d := ether(0x88e5, make([]byte, 40))
		c.HandleFrame(&packet.Frame{TS: t0, Data: d, OrigLen: len(d), LinkType: 1, Source: "test", Ordinal: 1})
	})
	r := call(t, tools(t, c, nil, sdk.FileRoot{})["capture_health"], `{"sample_seconds": 1}`, nil)
	var v any
	if err := json.Unmarshal([]byte(r.Blocks[0]), &v); err != nil {
		t.Fatal(err)
	}
	var ch CaptureHealth
	_ = json.Unmarshal([]byte(r.Blocks[0]), &ch)
	if ch.HEP == nil || ch.HEP.Senders != 1 || len(ch.UndecodableByReason) == 0 || ch.InWindow.UndecodableFrames != 1 {
		t.Fatalf("not populated: %s", r.Blocks[0])
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case string:
			t.Errorf("%s is a string: %q", path, x)
		case map[string]any:
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("$", v)
	if len(r.Blocks) != 1 || r.Fenced {
		t.Errorf("%d blocks, fenced %v: want the answer alone", len(r.Blocks), r.Fenced)
	}
}

// waitFor polls cond for up to 10 s (a deadline for delivery on loopback,
// not a timing assertion).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10 s")
}
