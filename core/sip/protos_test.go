package sip

import (
	"bufio"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestPROTOSMessages parses the SIP payloads of c07-sip-r2.cap (PROTOS SIP
// test-suite INVITEs with method tokens of up to several thousand bytes).
// The capture is a NetMon file the capture layer refuses, so its payloads
// were extracted once with
//
//	tshark -n -r c07-sip-r2.cap -Y sip -T fields -e udp.payload
//
// into testdata/c07-sip-r2.sip.hex. tshark counts 12 messages and 12
// Call-IDs, 0@localhost .. 12@localhost without 1@localhost.
func TestPROTOSMessages(t *testing.T) {
	f, err := os.Open("testdata/c07-sip-r2.sip.hex")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	callIDs := map[string]bool{}
	n, capped := 0, 0
	for sc.Scan() {
		b, err := hex.DecodeString(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatal(err)
		}
		if !Looks(b) {
			t.Errorf("payload %d: Looks false: %q", n, b[:min(len(b), 60)])
			continue
		}
		m, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		n++
		callIDs[m.CallID] = true
		if !m.IsRequest || strings.Trim(strings.ToLower(m.Method), "a") != "" && m.Method != "INVITE" {
			t.Errorf("payload %d: method %q", n, m.Method)
		}
		if len(m.Method) > MaxMethodBytes {
			t.Errorf("payload %d: method of %d bytes, cap %d", n, len(m.Method), MaxMethodBytes)
		}
		if slices.Contains(m.Malformed, MalMethodLimit) {
			capped++
		}
		checkRanges(t, m)
	}
	if n != 12 {
		t.Errorf("messages: got %d, want 12", n)
	}
	// tshark's method column: tokens of 6 (INVITE), 9, 17, 33, 65, 127, 128,
	// 255, 513, 1270, 2049 and 4099 bytes; nine pass MaxMethodBytes.
	if capped != 9 {
		t.Errorf("messages flagged %q: got %d, want 9", MalMethodLimit, capped)
	}
	for _, id := range []string{"0@localhost", "2@localhost", "3@localhost", "4@localhost", "5@localhost", "6@localhost",
		"7@localhost", "8@localhost", "9@localhost", "10@localhost", "11@localhost", "12@localhost"} {
		if !callIDs[id] {
			t.Errorf("Call-ID %q missing", id)
		}
	}
	if len(callIDs) != 12 {
		t.Errorf("Call-IDs: got %d, want 12", len(callIDs))
	}
}
