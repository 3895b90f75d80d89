package capture

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// benchRead reads every frame of a public capture held in memory.
func benchRead(b *testing.B, name string, gzipped bool) {
	raw, err := os.ReadFile(testcap.Public(name))
	if err != nil {
		b.Fatal(err)
	}
	if gzipped {
		raw = gz(b, raw)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(raw), Options{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkReadPcap(b *testing.B)       { benchRead(b, "SIP_CALL_RTP_G711", false) }
func BenchmarkReadPcapng(b *testing.B)     { benchRead(b, "sipp-branch-scenario.pcapng", false) }
func BenchmarkReadPcapngGzip(b *testing.B) { benchRead(b, "sipp-branch-scenario.pcapng", true) }
