package capture

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/testcap"
)

type truthFile struct {
	Frames int `json:"frames"`
	File   struct {
		FileType      string `json:"file_type"`
		Encapsulation string `json:"encapsulation"`
	} `json:"file"`
}

var encapLinkType = map[string]uint16{"ether": 1, "null": 0, "linux-sll": 113}

// TestPublicCaptures opens every real capture: pcap and pcapng files read to
// a clean end with tshark's frame count and link type, also when gzipped;
// NetMon files are refused with the format named.
func TestPublicCaptures(t *testing.T) {
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatalf("listing public captures: %v", err)
	}
	if len(names) < 30 {
		t.Fatalf("found %d public captures, want at least 30", len(names))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			tf := testcap.LoadTruth[truthFile](t, name)
			path := testcap.Public(name)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Open(path)
			if tf.File.FileType == "netmon2" {
				if !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "Microsoft NetMon 2.x") || !strings.Contains(err.Error(), name) {
					t.Fatalf("got %v, want a refusal naming Microsoft NetMon 2.x and the file", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("opening: %v", err)
			}
			defer r.Close()
			if got := r.Format().String(); got != tf.File.FileType {
				t.Fatalf("got format %s, want %s", got, tf.File.FileType)
			}
			wantLT, ok := encapLinkType[tf.File.Encapsulation]
			if !ok {
				t.Fatalf("no link type known for encapsulation %q", tf.File.Encapsulation)
			}
			n := 0
			for {
				f, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("frame %d: %v", n+1, err)
				}
				n++
				if f.LinkType != wantLT {
					t.Fatalf("frame %d: got link type %d, want %d", n, f.LinkType, wantLT)
				}
				if f.InvalidTS {
					t.Fatalf("frame %d: timestamp flagged unusable", n)
				}
			}
			if n != tf.Frames {
				t.Fatalf("got %d frames, want %d (tshark)", n, tf.Frames)
			}
			// the same bytes gzipped
			got, _, err := readAll(t, gz(t, raw), Options{})
			if err != nil || len(got) != tf.Frames {
				t.Fatalf("gzipped: got %d frames, error %v; want %d", len(got), err, tf.Frames)
			}
		})
	}
}

// TestPublicTimestamps checks first and last frame times against tshark's
// frame.time_epoch (tshark -r FILE -T fields -e frame.time_epoch).
func TestPublicTimestamps(t *testing.T) {
	cases := []struct {
		name        string
		first, last string
		firstLen    int
	}{
		{"sip_call.pcap", "1700000000.000000000", "1700000060.100000000", 380},
		{"b2bua-asterisk.pcapng", "1463595783.881485000", "1463595811.065741000", 728},
		{"speech_8k_ulaw.pcap", "0.000000000", "16.680000000", 216},
		{"h263-over-rtp.pcap", "1208261984.291540000", "1208261985.768136000", 971},
		{"sipp-branch-scenario.pcapng", "1479419555.303348707", "1479419688.603277042", 330},
		{"SIP_CALL_RTP_G711", "1105725482.965944000", "1105725517.874679000", 740},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(testcap.Public(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var first, last time.Time
			firstLen := 0
			for {
				f, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if first.IsZero() && f.Ordinal == 1 {
					first, firstLen = f.TS, len(f.Data)
				}
				last = f.TS
			}
			if got := epoch(first); got != tc.first {
				t.Errorf("first frame at %s, want %s", got, tc.first)
			}
			if got := epoch(last); got != tc.last {
				t.Errorf("last frame at %s, want %s", got, tc.last)
			}
			if firstLen != tc.firstLen {
				t.Errorf("first frame has %d bytes, want %d", firstLen, tc.firstLen)
			}
		})
	}
}

func epoch(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
