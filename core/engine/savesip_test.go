package engine_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
)

// retained maps each Call-ID the capture holds to its retained messages'
// raw bytes, in order.
func retained(c *engine.Capture) map[string][]string {
	out := map[string][]string{}
	st := c.Dialogs()
	for _, id := range st.CallIDs() {
		for i := 0; ; i++ {
			m, ok := st.MessageAt(id, i)
			if !ok {
				break
			}
			out[id] = append(out[id], string(m.Msg.Raw))
		}
	}
	return out
}

// TestWriteHeldSIPReadsBackToTheSameDialogs: the held SIP written as
// pcapng (raw IP frames) loads back into the same Call-IDs with the same
// messages, byte for byte, for UDP (the sample: 10 SIP messages in 2
// Call-IDs by tshark -r testdata/sip-rtp-g711.pcap -Y sip), TCP
// (sip-over-tcp.pcap: 7 messages of one Call-ID) and IPv6 (two messages
// routed by hand); tshark reads every message as SIP, checksums validated,
// with no expert warning.
func TestWriteHeldSIPReadsBackToTheSameDialogs(t *testing.T) {
	v6 := engine.New(engine.Config{}, nil)
	for i, m := range []string{"INVITE", "BYE"} {
		v6.HandlePacket(&packet.Packet{TS: time.Unix(1700000000+int64(i), 0), Transport: packet.TransportUDP, Origin: packet.OriginWire,
			Src: netip.MustParseAddrPort("[2001:db8::1]:5060"), Dst: netip.MustParseAddrPort("[2001:db8::2]:5060"),
			Payload: []byte(fmt.Sprintf("%s sip:bob@example.net SIP/2.0\r\nVia: SIP/2.0/UDP [2001:db8::1];branch=z9hG4bK-%d\r\nFrom: <sip:a@example.net>;tag=1\r\nTo: <sip:bob@example.net>\r\nCall-ID: v6-call\r\nCSeq: %d %s\r\nContent-Length: 0\r\n\r\n", m, i, i+1, m))})
	}
	for _, tc := range []struct {
		name string
		c    *engine.Capture
	}{
		{"udp sample", testengine.Load(t, engine.Config{}, filepath.Join(testcap.Root(), "testdata", "sip-rtp-g711.pcap"))},
		{"tcp", testengine.Public(t, engine.Config{}, "sip-over-tcp.pcap")},
		{"ipv6", v6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := retained(tc.c)
			var n int
			for _, ms := range want {
				n += len(ms)
			}
			var buf bytes.Buffer
			saved, err := tc.c.WriteHeldSIP(&buf, "sipnab test")
			if err != nil {
				t.Fatal(err)
			}
			if wantN := map[string]int{"udp sample": 10, "tcp": 7, "ipv6": 2}[tc.name]; n != wantN {
				t.Errorf("the store holds %d messages, tshark counts %d", n, wantN)
			}
			if saved.Dialogs != len(want) || saved.Messages != n || saved.Skipped != 0 || n == 0 {
				t.Fatalf("saved %+v, the store holds %d dialogs, %d messages", saved, len(want), n)
			}
			path := filepath.Join(t.TempDir(), "held.pcapng")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			back := testengine.Load(t, engine.Config{}, path)
			got := retained(back)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("read back:\n%v\nwant:\n%v", got, want)
			}
			if st := back.Status(); st.UndecodableFrames != 0 || st.SIPMessages != uint64(n) {
				t.Errorf("read back: %d undecodable, %d SIP messages; want 0 and %d", st.UndecodableFrames, st.SIPMessages, n)
			}
			if _, err := exec.LookPath("tshark"); err != nil {
				t.Skip("tshark not installed (.ci/run installs it)")
			}
			out, err := exec.Command("tshark", "-r", path, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
				"-Y", "sip && !_ws.expert.severity >= warning", "-T", "fields", "-e", "sip.Call-ID").Output()
			if err != nil {
				t.Fatal(err)
			}
			if lines := strings.Fields(string(out)); len(lines) != n {
				t.Errorf("tshark reads %d clean SIP messages, want %d:\n%s", len(lines), n, out)
			}
		})
	}
}

// TestWriteHeldSIPOfWritesOnlyTheCallsNamed: of the sample's two Call-IDs
// (tshark -Y sip: 6 messages of 1-1966@10.0.2.20, 4 of
// 1-1968@10.0.2.20), naming one writes its 6 messages only, and they load
// back into that one dialog byte for byte; an unknown Call-ID adds
// nothing.
func TestWriteHeldSIPOfWritesOnlyTheCallsNamed(t *testing.T) {
	c := testengine.Load(t, engine.Config{}, filepath.Join(testcap.Root(), "testdata", "sip-rtp-g711.pcap"))
	var buf bytes.Buffer
	saved, err := c.WriteHeldSIPOf(&buf, "sipnab test", []string{"1-1966@10.0.2.20", "no-such-call"})
	if err != nil {
		t.Fatal(err)
	}
	if saved.Dialogs != 1 || saved.Messages != 6 {
		t.Fatalf("saved %+v, want 1 dialog, 6 messages", saved)
	}
	path := filepath.Join(t.TempDir(), "one.pcapng")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, want := retained(testengine.Load(t, engine.Config{}, path)), retained(c)
	if len(got) != 1 || fmt.Sprint(got["1-1966@10.0.2.20"]) != fmt.Sprint(want["1-1966@10.0.2.20"]) {
		t.Errorf("read back %v", got)
	}
}
