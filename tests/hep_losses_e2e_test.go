package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/internal/heptest"
)

// TestHEPRefusalsAreReportedEverywhere: a HEP sender over its per-peer
// budget (--hep-rate-limit-per-peer 5) loses datagrams; the --json-run run
// names the listener's refusals by reason and what was lost
// (received = admitted + refused, incomplete reason hep_data_lost), the
// --report text says it in a line, and the log warns.
func TestHEPRefusalsAreReportedEverywhere(t *testing.T) {
	const sent = 60
	var msgs []heptest.Message
	for i := 0; i < sent; i++ {
		msgs = append(msgs, heptest.Message{Version: 3, Offset: time.Duration(i) * time.Millisecond,
			Text: fmt.Sprintf("OPTIONS sip:probe@example.net SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.10;branch=z9hG4bK-%d\r\nFrom: <sip:p@example.net>;tag=%d\r\nTo: <sip:probe@example.net>\r\nCall-ID: flood-%d\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n", i, i, i)})
	}
	for _, out := range []string{"--json-run", "--report"} {
		t.Run(out, func(t *testing.T) {
			addr := heptest.FreeAddr(t)
			r := bsStart(t, "-N", "-L", addr, "--hep-rate-limit-per-peer", "5", out)
			heptest.Send(t, addr, msgs)
			time.Sleep(300 * time.Millisecond) // a deadline for the reads, not a timing assertion
			if code := r.stop(t, os.Interrupt); code != 0 {
				t.Fatalf("exit %d: %s", code, r.stderr.String())
			}
			if !strings.Contains(r.stderr.String(), "HEP datagrams refused") {
				t.Errorf("no refusal warning in the log: %s", r.stderr.String())
			}
			if out == "--report" {
				if !strings.Contains(r.stdout.String(), "HEP listener hep:"+addr+": ") || !strings.Contains(r.stdout.String(), " refused (rate_limited ") {
					t.Errorf("the report does not name the refusals:\n%s", r.stdout.String())
				}
				return
			}
			var doc struct {
				Run struct {
					IncompleteReasons []string `json:"incomplete_reasons"`
					HEP               struct {
						Datagrams uint64 `json:"datagrams"`
						Listeners []struct {
							Name          string            `json:"name"`
							Received      uint64            `json:"received"`
							Admitted      uint64            `json:"admitted"`
							Refused       map[string]uint64 `json:"refused"`
							KernelDropped *uint64           `json:"kernel_dropped"`
							Lost          uint64            `json:"lost"`
						} `json:"listeners"`
					} `json:"hep"`
				} `json:"run"`
			}
			if err := json.Unmarshal([]byte(r.stdout.String()), &doc); err != nil {
				t.Fatalf("%v: %.300s", err, r.stdout.String())
			}
			if len(doc.Run.HEP.Listeners) != 1 {
				t.Fatalf("listeners %+v", doc.Run.HEP.Listeners)
			}
			l := doc.Run.HEP.Listeners[0]
			var kernel uint64
			if l.KernelDropped != nil {
				kernel = *l.KernelDropped
			}
			if l.Received+kernel != sent || l.Admitted+l.Refused["rate_limited"] != l.Received || l.Refused["rate_limited"] == 0 {
				t.Errorf("listener %+v: want %d sent = received + kernel drops, received = admitted + rate_limited", l, sent)
			}
			if l.Lost != l.Refused["rate_limited"]+kernel || doc.Run.HEP.Datagrams != l.Admitted {
				t.Errorf("lost %d, datagrams routed %d; listener %+v", l.Lost, doc.Run.HEP.Datagrams, l)
			}
			if !strings.Contains(strings.Join(doc.Run.IncompleteReasons, ","), "hep_data_lost") {
				t.Errorf("incomplete_reasons %v", doc.Run.IncompleteReasons)
			}
		})
	}
}
