package media

import (
	"context"
	"net/netip"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/core/sdptimeline"
	"github.com/sipnab/sipnab/sdk"
)

// explainAttributionSchemaVersion is explain_attribution's response schema
// version.
const explainAttributionSchemaVersion = 1

// Delivery trust readings (mcp-surface.md §3.5): how far the claim that
// named an endpoint can be believed, from the run's configured posture.
const (
	TrustAsked            = "asked"              // sipnab asked the relay itself
	TrustHMACVerified     = "hmac-verified"      // a relay's claim delivered under HEP HMAC
	TrustPlainSecret      = "plain-secret"       // a relay's claim delivered under a HEP shared secret
	TrustPortGatedOnly    = "port-gated-only"    // a relay's claim believed for its port alone
	TrustNotRelayAsserted = "not-relay-asserted" // named by the call's own SDP, not by a relay
)

type explainAttributionIn struct {
	CallID string `json:"call_id" desc:"Call-ID, verbatim"`
}

// ExplainAttribution is explain_attribution's answer: every media endpoint
// the call's SDP named, which message named it, how that message reached
// sipnab and what the run's ingest posture makes of it.
type ExplainAttribution struct {
	CallID    string               `json:"call_id" desc:"Call-ID asked about, verbatim"`
	Endpoints []AttributedEndpoint `json:"endpoints" nonnull:"true" desc:"media endpoints the call's SDP named, first naming first"`
	// EndpointsOmitted counts the endpoints left out to fit the response
	// byte cap (--mcp-max-response-bytes); truncated is true then.
	EndpointsOmitted int   `json:"endpoints_omitted,omitempty" desc:"endpoints left out to fit the response byte cap"`
	Truncated        *bool `json:"truncated,omitempty" desc:"true when endpoints were left out to fit the byte cap"`
	// Unauthenticated lists, of the endpoints listed, those whose naming
	// message reached sipnab with no authentication: every one, unless a
	// HEP listener with an authentication hook delivered it.
	Unauthenticated []string `json:"unauthenticated_endpoints" nonnull:"true" desc:"ip:port of the listed endpoints whose naming message reached sipnab unauthenticated"`
	// Posture is the run's HEP ingest, as configured (empty: no listener).
	Posture []engine.HEPIngest `json:"hep_ingest" nonnull:"true" desc:"the run's HEP listeners and their admission checks; empty: none"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

// AttributedEndpoint is one media endpoint and its attribution.
type AttributedEndpoint struct {
	Address string `json:"address" desc:"IP address the SDP named"`
	Port    int    `json:"port" desc:"m= port"`
	// AssertedBy is the first message whose SDP named the endpoint.
	AssertedBy Assertion `json:"asserted_by" desc:"the first message whose SDP named the endpoint"`
	// Namings counts the SDP bodies of the call that named it.
	Namings int `json:"namings" desc:"SDP bodies of the call that named it"`
	// InputOrigin is how the naming message reached sipnab: wire (a file
	// or a live interface), hep, uprobe or turn (core/packet.Origin).
	InputOrigin string    `json:"input_origin,omitempty" desc:"how the naming message reached sipnab: wire, hep, uprobe or turn"`
	ObservedAt  time.Time `json:"observed_at" desc:"capture time of the naming message"`
	// RTPSeen: a stream of the call was sent from or to the endpoint.
	RTPSeen       bool   `json:"rtp_seen" desc:"a stream of the call used it"`
	DeliveryTrust string `json:"delivery_trust" enum:"asked|hmac-verified|plain-secret|port-gated-only|not-relay-asserted" desc:"what the claim is worth; not-relay-asserted: the call's own SDP named it"`
	DeliveryNote  string `json:"delivery_note" desc:"how the naming message reached sipnab and what was checked"`
}

// Assertion is the message that named an endpoint.
type Assertion struct {
	Kind string `json:"kind" enum:"signaled|media-relay" desc:"signaled: a SIP SDP"`
	// Frame is the evidence pointer; absent when the message was not kept.
	Frame        string `json:"frame,omitempty" desc:"evidence pointer of the naming message"`
	MessageIndex *int   `json:"message_index,omitempty" desc:"index of the naming message in the dialog"`
	Transaction  string `json:"transaction,omitempty" desc:"INVITE, re-INVITE, UPDATE, PRACK, ACK or another method"`
	StatusCode   int    `json:"status_code,omitempty" desc:"response code, when a response carried the SDP"`
	Direction    string `json:"direction,omitempty" enum:"offer|answer" desc:"offer or answer (RFC 3264)"`
	Sender       string `json:"sender,omitempty" desc:"ip:port the naming message came from"`
}

func explainAttributionTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "explain_attribution",
		Title: "Who named a call's media endpoints",
		Description: "Each media endpoint of a call: the message whose SDP named it (frame), how that message reached sipnab, " +
			"and the delivery trust the run's HEP ingest posture allows; unauthenticated_endpoints lists the rest.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Who named each media endpoint of a call", Args: map[string]any{"call_id": sampleCallID}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "an empty call_id"},
			answer.UnknownCallRefusal,
			{Code: sdk.CodeInvalidParams, When: "--mcp-max-response-bytes too small for one endpoint (more endpoints than fit are left out, counted in endpoints_omitted)"},
		},
	}, func(ctx context.Context, c *sdk.Call, in explainAttributionIn) (ExplainAttribution, error) {
		out, aps, err := explainAttribution(d, in.CallID)
		if err != nil {
			return out, err
		}
		build := func(k int) ExplainAttribution {
			o := out
			o.Endpoints = out.Endpoints[:k]
			o.Unauthenticated = []string{}
			for i, ap := range aps[:k] {
				if !authenticatedDelivery(out.Endpoints[i], out.Posture) {
					o.Unauthenticated = append(o.Unauthenticated, ap.String())
				}
			}
			if k < len(out.Endpoints) {
				t := true
				o.EndpointsOmitted, o.Truncated = len(out.Endpoints)-k, &t
			}
			return o
		}
		k, err := c.FitPage(len(out.Endpoints), 0, "endpoint", func(k int) any { return build(k) })
		if err != nil {
			return ExplainAttribution{}, err
		}
		return build(k), nil
	})
}

// explainAttribution builds the whole answer and the endpoints' addresses,
// in order; the handler fits it to the byte cap.
func explainAttribution(d *deps, callID string) (ExplainAttribution, []netip.AddrPort, error) {
	if callID == "" {
		return ExplainAttribution{}, nil, sdk.Refuse(sdk.KindMissingArgument, "call_id", "call_id is required: give a Call-ID from list_dialogs")
	}
	src := answer.SourceState(d.capture.Status())
	det, ok := d.capture.Dialogs().Get(callID)
	if !ok {
		return ExplainAttribution{}, nil, answer.UnknownCall("call_id", callID)
	}
	posture := d.capture.HEPIngest()
	out := ExplainAttribution{
		CallID:          callID,
		Endpoints:       []AttributedEndpoint{},
		Unauthenticated: []string{},
		Posture:         posture,
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
		SchemaVersion:   explainAttributionSchemaVersion,
	}
	used := map[netip.AddrPort]bool{}
	store := d.capture.Media()
	if store != nil {
		for _, s := range store.StreamsFor(callID) {
			for _, a := range []string{s.Src, s.Dst} {
				if ap, err := netip.ParseAddrPort(a); err == nil {
					used[ap] = true
				}
			}
		}
	}
	byIndex := make(map[int]*dialog.Message, len(det.Messages))
	for i := range det.Messages {
		byIndex[det.Messages[i].Index] = &det.Messages[i]
	}
	seen := map[netip.AddrPort]int{} // endpoint -> its index in out.Endpoints
	var aps []netip.AddrPort         // out.Endpoints' addresses, in order
	tl := sdptimeline.For(&det)
	for _, e := range tl.Exchanges {
		for _, st := range e.Streams {
			ap, ok := endpointOf(st.Addr, st.Port)
			if !ok {
				continue
			}
			if i, dup := seen[ap]; dup {
				out.Endpoints[i].Namings++
				continue
			}
			idx := e.MessageIndex
			ep := AttributedEndpoint{
				Address: ap.Addr().String(), Port: int(ap.Port()), Namings: 1, ObservedAt: e.Timestamp.UTC(), RTPSeen: used[ap],
				AssertedBy: Assertion{Kind: "signaled", Frame: e.Frame, MessageIndex: &idx, Transaction: answer.Unfenced(e.Transaction),
					StatusCode: e.StatusCode, Direction: e.Direction, Sender: e.Src.String()},
			}
			var origin packet.Origin
			var ref packet.FrameRef
			if m := byIndex[idx]; m != nil {
				origin, ref = m.Origin, m.Frame
			}
			trust(&ep, origin, ref, posture)
			seen[ap] = len(out.Endpoints)
			aps = append(aps, ap)
			out.Endpoints = append(out.Endpoints, ep)
		}
	}
	// Endpoints the stream store remembers from SDP bodies the dialog no
	// longer keeps (past the per-dialog retention cap).
	if store != nil {
		for _, e := range store.EndpointsFor(callID) {
			if _, dup := seen[e.AddrPort]; dup || !e.AddrPort.IsValid() {
				continue
			}
			dir := "answer"
			if e.Offer {
				dir = "offer"
			}
			ep := AttributedEndpoint{
				Address: e.AddrPort.Addr().String(), Port: int(e.AddrPort.Port()), Namings: 1, ObservedAt: e.At.UTC(), RTPSeen: used[e.AddrPort],
				AssertedBy: Assertion{Kind: "signaled", Direction: dir, Sender: e.Signaler},
			}
			trust(&ep, 0, packet.FrameRef{}, posture)
			ep.DeliveryNote = "the message that named it is past the dialog's message retention cap: how it reached sipnab is not known; " + ep.DeliveryNote
			seen[e.AddrPort] = len(out.Endpoints)
			aps = append(aps, e.AddrPort)
			out.Endpoints = append(out.Endpoints, ep)
		}
	}
	return out, aps, nil
}

// endpointOf parses an SDP stream's effective address and port: nothing
// for a disabled stream (port 0), a hold address (0.0.0.0) or a name.
func endpointOf(addr string, port int) (netip.AddrPort, bool) {
	if port <= 0 || port > 65535 {
		return netip.AddrPort{}, false
	}
	a, err := netip.ParseAddr(strings.TrimSpace(addr))
	if err != nil || a.IsUnspecified() {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}

// from names the source of a frame pointer, " (<source>)", or nothing.
func from(ref packet.FrameRef) string {
	if ref.IsZero() {
		return ""
	}
	return " (" + ref.Source + ")"
}

// listenerOf returns the HEP listener whose frames carry ref's source.
func listenerOf(ref packet.FrameRef, posture []engine.HEPIngest) (engine.HEPIngest, bool) {
	for _, l := range posture {
		if !ref.IsZero() && l.Name == ref.Source {
			return l, true
		}
	}
	return engine.HEPIngest{}, false
}

// authenticatedDelivery: the naming message came through a HEP listener
// whose authentication hook accepted it.
func authenticatedDelivery(ep AttributedEndpoint, posture []engine.HEPIngest) bool {
	if ep.InputOrigin != packet.OriginHEP.String() {
		return false
	}
	ref, err := packet.ParseFrameRef(ep.AssertedBy.Frame)
	if err != nil {
		return false
	}
	l, ok := listenerOf(ref, posture)
	return ok && l.Authenticated
}

// trust fills the endpoint's input origin, delivery trust and note. Every
// endpoint here was named by the call's own SDP: no media relay's control
// traffic is decoded or queried by this build, so the trust is
// not-relay-asserted and the note says how the SDP itself arrived, read
// from the run's posture (ingest refuses a datagram that fails a
// listener's checks, so everything a listener delivered passed them; with
// nothing configured, the weakest reading).
func trust(ep *AttributedEndpoint, origin packet.Origin, ref packet.FrameRef, posture []engine.HEPIngest) {
	ep.InputOrigin = origin.String()
	ep.DeliveryTrust = TrustNotRelayAsserted
	const named = "named by the call's own SDP, not by a media relay; SIP authenticates no media address it announces"
	switch origin {
	case packet.OriginWire:
		ep.DeliveryNote = named + "; the message was read off the wire" + from(ref) + ": whoever could send it could name this address"
	case packet.OriginHEP:
		l, ok := listenerOf(ref, posture)
		switch {
		case !ok:
			ep.DeliveryNote = named + "; the message came in a HEP envelope read off the wire" + from(ref) + ", which no listener of this run checked: its addresses are whatever the envelope's writer put there"
		case l.Authenticated:
			ep.DeliveryNote = named + "; the message came through HEP listener " + l.Name + ", whose authentication accepted every datagram it admitted"
		case l.Allowlisted:
			ep.DeliveryNote = named + "; the message came through HEP listener " + l.Name + ", which admits senders by source address only (--hep-allow): no shared secret or HMAC was checked"
		default:
			ep.DeliveryNote = named + "; the message came through HEP listener " + l.Name + " on loopback, with no allowlist and no authentication: any local process could have sent it"
		}
	case packet.OriginRelayed:
		ep.DeliveryNote = named + "; the message was relayed through a TURN server (RFC 8656) and read off the wire inside it"
	case packet.OriginUprobe:
		ep.DeliveryNote = named + "; the message was read from a TLS library in this host by a uprobe"
	default:
		ep.DeliveryNote = named
	}
}
