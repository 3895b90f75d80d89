package ami

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
)

func TestInspect(t *testing.T) {
	long := strings.Repeat("u", 200)
	cases := []struct {
		name    string
		payload string
		ok      bool
		want    Observation
	}{
		{"banner", "Asterisk Call Manager/5.0.1\r\n", true, Observation{Kind: Banner}},
		{"banner of an old release", "Asterisk Call Manager/1.1\r\n", true, Observation{Kind: Banner}},
		{"banner is case-sensitive", "asterisk call manager/5.0.1\r\n", false, Observation{}},
		{"banner not at the start", "x Asterisk Call Manager/5.0.1\r\n", false, Observation{}},
		{"login with secret", "Action: Login\r\nUsername: admin\r\nSecret: s3cret\r\n\r\n", true,
			Observation{Kind: CleartextLogin, SecretPresent: true, Username: "admin"}},
		{"login lower case, LF only", "action: login\nusername: ops\nsecret: x\n\n", true,
			Observation{Kind: CleartextLogin, SecretPresent: true, Username: "ops"}},
		{"login upper case", "ACTION: LOGIN\r\nUSERNAME: a\r\n\r\n", true,
			Observation{Kind: CleartextLogin, Username: "a"}},
		{"login with an empty secret", "Action: Login\r\nUsername: admin\r\nSecret: \r\n\r\n", true,
			Observation{Kind: CleartextLogin, Username: "admin"}},
		{"md5 challenge login carries no secret", "Action: Login\r\nAuthType: MD5\r\nUsername: admin\r\nKey: 0123abcd\r\n\r\n", true,
			Observation{Kind: CleartextLogin, Username: "admin"}},
		{"secret after the blank line is another action", "Action: Login\r\nUsername: a\r\n\r\nSecret: x\r\n", true,
			Observation{Kind: CleartextLogin, Username: "a"}},
		{"username cut at 64 bytes", "Action: login\r\nUsername: " + long + "\r\nSecret: x\r\n\r\n", true,
			Observation{Kind: CleartextLogin, SecretPresent: true, Username: long[:MaxValueChars]}},
		{"prefix alone", "Action: login", true, Observation{Kind: CleartextLogin}},
		{"logoff is not a login", "Action: Logoff\r\n\r\n", false, Observation{}},
		{"loginx is not a login", "Action: Loginx\r\n\r\n", false, Observation{}},
		{"other action", "Action: Ping\r\n\r\n", false, Observation{}},
		{"http", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false, Observation{}},
		{"empty", "", false, Observation{}},
		{"short", "Act", false, Observation{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Inspect([]byte(tc.payload))
			if ok != tc.ok || got != tc.want {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

var (
	client  = netip.MustParseAddrPort("192.0.2.10:40001")
	client2 = netip.MustParseAddrPort("192.0.2.10:40002")
	server  = netip.MustParseAddrPort("198.51.100.5:5038")
	moved   = netip.MustParseAddrPort("198.51.100.5:15038")
	t0      = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
)

func pkt(tr packet.Transport, src, dst netip.AddrPort, ts time.Time, payload string) *packet.Packet {
	return &packet.Packet{TS: ts, Src: src, Dst: dst, Transport: tr, Payload: []byte(payload)}
}

func TestTrackerKeysAndDirection(t *testing.T) {
	login := "Action: Login\r\nUsername: %s\r\nSecret: pw\r\n\r\n"
	var tr Tracker
	// Two connections from one client: the banner (server to client) and
	// the login (client to server) land on one key each, whatever the
	// client's ephemeral port.
	tr.Observe(pkt(packet.TransportTCP, server, client, t0, "Asterisk Call Manager/5.0.1\r\n"))
	tr.Observe(pkt(packet.TransportTCP, client, server, t0.Add(time.Second), fmt.Sprintf(login, "alice")))
	tr.Observe(pkt(packet.TransportTCP, server, client2, t0.Add(2*time.Second), "Asterisk Call Manager/5.0.1\r\n"))
	tr.Observe(pkt(packet.TransportTCP, client2, server, t0.Add(3*time.Second), fmt.Sprintf(login, "mallory")))
	// A login without a secret on a moved port.
	tr.Observe(pkt(packet.TransportTCP, client, moved, t0.Add(4*time.Second), "Action: Login\r\nUsername: bob\r\n\r\n"))
	// UDP and non-AMI TCP are not looked at.
	tr.Observe(pkt(packet.TransportUDP, client, server, t0, "Asterisk Call Manager/5.0.1\r\n"))
	tr.Observe(pkt(packet.TransportTCP, client, server, t0, "GET / HTTP/1.1\r\n\r\n"))

	got := tr.Sightings()
	want := []Sighting{
		{Kind: Banner, Src: client.Addr(), Dst: server.Addr(), DstPort: 5038, Count: 2, First: t0, Last: t0.Add(2 * time.Second)},
		{Kind: CleartextLogin, SecretPresent: true, Src: client.Addr(), Dst: server.Addr(), DstPort: 5038, Count: 2,
			First: t0.Add(time.Second), Last: t0.Add(3 * time.Second)},
		{Kind: CleartextLogin, Src: client.Addr(), Dst: moved.Addr(), DstPort: 15038, Count: 1,
			First: t0.Add(4 * time.Second), Last: t0.Add(4 * time.Second)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d sightings %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sighting %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := fmt.Sprintf("%+v", got); strings.Contains(s, "alice") || strings.Contains(s, "mallory") || strings.Contains(s, "pw") {
		t.Errorf("a sighting carries a username or secret: %s", s)
	}
}

func TestTrackerEmptyIsNotNil(t *testing.T) {
	var tr Tracker
	if got := tr.Sightings(); got == nil || len(got) != 0 {
		t.Errorf("got %#v, want an empty non-nil list", got)
	}
}

// TestTrackerFlood sends 50,000 logins from distinct clients: the map never
// holds more than its cap, and every refused key is counted.
func TestTrackerFlood(t *testing.T) {
	const n = 50000
	tr := Tracker{Max: 1000}
	for i := range n {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 40000)
		tr.Observe(pkt(packet.TransportTCP, src, server, t0, "Action: Login\r\nUsername: u\r\nSecret: x\r\n\r\n"))
		if got := tr.Len(); got > tr.Max {
			t.Fatalf("after %d logins: got %d sightings, want at most %d", i+1, got, tr.Max)
		}
	}
	if got, want := tr.Stats().Refused, uint64(n-tr.Max); got != want {
		t.Errorf("got %d refused, want %d", got, want)
	}
	// Usernames are not part of the key: 50,000 names from one client are
	// one sighting.
	var one Tracker
	for i := range n {
		one.Observe(pkt(packet.TransportTCP, client, server, t0, fmt.Sprintf("Action: Login\r\nUsername: u%d\r\n\r\n", i)))
		if one.Len() != 1 {
			t.Fatalf("after %d usernames: got %d sightings, want 1", i+1, one.Len())
		}
	}
}

func BenchmarkObserveNotAMI(b *testing.B) {
	var tr Tracker
	p := pkt(packet.TransportTCP, client, server, t0, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 some TLS bytes")
	b.ReportAllocs()
	for b.Loop() {
		tr.Observe(p)
	}
}
