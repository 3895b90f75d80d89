package server

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/hep"
	"github.com/sipnab/sipnab/core/hepsend"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// TestRuntimeStatsStoreFillMatchesTheCapture: dialogs.used is the Call-IDs
// the capture holds (tshark -r <file> -Y sip -T fields -e sip.Call-ID |
// sort -u | wc -l: 2 on the sample, 1334 on sipp-branch-scenario.pcapng)
// against the default caps (--limit 100000, --max-streams 50000).
func TestRuntimeStatsStoreFillMatchesTheCapture(t *testing.T) {
	for _, tc := range []struct {
		name          string
		path          string
		dialogs, caps int
	}{
		{"sample", filepath.Join(testcap.Root(), "testdata", "sip-rtp-g711.pcap"), 2, 100000},
		{"sipp-branch-scenario", testcap.Public("sipp-branch-scenario.pcapng"), 1334, 100000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testengine.Load(t, engine.Config{}, tc.path)
			var got RuntimeStats
			call(t, tools(t, c, nil, sdk.FileRoot{})["runtime_stats"], `{}`, &got)
			if got.Dialogs.Used != tc.dialogs || got.Dialogs.Capacity != tc.caps || got.Dialogs.Pct != 100*float64(tc.dialogs)/float64(tc.caps) {
				t.Errorf("dialogs %+v, want used %d of %d", got.Dialogs, tc.dialogs, tc.caps)
			}
			if got.Streams == nil || got.Streams.Capacity != 50000 || got.Streams.Used != c.Media().Stats().Streams {
				t.Errorf("streams %+v, want the store's %d of 50000", got.Streams, c.Media().Stats().Streams)
			}
			if got.Rates != nil || got.CapturePacketsTotal != nil || len(got.Interfaces) != 0 {
				t.Errorf("rates %+v, capture packets %v, interfaces %v: absent without sample_seconds and without -i", got.Rates, got.CapturePacketsTotal, got.Interfaces)
			}
		})
	}
}

// TestRuntimeStatsReadsThisProcess: every process value is read here
// (Linux); three more open files are three more descriptors.
func TestRuntimeStatsReadsThisProcess(t *testing.T) {
	tl := tools(t, engine.New(engine.Config{}, nil), nil, sdk.FileRoot{})["runtime_stats"]
	var before, after RuntimeStats
	call(t, tl, `{}`, &before)
	for range 3 {
		f, err := os.Open(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	call(t, tl, `{}`, &after)
	p := after.Process
	if p.RSSBytes == nil || p.VirtualBytes == nil || p.Threads == nil || p.OpenFDs == nil || p.CPUSeconds == nil || after.UptimeSeconds == nil {
		t.Fatalf("process %+v uptime %v: all readable on Linux", p, after.UptimeSeconds)
	}
	if *p.RSSBytes == 0 || *p.RSSBytes > *p.VirtualBytes || *p.Threads < 1 {
		t.Errorf("rss %d virtual %d threads %d", *p.RSSBytes, *p.VirtualBytes, *p.Threads)
	}
	if *after.Process.OpenFDs != *before.Process.OpenFDs+3 {
		t.Errorf("open_fds %d then %d, want 3 more", *before.Process.OpenFDs, *after.Process.OpenFDs)
	}
	h := after.Host
	if h.MemoryTotalBytes == nil || h.CPUs == nil || after.Impact == nil {
		t.Fatalf("host %+v impact %+v", h, after.Impact)
	}
	if want := 100 * float64(*p.RSSBytes) / float64(*h.MemoryTotalBytes); math.Abs(after.Impact.MemoryPct-want) > 1e-9 || after.Impact.Significant != (want >= 10) {
		t.Errorf("impact %+v, want memory_pct %v", after.Impact, want)
	}
}

// TestRuntimeStatsRatesCountWhatArrivedInTheWindow: five SIP messages
// routed inside the window (three INVITEs and a REGISTER opening four
// Call-IDs, one INVITE retransmitted) are 5 packets and 4 new dialogs,
// 3 INVITE and 1 REGISTER, over the measured window.
func TestRuntimeStatsRatesCountWhatArrivedInTheWindow(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	tl := tools(t, c, nil, sdk.FileRoot{})["runtime_stats"]
	asked := noWait(t, func() {
		for i, m := range []string{"INVITE", "INVITE", "INVITE", "REGISTER", "INVITE"} {
			id := i
			if i == 4 {
				id = 0 // a retransmission of the first INVITE
			}
			c.HandlePacket(sipRequest(time.Unix(1700000000, int64(i)), m, id))
		}
	})
	var got RuntimeStats
	call(t, tl, `{"sample_seconds": 45}`, &got)
	if len(*asked) != 1 || (*asked)[0] != 30 {
		t.Errorf("window asked %v, want 30 (45 capped)", *asked)
	}
	r := got.Rates
	if r == nil || r.WindowSeconds <= 0 {
		t.Fatalf("rates %+v", r)
	}
	n := func(rate float64) float64 { return math.Round(rate * r.WindowSeconds) }
	if n(r.PacketsPerSecond) != 5 || n(r.CallsPerSecond) != 4 || n(r.CallsPerSecondByMethod["INVITE"]) != 3 ||
		n(r.CallsPerSecondByMethod["REGISTER"]) != 1 || len(r.CallsPerSecondByMethod) != 2 {
		t.Errorf("rates %+v over %v s: want 5 packets, 4 dialogs (3 INVITE, 1 REGISTER)", r, r.WindowSeconds)
	}
}

// TestRuntimeStatsRefusesAZeroWindow: sample_seconds 0 is refused by the
// input schema (minimum 1), -32602.
func TestRuntimeStatsRefusesAZeroWindow(t *testing.T) {
	tl := tools(t, engine.New(engine.Config{}, nil), nil, sdk.FileRoot{})["runtime_stats"]
	if e := callErr(t, tl, `{"sample_seconds": 0}`); e.Code != sdk.CodeInvalidParams || !strings.Contains(e.Message, "sample_seconds") {
		t.Errorf("got %+v", e)
	}
}

// sipRequest is one UDP SIP request of Call-ID call-<id>.
func sipRequest(ts time.Time, method string, id int) *packet.Packet {
	msg := fmt.Sprintf("%s sip:bob@example.net SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-%d\r\n"+
		"From: <sip:alice@example.net>;tag=a%d\r\nTo: <sip:bob@example.net>\r\nCall-ID: call-%d\r\nCSeq: 1 %s\r\nContent-Length: 0\r\n\r\n",
		method, id, id, id, method)
	return &packet.Packet{TS: ts, Src: netip.MustParseAddrPort("192.0.2.10:5060"), Dst: netip.MustParseAddrPort("198.51.100.20:5060"),
		Transport: packet.TransportUDP, Origin: packet.OriginWire, Payload: []byte(msg)}
}

// TestRuntimeStatsReportsTheHEPExport: with -H (a hepsend.Sender) the
// answer carries its counters: one SIP message forwarded to a UDP receiver
// on loopback, which reads the one datagram, is sent 1, sent_sip 1.
func TestRuntimeStatsReportsTheHEPExport(t *testing.T) {
	rx, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	snd, err := hepsend.Start(hepsend.Config{Addr: rx.LocalAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	p := sipRequest(time.Unix(1700000000, 0), "OPTIONS", 1)
	if !snd.Forward(p, p.Payload, hep.ProtoSIP) {
		t.Fatal("not queued")
	}
	_ = rx.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 65536)
	n, _, err := rx.ReadFrom(buf)
	if err != nil || !hep.Looks(buf[:n]) {
		t.Fatalf("the receiver read %d bytes, %v", n, err)
	}
	waitFor(t, func() bool { return snd.Stats().Sent == 1 })
	var got RuntimeStats
	call(t, tools(t, engine.New(engine.Config{}, nil), nil, sdk.FileRoot{}, snd)["runtime_stats"], `{}`, &got)
	if got.HEPExport == nil || got.HEPExport.Sent != 1 || got.HEPExport.SentSIP != 1 || got.HEPExport.Dropped() != 0 {
		t.Errorf("hep_export %+v", got.HEPExport)
	}
	var none RuntimeStats
	call(t, tools(t, engine.New(engine.Config{}, nil), nil, sdk.FileRoot{})["runtime_stats"], `{}`, &none)
	if none.HEPExport != nil {
		t.Errorf("hep_export without -H: %+v", none.HEPExport)
	}
}
