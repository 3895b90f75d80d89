package engine

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/portrange"
	"github.com/sipnab/sipnab/internal/testcap"
)

// sipPorts reads testdata/portgate/<name>.tsv: tshark's SIP frames with
// their ports (the README there gives the command).
func sipPorts(t *testing.T, name string) [][2]uint16 {
	t.Helper()
	f, err := os.Open(filepath.Join(testcap.Root(), "testdata", "portgate", name+".tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]uint16
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		var ports []uint16
		for _, c := range cols[1:] {
			if c == "" {
				continue
			}
			n, err := strconv.Atoi(strings.Split(c, ",")[0])
			if err != nil {
				t.Fatalf("%s: %q: %v", name, sc.Text(), err)
			}
			ports = append(ports, uint16(n))
		}
		if len(ports) != 2 {
			t.Fatalf("%s: %q: want two ports", name, sc.Text())
		}
		out = append(out, [2]uint16{ports[0], ports[1]})
	}
	return out
}

// TestPortGateSetsAsideWhatTsharkSeesOffThePorts loads every public capture
// with the default SIP ports (5060-5061) and with 5080 alone, and checks
// the gate against tshark's SIP frames and their ports: every SIP frame
// whose two ports are outside the range is counted under its lower port
// and not analysed; the rest are analysed (sip_messages); the run is
// complete exactly when nothing was set aside.
func TestPortGateSetsAsideWhatTsharkSeesOffThePorts(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	ws := portrange.MustParse(portrange.DefaultWS)
	for _, ranges := range []string{portrange.DefaultSIP, "5080"} {
		set := portrange.MustParse(ranges)
		for _, name := range names {
			if name == "c07-sip-r2.cap" || name == "rtsp-packets.cap" {
				continue // NetMon: refused (TestPublicCaptures)
			}
			t.Run(ranges+"/"+name, func(t *testing.T) {
				want := map[uint16]uint64{}
				var gated, all uint64
				for _, p := range sipPorts(t, name) {
					all++
					if !set.Contains(p[0]) && !set.Contains(p[1]) {
						gated++
						want[min(p[0], p[1])]++
					}
				}
				c := New(Config{Gate: &PortGate{SIP: set, WS: ws}}, nil)
				if err := c.LoadFiles(context.Background(), []string{testcap.Public(name)}); err != nil {
					t.Fatal(err)
				}
				c.Wait()
				st := c.Status()
				na := st.NotAnalyzed
				if na == nil {
					t.Fatal("not_analyzed absent with a gate set")
				}
				if na.SIPPortRange != ranges || na.WSPortRange != portrange.DefaultWS {
					t.Errorf("gate ports %q / %q, want %q / %q", na.SIPPortRange, na.WSPortRange, ranges, portrange.DefaultWS)
				}
				if na.SIPMessages != gated || st.SIPMessages != all-gated {
					t.Errorf("not analysed %d, analysed %d; tshark: %d of %d SIP frames off %s", na.SIPMessages, st.SIPMessages, gated, all, ranges)
				}
				got := map[uint16]uint64{}
				for i, pc := range na.Ports {
					got[pc.Port] = pc.SIPMessages
					if i > 0 && pc.SIPMessages > na.Ports[i-1].SIPMessages {
						t.Errorf("ports not busiest first: %+v", na.Ports)
					}
				}
				if len(got) != len(want) {
					t.Errorf("ports %v, want %v", got, want)
				}
				for p, n := range want {
					if got[p] != n {
						t.Errorf("port %d: %d not analysed, want %d", p, got[p], n)
					}
				}
				reason := slices.Contains(st.IncompleteReasons, "sip_not_analyzed")
				if reason != (gated > 0) || st.Complete != (gated == 0) {
					t.Errorf("complete %v reasons %v with %d set aside", st.Complete, st.IncompleteReasons, gated)
				}
				if !st.SourceExhausted || st.SourceStoppedEarly {
					t.Errorf("exhausted %v stopped early %v: the gate is no read fault", st.SourceExhausted, st.SourceStoppedEarly)
				}
			})
		}
	}
}

// TestPortGateKeepsNoDialogOfWhatItSetsAside: invite-opus-bye.pcap's call
// runs between ports 5082 and 5080. The default gate leaves no dialog;
// --portrange 5080 analyses all seven messages into one dialog.
// metasploit-sip-invite-spoof.pcap's INVITE goes 62986 → 10270 and its 180
// Ringing 10270 → 5060: the default gate keeps the 180 alone.
func TestPortGateKeepsNoDialogOfWhatItSetsAside(t *testing.T) {
	cases := []struct {
		name, ports string
		dialogs     int
		msgs        int
	}{
		{"invite-opus-bye.pcap", portrange.DefaultSIP, 0, 0},
		{"invite-opus-bye.pcap", "5080", 1, 7},
		{"metasploit-sip-invite-spoof.pcap", portrange.DefaultSIP, 1, 1},
		{"metasploit-sip-invite-spoof.pcap", "5060,10270", 1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/"+tc.ports, func(t *testing.T) {
			c := New(Config{Gate: &PortGate{SIP: portrange.MustParse(tc.ports)}}, nil)
			if err := c.LoadFiles(context.Background(), []string{testcap.Public(tc.name)}); err != nil {
				t.Fatal(err)
			}
			c.Wait()
			rows := c.Dialogs().Summaries(dialog.ByCreated)
			msgs := 0
			for _, r := range rows {
				msgs += r.MsgCount
			}
			if len(rows) != tc.dialogs || msgs != tc.msgs {
				t.Errorf("%d dialogs, %d messages; want %d, %d", len(rows), msgs, tc.dialogs, tc.msgs)
			}
		})
	}
}

// TestPortGateAdmitsHEPCarriedSIPAndWebSocketOnItsPorts: SIP a HEP
// envelope carried is analysed whatever its ports (the agent chose it);
// SIP over WebSocket is analysed on the WebSocket ports and set aside off
// them; plain TCP SIP on a WebSocket port is set aside; no gate analyses
// everything and reports no not_analyzed block.
func TestPortGateAdmitsHEPCarriedSIPAndWebSocketOnItsPorts(t *testing.T) {
	gate := &PortGate{SIP: portrange.MustParse(portrange.DefaultSIP), WS: portrange.MustParse(portrange.DefaultWS)}
	pkt := func(src, dst string, tr packet.Transport, o packet.Origin, callID string) *packet.Packet {
		p := udp(src, dst, []byte(invite(callID)), nil)
		p.Transport, p.Origin = tr, o
		return p
	}
	cases := []struct {
		name     string
		p        *packet.Packet
		analysed bool
	}{
		{"udp on 5060", pkt("10.0.0.1:40000", "10.0.0.2:5060", packet.TransportUDP, packet.OriginWire, "a"), true},
		{"udp from 5061", pkt("10.0.0.1:5061", "10.0.0.2:40000", packet.TransportUDP, packet.OriginWire, "b"), true},
		{"udp off the ports", pkt("10.0.0.1:40000", "10.0.0.2:7000", packet.TransportUDP, packet.OriginWire, "c"), false},
		{"hep-carried off the ports", pkt("10.0.0.1:40000", "10.0.0.2:7000", packet.TransportUDP, packet.OriginHEP, "d"), true},
		// a uprobe's addresses are placeholders (core/tlsprobe), not ports
		// a --portrange could name
		{"uprobe-read off the ports", pkt("127.0.0.1:10001", "127.1.2.3:7000", packet.TransportTLS, packet.OriginUprobe, "u"), true},
		{"ws on 8443", pkt("10.0.0.1:50000", "10.0.0.2:8443", packet.TransportWS, packet.OriginWire, "e"), true},
		{"wss on 443", pkt("10.0.0.1:50000", "10.0.0.2:443", packet.TransportWSS, packet.OriginWire, "f"), true},
		{"ws on 9000", pkt("10.0.0.1:50000", "10.0.0.2:9000", packet.TransportWS, packet.OriginWire, "g"), false},
		{"tcp on 8080", pkt("10.0.0.1:50000", "10.0.0.2:8080", packet.TransportTCP, packet.OriginWire, "h"), false},
	}
	c := New(Config{Gate: gate}, nil)
	open := New(Config{}, nil)
	var gated uint64
	for _, tc := range cases {
		before := c.Status().SIPMessages
		c.HandlePacket(tc.p)
		open.HandlePacket(tc.p)
		if got := c.Status().SIPMessages > before; got != tc.analysed {
			t.Errorf("%s: analysed %v, want %v", tc.name, got, tc.analysed)
		}
		if !tc.analysed {
			gated++
		}
	}
	st := c.Status()
	if st.NotAnalyzed == nil || st.NotAnalyzed.SIPMessages != gated {
		t.Fatalf("not_analyzed %+v, want %d", st.NotAnalyzed, gated)
	}
	want := []PortCount{{Port: 7000, SIPMessages: 1}, {Port: 8080, SIPMessages: 1}, {Port: 9000, SIPMessages: 1}}
	if !slices.Equal(st.NotAnalyzed.Ports, want) {
		t.Errorf("ports %+v, want %+v", st.NotAnalyzed.Ports, want)
	}
	if ost := open.Status(); ost.NotAnalyzed != nil || ost.SIPMessages != uint64(len(cases)) {
		t.Errorf("without a gate: not_analyzed %+v, %d analysed, want none and %d", ost.NotAnalyzed, ost.SIPMessages, len(cases))
	}
}

// TestPortGateNamesAtMostMaxGatedPortsAndCountsTheRest floods the gate with
// SIP on more ports than it names: the table stops at MaxGatedPorts, the
// rest are counted in ports_dropped, and the total stays whole.
func TestPortGateNamesAtMostMaxGatedPortsAndCountsTheRest(t *testing.T) {
	c := New(Config{Gate: &PortGate{SIP: portrange.MustParse(portrange.DefaultSIP)}}, nil)
	const n = MaxGatedPorts + 100
	for i := range n {
		c.HandlePacket(udp("10.0.0.1:60000", "10.0.0.2:"+strconv.Itoa(10000+i), []byte(invite("x"+strconv.Itoa(i))), nil))
	}
	na := c.Status().NotAnalyzed
	if na.SIPMessages != n || len(na.Ports) != MaxGatedPorts || na.PortsDropped != 100 {
		t.Fatalf("messages %d, ports %d, dropped %d; want %d, %d, 100", na.SIPMessages, len(na.Ports), na.PortsDropped, n, MaxGatedPorts)
	}
}

// benchRouteGated is BenchmarkRouteSIP (sipp-branch-scenario.pcapng, SIP on
// 5060) with a port gate of the given SIP ports.
func benchRouteGated(b *testing.B, ports string) {
	frames := framesOf(b, "sipp-branch-scenario.pcapng")
	gate := &PortGate{SIP: portrange.MustParse(ports), WS: portrange.MustParse(portrange.DefaultWS)}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for n < b.N {
		c := New(Config{Gate: gate}, nil)
		for _, f := range frames {
			c.handleFrame(kindFile, f)
			n++
			if n == b.N {
				break
			}
		}
	}
}

// BenchmarkRouteSIPGateAdmits: the default gate, which admits this
// capture's SIP: the gate's cost on analysed SIP (two bitmap lookups).
func BenchmarkRouteSIPGateAdmits(b *testing.B) { benchRouteGated(b, portrange.DefaultSIP) }

// BenchmarkRouteSIPGateSetsAside: a gate admitting none of it: every SIP
// message is counted by port instead of parsed.
func BenchmarkRouteSIPGateSetsAside(b *testing.B) { benchRouteGated(b, "6000") }
