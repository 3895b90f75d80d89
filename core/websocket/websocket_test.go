package websocket

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParseHeader(t *testing.T) {
	key := [4]byte{1, 2, 3, 4}
	long := bytes.Repeat([]byte("a"), 300)
	huge := bytes.Repeat([]byte("b"), 70000)
	tests := []struct {
		name    string
		in      []byte
		want    Header
		wantErr error
	}{
		{"unmasked text 7-bit", AppendFrame(nil, true, OpText, nil, []byte("hello")),
			Header{Fin: true, Opcode: OpText, Length: 5, HeaderLen: 2}, nil},
		{"masked text 7-bit", AppendFrame(nil, true, OpText, &key, []byte("hello")),
			Header{Fin: true, Opcode: OpText, Masked: true, Key: key, Length: 5, HeaderLen: 6}, nil},
		{"16-bit length", AppendFrame(nil, false, OpBinary, nil, long),
			Header{Opcode: OpBinary, Length: 300, HeaderLen: 4}, nil},
		{"64-bit length masked", AppendFrame(nil, true, OpContinuation, &key, huge),
			Header{Fin: true, Opcode: OpContinuation, Masked: true, Key: key, Length: 70000, HeaderLen: 14}, nil},
		{"ping", AppendFrame(nil, true, OpPing, nil, []byte("p")),
			Header{Fin: true, Opcode: OpPing, Length: 1, HeaderLen: 2}, nil},
		{"empty", nil, Header{}, ErrShort},
		{"one byte", []byte{0x81}, Header{}, ErrShort},
		{"short 16-bit length", []byte{0x81, 126, 1}, Header{}, ErrShort},
		{"short 64-bit length", []byte{0x81, 127, 0, 0, 0}, Header{}, ErrShort},
		{"short mask key", []byte{0x81, 0x85, 1, 2}, Header{}, ErrShort},
		{"rsv1 set", []byte{0xC1, 0x00}, Header{}, ErrReservedBits},
		{"reserved opcode 3", []byte{0x83, 0x00}, Header{}, ErrOpcode},
		{"reserved control opcode 0xB", []byte{0x8B, 0x00}, Header{}, ErrOpcode},
		{"fragmented ping", []byte{0x09, 0x00}, Header{}, ErrControl},
		{"long close", []byte{0x88, 126, 0, 200}, Header{}, ErrControl},
		{"64-bit length top bit", []byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}, Header{}, ErrLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHeader(tc.in)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			n, ok := got.FrameLen()
			if !ok || n != len(tc.in) {
				t.Fatalf("got frame length %d (%v), want %d", n, ok, len(tc.in))
			}
		})
	}
}

func TestUnmaskInPieces(t *testing.T) {
	key := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	msg := []byte("INVITE sip:bob@example.com SIP/2.0\r\n")
	frame := AppendFrame(nil, true, OpText, &key, msg)
	h, err := ParseHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	p := append([]byte(nil), frame[h.HeaderLen:]...)
	Unmask(p[:7], h.Key, 0)
	Unmask(p[7:], h.Key, 7)
	if !bytes.Equal(p, msg) {
		t.Fatalf("got %q, want %q", p, msg)
	}
	// RFC 6455 section 5.7 example: masked "Hello".
	rfc := []byte{0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}
	h, err = ParseHeader(rfc)
	if err != nil {
		t.Fatal(err)
	}
	p = append([]byte(nil), rfc[h.HeaderLen:]...)
	Unmask(p, h.Key, 0)
	if string(p) != "Hello" {
		t.Fatalf("got %q, want %q", p, "Hello")
	}
}

func TestAssembler(t *testing.T) {
	type step struct {
		fin    bool
		op     Opcode
		data   string
		msg    string
		frames int
		done   bool
		err    error
	}
	tests := []struct {
		name  string
		max   int
		steps []step
	}{
		{"single frame", 100, []step{{true, OpText, "abc", "abc", 1, true, nil}}},
		{"three fragments", 100, []step{
			{false, OpText, "ab", "", 0, false, nil},
			{false, OpContinuation, "cd", "", 0, false, nil},
			{true, OpContinuation, "ef", "abcdef", 3, true, nil},
		}},
		{"continuation without start", 100, []step{{true, OpContinuation, "x", "", 0, false, ErrUnexpectedContinuation}}},
		{"interrupted by a new message", 100, []step{
			{false, OpText, "ab", "", 0, false, nil},
			{true, OpText, "new", "new", 1, true, ErrInterrupted},
			{true, OpContinuation, "x", "", 0, false, ErrUnexpectedContinuation},
		}},
		{"single frame too large", 4, []step{{true, OpText, "hello", "", 0, false, ErrTooLarge}}},
		{"fragments too large", 4, []step{
			{false, OpText, "abc", "", 0, false, nil},
			{true, OpContinuation, "de", "", 0, false, ErrTooLarge},
			{true, OpText, "ok", "ok", 1, true, nil},
		}},
		{"control frame refused", 100, []step{{true, OpPing, "", "", 0, false, ErrControl}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Assembler{Max: tc.max}
			for i, s := range tc.steps {
				msg, frames, done, err := a.Add(Header{Fin: s.fin, Opcode: s.op}, []byte(s.data))
				if !errors.Is(err, s.err) {
					t.Fatalf("step %d: got error %v, want %v", i, err, s.err)
				}
				if string(msg) != s.msg || frames != s.frames || done != s.done {
					t.Fatalf("step %d: got (%q, %d, %v), want (%q, %d, %v)", i, msg, frames, done, s.msg, s.frames, s.done)
				}
			}
		})
	}
}

func TestHandshake(t *testing.T) {
	req := "GET /sip HTTP/1.1\r\nHost: ws.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: sip\r\nSec-WebSocket-Version: 13\r\n\r\n"
	resp := "HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: sip\r\n\r\n"
	tests := []struct {
		name     string
		head     string
		wantReq  bool
		wantResp bool
	}{
		{"upgrade request", req, true, false},
		{"upgrade response", resp, false, true},
		{"upgrade listed with h2c", strings.Replace(req, "Upgrade: websocket", "Upgrade: h2c, websocket", 1), true, false},
		{"plain GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false, false},
		{"POST with upgrade", strings.Replace(req, "GET ", "POST ", 1), false, false},
		{"200 with upgrade", strings.Replace(resp, " 101 Switching Protocols", " 200 OK", 1), false, false},
		{"SIP INVITE", "INVITE sip:a@b SIP/2.0\r\nUpgrade: websocket\r\n\r\n", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsUpgradeRequest([]byte(tc.head)); got != tc.wantReq {
				t.Fatalf("IsUpgradeRequest: got %v, want %v", got, tc.wantReq)
			}
			if got := IsUpgradeResponse([]byte(tc.head)); got != tc.wantResp {
				t.Fatalf("IsUpgradeResponse: got %v, want %v", got, tc.wantResp)
			}
		})
	}
}

// FuzzStream reads arbitrary bytes as a frame stream: headers, unmasking and
// assembly must never panic, and no message may exceed the limit.
func FuzzStream(f *testing.F) {
	key := [4]byte{9, 8, 7, 6}
	f.Add(AppendFrame(nil, true, OpText, &key, []byte("REGISTER sip:example.com SIP/2.0\r\n\r\n")))
	f.Add(append(AppendFrame(nil, false, OpText, nil, []byte("ab")), AppendFrame(nil, true, OpContinuation, nil, []byte("cd"))...))
	f.Add(append(AppendFrame(nil, true, OpPing, nil, []byte("x")), AppendFrame(nil, true, OpBinary, &key, bytes.Repeat([]byte{1}, 200))...))
	f.Add([]byte{0x81, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x01, 0x7e, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		const max = 1024
		a := Assembler{Max: max}
		for len(b) > 0 {
			h, err := ParseHeader(b)
			if err != nil {
				return
			}
			n, ok := h.FrameLen()
			if !ok || n > len(b) {
				return
			}
			p := append([]byte(nil), b[h.HeaderLen:n]...)
			if h.Masked {
				Unmask(p, h.Key, 0)
			}
			b = b[n:]
			if h.Opcode.IsControl() {
				continue
			}
			msg, frames, done, _ := a.Add(h, p)
			if done && (len(msg) > max || frames < 1) {
				t.Fatalf("got message of %d bytes over %d frames, limit %d", len(msg), frames, max)
			}
		}
	})
}
