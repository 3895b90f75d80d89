package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/internal/testcap"
)

// The signaling bundle's dialog-store tools (timeline, group_dialogs,
// search_by_time, validate_filter, tail_dialogs, await_condition) driven
// over stdio through the built binary with the mcp-go client.

// sigSession starts `sipnab -N --mcp <args>` over stdio and connects. The
// per-peer rate limit is off: paging 1334 dialogs by 7 is 191 quick calls.
func sigSession(t *testing.T, ctx context.Context, args ...string) session {
	t.Helper()
	tr := transport.NewStdioWithOptions(bin, os.Environ(), append([]string{"-N", "--mcp", "--mcp-rate-limit-per-peer", "0"}, args...))
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return connectMCPGo(t, ctx, tr, eraLegacy)
}

// sigCall calls a tool that must succeed, checks structuredContent is the
// parsed text block, and decodes the answer into out.
func sigCall(t *testing.T, ctx context.Context, s session, name string, args map[string]any, out any) map[string]json.RawMessage {
	t.Helper()
	texts, structured, err := s.call(ctx, name, args)
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if len(texts) == 0 {
		t.Fatalf("%s: no text block", name)
	}
	var parsed, sc map[string]any
	if err := json.Unmarshal([]byte(texts[0]), &parsed); err != nil {
		t.Fatalf("%s: text block is not a JSON object: %v\n%.300s", name, err, texts[0])
	}
	b, _ := json.Marshal(structured)
	_ = json.Unmarshal(b, &sc)
	if !reflect.DeepEqual(parsed, sc) {
		t.Fatalf("%s: structuredContent differs from the text block", name)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(texts[0]), out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal([]byte(texts[0]), &raw)
	return raw
}

// sigWritable copies a capture into a directory the server can read.
func sigWritable(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(testcap.Public(name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sharedDir(t), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type sigGroups struct {
	Units  map[string]string `json:"units"`
	Groups []struct {
		Value       string              `json:"value"`
		Count       int                 `json:"count"`
		Metrics     map[string]*float64 `json:"metrics"`
		NotGrounded map[string]string   `json:"not_grounded"`
		Population  map[string]int      `json:"population"`
	} `json:"groups"`
	TotalMatched int `json:"total_matched"`
}

// TestSignalingE2ECarrierMetrics: on the bench generator's carrier capture
// (200 calls, 20 REGISTERs), group_dialogs by method gives the generator's
// exact ASR and NER in percent, and timeline's buckets sum to the dialog
// count.
func TestSignalingE2ECarrierMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and loads a 95 MB capture")
	}
	t.Parallel() // shares only the generated capture, read-only
	p, ans := carrierCapture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := sigSession(t, ctx, "-I", p)
	waitLoaded(t, ctx, s)

	var g sigGroups
	sigCall(t, ctx, s, "group_dialogs", map[string]any{"by": "method"}, &g)
	if g.Units["asr"] != "percent" || g.Units["ner"] != "percent" {
		t.Errorf("units %v, want asr and ner in percent", g.Units)
	}
	found := map[string]bool{}
	for _, gr := range g.Groups {
		w, ok := ans.ByMethod[gr.Value]
		if !ok {
			t.Errorf("group %q is not a generated method", gr.Value)
			continue
		}
		found[gr.Value] = true
		if gr.Count != w.Dialogs {
			t.Errorf("%s: %d dialogs, want %d", gr.Value, gr.Count, w.Dialogs)
		}
		if w.ASR == nil {
			// REGISTER: null with a reason, never 0.
			for _, m := range []string{"asr", "ner"} {
				if gr.Metrics[m] != nil || gr.NotGrounded[m] == "" {
					t.Errorf("%s %s: %v (%q), want null with a reason", gr.Value, m, gr.Metrics[m], gr.NotGrounded[m])
				}
			}
			continue
		}
		if gr.Metrics["asr"] == nil || *gr.Metrics["asr"] != *w.ASR {
			t.Errorf("%s ASR %v, want %v", gr.Value, gr.Metrics["asr"], *w.ASR)
		}
		if gr.Metrics["ner"] == nil || *gr.Metrics["ner"] != *w.NER {
			t.Errorf("%s NER %v, want %v", gr.Value, gr.Metrics["ner"], *w.NER)
		}
		for k, want := range map[string]int{"seizures": w.Seizures, "answered": w.Answered, "delivered": w.Delivered, "completed_calls": w.CompletedCalls} {
			if gr.Population[k] != want {
				t.Errorf("%s population %s %d, want %d", gr.Value, k, gr.Population[k], want)
			}
		}
	}
	if len(found) != len(ans.ByMethod) {
		t.Errorf("groups %v, want every method of %v", found, ans.ByMethod)
	}

	var tl struct {
		Buckets []struct {
			Start   time.Time `json:"start"`
			Dialogs int       `json:"dialogs"`
		} `json:"buckets"`
		BucketSeconds int64 `json:"bucket_seconds"`
		TotalDialogs  int   `json:"total_dialogs"`
	}
	sigCall(t, ctx, s, "timeline", map[string]any{"bucket_seconds": 5}, &tl)
	sum := 0
	for i, b := range tl.Buckets {
		sum += b.Dialogs
		if b.Start.Unix()%5 != 0 || (i > 0 && b.Start.Sub(tl.Buckets[i-1].Start) != 5*time.Second) {
			t.Errorf("bucket %d at %v: not epoch-aligned and contiguous", i, b.Start)
		}
	}
	if sum != len(ans.Dialogs) || tl.TotalDialogs != len(ans.Dialogs) {
		t.Errorf("buckets sum to %d (total %d), want %d", sum, tl.TotalDialogs, len(ans.Dialogs))
	}
}

// TestSignalingE2EPublicCaptures: timeline counts every dialog, a broken
// filter is a successful validate_filter answer, and search_by_time and
// tail_dialogs page sipp-branch-scenario.pcapng (1334 dialogs) with small
// limits without loss or repetition.
func TestSignalingE2EPublicCaptures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := sigSession(t, ctx, "-I", sigWritable(t, "sipp-branch-scenario.pcapng"))
	waitLoaded(t, ctx, s)

	t.Run("timeline", func(t *testing.T) {
		var tl struct {
			Buckets []struct {
				Dialogs int `json:"dialogs"`
			} `json:"buckets"`
			Returned int `json:"returned"`
		}
		sigCall(t, ctx, s, "timeline", map[string]any{"bucket_seconds": 1}, &tl)
		sum := 0
		for _, b := range tl.Buckets {
			sum += b.Dialogs
		}
		// tshark -Y sip -T fields -e sip.Call-ID -e frame.time_epoch, first
		// frame of each Call-ID: 1334 Call-IDs open in 134 distinct seconds,
		// 1479419555 to 1479419688, none of them empty.
		if sum != 1334 || tl.Returned != 134 || len(tl.Buckets) != 134 {
			t.Errorf("buckets sum to %d over %d (returned %d), want 1334 over 134", sum, len(tl.Buckets), tl.Returned)
		}
	})

	t.Run("validate_filter on a broken expression", func(t *testing.T) {
		texts, _, err := s.call(ctx, "validate_filter", map[string]any{"expr": "state == Failed and (method =="})
		if err != nil {
			t.Fatalf("a parse failure must be a successful call: %v", err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(texts[0]), &raw); err != nil {
			t.Fatal(err)
		}
		if string(raw["valid"]) != "false" || string(raw["total_matched"]) != "null" || string(raw["total_dialogs"]) != "1334" {
			t.Errorf("valid %s total_matched %s total_dialogs %s, want false null 1334", raw["valid"], raw["total_matched"], raw["total_dialogs"])
		}
		var e struct {
			Position int    `json:"position"`
			Caret    string `json:"caret"`
		}
		_ = json.Unmarshal(raw["error"], &e)
		if e.Position != 30 || !strings.Contains(e.Caret, "^") {
			t.Errorf("error %s, want position 30 with a caret line", raw["error"])
		}
	})

	for _, tc := range []struct {
		tool, stamp string
		args        map[string]any
	}{
		{"search_by_time", "created_at", map[string]any{"start": "2000-01-01T00:00:00Z", "limit": 7}},
		{"tail_dialogs", "updated_at", map[string]any{"limit": 7}},
	} {
		t.Run(tc.tool+" pages without loss", func(t *testing.T) {
			n := sigPageAll(t, ctx, s, tc.tool, tc.stamp, tc.args)
			if n != 1334 {
				t.Errorf("paged %d distinct dialogs, want 1334", n)
			}
		})
	}
}

// TestSignalingE2ETimelineGaps: b2bua-asterisk.pcapng's 12 Call-IDs open
// at these epoch seconds (tshark -Y sip -T fields -e sip.Call-ID -e
// frame.time_epoch, first frame of each): 1463595783, 791 x4, 795 x2, 797,
// 803 x2, 811 x2. The series keeps every empty bucket between them.
func TestSignalingE2ETimelineGaps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := sigSession(t, ctx, "-I", sigWritable(t, "b2bua-asterisk.pcapng"))
	waitLoaded(t, ctx, s)
	for _, tc := range []struct {
		width int
		first int64
		want  []int
	}{
		{1, 1463595783, []int{1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2}},
		{5, 1463595780, []int{1, 0, 4, 3, 2, 0, 2}},
		{60, 1463595780, []int{12}},
	} {
		t.Run(fmt.Sprint(tc.width), func(t *testing.T) {
			var tl struct {
				Buckets []struct {
					Start   time.Time `json:"start"`
					Dialogs int       `json:"dialogs"`
				} `json:"buckets"`
			}
			sigCall(t, ctx, s, "timeline", map[string]any{"bucket_seconds": tc.width}, &tl)
			got := make([]int, len(tl.Buckets))
			for i, b := range tl.Buckets {
				got[i] = b.Dialogs
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if len(tl.Buckets) > 0 && tl.Buckets[0].Start.Unix() != tc.first {
				t.Errorf("first bucket %v, want %v", tl.Buckets[0].Start, time.Unix(tc.first, 0).UTC())
			}
		})
	}
}

// sigPageAll pages a tool to the end and returns the distinct Call-IDs
// seen, failing on a repeat or an out-of-order row.
func sigPageAll(t *testing.T, ctx context.Context, s session, tool, stamp string, args map[string]any) int {
	t.Helper()
	seen := map[string]bool{}
	var last time.Time
	for pages := 0; pages < 10000; pages++ {
		var pg struct {
			Dialogs    []map[string]any `json:"dialogs"`
			NextCursor *string          `json:"next_cursor"`
		}
		sigCall(t, ctx, s, tool, args, &pg)
		for _, d := range pg.Dialogs {
			id, _ := d["call_id"].(string)
			if seen[id] {
				t.Fatalf("%s served twice", id)
			}
			seen[id] = true
			at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(d[stamp]))
			if err != nil || at.Before(last) {
				t.Fatalf("%s: %s %v out of order (%v)", id, stamp, d[stamp], err)
			}
			last = at
		}
		// search_by_time ends with a null cursor; a tail hands back its
		// position even when caught up, and returns no rows past the end.
		if pg.NextCursor == nil || len(pg.Dialogs) == 0 {
			return len(seen)
		}
		args["cursor"] = *pg.NextCursor
	}
	t.Fatal("paging did not end")
	return 0
}

// sigTiesCapture writes a pcap of 40 REGISTER dialogs, eight opening (and
// answered) in the same microsecond, Call-IDs in reverse order within each
// instant: every row ties on created_at and updated_at with seven others.
func sigTiesCapture(t *testing.T) string {
	t.Helper()
	dir := sharedDir(t)
	var frames []accFrame
	t0 := time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)
	write := func(ts time.Time, src, dst netip.AddrPort, payload string) {
		frames = append(frames, accFrame{ts, accIPEth(accUDP(t, src.String(), dst.String(), []byte(payload)))})
	}
	reg := netip.MustParseAddrPort("203.0.113.10:5060")
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("tie-%02d", (i/8)*8+7-i%8)
		ts := t0.Add(time.Duration(i/8) * time.Second)
		ua := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)}), 5060)
		hdr := func(start, toTag string) string {
			return start + "\r\nVia: SIP/2.0/UDP " + ua.String() + ";branch=z9hG4bK" + id + "\r\n" +
				"From: <sip:u" + id + "@example.com>;tag=f" + id + "\r\nTo: <sip:u" + id + "@example.com>" + toTag + "\r\n" +
				"Call-ID: " + id + "\r\nCSeq: 1 REGISTER\r\nContact: <sip:u@" + ua.String() + ">\r\nContent-Length: 0\r\n\r\n"
		}
		write(ts, ua, reg, hdr("REGISTER sip:example.com SIP/2.0", ""))
		write(ts, reg, ua, hdr("SIP/2.0 200 OK", ";tag=r"+id))
	}
	return accWrite(t, dir, "ties.pcap", layers.LinkTypeEthernet, frames)
}

// TestSignalingE2ETiedTimestamps pages a capture whose rows tie in groups
// of eight, by 3: every dialog once, whatever the cursor cuts through.
func TestSignalingE2ETiedTimestamps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := sigSession(t, ctx, "-I", sigTiesCapture(t))
	waitLoaded(t, ctx, s)
	for _, tc := range []struct {
		tool, stamp string
		args        map[string]any
	}{
		{"search_by_time", "created_at", map[string]any{"start": "2025-03-03T09:00:00Z", "limit": 3}},
		{"tail_dialogs", "updated_at", map[string]any{"limit": 3}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			if n := sigPageAll(t, ctx, s, tc.tool, tc.stamp, tc.args); n != 40 {
				t.Errorf("paged %d distinct dialogs, want 40", n)
			}
		})
	}
	// The window [09:00:01, 09:00:03) holds two instants: 16 dialogs.
	var pg struct {
		TotalMatched int `json:"total_matched"`
	}
	sigCall(t, ctx, s, "search_by_time", map[string]any{"start": "2025-03-03T09:00:01Z", "end": "2025-03-03T09:00:03Z", "limit": 1}, &pg)
	if pg.TotalMatched != 16 {
		t.Errorf("window total %d, want 16", pg.TotalMatched)
	}
}

type sigAwait struct {
	Matched        bool   `json:"matched"`
	StoppedBecause string `json:"stopped_because"`
	Dialogs        []struct {
		CallID string `json:"call_id"`
	} `json:"dialogs"`
	TotalMatched int `json:"total_matched"`
	Polls        int `json:"polls"`
	Scans        int `json:"scans"`
}

// TestSignalingE2EAwaitCondition: on a loaded file an existing match is
// condition_met at once; on a HEP feed (a source that never ends) an
// impossible condition runs to its 1 s deadline as a successful answer, and
// a call arriving over HEP during a wait meets it. scans <= polls always.
func TestSignalingE2EAwaitCondition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	check := func(t *testing.T, a sigAwait, stopped string) {
		t.Helper()
		if a.StoppedBecause != stopped || a.Matched != (stopped == "condition_met") {
			t.Errorf("stopped_because %q matched %v, want %q", a.StoppedBecause, a.Matched, stopped)
		}
		if a.Scans < 1 || a.Scans > a.Polls {
			t.Errorf("scans %d polls %d, want 1 <= scans <= polls", a.Scans, a.Polls)
		}
	}
	t.Run("file", func(t *testing.T) {
		s := sigSession(t, ctx, "-I", sigWritable(t, "sip-routing-error.pcapng"))
		waitLoaded(t, ctx, s)
		var a sigAwait
		sigCall(t, ctx, s, "await_condition", map[string]any{"filter": "method == INVITE"}, &a)
		check(t, a, "condition_met")
		if a.TotalMatched == 0 || len(a.Dialogs) != a.TotalMatched {
			t.Errorf("total %d rows %d", a.TotalMatched, len(a.Dialogs))
		}
	})
	t.Run("hep feed", func(t *testing.T) {
		// The listener binds UDP and TCP on one port: FreeAddr finds a
		// number free for both (a UDP-only probe lost to a TCP socket of a
		// test running beside it, and the server exited at start).
		addr := heptest.FreeAddr(t)
		s := sigSession(t, ctx, "-L", addr)
		var a sigAwait
		sigCall(t, ctx, s, "await_condition", map[string]any{"filter": "method == MESSAGE", "timeout_seconds": 1}, &a)
		check(t, a, "deadline")
		if a.Polls < 2 || a.Scans != 1 {
			t.Errorf("polls %d scans %d: want several polls over one scan of the still store", a.Polls, a.Scans)
		}

		sent := make(chan error, 1)
		go func() {
			time.Sleep(700 * time.Millisecond)
			sent <- sigSendHEP(addr)
		}()
		var b sigAwait
		sigCall(t, ctx, s, "await_condition", map[string]any{"filter": "call_id == hep-late-call", "timeout_seconds": 30, "poll_interval_ms": 100}, &b)
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		check(t, b, "condition_met")
		if len(b.Dialogs) != 1 || b.Dialogs[0].CallID != "hep-late-call" || b.Scans < 2 {
			t.Errorf("got %+v, want hep-late-call found by a later scan", b)
		}
	})
}

// sigSendHEP sends one SIP INVITE in a HEP3 envelope over UDP.
func sigSendHEP(addr string) error {
	sipText := "INVITE sip:bob@example.net SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKhep1\r\n" +
		"From: <sip:alice@example.com>;tag=h1\r\nTo: <sip:bob@example.net>\r\nCall-ID: hep-late-call\r\n" +
		"CSeq: 1 INVITE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	b, err := hep.Encode(&hep.Message{Version: 3, Family: hep.FamilyIPv4, Protocol: 17,
		Src: netip.MustParseAddrPort("192.0.2.10:5060"), Dst: netip.MustParseAddrPort("198.51.100.20:5060"),
		TS: time.Now(), HasTS: true, ProtoType: hep.ProtoSIP, HasProtoType: true, Payload: []byte(sipText)})
	if err != nil {
		return err
	}
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write(b)
	return err
}
