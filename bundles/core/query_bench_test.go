package core

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/sdk"
)

// Tool-level benchmarks on a store that keeps changing: between two calls
// one message arrives (a retransmitted 200 OK, as on a live capture), so
// every call is the first after a change and finds no sorted rows to reuse.
// The store is the one of list_dialogs_test.go's tool benchmarks (100,000
// dialogs, INVITE answered 200, every fourth 486, eight per millisecond),
// plus a User-Agent on every INVITE, built once more here so the message
// that moves it never reaches the store the warm benchmarks read.
//
//	go test -run '^$' -bench 'Tool' -benchtime 20x -count 6 ./bundles/core
var (
	qbOnce   sync.Once
	qbCap    *engine.Capture
	qbTools  map[string]sdk.Tool
	qbCursor string
)

const qbDialogs = dialog.DefaultMaxDialogs

func qbRetrans(i int) string {
	id := fmt.Sprintf("bench-%06d@192.0.2.1", i)
	return "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK" + id + "\r\nFrom: <sip:u" + strconv.Itoa(i%500) +
		"@a.example>;tag=f\r\nTo: <sip:d" + strconv.Itoa(i%97) + "@b.example>;tag=t\r\nCall-ID: " + id + "\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
}

var qbT0 = time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)

func qbSetup(b *testing.B) {
	b.Helper()
	qbOnce.Do(func() {
		c := engine.New(engine.Config{Node: "bench"}, nil)
		for i := 0; i < qbDialogs; i++ {
			id := fmt.Sprintf("bench-%06d@192.0.2.1", i)
			at := qbT0.Add(time.Duration(i/8) * time.Millisecond)
			head := "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK" + id + "\r\nFrom: <sip:u" + strconv.Itoa(i%500) + "@a.example>;tag=f\r\n" +
				"To: <sip:d" + strconv.Itoa(i%97) + "@b.example>%s\r\nCall-ID: " + id + "\r\nCSeq: 1 INVITE\r\n%sContent-Length: 0\r\n\r\n"
			caller := "192.0.2." + strconv.Itoa(1+i%200) + ":5060"
			c.HandlePacket(lqSIP(at, caller, "198.51.100.1:5060", "INVITE sip:d@b.example SIP/2.0\r\n"+
				fmt.Sprintf(head, "", "User-Agent: phone/"+strconv.Itoa(i%7)+"\r\n")))
			status := "SIP/2.0 200 OK\r\n"
			if i%4 == 3 {
				status = "SIP/2.0 486 Busy Here\r\n"
			}
			c.HandlePacket(lqSIP(at.Add(50*time.Millisecond), "198.51.100.1:5060", caller, status+fmt.Sprintf(head, ";tag=t", "")))
		}
		if n := c.Dialogs().Len(); n != qbDialogs {
			b.Fatalf("store holds %d dialogs, want %d", n, qbDialogs)
		}
		qbCap, qbTools = c, lqTools(b, c)
		args := map[string]any{"limit": 1000, "fields": []string{"call_id"}}
		for i := 0; i < 90; i++ {
			var p lqPage
			lqCall(b, qbTools, "list_dialogs", args, &p)
			if p.NextCursor == nil {
				b.Fatalf("page %d: no cursor", i)
			}
			args["cursor"] = *p.NextCursor
		}
		qbCursor = args["cursor"].(string)
	})
	if qbTools == nil {
		b.Fatal("setup failed")
	}
}

// qbBench calls one tool b.N times, one message arriving before each call
// (outside the timer) when cold: a copy of an answered call's 200 OK, which
// changes no count the benchmarks check.
func qbBench(b *testing.B, cold bool, name string, args map[string]any, check func(*testing.B, string)) {
	qbSetup(b)
	raw, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	var last sdk.Reply
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if cold {
			b.StopTimer()
			rev := qbCap.Dialogs().Revision()
			n++
			qbCap.HandlePacket(lqSIP(qbT0.Add(time.Second), "198.51.100.1:5060", "192.0.2.1:5060", qbRetrans(4*n%qbDialogs)))
			if qbCap.Dialogs().Revision() == rev {
				b.Fatal("the store did not move")
			}
			b.StartTimer()
		}
		r, err := lqInvoke(b, qbTools, name, json.RawMessage(raw), sdk.DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		last = r
	}
	b.StopTimer()
	check(b, last.Blocks[0])
}

func qbFirstPage(b *testing.B, out string) {
	var p lqPage
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Returned != 50 || p.Total == nil || *p.Total != qbDialogs {
		b.Fatalf("first page: %v returned %d total %v", err, p.Returned, p.Total)
	}
}

func qbDeepPage(b *testing.B, out string) {
	var p lqPage
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Returned != 50 || p.Dialogs[0].CallID != "bench-090000@192.0.2.1" {
		b.Fatalf("deep page: %v returned %d", err, p.Returned)
	}
}

func BenchmarkListDialogsToolFirstPageCold(b *testing.B) {
	qbBench(b, true, "list_dialogs", map[string]any{}, qbFirstPage)
}

func BenchmarkListDialogsToolDeepCursorCold(b *testing.B) {
	qbSetup(b)
	qbBench(b, true, "list_dialogs", map[string]any{"cursor": qbCursor}, qbDeepPage)
}

// qbDims are aggregate_dialogs' dimensions with what this store must give:
// the number of buckets and the largest and smallest counts (sender-written
// values come fenced, so the counts are checked, not the values).
var qbDims = []struct {
	by                  string
	buckets, top, least int
}{
	{"method", 1, qbDialogs, qbDialogs},
	{"state", 2, 75000, 25000},
	{"response_code", 2, 75000, 25000},
	{"from.user", 500, 200, 200},
	{"src.ip", 200, 500, 500},
	{"ua", 7, 14286, 14285},
}

func qbAggregate(b *testing.B, cold bool) {
	for _, d := range qbDims {
		b.Run(d.by, func(b *testing.B) {
			qbBench(b, cold, "aggregate_dialogs", map[string]any{"group_by": d.by, "top_n": 1000}, func(b *testing.B, out string) {
				var a lqAggregate
				if err := json.Unmarshal([]byte(out), &a); err != nil {
					b.Fatal(err)
				}
				bs := a.Buckets
				if len(bs) != d.buckets || bs[0].Count != d.top || bs[len(bs)-1].Count != d.least || a.TotalMatched != qbDialogs {
					b.Fatalf("%s: %d buckets, counts %d..%d, total %d; want %d buckets, %d..%d, %d",
						d.by, len(bs), bs[0].Count, bs[len(bs)-1].Count, a.TotalMatched, d.buckets, d.top, d.least, qbDialogs)
				}
			})
		})
	}
}

func BenchmarkAggregateDialogsToolDims(b *testing.B)     { qbAggregate(b, false) }
func BenchmarkAggregateDialogsToolDimsCold(b *testing.B) { qbAggregate(b, true) }

// BenchmarkCaptureStatusToolCold: capture_status on the 100,000-dialog store
// right after it changed (counts from the store's tally by state).
func BenchmarkCaptureStatusToolCold(b *testing.B) {
	qbBench(b, true, "capture_status", map[string]any{}, func(b *testing.B, out string) {
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil || m["dialog_count"] != float64(qbDialogs) {
			b.Fatalf("capture_status: %v dialog_count %v", err, m["dialog_count"])
		}
	})
}
