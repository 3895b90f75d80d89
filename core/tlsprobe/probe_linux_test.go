//go:build linux && amd64

package tlsprobe

import (
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/tlspeer"
)

// libssl finds the library the openssl server maps.
func libsslOf(t *testing.T, pid int) Library {
	t.Helper()
	res, err := Scan("/proc")
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
	t.Fatalf("the openssl server (pid %d) maps no libssl the scan found: %+v", pid, res.Libraries)
	return Library{}
}

func TestScanFindsTheLibsslAnOpenSSLServerMaps(t *testing.T) {
	srv := tlspeer.Start(t)
	lib := libsslOf(t, srv.PID)
	if lib.WriteSymbol != "SSL_write" || lib.ReadSymbol != "SSL_read" || lib.ProbePath == "" || lib.Inode == 0 {
		t.Fatalf("library %+v: want SSL_write/SSL_read found and a probe path", lib)
	}
}

func TestUprobesReadTheSIPAnOpenSSLServerReadsAndWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("attaching uprobes needs root")
	}
	srv := tlspeer.Start(t)
	lib := libsslOf(t, srv.PID)
	var mu sync.Mutex
	var got []packet.Packet
	fr := NewFramer(packet.SinkFunc(func(p *packet.Packet) {
		mu.Lock()
		defer mu.Unlock()
		if p.Src.Addr().As4()[3] == byte(srv.PID) || p.Dst.Addr().As4()[3] == byte(srv.PID) {
			c := *p
			c.Payload = append([]byte(nil), p.Payload...)
			got = append(got, c)
		}
	}))
	pid := uint32(srv.PID)
	probe, err := Attach([]Target{{Path: lib.ProbePath, WriteSymbol: lib.WriteSymbol, ReadSymbol: lib.ReadSymbol}}, func(r Record) {
		if r.PID == pid {
			fr.Add(r)
		}
	})
	if err != nil {
		t.Skipf("the kernel refused the uprobes: %v", err)
	}
	defer probe.Close()
	conn := srv.Dial(t)
	if _, err := conn.Write([]byte(invite)); err != nil {
		t.Fatal(err)
	}
	// the server printed what it read: the INVITE reached SSL_read
	for line := ""; !strings.HasPrefix(line, "Content-Length"); {
		if line, err = srv.Out.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	srv.Send(t, []byte(ok200))
	buf := make([]byte, len(ok200))
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != ok200 {
		t.Fatalf("client read %q, %v", buf, err)
	}
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
	// read: peer → process; write: process → peer, same pair
	if got[0].Dst != got[1].Src || got[0].Src != got[1].Dst || got[0].Dst.Port() != SIPTLSPort {
		t.Fatalf("addresses %v→%v then %v→%v", got[0].Src, got[0].Dst, got[1].Src, got[1].Dst)
	}
	if probe.Lost() != 0 {
		t.Fatalf("lost %d", probe.Lost())
	}
}
