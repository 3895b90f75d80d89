package signaling

import (
	"context"

	"github.com/sipnab/sipnab/core/sip"
	"github.com/sipnab/sipnab/sdk"
)

type explainResponseCodeIn struct {
	Code int `json:"code" min:"100" max:"699" desc:"SIP status code"`
}

// ResponseCodeExplanation is explain_response_code's answer. It reads no
// capture, so it carries no source flags.
type ResponseCodeExplanation struct {
	// Code is the status code asked about.
	Code int `json:"code" desc:"the status code"`
	// Class groups codes by what they mean for a call.
	Class string `json:"class" enum:"provisional|success|redirect|challenge|canceled|declined|failure" desc:"what the code means for a call"`
	// Phrase is the registry's reason phrase; for an unregistered code, the
	// generic name of its class. Phrases on the wire are free text: match
	// on the code.
	Phrase string `json:"phrase" desc:"registry reason phrase (generic class name when unregistered)"`
	// Explanation says what the code means and where to look next.
	Explanation string `json:"explanation" desc:"what the code means and what to check"`
	// Registered is true when the code is in the IANA SIP Response Codes
	// registry.
	Registered bool `json:"registered" desc:"the code is in the IANA registry"`
	// Reference names the specification that defines the code; absent for
	// an unregistered code.
	Reference string `json:"reference,omitempty" desc:"defining specification"`
}

// codeText is one registry entry's explanation.
type codeText struct {
	ref, text string
}

// responseCodeTexts explains every code of the IANA "Response Codes"
// registry (sip.StatusText lists the same 75). The words are sipnab's own.
var responseCodeTexts = map[int]codeText{
	100: {"RFC 3261 §21.1.1", "The next hop received the request and is working on it. Sent hop by hop (usually by a proxy or the callee's server) to stop the sender retransmitting an INVITE; it says nothing about the callee. Its delay from the INVITE is the trying delay."},
	180: {"RFC 3261 §21.1.2", "The callee is being alerted. The time from the INVITE to the first 180 or 183 is the post-dial delay; many callers play local ringback on it."},
	181: {"RFC 3261 §21.1.3", "A proxy or the callee's server is forwarding the call elsewhere (call forwarding). Informational; the call continues."},
	182: {"RFC 3261 §21.1.4", "The callee is temporarily unavailable and the call has been queued rather than rejected (e.g. a call center queue)."},
	183: {"RFC 3261 §21.1.5", "Call progress information; usually carries SDP for early media (ringback, announcements from the network). If the caller hears nothing, check whether this SDP was answered and whether RTP flowed before the 200."},
	199: {"RFC 6228", "An early dialog created by a forked 1xx was terminated before the final response: one branch of a forked call gave up while others may continue."},
	200: {"RFC 3261 §21.2.1", "The request succeeded. For an INVITE the call is answered and must be acknowledged with an ACK; for BYE the call has ended; for REGISTER the binding was accepted (check the granted Expires)."},
	202: {"RFC 3265, RFC 6665", "The request was accepted for processing but not yet completed (REFER, and formerly SUBSCRIBE). Deprecated by RFC 6665 for subscriptions; the outcome arrives later, e.g. in a NOTIFY."},
	204: {"RFC 5839", "The subscription succeeded but no NOTIFY will be sent because the notifier's state matches the entity tag the subscriber already holds."},
	300: {"RFC 3261 §21.3.1", "The target resolves to several locations, listed in Contact headers; the caller (or its proxy) should pick one and retry."},
	301: {"RFC 3261 §21.3.2", "The user is no longer at the Request-URI; the Contact header gives the new address, which the caller may remember."},
	302: {"RFC 3261 §21.3.3", "The user is temporarily at the address in the Contact header; retry there for this call only. Common from redirect servers and call forwarding."},
	305: {"RFC 3261 §21.3.4", "The request must go through the proxy named in the Contact header. Deprecated for security reasons: a UA should not obey it blindly."},
	380: {"RFC 3261 §21.3.5", "The call could not be completed as requested, but alternative services are possible; the response body describes them."},
	400: {"RFC 3261 §21.4.1", "The request could not be understood: malformed syntax, a missing mandatory header or a bad value. The reason phrase or a Warning header often names the faulty header; lint_dialog or validate_message can find it."},
	401: {"RFC 3261 §21.4.2", "A user agent server or registrar asks for credentials (WWW-Authenticate). Normally the client retries with an Authorization header; repeated 401s mean wrong credentials, a realm mismatch or a client that never answers the challenge."},
	402: {"RFC 3261 §21.4.3", "Reserved for future use (payment required); in practice some servers send it for prepaid or billing failures."},
	403: {"RFC 3261 §21.4.4", "The server understood the request and refuses it; retrying with credentials will not help. Typical causes: the caller is not allowed this destination, an IP or account block, or credentials that authenticated but are not authorized."},
	404: {"RFC 3261 §21.4.5", "The user does not exist at the domain in the Request-URI: a wrong number or user, a missing registration, or a routing table without the destination."},
	405: {"RFC 3261 §21.4.6", "The method is known to the server but not allowed for this address; the Allow header lists what is."},
	406: {"RFC 3261 §21.4.7", "The resource can only produce responses whose content the request's Accept headers rule out."},
	407: {"RFC 3261 §21.4.8", "A proxy asks for credentials (Proxy-Authenticate). As with 401, the client normally retries with Proxy-Authorization; repeated 407s point to wrong credentials or a realm mismatch."},
	408: {"RFC 3261 §21.4.9", "No final response arrived in time (Timer B/F); often generated by a proxy for an unreachable or silent next hop, not by the callee. Not a delivery to the callee: look for retransmissions without replies and ICMP errors."},
	410: {"RFC 3261 §21.4.10", "The user existed at this server but is no longer reachable and no forwarding address is known."},
	412: {"RFC 3903", "A conditional request (PUBLISH with SIP-If-Match) failed because the entity tag no longer matches the server's state; the publisher should publish afresh."},
	413: {"RFC 3261 §21.4.11", "The request body is larger than the server will process; with UDP also check fragmentation and the MTU."},
	414: {"RFC 3261 §21.4.12", "The Request-URI is longer than the server will interpret."},
	415: {"RFC 3261 §21.4.13", "The body's format (Content-Type or Content-Encoding) is not supported; Accept, Accept-Encoding or Accept-Language list what is."},
	416: {"RFC 3261 §21.4.14", "The Request-URI scheme (e.g. tel:, sips:) is not supported by the server."},
	417: {"RFC 4412", "The Resource-Priority header names a namespace or priority value the server does not know."},
	420: {"RFC 3261 §21.4.15", "The request requires an extension (Require or Proxy-Require) the server does not support; the Unsupported header names it. Common with 100rel or timer requirements."},
	421: {"RFC 3261 §21.4.16", "The server needs an extension the client did not list in Supported (named in the response's Require header), e.g. 100rel for reliable provisional responses."},
	422: {"RFC 4028", "The Session-Expires interval is smaller than the server's minimum; the Min-SE header gives it and the client should retry with a larger value."},
	423: {"RFC 3261 §21.4.17", "The requested expiry (REGISTER or SUBSCRIBE Expires) is shorter than the server allows; Min-Expires gives the minimum to retry with."},
	424: {"RFC 6442", "The location information conveyed (Geolocation) was malformed or not acceptable to the server."},
	425: {"RFC 8876", "The alerting information in the request (Alert-Info / an alert message body for emergency calls) was not acceptable."},
	428: {"RFC 8224", "The server requires an Identity header (STIR/SHAKEN) and the request carried none."},
	429: {"RFC 3892", "The referee needs a valid Referred-By token to act on the REFER, and none was provided."},
	430: {"RFC 5626", "A SIP outbound flow to the user agent failed; the edge proxy could not use the registered connection, so the UA should re-register the flow."},
	433: {"RFC 5079", "The server refuses anonymous requests; the caller hid its identity (privacy) and the callee's policy does not accept that."},
	436: {"RFC 8224", "The identity information (the certificate referenced by the Identity header) could not be fetched or used."},
	437: {"RFC 8224", "The credential behind the Identity header is of an unsupported kind, or is not valid for the claimed identity."},
	438: {"RFC 8224", "The Identity header signature did not verify (wrong signature, stale date or altered signed fields): a STIR/SHAKEN verification failure."},
	439: {"RFC 5626", "The first hop (edge proxy) does not support SIP outbound, although the request asked for it."},
	440: {"RFC 5393", "The request would fork to more branches than the Max-Breadth header allows; a defense against forking amplification."},
	469: {"RFC 6086", "An INFO request used an Info Package the receiver did not indicate support for (Recv-Info)."},
	470: {"RFC 5360", "The target has not consented to receive requests relayed by this server (consent framework); permission must be obtained first."},
	480: {"RFC 3261 §21.4.18", "The callee's end system was reached but the user is currently unavailable: not registered, do-not-disturb or logged out. Counts as delivered for NER."},
	481: {"RFC 3261 §21.4.19", "The request refers to a dialog or transaction the server does not know: a BYE, re-INVITE or CANCEL that arrived after the server forgot the call, a mismatched tag or Call-ID, or a restart in between."},
	482: {"RFC 3261 §21.4.20", "The server received the request with its own address already in the Via path: a routing loop between proxies."},
	483: {"RFC 3261 §21.4.21", "Max-Forwards reached zero: the request went through too many hops, usually a routing loop."},
	484: {"RFC 3261 §21.4.22", "The Request-URI is incomplete, e.g. too few digits dialled (overlap dialling)."},
	485: {"RFC 3261 §21.4.23", "The Request-URI matches several users; the response may list candidates in Contact."},
	486: {"RFC 3261 §21.4.24", "The callee was reached and is busy at this end system. The called party declined on purpose, not a network fault."},
	487: {"RFC 3261 §21.4.25", "The request was terminated by a CANCEL (or replaced) before it completed: normally the caller hung up while it was ringing."},
	488: {"RFC 3261 §21.4.26", "The session description in the request is not acceptable here: no common codec, an unsupported transport (e.g. RTP/SAVP versus RTP/AVP), a disabled stream or an unusable address. A Warning header often says which; compare the offer with check_codec_negotiation and get_sdp_timeline."},
	489: {"RFC 6665", "The SUBSCRIBE or NOTIFY named an event package the server does not support."},
	491: {"RFC 3261 §21.4.27", "Another request (usually a re-INVITE or UPDATE) is already pending in the same dialog: offer/answer glare. Each side should retry after a random delay."},
	493: {"RFC 3261 §21.4.28", "The request carried an encrypted (S/MIME) body the server cannot decrypt."},
	494: {"RFC 3329", "The server requires a security agreement (Security-Client/Security-Server negotiation) before accepting requests."},
	500: {"RFC 3261 §21.5.1", "The server hit an unexpected condition (a crash, a script error, a failed dependency). Retry-After may say when to try again."},
	501: {"RFC 3261 §21.5.2", "The server does not implement the method at all, for any address."},
	502: {"RFC 3261 §21.5.3", "A gateway or proxy got an invalid response from the next hop it contacted."},
	503: {"RFC 3261 §21.5.4", "The server is temporarily overloaded or in maintenance; Retry-After may give a delay. A proxy may also send it when no next hop is available (e.g. a trunk down)."},
	504: {"RFC 3261 §21.5.5", "A gateway or proxy did not get a timely response from the next server (or DNS) it tried."},
	505: {"RFC 3261 §21.5.6", "The server does not support the SIP version in the request."},
	513: {"RFC 3261 §21.5.7", "The message is larger than the server can process; with UDP consider switching to TCP."},
	555: {"RFC 8599", "The request asked for a push notification service the server does not support."},
	580: {"RFC 3312", "A required precondition (e.g. QoS resource reservation) could not be met, so the session cannot be established."},
	600: {"RFC 3261 §21.6.1", "The callee was reached and is busy everywhere; no other location will accept the call. The called party declined on purpose."},
	603: {"RFC 3261 §21.6.2", "The callee explicitly declined the call and does not want it retried elsewhere."},
	604: {"RFC 3261 §21.6.3", "The user does not exist anywhere: authoritative information that the Request-URI is invalid."},
	606: {"RFC 3261 §21.6.4", "The callee was reached but some aspect of the session description (media, bandwidth, addressing) is acceptable nowhere; a Warning header may say which."},
	607: {"RFC 8197", "The called party marked the call as unwanted (e.g. spam); the network may use this to build call-blocking reputation."},
	608: {"RFC 8688", "An intermediary (not the callee) rejected the call, for instance an analytics or robocall filter; a Call-Info header may point to a way to contest it."},
}

// classTexts explains an unregistered code by its class.
var classTexts = map[int]string{
	1: "An unregistered provisional (1xx) code: the request is still being processed. Treat it like 183 without SDP semantics unless the sender documents it; it is never final.",
	2: "An unregistered success (2xx) code: the request succeeded. A receiver must treat it like 200 OK (RFC 3261 §8.1.3.2).",
	3: "An unregistered redirection (3xx) code: the target is elsewhere, possibly listed in Contact. A receiver must treat it like 300 Multiple Choices.",
	4: "An unregistered client-error (4xx) code: the request was wrong or refused for this server. A receiver must treat it like 400 Bad Request; the reason phrase and any Warning header say more.",
	5: "An unregistered server-error (5xx) code: the server failed to process a valid request. A receiver must treat it like 500 Server Internal Error.",
	6: "An unregistered global-failure (6xx) code: the request cannot succeed at any server. A receiver must treat it like 600 Busy Everywhere.",
}

// ExplainResponseCode explains one SIP status code: every registered code in
// its own words, an unregistered one by its class. A code outside 100..699
// is an invalid-params error.
func ExplainResponseCode(code int) (ResponseCodeExplanation, error) {
	if code < 100 || code > 699 {
		return ResponseCodeExplanation{}, sdk.InvalidParams("code %d is out of range: SIP status codes run from 100 to 699", code)
	}
	phrase, registered := sip.StatusText(code)
	out := ResponseCodeExplanation{Code: code, Class: sip.StatusClass(code), Phrase: phrase, Registered: registered}
	if t, ok := responseCodeTexts[code]; ok && registered {
		out.Explanation, out.Reference = t.text, t.ref
	} else {
		out.Explanation = classTexts[code/100]
	}
	return out, nil
}

func explainResponseCodeTool(*deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:        "explain_response_code",
		Title:       "Explain a SIP response code",
		Description: "What a SIP status code (100-699) means, its class and registry phrase, and what to check next.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples: []sdk.Example{
			{Title: "What 488 means", Args: map[string]any{"code": 488}},
		},
		Refusals: []sdk.Refusal{
			{Code: sdk.CodeInvalidParams, When: "a code outside 100 to 699"},
		},
	}, func(ctx context.Context, c *sdk.Call, in explainResponseCodeIn) (ResponseCodeExplanation, error) {
		return ExplainResponseCode(in.Code)
	})
}
