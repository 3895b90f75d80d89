package sip

import (
	"runtime"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/internal/benchload"
)

var benchRTP = func() []byte {
	b := []byte{0x80, 0x08, 0x12, 0x34, 0, 0, 0x1f, 0x40, 0x34, 0x3f, 0xfa, 0x34}
	for i := 0; i < 160; i++ {
		b = append(b, byte(0xd5^i))
	}
	return b
}()

var benchInvite = []byte(crlf(strings.Replace(inviteText, "Content-Length: 4\n\nv=0\n",
	"Content-Length: 129\n\nv=0\no=- 1 1 IN IP4 192.0.2.1\ns=-\nc=IN IP4 192.0.2.1\nt=0 0\nm=audio 4000 RTP/AVP 0 8 101\na=rtpmap:101 telephone-event/8000\n", 1)))

func BenchmarkLooksRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !Looks(benchInvite) {
			b.Fatal("not SIP")
		}
	}
}

func BenchmarkLooksStatus(b *testing.B) {
	msg := []byte("SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP h\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if !Looks(msg) {
			b.Fatal("not SIP")
		}
	}
}

func BenchmarkLooksRTP(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if Looks(benchRTP) {
			b.Fatal("RTP looks like SIP")
		}
	}
}

func BenchmarkLooksHTTP(b *testing.B) {
	msg := []byte("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if Looks(msg) {
			b.Fatal("HTTP looks like SIP")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchInvite)))
	for b.Loop() {
		if _, err := Parse(benchInvite); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseSignaling parses the messages of the signaling-only
// workload in capture order, one message per op, each into a new Message.
func BenchmarkParseSignaling(b *testing.B) {
	msgs := benchload.SignalingMessages(b)
	runtime.GC() // the workload generator's garbage is not this benchmark's
	b.ReportAllocs()
	cpu0 := benchload.CPUNow()
	defer func() { b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N), "cpu-ns/op") }()
	i := 0
	for b.Loop() {
		if _, err := Parse(msgs[i].Payload); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(msgs) {
			i = 0
		}
	}
}

// BenchmarkParserSignaling is BenchmarkParseSignaling with one reused
// Parser, as the capture engine parses: one allocation per message (its
// bytes), none per header.
func BenchmarkParserSignaling(b *testing.B) {
	msgs := benchload.SignalingMessages(b)
	ps := NewParser(Limits{})
	runtime.GC() // the workload generator's garbage is not this benchmark's
	b.ReportAllocs()
	cpu0 := benchload.CPUNow()
	defer func() { b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N), "cpu-ns/op") }()
	i := 0
	for b.Loop() {
		if _, err := ps.Parse(msgs[i].Payload); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(msgs) {
			i = 0
		}
	}
}

// BenchmarkRouteSignaling is what the capture engine does per SIP payload
// of the signaling workload: ask whether it is SIP, then parse it with a
// reused Parser; "again" looks for the start line a second time (Looks,
// Parse), "once" parses from where the Parser's Looks found it.
func BenchmarkRouteSignaling(b *testing.B) {
	msgs := benchload.SignalingMessages(b)
	for _, once := range []bool{false, true} {
		name := "again"
		if once {
			name = "once"
		}
		b.Run(name, func(b *testing.B) {
			ps := NewParser(Limits{})
			runtime.GC()
			b.ReportAllocs()
			cpu0 := benchload.CPUNow()
			defer func() { b.ReportMetric(float64(benchload.CPUNow()-cpu0)/float64(b.N), "cpu-ns/op") }()
			i := 0
			for b.Loop() {
				p := msgs[i].Payload
				looks := false
				if once {
					looks = ps.Looks(p)
				} else {
					looks = Looks(p)
				}
				if !looks {
					b.Fatal("not SIP")
				}
				if _, err := ps.Parse(p); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(msgs) {
					i = 0
				}
			}
		})
	}
}

// BenchmarkParserLooks is BenchmarkLooks* for Parser.Looks, the router's
// question: the same payloads, SIP and not.
func BenchmarkParserLooks(b *testing.B) {
	ps := NewParser(Limits{})
	for _, tc := range []struct {
		name string
		b    []byte
		sip  bool
	}{
		{"request", benchInvite, true},
		{"status", []byte("SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP h\r\n\r\n"), true},
		{"rtp", benchRTP, false},
		{"http", []byte("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n"), false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ps.Looks(tc.b) != tc.sip {
					b.Fatal("Looks is wrong")
				}
			}
		})
	}
}
