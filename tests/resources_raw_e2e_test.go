package tests

import (
	"testing"

	"github.com/sipnab/sipnab/internal/testcap"
)

// TestRawCallIDURIsResolveE2E: sipnab://live/dialogs/<Call-ID> with the
// Call-ID as it appears on the wire (its @ and other reserved characters
// not percent-encoded) reads the same page as the encoded URI, under the
// URI the client sent; subscribing to it is accepted.
func TestRawCallIDURIsResolveE2E(t *testing.T) {
	s := startRaw(t, "-N", "--mcp", "-I", testcap.Public("sip-proxy.pcap"))
	s.waitLoaded()
	m, _ := s.ok("list_dialogs", map[string]any{"fields": []string{"call_id"}})
	rows := m["dialogs"].([]any)
	if len(rows) == 0 {
		t.Fatal("no dialogs")
	}
	checked := 0
	for _, r := range rows {
		id := r.(map[string]any)["call_id"].(string)
		if id == rfc6570(id) {
			continue // nothing to encode
		}
		checked++
		encoded := s.mustText("sipnab://live/dialogs/" + rfc6570(id))
		raw := s.mustText("sipnab://live/dialogs/" + id) // resText checks the answer names this URI
		if raw != encoded {
			t.Errorf("%s: the raw URI reads\n%s\nthe encoded one\n%s", id, raw, encoded)
		}
		if a := s.rpc("resources/subscribe", map[string]any{"uri": "sipnab://live/dialogs/" + id}); a.Error != nil {
			t.Errorf("%s: subscribing to the raw URI: %+v", id, a.Error)
		}
	}
	if checked == 0 {
		t.Fatal("no Call-ID with a reserved character: the test checked nothing")
	}
}
