package decode

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testpcap"
)

var updateMade = flag.Bool("update", false, "rewrite testdata/made/udp-tunnels.pcap")

// madeTunnelFrames are the frames of testdata/made/udp-tunnels.pcap: SIP
// inside GTP-U (plain, with a sequence number and an extension header
// chain, over IPv6) and GENEVE (Ethernet, IPv4 with an option), and what
// must not be unwrapped (RTP on both ports, a GTP-U echo request, a GENEVE
// control message). Each SIP message carries its own Call-ID (tun-<n>).
func madeTunnelFrames(tb testing.TB) [][]byte {
	sip := func(n int) []byte {
		return []byte(fmt.Sprintf("OPTIONS sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10;branch=z9hG4bK%d\r\nCall-ID: tun-%d\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n", n, n))
	}
	rtp := append([]byte{0x80, 0x08, 0x00, 0x01, 0, 0, 0, 160, 0x12, 0x34, 0x56, 0x78}, bytes.Repeat([]byte{0xd5}, 160)...)
	seqExt := []byte{0, 7, 0, 0x85, 1, 0x10, 0x01, 0}
	tlv := []byte{0x01, 0x02, 0x03, 0x01, 0xaa, 0xbb, 0xcc, 0xdd}
	return [][]byte{
		ethUDP(tb, 2152, 2152, gtpu(0, 0xFF, nil, ipUDP(tb, 5060, 5080, sip(1)))),
		ethUDP(tb, 2152, 2152, gtpu(0x06, 0xFF, seqExt, ipUDP(tb, 5060, 5080, sip(2)))),
		ethUDP(tb, 2152, 2152, gtpu(0, 0xFF, nil, ip6UDP(tb, 5060, 5080, sip(3)))),
		ethUDP(tb, 40000, 6081, geneve(0, 0x6558, nil, withEth(tb, 0x0800, ipUDP(tb, 5060, 5080, sip(4))))),
		ethUDP(tb, 40000, 6081, geneve(0, 0x0800, tlv, ipUDP(tb, 5060, 5080, sip(5)))),
		ethUDP(tb, 2152, 2152, rtp),
		ethUDP(tb, 40000, 6081, rtp),
		ethUDP(tb, 2152, 2152, gtpu(0x02, 1, []byte{0, 1, 0, 0}, nil)),
		ethUDP(tb, 40000, 6081, geneve(0x80, 0x0800, nil, ipUDP(tb, 5060, 5080, sip(9)))),
	}
}

// tsharkTunnel is one line of udp-tunnels.pcap.tshark.txt.
type tsharkTunnel struct {
	frame       int
	gtp, geneve bool
	ports       []string // every UDP port pair, outer first
	callID      string
}

// divergesFromTshark are the frames of udp-tunnels.pcap the decoder reads
// differently from tshark 4.0.17, and why.
var divergesFromTshark = map[int]string{
	// tshark unwraps it; RFC 8926 §3.4 says a control message's payload
	// is not forwarded nor interpreted by transit devices: it is not
	// tenant traffic, and the decoder leaves it as the outer datagram.
	9: "GENEVE control message (O bit)",
}

// The crafted tunnels as tshark reads them: where tshark finds SIP inside
// a GTP-U or GENEVE header the decoder emits that SIP message, with the
// innermost ports tshark shows; where tshark finds none (RTP on the
// tunnel ports, a GTP-U echo request; RTP on the GENEVE port tshark takes
// for GENEVE of version 2, which RFC 8926 does not define, and finds no
// SIP in) the decoder emits the outer datagram whole.
func TestUDPTunnelsAsTsharkReadsThem(t *testing.T) {
	dir := filepath.Join(testcap.Root(), "testdata", "made")
	frames := madeTunnelFrames(t)
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	var recs []testpcap.Frame
	for i, f := range frames {
		recs = append(recs, testpcap.Frame{TS: t0.Add(time.Duration(i) * time.Millisecond), Data: f})
	}
	raw := testpcap.Bytes(t, layers.LinkTypeEthernet, false, recs)
	path := filepath.Join(dir, "udp-tunnels.pcap")
	if *updateMade {
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, raw) {
		t.Fatalf("%s differs from its generator (go test ./core/decode -run UDPTunnelsAsTshark -update): %v", path, err)
	}
	f, err := os.Open(path + ".tshark.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var truth []tsharkTunnel
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		c := strings.Split(sc.Text(), "|")
		if len(c) != 6 {
			t.Fatalf("truth line %q", sc.Text())
		}
		var tt tsharkTunnel
		fmt.Sscan(c[0], &tt.frame)
		tt.gtp, tt.geneve = c[1] != "", c[2] != ""
		src, dst := strings.Split(c[3], ","), strings.Split(c[4], ",")
		for i := range src {
			tt.ports = append(tt.ports, src[i]+">"+dst[i])
		}
		tt.callID = c[5]
		truth = append(truth, tt)
	}
	if len(truth) != len(frames) {
		t.Fatalf("truth has %d frames, the capture %d", len(truth), len(frames))
	}
	for i, tt := range truth {
		t.Run(fmt.Sprint("frame ", tt.frame), func(t *testing.T) {
			d := New(Config{})
			c := &collect{}
			d.Decode(frame(LinkEthernet, frames[i]), c)
			st := d.Stats()
			if len(c.pkts) != 1 {
				t.Fatalf("got %d packets, want 1", len(c.pkts))
			}
			p := c.pkts[0]
			got := fmt.Sprintf("%d>%d", p.Src.Port(), p.Dst.Port())
			switch {
			case tt.callID != "" && divergesFromTshark[tt.frame] == "":
				if want := tt.ports[len(tt.ports)-1]; got != want || !bytes.Contains(p.Payload, []byte("Call-ID: "+tt.callID+"\r\n")) {
					t.Errorf("got %s %q, want the SIP of %s on %s", got, p.Payload, tt.callID, want)
				}
				if st.GTPU+st.GENEVE != 1 || (tt.gtp && st.GTPU != 1) || (tt.geneve && st.GENEVE != 1) {
					t.Errorf("gtpu %d geneve %d, tshark gtp %v geneve %v", st.GTPU, st.GENEVE, tt.gtp, tt.geneve)
				}
			default:
				if want := tt.ports[0]; got != want || p.Transport != packet.TransportUDP || !bytes.Equal(p.Payload, frames[i][42:]) {
					t.Errorf("got %s, want the outer datagram %s whole", got, want)
				}
				if st.GTPU+st.GENEVE != 0 {
					t.Errorf("gtpu %d geneve %d, want nothing unwrapped", st.GTPU, st.GENEVE)
				}
			}
		})
	}
}
