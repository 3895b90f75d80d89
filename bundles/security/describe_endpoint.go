package security

import (
	"context"
	"net/netip"
	"strings"
	"time"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/endpoint"
	"github.com/sipnab/sipnab/core/media"
	"github.com/sipnab/sipnab/sdk"
)

// describeEndpointSchemaVersion is describe_endpoint's response schema
// version.
const describeEndpointSchemaVersion = 1

// byUserNote is what the findings block says for a user: findings are
// filed against source addresses.
const byUserNote = "findings are filed against source addresses: describe the endpoint by ip to select them"

type describeEndpointIn struct {
	IP    string `json:"ip,omitempty" desc:"endpoint address; matches any message to or from it (exactly one of ip, user)"`
	User  string `json:"user,omitempty" desc:"SIP URI user part, matched exactly against From/To users (exactly one of ip, user)"`
	Limit int    `json:"limit,omitempty" default:"50" desc:"bounds recent_dialogs, problem_call_ids and user_agents; 0 means 50, clamped to --mcp-max-rows"`
}

// EndpointCalls are the endpoint's INVITE outcomes.
type EndpointCalls struct {
	Invites         int `json:"invites" desc:"INVITE dialogs"`
	WithFinalStatus int `json:"with_final_status" desc:"of those, with a final response"`
	Failed          int `json:"failed" desc:"of those, ended 4xx-6xx"`
	// FailureRatePct is failed over with_final_status; null when none had
	// a final status.
	FailureRatePct *float64       `json:"failure_rate_pct" desc:"failed / with_final_status, percent; null when unmeasured"`
	ByFinalStatus  map[string]int `json:"by_final_status" desc:"INVITE dialogs per final status code"`
}

// EndpointRegistration is the endpoint's REGISTER activity.
type EndpointRegistration struct {
	// Applicable is false when no dialog of the endpoint carried a
	// REGISTER request: the zeros below are then unmeasured, not clean.
	Applicable bool `json:"applicable" desc:"a dialog carried a REGISTER request; false: the zeros are unmeasured"`
	Dialogs    int  `json:"dialogs" desc:"dialogs carrying a REGISTER request (whatever method opened them)"`
	Requests   int  `json:"requests" desc:"REGISTER transactions captured"`
	Succeeded  int  `json:"succeeded" desc:"dialogs where a REGISTER got a 2xx"`
	Failed     int  `json:"failed" desc:"dialogs with a registration_failure (rejected, shortened expiry, auth loop)"`
	AuthLoops  int  `json:"auth_loops" desc:"dialogs challenged in a loop"`
	// ProblemCallIDs are the failed or looping dialogs, for
	// diagnose_registration; at most limit.
	ProblemCallIDs        []string `json:"problem_call_ids" nonnull:"true" desc:"failed or looping REGISTER dialogs (diagnose_registration), at most limit"`
	ProblemCallIDsOmitted int      `json:"problem_call_ids_omitted,omitempty" desc:"problem dialogs past limit"`
}

// Banner is one banner the endpoint wrote.
type Banner struct {
	Header string `json:"header" enum:"User-Agent|Server" desc:"User-Agent (requests) or Server (responses)"`
	Value  string `json:"value" desc:"banner, fenced"`
	Count  int    `json:"count" desc:"messages carrying it"`
}

// StackFingerprint is which library built the endpoint's requests.
type StackFingerprint struct {
	BranchCookie  string `json:"branch_cookie,omitempty" desc:"top Via branch cookie (z9hG4bK plus a known extension)"`
	BranchShape   string `json:"branch_shape,omitempty" enum:"uuid|as-hex|hex|other" desc:"shape after the cookie"`
	TagShape      string `json:"tag_shape,omitempty" enum:"uuid|as-hex|hex|other" desc:"shape of the From tag"`
	CallIDHasHost *bool  `json:"callid_has_host,omitempty" desc:"the Call-ID carries @host"`
	// Inference names a library, never a product; absent unless two
	// observations agree and no other library fits as well.
	Inference string `json:"inference,omitempty" enum:"pjproject|chan_sip" desc:"library (never a product); needs 2 agreeing observations"`
	// Confidence counts the agreeing observations (0-3).
	Confidence   int  `json:"confidence" desc:"observations agreeing with inference, 0-3"`
	RequestsRead int  `json:"requests_read" desc:"requests read (responses echo the request's tokens)"`
	Mixed        bool `json:"mixed" desc:"the endpoint's requests disagreed about a shape"`
}

// EndpointStreams is the RTP attributed to the endpoint.
type EndpointStreams struct {
	Count         int      `json:"count" desc:"streams to or from the address (ip) or of the user's dialogs"`
	Orphaned      int      `json:"orphaned" desc:"of those, tied to no dialog"`
	Packets       uint64   `json:"packets" desc:"RTP packets"`
	LostPackets   int64    `json:"lost_packets" desc:"packets lost (RFC 3550 A.3)"`
	MaxJitterMs   *float64 `json:"max_jitter_ms" desc:"worst jitter, ms; null when none measured"`
	Codecs        []string `json:"codecs" nonnull:"true" desc:"codec names, fenced"`
	CodecsDropped int      `json:"codecs_dropped,omitempty" desc:"codec names past the 64 kept"`
}

// EndpointFindings is what security detectors recorded about the endpoint.
type EndpointFindings struct {
	// Selectable: findings are filed against a source address, so a user
	// selects none.
	Selectable bool `json:"selectable" desc:"findings can be selected for this endpoint (ip only)"`
	// Findings are the held findings about the address, newest first
	// (security_findings' rows), at most limit.
	Findings     []FindingRow `json:"findings" nonnull:"true" desc:"findings about the address, newest first (security_findings rows)"`
	TotalMatched int          `json:"total_matched" desc:"findings matching"`
	ArmedKinds   []string     `json:"armed_kinds" nonnull:"true" desc:"detectors armed"`
	// DetectionArmed is false when nothing was watching.
	DetectionArmed bool   `json:"detection_armed" desc:"a detector was armed and running"`
	Note           string `json:"note,omitempty" desc:"why the list may be empty or partial"`
}

// ContactObservation is what the endpoint's first REGISTER's Contact said
// against where the REGISTER came from.
type ContactObservation struct {
	ContactHost        string `json:"contact_host,omitempty" desc:"Contact URI host[:port]; absent for * or none"`
	ContactHostPrivate *bool  `json:"contact_host_private,omitempty" desc:"host is a private address; absent for a domain name"`
	SourcePublic       bool   `json:"source_public" desc:"the REGISTER came from a public address"`
	RewriteRequired    bool   `json:"rewrite_required" desc:"private Contact from a public source"`
}

// ContactRewrite settles the observation on later requests to the AoR.
type ContactRewrite struct {
	Observation ContactObservation `json:"observation" desc:"the REGISTER's Contact against its source"`
	// Verdict: rewritten, not-rewritten (a later request went to the
	// Contact host) or no-later-requests (open, not clean).
	Verdict           string `json:"verdict" enum:"rewritten|not-rewritten|no-later-requests" desc:"what later requests to the AoR did"`
	RequestsToContact int    `json:"requests_to_contact" desc:"later requests to the AoR sent to the Contact host"`
	RequestsToSource  int    `json:"requests_to_source" desc:"later requests to the AoR sent to the REGISTER's source"`
	// IsFinding: a rewrite was required and a later request went to the
	// private host. A private Contact alone is an observation.
	IsFinding bool `json:"is_finding" desc:"rewrite required and a later request went to the private host"`
}

// EndpointDescription is describe_endpoint's answer.
type EndpointDescription struct {
	EndpointKind     string         `json:"endpoint_kind" enum:"ip|user" desc:"selector used"`
	Endpoint         string         `json:"endpoint" desc:"selector value"`
	Dialogs          int            `json:"dialogs" desc:"dialogs the endpoint took part in"`
	ByMethod         map[string]int `json:"by_method" nonnull:"true" desc:"dialogs per opening method"`
	ByState          map[string]int `json:"by_state" nonnull:"true" desc:"dialogs per state"`
	MessagesSent     int            `json:"messages_sent" desc:"messages the address sent (0 for a user)"`
	MessagesReceived int            `json:"messages_received" desc:"messages sent to the address (0 for a user)"`
	// MessagesNotRead counts messages of its dialogs past the per-dialog
	// retention cap: the counts above cover the retained ones.
	MessagesNotRead    int                  `json:"messages_not_read,omitempty" desc:"messages past the retention cap, not read"`
	Calls              EndpointCalls        `json:"calls" desc:"INVITE outcomes"`
	Registration       EndpointRegistration `json:"registration" desc:"REGISTER activity, per dialog carrying a REGISTER request"`
	UserAgents         []Banner             `json:"user_agents" nonnull:"true" desc:"banners the endpoint wrote, most frequent first, at most limit"`
	UserAgentsDistinct int                  `json:"user_agents_distinct" desc:"distinct banners"`
	UserAgentsDropped  int                  `json:"user_agents_dropped,omitempty" desc:"banner messages past the 1024 tracked"`
	Stack              StackFingerprint     `json:"stack" desc:"SIP library read off request syntax"`
	Streams            EndpointStreams      `json:"streams" desc:"RTP attributed to the endpoint"`
	Findings           EndpointFindings     `json:"findings" desc:"security findings"`
	// ContactRewrite is absent when the endpoint sent no REGISTER.
	ContactRewrite *ContactRewrite `json:"contact_rewrite,omitempty" desc:"first REGISTER's Contact and what later requests did; absent without a REGISTER"`
	// RecentDialogs are the newest dialogs (updated_at), at most limit.
	RecentDialogs []dialog.Summary `json:"recent_dialogs" nonnull:"true" desc:"newest dialogs first, at most limit; from_user and to_user fenced"`
	Truncated     bool             `json:"truncated" desc:"more dialogs than recent_dialogs"`
	// UserAgentsOmitted counts banners past limit or the response ceiling.
	UserAgentsOmitted int `json:"user_agents_omitted,omitempty" desc:"banners past limit or --mcp-max-response-bytes"`
	sdk.SourceFlags
	CaptureIdentity sdk.CaptureIdentity `json:"capture_identity" desc:"capture the answer came from"`
	SchemaVersion   int                 `json:"schema_version" desc:"response schema version"`
}

func describeEndpointTool(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "describe_endpoint",
		Title: "Describe one endpoint",
		Description: "Everything one endpoint did, by ip (any message to or from it) or user (From/To, exact): dialogs by method and state, " +
			"call failure rate, registrations, banners, stack fingerprint, streams, private-Contact rewrite, newest dialogs.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "Everything one address did", Args: map[string]any{"ip": sampleIP}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "neither or both of ip and user"},
			{Code: sdk.CodeInvalidParams, When: "an ip that is not an address"},
		},
	}, func(ctx context.Context, c *sdk.Call, in describeEndpointIn) (EndpointDescription, error) {
		return describeEndpoint(ctx, d, c, in)
	})
}

func describeEndpoint(ctx context.Context, d *deps, c *sdk.Call, in describeEndpointIn) (EndpointDescription, error) {
	sel, err := endpoint.ParseSelector(in.IP, in.User)
	if err != nil {
		return EndpointDescription{}, sdk.InvalidParams("%v", err)
	}
	limit := c.Limit(in.Limit)
	src := answer.SourceState(d.capture.Status())
	var ms *media.Store
	if m := d.capture.Media(); m != nil {
		ms = m
	}
	r, err := endpoint.Describe(ctx, endpoint.Stores{Dialogs: d.capture.Dialogs(), Media: ms, Analysis: d.analysisOptions()}, sel, limit)
	if err != nil {
		return EndpointDescription{}, err
	}
	out := EndpointDescription{
		EndpointKind: r.Kind, Endpoint: r.Endpoint, Dialogs: r.Dialogs,
		ByMethod: make(map[string]int, len(r.ByMethod)), ByState: r.ByState,
		MessagesSent: r.MessagesSent, MessagesReceived: r.Received, MessagesNotRead: r.MessagesNotRead,
		Calls: EndpointCalls{
			Invites: r.Calls.Invites, WithFinalStatus: r.Calls.WithFinalStatus, Failed: r.Calls.Failed,
			FailureRatePct: r.Calls.FailureRatePct, ByFinalStatus: r.Calls.ByFinalStatus,
		},
		Registration: EndpointRegistration{
			Applicable: r.Registration.Applicable, Dialogs: r.Registration.Dialogs, Requests: r.Registration.Requests,
			Succeeded: r.Registration.Succeeded, Failed: r.Registration.Failed, AuthLoops: r.Registration.AuthLoops,
			ProblemCallIDs: r.Registration.ProblemCallIDs, ProblemCallIDsOmitted: r.Registration.ProblemCallIDsOmitted,
		},
		UserAgents: []Banner{}, UserAgentsDistinct: r.BannersDistinct, UserAgentsDropped: r.BannersDropped,
		Stack: StackFingerprint{
			BranchCookie: r.Stack.BranchCookie, BranchShape: r.Stack.BranchShape, TagShape: r.Stack.TagShape,
			CallIDHasHost: r.Stack.CallIDHasHost, Inference: r.Stack.Inference, Confidence: r.Stack.Confidence,
			RequestsRead: r.Stack.RequestsRead, Mixed: r.Stack.Mixed,
		},
		Streams: EndpointStreams{
			Count: r.Streams.Count, Orphaned: r.Streams.Orphaned, Packets: r.Streams.Packets, LostPackets: r.Streams.LostPackets,
			MaxJitterMs: r.Streams.MaxJitterMs, Codecs: answer.FenceAll(c, r.Streams.Codecs), CodecsDropped: r.Streams.CodecsDropped,
		},
		Findings:        endpointFindings(d, c, sel, in.IP, limit),
		RecentDialogs:   []dialog.Summary{},
		Truncated:       r.Truncated,
		SourceFlags:     src.Flags(),
		CaptureIdentity: src.Identity,
		SchemaVersion:   describeEndpointSchemaVersion,
	}
	if out.Registration.ProblemCallIDs == nil {
		out.Registration.ProblemCallIDs = []string{}
	}
	if out.Streams.Codecs == nil {
		out.Streams.Codecs = []string{}
	}
	for m, n := range r.ByMethod {
		out.ByMethod[answer.Unfenced(m)] += n
	}
	for i := 0; i < len(r.Banners) && i < limit; i++ {
		b := r.Banners[i]
		out.UserAgents = append(out.UserAgents, Banner{Header: b.Header, Value: c.Fence(b.Value), Count: b.Count})
	}
	if r.Contact != nil {
		cr := contactRewriteOut(*r.Contact)
		out.ContactRewrite = &cr
	}
	out.UserAgentsOmitted = len(r.Banners) - len(out.UserAgents)
	for _, id := range r.Recent {
		if row, ok := d.capture.Dialogs().Lookup(id); ok {
			out.RecentDialogs = append(out.RecentDialogs, answer.FencedRow(c, row))
		}
	}
	// The rows list_dialogs would show: an answered call still in
	// progress at capture end says so (ended false).
	d.querier().MarkInProgress(out.RecentDialogs)
	return fitDescription(c, out)
}

// fitDescription cuts the answer's three bounded lists (recent_dialogs,
// user_agents, problem_call_ids) to the longest common length that fits
// --mcp-max-response-bytes, saying what it left out (truncated and the
// omitted counts); every count above them still covers every match.
func fitDescription(c *sdk.Call, out EndpointDescription) (EndpointDescription, error) {
	recent, uas, ids := out.RecentDialogs, out.UserAgents, out.Registration.ProblemCallIDs
	build := func(k int) any {
		o := out
		o.RecentDialogs = recent[:min(k, len(recent))]
		o.Truncated = out.Truncated || k < len(recent)
		o.UserAgents = uas[:min(k, len(uas))]
		o.UserAgentsOmitted += len(uas) - len(o.UserAgents)
		o.Registration.ProblemCallIDs = ids[:min(k, len(ids))]
		o.Registration.ProblemCallIDsOmitted += len(ids) - len(o.Registration.ProblemCallIDs)
		return o
	}
	k, err := c.FitPage(max(len(recent), len(uas), len(ids)), 0, "dialog", build)
	if err != nil {
		return EndpointDescription{}, err
	}
	return build(k).(EndpointDescription), nil
}

// endpointFindings is the findings block: what the armed detectors
// recorded about the address (none for a user: findings are filed against
// addresses).
func endpointFindings(d *deps, c *sdk.Call, sel endpoint.Selector, ip string, limit int) EndpointFindings {
	det := d.capture.Detector()
	armed := det.Armed()
	out := EndpointFindings{
		Selectable: sel.Kind() == "ip", Findings: []FindingRow{}, ArmedKinds: append([]string{}, armed...),
		DetectionArmed: len(armed) > 0 && det.Disabled() == "", Note: armedNote(det, nil),
	}
	addr, err := netip.ParseAddr(ip)
	if !out.Selectable || err != nil {
		out.Note = strings.TrimPrefix(out.Note+"; "+byUserNote, "; ")
		return out
	}
	matched := selectFindings(det.Findings(), nil, time.Time{}, addr.Unmap())
	out.TotalMatched = len(matched)
	for i := 0; i < len(matched) && i < limit; i++ {
		out.Findings = append(out.Findings, findingRow(c, matched[i]))
	}
	return out
}

func contactObservationOut(o endpoint.ContactObservation) ContactObservation {
	return ContactObservation{
		ContactHost: answer.Unfenced(o.ContactHost), ContactHostPrivate: o.ContactHostPrivate,
		SourcePublic: o.SourcePublic, RewriteRequired: o.RewriteRequired,
	}
}

func contactRewriteOut(r endpoint.ContactRewrite) ContactRewrite {
	return ContactRewrite{
		Observation: contactObservationOut(r.Observation), Verdict: r.Verdict,
		RequestsToContact: r.RequestsToContact, RequestsToSource: r.RequestsToSource, IsFinding: r.IsFinding,
	}
}
