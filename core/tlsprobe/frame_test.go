package tlsprobe

import (
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/packet"
)

const invite = "INVITE sip:bob@example.test SIP/2.0\r\n" +
	"Via: SIP/2.0/TLS 192.0.2.10:5061;branch=z9hG4bK-tlsprobe-1\r\n" +
	"From: <sip:alice@example.test>;tag=a1\r\n" +
	"To: <sip:bob@example.test>\r\n" +
	"Call-ID: tlsprobe-1@example.test\r\n" +
	"CSeq: 1 INVITE\r\n" +
	"Contact: <sips:alice@192.0.2.10:5061>\r\n" +
	"Content-Length: 0\r\n\r\n"

const ok200 = "SIP/2.0 200 OK\r\n" +
	"Via: SIP/2.0/TLS 192.0.2.10:5061;branch=z9hG4bK-tlsprobe-1\r\n" +
	"From: <sip:alice@example.test>;tag=a1\r\n" +
	"To: <sip:bob@example.test>;tag=b1\r\n" +
	"Call-ID: tlsprobe-1@example.test\r\n" +
	"CSeq: 1 INVITE\r\n" +
	"Content-Length: 0\r\n\r\n"

const reqBody = "MESSAGE sip:bob@example.test SIP/2.0\r\nCall-ID: m1\r\nCSeq: 1 MESSAGE\r\nl: 5\r\n\r\nhello"

func collect() (*Framer, *[]string) {
	var out []string
	f := NewFramer(packet.SinkFunc(func(p *packet.Packet) { out = append(out, string(p.Payload)) }))
	return f, &out
}

func TestFramerSplitsAndJoinsMessagesByContentLength(t *testing.T) {
	tests := []struct {
		name   string
		calls  []string
		want   []string
		notSIP uint64
		keep   uint64
	}{
		{"two messages in one call", []string{invite + ok200}, []string{invite, ok200}, 0, 0},
		{"one message over three calls", []string{invite[:10], invite[10:50], invite[50:]}, []string{invite}, 0, 0},
		{"compact l with a body cut across calls", []string{reqBody[:len(reqBody)-3], reqBody[len(reqBody)-3:]}, []string{reqBody}, 0, 0},
		{"CRLF keep-alives before a message (RFC 5626)", []string{"\r\n\r\n", invite}, []string{invite}, 0, 1},
		{"not SIP: dropped, counted", []string{"\x16\x03\x01 binary"}, nil, 1, 0},
		{"a bad Content-Length: dropped, counted", []string{"INVITE sip:a SIP/2.0\r\nContent-Length: x\r\n\r\n"}, nil, 1, 0},
		{"two different Content-Lengths: dropped", []string{"INVITE sip:a SIP/2.0\r\nContent-Length: 0\r\nl: 3\r\n\r\nabc"}, nil, 1, 0},
		{"an HTTP request over the same library is not SIP", []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n"}, nil, 1, 0},
		{"an incomplete message is held", []string{invite[:len(invite)-2]}, nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, out := collect()
			for _, c := range tc.calls {
				f.Add(Record{PID: 42, SSL: 7, Dir: DirRead, Len: uint32(len(c)), Data: []byte(c)})
			}
			if strings.Join(*out, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("messages %q, want %q", *out, tc.want)
			}
			st := f.Stats()
			if st.NotSIP != tc.notSIP || st.KeepAlives != tc.keep || st.Messages != uint64(len(tc.want)) {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestFramerKeepsStreamsApartAndPlaceholdersPaired(t *testing.T) {
	var got []*packet.Packet
	f := NewFramer(packet.SinkFunc(func(p *packet.Packet) { c := *p; got = append(got, &c) }))
	f.Add(Record{PID: 0x010203, SSL: 1, Dir: DirRead, Data: []byte(invite[:30])})
	f.Add(Record{PID: 0x010203, SSL: 2, Dir: DirRead, Data: []byte(ok200)})
	f.Add(Record{PID: 0x010203, SSL: 1, Dir: DirRead, Data: []byte(invite[30:])})
	f.Add(Record{PID: 0x010203, SSL: 1, Dir: DirWrite, Data: []byte(ok200)})
	if len(got) != 3 {
		t.Fatalf("%d messages", len(got))
	}
	// pid 0x010203 → 127.1.2.3:5061; SSL 1 was seen first → peer port 10001
	if got[1].Src.String() != "127.0.0.1:10001" || got[1].Dst.String() != "127.1.2.3:5061" {
		t.Fatalf("read %v→%v", got[1].Src, got[1].Dst)
	}
	if got[2].Src != got[1].Dst || got[2].Dst != got[1].Src {
		t.Fatalf("write %v→%v does not pair with read %v→%v", got[2].Src, got[2].Dst, got[1].Src, got[1].Dst)
	}
}

func TestFramerBoundsItsTables(t *testing.T) {
	f, out := collect()
	for i := range MaxStreams + 5 {
		f.Add(Record{PID: 1, SSL: uint64(i), Dir: DirWrite, Data: []byte("INVITE sip:x SIP/2.0\r\n")})
	}
	big := "INVITE sip:x SIP/2.0\r\nX: " + strings.Repeat("a", MaxMessageBytes) // no end of headers
	f.Add(Record{PID: 2, SSL: 1, Dir: DirWrite, Data: []byte(big)})
	f.Add(Record{PID: 3, SSL: 1, Dir: DirWrite, Len: MaxCopy + 1, Data: []byte(invite), Truncated: true})
	st := f.Stats()
	if st.Evicted != 7 || st.Streams != MaxStreams || st.Oversized != 1 || st.Gaps != 1 || len(*out) != 0 {
		t.Fatalf("stats %+v, %d messages", st, len(*out))
	}
}

// FuzzFramer: any sequence of calls, on few streams, never panics, and the
// tables stay within their bounds.
func FuzzFramer(f *testing.F) {
	f.Add([]byte(invite+ok200), uint8(3))
	f.Add([]byte(reqBody), uint8(0))
	f.Add([]byte("\r\n\r\nINVITE sip:a SIP/2.0\r\nl: 99999999999999999999\r\n\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, split uint8) {
		fr := NewFramer(packet.SinkFunc(func(p *packet.Packet) {
			if len(p.Payload) > MaxMessageBytes+1<<14 {
				t.Fatalf("a %d-byte message", len(p.Payload))
			}
		}))
		step := int(split%64) + 1
		for i := 0; i < len(b); i += step {
			c := b[i:min(i+step, len(b))]
			fr.Add(Record{PID: uint32(i % 3), SSL: uint64(split % 2), Dir: i % 2, Len: uint32(len(c)), Data: c, Truncated: split == 255})
		}
		if st := fr.Stats(); st.Streams > MaxStreams {
			t.Fatalf("%d streams", st.Streams)
		}
	})
}
