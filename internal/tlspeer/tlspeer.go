// Package tlspeer runs a real OpenSSL TLS server for tests: `openssl
// s_server` on a loopback port with a certificate made by `openssl req`
// in a temporary folder. The test side talks to it with crypto/tls (Go's
// own TLS, not libssl), so a uprobe on libssl sees only the server's
// SSL_read of what the test sent and SSL_write of what it answers.
package tlspeer

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is a running `openssl s_server`, or a Python ssl server
// (StartPython).
type Server struct {
	Addr  string
	PID   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// Out carries what the server printed: the plaintext it read.
	Out *bufio.Reader
	// answers: the server sends its response by itself (StartPython).
	answers bool
}

// Start starts the server, skipping the test when openssl is missing.
// It is stopped when the test ends.
func Start(t *testing.T) *Server {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed (.ci/run installs it)")
	}
	key, crt := certificate(t, bin)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "s_server", "-accept", "127.0.0.1:"+strconv.Itoa(port), "-cert", crt, "-key", key,
		"-quiet", "-ign_eof")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// stderr to /dev/null: s_server logs each bare readiness connection
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), PID: cmd.Process.Pid, cmd: cmd, stdin: stdin, Out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close() // a bare connection: s_server logs the failed handshake and accepts again
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("openssl s_server did not listen on %s", s.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// certificate makes a key and a self-signed certificate with openssl req.
func certificate(t *testing.T, bin string) (key, crt string) {
	t.Helper()
	dir := t.TempDir()
	key, crt = filepath.Join(dir, "key.pem"), filepath.Join(dir, "cert.pem")
	gen := exec.Command(bin, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
		"-nodes", "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=sipnab-test")
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("openssl req: %v\n%s", err, out)
	}
	return key, crt
}

// pythonServer accepts one TLS session, reads one message (to the end of
// its headers), prints it, sends the response given in argv[3] and waits
// for the client to close. Python's ssl module (3.10+) reads and writes
// with SSL_read_ex and SSL_write_ex.
const pythonServer = `import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(1)
print(ls.getsockname()[1], flush=True)
c, _ = ls.accept()
t = ctx.wrap_socket(c, server_side=True)
buf = b""
while b"\r\n\r\n" not in buf:
    b = t.recv(65536)
    if not b:
        sys.exit(1)
    buf += b
sys.stdout.write(buf.decode())
sys.stdout.flush()
t.sendall(sys.argv[3].encode())
t.recv(1)
`

// StartPython starts a Python ssl server that answers one message with
// response, skipping the test when python3 or openssl is missing. It is
// stopped when the test ends.
func StartPython(t *testing.T, response string) *Server {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed (.ci/run installs it)")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	key, crt := certificate(t, bin)
	cmd := exec.Command(py, "-c", pythonServer, crt, key, response)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	out := bufio.NewReader(stdout)
	port, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("the Python server did not start: %v", err)
	}
	return &Server{Addr: "127.0.0.1:" + strings.TrimSpace(port), PID: cmd.Process.Pid, cmd: cmd, Out: out, answers: true}
}

// Dial opens the TLS session (crypto/tls, certificate not verified: it is
// the test's own).
func (s *Server) Dial(t *testing.T) *tls.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.Addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS dial %s: %v", s.Addr, err)
	}
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// Send makes the server send b (one write to its standard input, which
// s_server passes to SSL_write).
func (s *Server) Send(t *testing.T, b []byte) {
	t.Helper()
	if _, err := s.stdin.Write(b); err != nil {
		t.Fatalf("writing to s_server: %v", err)
	}
}

// Exchange sends request to the server over a new TLS session, waits until
// the server has printed it (its SSL_read returned it: the request's last
// header line, Content-Length, came out), has the server send response
// (a Python server sends the one it was started with) and reads it back
// whole. Both are SIP messages without a body.
func (s *Server) Exchange(t *testing.T, request, response string) {
	t.Helper()
	conn := s.Dial(t)
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	for line := ""; !strings.HasPrefix(line, "Content-Length"); {
		var err error
		if line, err = s.Out.ReadString('\n'); err != nil {
			t.Fatalf("reading what s_server printed: %v", err)
		}
	}
	if !s.answers {
		s.Send(t, []byte(response))
	}
	buf := make([]byte, len(response))
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != response {
		t.Fatalf("the client read %q, %v", buf, err)
	}
}

// BPFDescriptors counts a process's open descriptors of BPF programs,
// maps and links and of perf events (each uprobe is one): what detaching
// every probe must close.
func BPFDescriptors(t *testing.T, pid int) int {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err == nil && (strings.HasPrefix(l, "anon_inode:bpf") || l == "anon_inode:[perf_event]") {
			n++
		}
	}
	return n
}
