package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/heptest"
)

// TestFatBodyHEPFloodStaysWithinTheStoreBudget: 2,000 INVITEs carrying
// 60 KB bodies (120 MB) arrive over HEP/TCP with --max-store-mb 8. The
// store never holds more than 8 MiB, the oldest dialogs are evicted and
// counted (--json-run dialog_store.evicted_for_bytes, the report's line), and
// the process's peak resident memory stays far below the flood's size.
func TestFatBodyHEPFloodStaysWithinTheStoreBudget(t *testing.T) {
	const n, budgetMB = 2000, 8
	body := "v=0\r\n" + strings.Repeat("a=x-pad:0123456789abcdef0123456789abcdef0123456789abcdef012345\r\n", 60000/64)
	var msgs []heptest.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, heptest.Message{Version: 3, TCP: true, Offset: time.Duration(i) * time.Millisecond,
			Text: fmt.Sprintf("INVITE sip:bob@example.net SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10;branch=z9hG4bK-fat-%d\r\nFrom: <sip:alice@example.net>;tag=%d\r\nTo: <sip:bob@example.net>\r\nCall-ID: fat-%d\r\nCSeq: 1 INVITE\r\nContent-Type: application/sdp\r\nContent-Length: %d\r\n\r\n%s", i, i, i, len(body), body)})
	}
	for _, out := range []string{"--json-run", "--report"} {
		t.Run(out, func(t *testing.T) {
			addr := heptest.FreeAddr(t)
			r := bsStart(t, "-N", "-L", addr, "--max-store-mb", strconv.Itoa(budgetMB), "--count", strconv.Itoa(n), out)
			// VmHWM is monotonic: its last reading before exit is the
			// peak so far. (rusage's maxrss would also count the test
			// process's memory before exec.)
			var hwm atomic.Int64
			go func() {
				for {
					select {
					case <-r.exited:
						return
					case <-time.After(20 * time.Millisecond):
						if v := vmHWM(r.cmd.Process.Pid); v > 0 {
							hwm.Store(v)
						}
					}
				}
			}()
			heptest.Send(t, addr, msgs)
			if code := r.wait(t); code != 0 {
				t.Fatalf("exit %d: %s", code, r.stderr.String())
			}
			if h := hwm.Load(); h > 80<<20 {
				t.Errorf("peak RSS %d MiB for a %d MiB store budget (the flood is %d MiB)", h>>20, budgetMB, n*60000>>20)
			}
			if out == "--report" {
				if !strings.Contains(r.stdout.String(), fmt.Sprintf("The dialog store reached its byte budget (%d MiB, --max-store-mb): ", budgetMB)) {
					t.Errorf("the report does not say the byte budget evicted dialogs:\n%.2000s", r.stdout.String())
				}
				if !strings.Contains(r.stdout.String(), "evicted at the store's byte budget (--max-store-mb): their calls are not above") ||
					strings.Contains(r.stdout.String(), "evicted at the dialog cap") {
					t.Errorf("INCOMPLETE RUN must name the byte budget, not the dialog cap:\n%.2000s", r.stdout.String())
				}
				return
			}
			var doc struct {
				Run struct {
					SIPMessages       uint64   `json:"sip_messages"`
					IncompleteReasons []string `json:"incomplete_reasons"`
					Store             struct {
						Dialogs         uint64 `json:"dialogs"`
						Bytes           int64  `json:"held_bytes"`
						MaxBytes        int64  `json:"max_bytes"`
						Evicted         uint64 `json:"evicted"`
						EvictedForBytes uint64 `json:"evicted_for_bytes"`
					} `json:"dialog_store"`
				} `json:"run"`
			}
			if err := json.Unmarshal([]byte(r.stdout.String()), &doc); err != nil {
				t.Fatalf("%v: %.300s", err, r.stdout.String())
			}
			st := doc.Run.Store
			if doc.Run.SIPMessages != n || st.Dialogs+st.Evicted != n {
				t.Errorf("sip_messages %d, dialogs %d + evicted %d: want %d", doc.Run.SIPMessages, st.Dialogs, st.Evicted, n)
			}
			if st.MaxBytes != budgetMB<<20 || st.Bytes > st.MaxBytes || st.EvictedForBytes == 0 || st.EvictedForBytes != st.Evicted {
				t.Errorf("dialog_store %+v: want bytes within %d, every eviction for bytes", st, budgetMB<<20)
			}
			if !strings.Contains(strings.Join(doc.Run.IncompleteReasons, ","), "dialogs_evicted") {
				t.Errorf("incomplete_reasons %v", doc.Run.IncompleteReasons)
			}
		})
	}
}

// vmHWM reads a running process's peak resident set (VmHWM) in bytes; 0
// when /proc does not say.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
