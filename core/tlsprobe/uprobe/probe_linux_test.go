//go:build linux && amd64

package uprobe

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/tlsprobe"
	"github.com/sipnab/sipnab/internal/tlspeer"
)

const invite = "INVITE sip:bob@example.test SIP/2.0\r\n" +
	"Via: SIP/2.0/TLS 192.0.2.10:5061;branch=z9hG4bK-uprobe-1\r\n" +
	"From: <sip:alice@example.test>;tag=a1\r\n" +
	"To: <sip:bob@example.test>\r\n" +
	"Call-ID: uprobe-1@example.test\r\n" +
	"CSeq: 1 INVITE\r\n" +
	"Content-Length: 0\r\n\r\n"

const ok200 = "SIP/2.0 200 OK\r\n" +
	"Via: SIP/2.0/TLS 192.0.2.10:5061;branch=z9hG4bK-uprobe-1\r\n" +
	"From: <sip:alice@example.test>;tag=a1\r\n" +
	"To: <sip:bob@example.test>;tag=b1\r\n" +
	"Call-ID: uprobe-1@example.test\r\n" +
	"CSeq: 1 INVITE\r\n" +
	"Content-Length: 0\r\n\r\n"

// libsslOf finds the libssl a server process maps.
func libsslOf(t *testing.T, pid int) tlsprobe.Library {
	t.Helper()
	res, err := tlsprobe.Scan("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Libraries {
		for _, p := range l.PIDs {
			if p == pid && l.Flavor == "openssl" {
				return l
			}
		}
	}
	t.Fatalf("the server (pid %d) maps no libssl the scan found: %+v", pid, res.Libraries)
	return tlsprobe.Library{}
}

func TestScanFindsTheLibsslAnOpenSSLServerMaps(t *testing.T) {
	srv := tlspeer.Start(t)
	lib := libsslOf(t, srv.PID)
	if lib.WriteSymbol != "SSL_write" || lib.ReadSymbol != "SSL_read" || lib.ProbePath == "" || lib.Inode == 0 {
		t.Fatalf("library %+v: want SSL_write/SSL_read found and a probe path", lib)
	}
}

// TestUprobesReadTheSIPARealServerReadsAndWrites: openssl s_server calls
// SSL_read/SSL_write, Python's ssl module SSL_read_ex/SSL_write_ex; both
// are probed, and each message is read once (no function of the pair
// calls the other).
func TestUprobesReadTheSIPARealServerReadsAndWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("attaching uprobes needs root")
	}
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) *tlspeer.Server
	}{
		{"openssl s_server: SSL_read, SSL_write", tlspeer.Start},
		{"python ssl: SSL_read_ex, SSL_write_ex", func(t *testing.T) *tlspeer.Server { return tlspeer.StartPython(t, ok200) }},
	} {
		t.Run(tc.name, func(t *testing.T) { readsAndWrites(t, tc.start(t)) })
	}
}

func readsAndWrites(t *testing.T, srv *tlspeer.Server) {
	lib := libsslOf(t, srv.PID)
	if lib.WriteExSymbol != "SSL_write_ex" || lib.ReadExSymbol != "SSL_read_ex" {
		t.Fatalf("library %+v: want the _ex variants found (OpenSSL 3)", lib)
	}
	var mu sync.Mutex
	var got []packet.Packet
	fr := tlsprobe.NewFramer(packet.SinkFunc(func(p *packet.Packet) {
		mu.Lock()
		defer mu.Unlock()
		c := *p
		c.Payload = append([]byte(nil), p.Payload...)
		got = append(got, c)
	}))
	pid := uint32(srv.PID)
	probe, err := Attach([]tlsprobe.Target{{Path: lib.ProbePath, WriteSymbol: lib.WriteSymbol, ReadSymbol: lib.ReadSymbol,
		WriteExSymbol: lib.WriteExSymbol, ReadExSymbol: lib.ReadExSymbol}}, func(r tlsprobe.Record) {
		if r.PID == pid {
			fr.Add(r)
		}
	})
	if err != nil {
		t.Skipf("the kernel refused the uprobes: %v", err)
	}
	defer probe.Close()
	srv.Exchange(t, invite, ok200)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("got %d messages, want the INVITE and the 200", len(got))
	}
	if string(got[0].Payload) != invite || string(got[1].Payload) != ok200 {
		t.Fatalf("messages %q / %q", got[0].Payload, got[1].Payload)
	}
	if got[0].Origin != packet.OriginUprobe || got[0].Transport != packet.TransportTLS {
		t.Fatalf("origin %v transport %v", got[0].Origin, got[0].Transport)
	}
	// read: peer → process; write: process → peer, same pair; the
	// process is 127.<pid>:5061
	local := [4]byte{127, byte(pid >> 16), byte(pid >> 8), byte(pid)}
	if got[0].Dst != got[1].Src || got[0].Src != got[1].Dst || got[0].Dst.Port() != tlsprobe.SIPTLSPort || got[0].Dst.Addr().As4() != local {
		t.Fatalf("addresses %v→%v then %v→%v", got[0].Src, got[0].Dst, got[1].Src, got[1].Dst)
	}
	if probe.Lost() != 0 || probe.Unreadable() != 0 {
		t.Fatalf("lost %d, unreadable %d", probe.Lost(), probe.Unreadable())
	}
	fs := fr.Stats()
	if fs.Calls != 2 || fs.Bytes != uint64(len(invite)+len(ok200)) {
		t.Fatalf("framer %+v: want exactly 2 calls of %d bytes", fs, len(invite)+len(ok200))
	}
}
