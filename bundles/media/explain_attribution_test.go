package media

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/heplisten"
	"github.com/sipnab/sipnab/internal/heptest"
	"github.com/sipnab/sipnab/sdk"
)

// TestExplainAttributionNamesTheMessages checks each endpoint's naming
// message against tshark -Y sdp -T fields -e frame.number -e sip.Call-ID
// -e sip.Status-Code -e sdp.connection_info.address -e sdp.media.port:
//
//   - sip-rtp-g711.pcap, 1-1966@10.0.2.20: frame 1 (the INVITE) names
//     10.0.2.20:6000, frame 4 (its 200) names 10.0.2.15:27942; RTP used
//     both.
//   - codec-negotiation.pcap, 1-3685341@127.0.0.1: frames 1 and 308
//     (INVITE, re-INVITE) name 127.0.0.1:5084, frames 4 and 309 (their
//     200s) 127.0.0.1:5094 (SIP on port 5080: -d udp.port==5080,sip; the
//     test engine gates no port): each endpoint named twice, first by
//     frames 1 and 4.
//
// Every endpoint was named by the call's own SDP read off a file: trust
// not-relay-asserted, and each is unauthenticated.
func TestExplainAttributionNamesTheMessages(t *testing.T) {
	type want struct {
		endpoint    string
		frame       string // "<ordinal>"
		index       int
		status      int
		direction   string
		namings     int
		transaction string
	}
	for _, tc := range []struct {
		file, callID string
		endpoints    []want
	}{
		{"sip-rtp-g711.pcap", "1-1966@10.0.2.20", []want{
			{"10.0.2.20:6000", "1", 0, 0, "offer", 1, "INVITE"},
			{"10.0.2.15:27942", "4", 2, 200, "answer", 1, "INVITE"},
		}},
		{"codec-negotiation.pcap", "1-3685341@127.0.0.1", []want{
			{"127.0.0.1:5084", "1", 0, 0, "offer", 2, "INVITE"},
			{"127.0.0.1:5094", "4", 3, 200, "answer", 2, "INVITE"},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c := load(t, tc.file)
			var got ExplainAttribution
			call(t, explainAttributionTool(&deps{capture: c}), `{"call_id":`+quote(tc.callID)+`}`, &got)
			if len(got.Endpoints) != len(tc.endpoints) {
				t.Fatalf("got %d endpoints, want %d: %+v", len(got.Endpoints), len(tc.endpoints), got.Endpoints)
			}
			var unauth []string
			for i, w := range tc.endpoints {
				e := got.Endpoints[i]
				a := e.AssertedBy
				if ep := fmt.Sprintf("%s:%d", e.Address, e.Port); ep != w.endpoint {
					t.Errorf("endpoint %d: %s, want %s", i, ep, w.endpoint)
				}
				if !strings.HasPrefix(a.Frame, tc.file+"#"+w.frame+"@") || a.MessageIndex == nil || *a.MessageIndex != w.index ||
					a.StatusCode != w.status || a.Direction != w.direction || a.Kind != "signaled" || a.Transaction != w.transaction {
					t.Errorf("%s asserted_by %+v, want frame %s index %d status %d %s", w.endpoint, a, w.frame, w.index, w.status, w.direction)
				}
				if e.Namings != w.namings || !e.RTPSeen || e.InputOrigin != "wire" || e.ObservedAt.IsZero() {
					t.Errorf("%s: namings %d rtp_seen %v origin %q, want %d, true, wire", w.endpoint, e.Namings, e.RTPSeen, e.InputOrigin, w.namings)
				}
				if e.DeliveryTrust != TrustNotRelayAsserted || !strings.Contains(e.DeliveryNote, "read off the wire ("+tc.file+")") {
					t.Errorf("%s: trust %s note %q", w.endpoint, e.DeliveryTrust, e.DeliveryNote)
				}
				unauth = append(unauth, w.endpoint)
			}
			if fmt.Sprint(got.Unauthenticated) != fmt.Sprint(unauth) || len(got.Posture) != 0 {
				t.Errorf("unauthenticated %v posture %v, want %v and no HEP listener", got.Unauthenticated, got.Posture, unauth)
			}
		})
	}
}

// TestExplainAttributionReadsTheHEPPosture: an INVITE delivered by a HEP
// listener is read under that listener's configured admission: an
// authentication hook makes its endpoint authenticated; an allowlist alone
// or a bare loopback listener leaves it unauthenticated, the note naming
// which. The trust stays not-relay-asserted: the call's own SDP named it.
func TestExplainAttributionReadsTheHEPPosture(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         func(addr string) heplisten.Config
		authentic   bool
		noteHas     string
		allowlisted bool
	}{
		{"authentication hook", func(a string) heplisten.Config {
			return heplisten.Config{UDP: a, TCP: a, Authenticate: func([]byte) bool { return true }}
		}, true, "whose authentication accepted", false},
		{"allowlist only", func(a string) heplisten.Config {
			return heplisten.Config{UDP: a, TCP: a, Allow: []string{"127.0.0.0/8"}}
		}, false, "source address only (--hep-allow)", true},
		{"loopback, nothing checked", func(a string) heplisten.Config {
			return heplisten.Config{UDP: a, TCP: a}
		}, false, "no allowlist and no authentication", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := engine.New(engine.Config{Node: "test"}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l, err := c.StartHEP(ctx, tc.cfg(heptest.FreeAddr(t)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const id = "hep-attr-1@192.0.2.10"
			heptest.Send(t, l.UDPAddr().String(), []heptest.Message{{Version: 3, Text: strings.ReplaceAll(invite(id), "\n", "\r\n")}})
			deadline := time.Now().Add(10 * time.Second) // a bound on the wait, not an assertion on timing
			for {
				if _, ok := c.Dialogs().Lookup(id); ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the HEP-delivered INVITE never reached the dialog store")
				}
				time.Sleep(10 * time.Millisecond)
			}
			var got ExplainAttribution
			call(t, explainAttributionTool(&deps{capture: c}), `{"call_id":`+quote(id)+`}`, &got)
			if len(got.Endpoints) != 1 {
				t.Fatalf("got %d endpoints, want 1", len(got.Endpoints))
			}
			e := got.Endpoints[0]
			if e.Address != "192.0.2.10" || e.Port != 4000 || e.InputOrigin != "hep" || e.DeliveryTrust != TrustNotRelayAsserted ||
				!strings.Contains(e.DeliveryNote, tc.noteHas) || !strings.Contains(e.DeliveryNote, l.Name()) || !strings.HasPrefix(e.AssertedBy.Frame, l.Name()+"#1@") {
				t.Errorf("endpoint %+v", e)
			}
			if authenticated := len(got.Unauthenticated) == 0; authenticated != tc.authentic {
				t.Errorf("unauthenticated %v, want authenticated %v", got.Unauthenticated, tc.authentic)
			}
			if len(got.Posture) != 1 || got.Posture[0].Name != l.Name() || got.Posture[0].Authenticated != tc.authentic || got.Posture[0].Allowlisted != tc.allowlisted {
				t.Errorf("hep_ingest %+v", got.Posture)
			}
		})
	}
}

// TestExplainAttributionRefusals: an empty call_id is missing_argument, a
// Call-ID without a dialog unknown_id, both -32602.
func TestExplainAttributionRefusals(t *testing.T) {
	testCallIDRefusals(t, explainAttributionTool)
}

// TestExplainAttributionFitsTheByteCap: under --mcp-max-response-bytes
// 3000 rtp-protocol.pcap's call lists its first endpoint (the INVITE's,
// 10.33.6.101:6040) and counts the other; unauthenticated_endpoints
// covers the endpoints listed.
func TestExplainAttributionFitsTheByteCap(t *testing.T) {
	c := load(t, "rtp-protocol.pcap")
	lim := sdk.DefaultLimits()
	lim.MaxResponseBytes = 3000
	var got ExplainAttribution
	callWith(t, explainAttributionTool(&deps{capture: c}), `{"call_id":"1907983263271201083544@10.33.6.101"}`, lim, &got)
	if len(got.Endpoints) != 1 || got.EndpointsOmitted != 1 || got.Truncated == nil || !*got.Truncated ||
		fmt.Sprint(got.Unauthenticated) != "[10.33.6.101:6040]" {
		t.Errorf("3000 bytes: %d endpoints, %d omitted, truncated %v, unauthenticated %v", len(got.Endpoints), got.EndpointsOmitted, got.Truncated, got.Unauthenticated)
	}
}
