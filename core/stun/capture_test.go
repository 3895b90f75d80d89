package stun

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/core/decode"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
)

// relayCapture is a real STUN/TURN exchange with coturn made in network
// namespaces (testdata/stun/README.md); its .tshark.tsv is tshark's
// decoding of every attribute (testdata/stun/tshark.sh).
var relayCapture = filepath.Join(testcap.Root(), "testdata", "stun", "turn-relayed-call.pcapng")

type udpPayload struct {
	src, dst netip.AddrPort
	ts       time.Time
	b        []byte
}

type payloads map[uint64]udpPayload

func (p payloads) HandlePacket(q *packet.Packet) {
	p[q.Frame.Ordinal] = udpPayload{q.Src, q.Dst, q.TS, append([]byte(nil), q.Payload...)}
}

func readPayloads(t *testing.T, path string) payloads {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := decode.New(decode.Config{})
	out := payloads{}
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		d.Decode(f, out)
	}
}

// tsharkRows reads the .tshark.tsv next to a capture: one map per frame,
// keyed by field name.
func tsharkRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path + ".tshark.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var head []string
	var rows []map[string]string
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if head == nil {
			head = cols
			continue
		}
		row := map[string]string{}
		for i, c := range cols {
			row[head[i]] = c
		}
		rows = append(rows, row)
	}
	return rows
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func hexNum(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// TestEveryAttributeAgreesWithTsharkOnTheCoturnCapture decodes every STUN
// message and ChannelData header of the coturn capture and compares each
// field tshark decodes: class, method, transaction ID, the addresses in
// attribute order (XOR ones un-XORed), LIFETIME, ERROR-CODE and reason,
// SOFTWARE, REALM/NONCE presence, FINGERPRINT value and CRC verdict,
// PRIORITY, ICE tie-breaker, CHANNEL-NUMBER, REQUESTED-TRANSPORT, and the
// ChannelData channel and length.
func TestEveryAttributeAgreesWithTsharkOnTheCoturnCapture(t *testing.T) {
	pl := readPayloads(t, relayCapture)
	rows := tsharkRows(t, relayCapture)
	var stunN, cdN, fingerprints, icmp int
	for _, row := range rows {
		fr, _ := strconv.ParseUint(row["frame.number"], 10, 64)
		if strings.Contains(row["ip.src"], ",") {
			icmp++ // a STUN message quoted by an ICMP error (two IP headers)
			continue
		}
		p, ok := pl[fr]
		if !ok {
			t.Errorf("frame %d: no UDP payload decoded", fr)
			continue
		}
		if p.src.Addr().String() != row["ip.src"] || strconv.Itoa(int(p.src.Port())) != row["udp.srcport"] ||
			p.dst.Addr().String() != row["ip.dst"] || strconv.Itoa(int(p.dst.Port())) != row["udp.dstport"] {
			t.Errorf("frame %d: got %s → %s", fr, p.src, p.dst)
		}
		if row["stun.channel"] != "" {
			cdN++
			cd, err := ParseChannelData(p.b)
			if err != nil {
				t.Errorf("frame %d: ChannelData: %v", fr, err)
				continue
			}
			if got := fmt.Sprintf("0x%04x", cd.Channel); got != row["stun.channel"] || strconv.Itoa(len(cd.Data)) != row["stun.length"] {
				t.Errorf("frame %d: got channel %s length %d, tshark %s %s", fr, got, len(cd.Data), row["stun.channel"], row["stun.length"])
			}
			continue
		}
		stunN++
		var m Message
		if err := Parse(p.b, &m); err != nil {
			t.Errorf("frame %d: %v", fr, err)
			continue
		}
		cls := hexNum(t, row["stun.type.class"])
		wantClass := Class((cls>>4)&1<<1 | cls&1) // tshark writes class C1C0 as 0x00, 0x01, 0x10, 0x11
		if m.Class != wantClass || uint64(m.Method) != hexNum(t, row["stun.type.method"]) ||
			hex.EncodeToString(m.TxID[:]) != row["stun.id"] || strconv.Itoa(m.Length) != row["stun.length"] {
			t.Errorf("frame %d: got %v %v %x len %d, tshark %v", fr, m.Class, m.Method, m.TxID, m.Length, row)
		}
		types := list(row["stun.att.type"])
		if m.Attrs != len(types) {
			t.Errorf("frame %d: got %d attributes, tshark %d", fr, m.Attrs, len(types))
		}
		// addresses, in attribute order
		ips, ports := list(row["stun.att.ipv4"]), list(row["stun.att.port"])
		var peers int
		for _, ty := range types {
			var got netip.AddrPort
			switch hexNum(t, ty) {
			case AttrXORMappedAddress:
				got = m.XORMapped
			case AttrMappedAddress:
				got = m.Mapped
			case AttrXORRelayedAddress:
				got = m.XORRelayed
			case AttrXORPeerAddress:
				got = m.Peers[peers]
				peers++
			case AttrAlternateServer:
				got = m.AlternateServer
			default:
				continue
			}
			if len(ips) == 0 {
				t.Errorf("frame %d: an address tshark did not decode", fr)
				break
			}
			if want := ips[0] + ":" + ports[0]; got.String() != want {
				t.Errorf("frame %d: attribute %s: got %s, tshark %s", fr, ty, got, want)
			}
			ips, ports = ips[1:], ports[1:]
		}
		check := func(name, got, want string) {
			if got != want {
				t.Errorf("frame %d: %s: got %q, tshark %q", fr, name, got, want)
			}
		}
		opt := func(has bool, v string) string {
			if !has {
				return ""
			}
			return v
		}
		check("LIFETIME", opt(m.HasLifetime, strconv.Itoa(int(m.Lifetime))), row["stun.att.lifetime"])
		check("ERROR-CODE", opt(m.HasErrorCode, fmt.Sprintf("%d,%d", m.ErrorCode/100, m.ErrorCode%100)), strings.Trim(row["stun.att.error.class"]+","+row["stun.att.error"], ","))
		check("reason", string(m.ErrorReason), row["stun.att.error.reason"])
		check("SOFTWARE", string(m.Software), row["stun.att.software"])
		check("REALM present", strconv.FormatBool(m.HasRealm), strconv.FormatBool(row["stun.att.realm"] != ""))
		check("NONCE present", strconv.FormatBool(m.HasNonce), strconv.FormatBool(row["stun.att.nonce"] != ""))
		check("FINGERPRINT", opt(m.HasFingerprint, fmt.Sprintf("0x%08x", m.Fingerprint)), row["stun.att.crc32"])
		// tshark's crc32.status: 1 good, 2 bad
		check("FINGERPRINT verdict", opt(m.HasFingerprint, map[bool]string{true: "1", false: "2"}[m.FingerprintOK]), row["stun.att.crc32.status"])
		check("PRIORITY", opt(m.HasPriority, strconv.Itoa(int(m.Priority))), row["stun.att.priority"])
		check("tie-breaker", opt(m.ICEControlling || m.ICEControlled, fmt.Sprintf("%016x", m.TieBreaker)), row["stun.att.tie-breaker"])
		check("CHANNEL-NUMBER", opt(m.HasChannelNumber, fmt.Sprintf("0x%04x", m.ChannelNumber)), row["stun.att.channelnum"])
		check("REQUESTED-TRANSPORT", opt(m.HasRequestedTransport, fmt.Sprintf("0x%02x", m.RequestedTransport)), row["stun.att.transp"])
		if m.HasFingerprint {
			fingerprints++
		}
	}
	// the counts, read off the tshark output (awk over the .tsv): 42 STUN
	// messages (40 with a FINGERPRINT), 112 ChannelData messages and 3 STUN
	// messages quoted in ICMP errors
	if stunN != 42 || cdN != 112 || fingerprints != 40 || icmp != 3 {
		t.Errorf("got %d STUN messages (%d fingerprints), %d ChannelData, %d in ICMP, want 42 (40), 112, 3", stunN, fingerprints, cdN, icmp)
	}
}
