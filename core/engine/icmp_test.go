package engine

import (
	"bufio"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// tsharkICMP is one ICMP error as tshark decodes it in
// testdata/made/icmp-port-unreachable.pcap.tshark.txt.
type tsharkICMP struct {
	frame       int
	typ, code   int
	reporter    string
	callID      string
	quotedFrame int // the latest SIP frame of the quoted Call-ID before it
}

func readTsharkICMP(t *testing.T, path string) []tsharkICMP {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tsharkICMP
	lastSIP := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") {
			continue
		}
		c := strings.Split(l, "|")
		if len(c) != 16 {
			t.Fatalf("truth line %q: %d fields", l, len(c))
		}
		n, _ := strconv.Atoi(c[0])
		typ, code, ip := c[2], c[3], c[6]
		if c[4] != "" {
			typ, code, ip = c[4], c[5], c[8]
		}
		if typ == "" {
			lastSIP[c[12]] = n
			continue
		}
		ty, _ := strconv.Atoi(typ)
		co, _ := strconv.Atoi(code)
		rep, _, _ := strings.Cut(ip, ",")
		out = append(out, tsharkICMP{frame: n, typ: ty, code: co, reporter: rep, callID: c[12], quotedFrame: lastSIP[c[12]]})
	}
	return out
}

// ordinal reads the frame number of an evidence pointer
// (<source>#<ordinal>@<digest>).
func ordinal(t *testing.T, ref string) int {
	_, rest, ok := strings.Cut(ref, "#")
	n, _, ok2 := strings.Cut(rest, "@")
	v, err := strconv.Atoi(n)
	if !ok || !ok2 || err != nil {
		t.Fatalf("frame pointer %q", ref)
	}
	return v
}

// A UAC sending INVITEs to a closed port (two IPv4 calls sharing one
// 5-tuple, one IPv6 call; made in a namespace of its own): every ICMP port
// unreachable tshark decodes is attached to the dialog whose Call-ID it
// quotes, naming its frame, type, code, reporter and the quoted INVITE,
// and the dialog's diagnosis says the far end's port was closed.
func TestICMPPortUnreachableAttachesToTheQuotedDialog(t *testing.T) {
	dir := filepath.Join(testcap.Root(), "testdata", "made")
	want := readTsharkICMP(t, filepath.Join(dir, "icmp-port-unreachable.pcap.tshark.txt"))
	if len(want) != 9 {
		t.Fatalf("truth holds %d ICMP errors, want 9", len(want))
	}
	c := New(Config{}, nil)
	if err := c.LoadFiles(context.Background(), []string{filepath.Join(dir, "icmp-port-unreachable.pcap")}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	st := c.Status()
	if st.ICMP == nil || st.ICMP.Errors != 9 || st.ICMP.MatchedByCallID != 9 || st.ICMP.Unmatched != 0 || st.ICMP.Dialogs != 3 {
		t.Fatalf("status icmp %+v, want 9 errors all matched by Call-ID to 3 dialogs", st.ICMP)
	}
	byCall := map[string][]tsharkICMP{}
	for _, w := range want {
		byCall[w.callID] = append(byCall[w.callID], w)
	}
	for id, ws := range byCall {
		t.Run(id, func(t *testing.T) {
			det, ok := c.Dialogs().Get(id)
			if !ok {
				t.Fatalf("no dialog %s", id)
			}
			if len(det.ICMPErrors) != len(ws) || det.ICMPErrorCount != len(ws) {
				t.Fatalf("got %d errors (count %d), want %d", len(det.ICMPErrors), det.ICMPErrorCount, len(ws))
			}
			for i, w := range ws {
				g := det.ICMPErrors[i]
				if ordinal(t, g.Frame) != w.frame || int(g.Type) != w.typ || int(g.Code) != w.code || g.Reporter != w.reporter ||
					g.Kind != "port_unreachable" || g.MatchedBy != "call_id" || g.QuoteTruncated || g.Quoted != "INVITE" {
					t.Errorf("error %d: got %+v, want frame %d type %d code %d reporter %s port_unreachable by call_id quoting INVITE whole",
						i, g, w.frame, w.typ, w.code, w.reporter)
				}
				if g.Message == nil || *g.Message >= len(det.Messages) {
					t.Fatalf("error %d quotes message %v", i, g.Message)
				}
				if got := ordinal(t, det.Messages[*g.Message].Frame.String()); got != w.quotedFrame {
					t.Errorf("error %d quotes the message of frame %d, want %d", i, got, w.quotedFrame)
				}
			}
			dd := analysis.Diagnose(analysis.FactsFrom(det), c.Media(), analysis.Options{})
			s := dd.Signaling
			if s == nil || len(s.ICMPUnreachable) != 1 {
				t.Fatalf("diagnosis %+v, want one icmp_unreachable", s)
			}
			u := s.ICMPUnreachable[0]
			if u.Errors != len(ws) || !u.ReporterIsEndpoint || u.Kind != "port_unreachable" || len(u.Frames) != len(ws) || len(u.Messages) != len(ws) {
				t.Errorf("icmp_unreachable %+v, want %d port unreachable errors from the endpoint itself", u, len(ws))
			}
			if len(s.Retransmissions) != 1 || s.Retransmissions[0].ICMPCause == nil || s.Retransmissions[0].ICMPCause.Errors != len(ws) {
				t.Errorf("retransmissions %+v, want the INVITE with its icmp_cause (%d errors)", s.Retransmissions, len(ws))
			}
			closed := false
			for _, h := range s.Hints {
				closed = closed || strings.HasPrefix(h, "the far end's port was closed: "+u.Endpoint)
			}
			if !closed {
				t.Errorf("hints %q do not say the far end's port was closed", s.Hints)
			}
			var clause *analysis.Clause
			for i := range dd.Evidence {
				if dd.Evidence[i].Rule == "icmp_unreachable" {
					clause = &dd.Evidence[i]
				}
			}
			if clause == nil || clause.Values["errors"] != float64(len(ws)) || len(clause.Frames) != 2*len(ws) || dd.Verdict != "signaling" {
				t.Errorf("verdict %s, clause %+v: want signaling with an icmp_unreachable clause naming the INVITEs' and the errors' frames", dd.Verdict, clause)
			}
		})
	}
}

// icmpFrame is an Ethernet/IPv4 frame carrying an ICMP port unreachable
// from 10.0.0.2 that quotes an IPv4/UDP datagram 10.0.0.1:5060 →
// 10.0.0.2:5060 whose payload is quoted.
func icmpFrame(quoted []byte) []byte {
	inner := make([]byte, 28, 28+len(quoted))
	inner[0] = 0x45
	binary.BigEndian.PutUint16(inner[2:4], uint16(min(28+len(quoted), 0xFFFF)))
	inner[8], inner[9] = 64, 17
	copy(inner[12:16], []byte{10, 0, 0, 1})
	copy(inner[16:20], []byte{10, 0, 0, 2})
	binary.BigEndian.PutUint16(inner[20:22], 5060)
	binary.BigEndian.PutUint16(inner[22:24], 5060)
	binary.BigEndian.PutUint16(inner[24:26], uint16(min(8+len(quoted), 0xFFFF)))
	inner = append(inner, quoted...)
	icmp := append([]byte{3, 3, 0, 0, 0, 0, 0, 0}, inner...)
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:4], uint16(min(20+len(icmp), 0xFFFF)))
	ip[8], ip[9] = 64, 1
	copy(ip[12:16], []byte{10, 0, 0, 2})
	copy(ip[16:20], []byte{10, 0, 0, 1})
	eth := []byte{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 6, 0x08, 0x00}
	return append(append(eth, ip...), icmp...)
}

// FuzzICMPMatch: an INVITE, then an ICMP port unreachable quoting
// arbitrary bytes as the datagram's payload. Nothing panics, every error
// offered is counted once (matched or not), and a dialog keeps at most
// dialog.MaxICMPPerDialog errors.
func FuzzICMPMatch(f *testing.F) {
	f.Add([]byte(invite("fz-icmp")))
	f.Add([]byte(invite("other")))
	f.Add([]byte("INVITE sip:b SIP/2.0\r\nCall-ID: fz-icmp"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, q []byte) {
		c := New(Config{}, nil)
		c.HandlePacket(udp("10.0.0.1:5060", "10.0.0.2:5060", []byte(invite("fz-icmp")), nil))
		for i := 0; i < dialog.MaxICMPPerDialog+2; i++ {
			c.HandleFrame(&packet.Frame{Source: "fuzz", Ordinal: uint64(i + 2), TS: ts0.Add(time.Millisecond), LinkType: 1, Data: icmpFrame(q)})
		}
		st := c.Status()
		if st.ICMP == nil || st.ICMP.Errors != dialog.MaxICMPPerDialog+2 || st.ICMP.Offered != st.ICMP.Errors ||
			st.ICMP.MatchedByCallID+st.ICMP.MatchedByTuple+st.ICMP.Unmatched != st.ICMP.Offered {
			t.Fatalf("icmp counts %+v", st.ICMP)
		}
		if d, ok := c.Dialogs().Get("fz-icmp"); ok && len(d.ICMPErrors) > dialog.MaxICMPPerDialog {
			t.Fatalf("kept %d errors", len(d.ICMPErrors))
		}
	})
}
