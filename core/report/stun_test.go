package report

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/stun"
	"github.com/sipnab/sipnab/internal/testcap"
)

// The run document of the coturn capture (testdata/stun/README.md) has a
// stun section; a capture without STUN has none (absent, not empty).
func TestTheRunDocumentCarriesTheSTUNSectionOnlyWhenThereWasSTUN(t *testing.T) {
	load := func(path string) *engine.Capture {
		c := engine.New(engine.Config{}, nil)
		if err := c.LoadFiles(context.Background(), []string{path}); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		return c
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, load(filepath.Join(testcap.Root(), "testdata", "stun", "turn-relayed-call.pcapng"))); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Run struct {
			STUN *stun.Stats `json:"stun"`
		} `json:"run"`
		STUN *stun.Report `json:"stun"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.STUN
	if r == nil || doc.Run.STUN == nil || doc.Run.STUN.Messages != 44 {
		t.Fatalf("no stun section or run.stun counts: %+v", doc.Run.STUN)
	}
	// tshark: 3 Allocate successes (two from turnutils_uclient, one from
	// turnrtp), 2 released with a Refresh of lifetime 0 (tshark -Y
	// 'stun.type.method==0x0004 && stun.type.class==0x10 &&
	// stun.att.lifetime==0': frames 51 and 171, and 52, an ICMP error
	// quoting 51), the third still active; the two
	// Bindings to 198.51.100.9 were 2 s before the capture's end, younger
	// than a client's 39.5 s wait: pending, not unanswered
	deleted := 0
	for _, a := range r.Allocations {
		if a.State == "deleted" && !a.Lapsed {
			deleted++
		}
	}
	if len(r.Allocations) != 3 || deleted != 2 || r.Allocations[0].State != "active" || r.UnansweredCount != 0 || r.Pending != 1 || len(r.ICE.Nominated) != 1 {
		t.Fatalf("got allocations %+v unanswered %d pending %d nominated %d", r.Allocations, r.UnansweredCount, r.Pending, len(r.ICE.Nominated))
	}
	if len(r.Software) != 1 || r.Software[0].Value != "Coturn-4.6.1 'Gorst'" {
		t.Fatalf("got software %+v", r.Software)
	}
	b.Reset()
	if err := WriteJSON(&b, load(testcap.Public("sip-rtp-g711.pcap"))); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte(`"stun"`)) {
		t.Fatal("a capture without STUN has a stun key")
	}
}
