package sip

// Methods lists the 14 SIP methods of the IANA registry, alphabetically.
// Any other token method parses as a custom method.
var Methods = []string{
	"ACK", "BYE", "CANCEL", "INFO", "INVITE", "MESSAGE", "NOTIFY",
	"OPTIONS", "PRACK", "PUBLISH", "REFER", "REGISTER", "SUBSCRIBE", "UPDATE",
}

// IsStandardMethod reports whether method (upper case, as Message.Method
// holds it) is one of the 14 IANA methods.
func IsStandardMethod(method string) bool {
	switch method {
	case "ACK", "BYE", "CANCEL", "INFO", "INVITE", "MESSAGE", "NOTIFY",
		"OPTIONS", "PRACK", "PUBLISH", "REFER", "REGISTER", "SUBSCRIBE", "UPDATE":
		return true
	}
	return false
}

// statusPhrases is the IANA "Response Codes" registry of
// https://www.iana.org/assignments/sip-parameters (75 codes: the 50 of
// RFC 3261 §21 and 25 registered by later RFCs), with canonical phrases.
var statusPhrases = map[int]string{
	100: "Trying",
	180: "Ringing",
	181: "Call Is Being Forwarded",
	182: "Queued",
	183: "Session Progress",
	199: "Early Dialog Terminated", // RFC 6228
	200: "OK",
	202: "Accepted (Deprecated)", // RFC 6665 deprecates it
	204: "No Notification",       // RFC 5839
	300: "Multiple Choices",
	301: "Moved Permanently",
	302: "Moved Temporarily",
	305: "Use Proxy",
	380: "Alternative Service",
	400: "Bad Request",
	401: "Unauthorized",
	402: "Payment Required",
	403: "Forbidden",
	404: "Not Found",
	405: "Method Not Allowed",
	406: "Not Acceptable",
	407: "Proxy Authentication Required",
	408: "Request Timeout",
	410: "Gone",
	412: "Conditional Request Failed", // RFC 3903
	413: "Request Entity Too Large",
	414: "Request-URI Too Long",
	415: "Unsupported Media Type",
	416: "Unsupported URI Scheme",
	417: "Unknown Resource-Priority", // RFC 4412
	420: "Bad Extension",
	421: "Extension Required",
	422: "Session Interval Too Small", // RFC 4028
	423: "Interval Too Brief",
	424: "Bad Location Information",         // RFC 6442
	425: "Bad Alert Message",                // RFC 8876
	428: "Use Identity Header",              // RFC 8224
	429: "Provide Referrer Identity",        // RFC 3892
	430: "Flow Failed",                      // RFC 5626
	433: "Anonymity Disallowed",             // RFC 5079
	436: "Bad Identity Info",                // RFC 8224
	437: "Unsupported Credential",           // RFC 8224
	438: "Invalid Identity Header",          // RFC 8224
	439: "First Hop Lacks Outbound Support", // RFC 5626
	440: "Max-Breadth Exceeded",             // RFC 5393
	469: "Bad Info Package",                 // RFC 6086
	470: "Consent Needed",                   // RFC 5360
	480: "Temporarily Unavailable",
	481: "Call/Transaction Does Not Exist",
	482: "Loop Detected",
	483: "Too Many Hops",
	484: "Address Incomplete",
	485: "Ambiguous",
	486: "Busy Here",
	487: "Request Terminated",
	488: "Not Acceptable Here",
	489: "Bad Event", // RFC 6665
	491: "Request Pending",
	493: "Undecipherable",
	494: "Security Agreement Required", // RFC 3329
	500: "Server Internal Error",
	501: "Not Implemented",
	502: "Bad Gateway",
	503: "Service Unavailable",
	504: "Server Time-out",
	505: "Version Not Supported",
	513: "Message Too Large",
	555: "Push Notification Service Not Supported", // RFC 8599
	580: "Precondition Failure",                    // RFC 3312
	600: "Busy Everywhere",
	603: "Decline",
	604: "Does Not Exist Anywhere",
	606: "Not Acceptable",
	607: "Unwanted", // RFC 8197
	608: "Rejected", // RFC 8688
}

// StatusText returns the canonical reason phrase of a response code and
// whether the code is in the IANA registry. For an unregistered code in
// 100..699 the phrase is its class's generic name ("Unknown failure"); "" for
// a code outside 100..699. Reason phrases on the wire are free text: match on
// the code, never on the phrase.
func StatusText(code int) (phrase string, registered bool) {
	if p, ok := statusPhrases[code]; ok {
		return p, true
	}
	switch code / 100 {
	case 1:
		return "Unknown provisional", false
	case 2:
		return "Unknown success", false
	case 3:
		return "Unknown redirection", false
	case 4, 5, 6:
		return "Unknown failure", false
	}
	return "", false
}

// Status classes returned by StatusClass.
const (
	ClassProvisional = "provisional" // 1xx: in progress, not final
	ClassSuccess     = "success"     // 2xx
	ClassRedirect    = "redirect"    // 3xx
	ClassChallenge   = "challenge"   // 401, 407: authentication asked, usually retried
	ClassCanceled    = "canceled"    // 487: the request was canceled (CANCEL or replaced)
	ClassDeclined    = "declined"    // 486, 600, 603, 607, 608: the called party refused
	ClassFailure     = "failure"     // every other 4xx, 5xx, 6xx
	ClassInvalid     = "invalid"     // outside 100..699
)

// StatusClass classifies a response code for diagnosis.
//
// "declined" groups the final answers by which the called party, or a service
// acting for it, refused the call on purpose, as opposed to a fault of the
// network or of a server: 486 Busy Here, 600 Busy Everywhere, 603 Decline,
// 607 Unwanted and 608 Rejected. "challenge" is 401/407 (a credential is
// asked; a UAC normally retries) and "canceled" is 487 Request Terminated.
// Codes outside 100..699 are "invalid".
func StatusClass(code int) string {
	switch code {
	case 401, 407:
		return ClassChallenge
	case 487:
		return ClassCanceled
	case 486, 600, 603, 607, 608:
		return ClassDeclined
	}
	switch code / 100 {
	case 1:
		return ClassProvisional
	case 2:
		return ClassSuccess
	case 3:
		return ClassRedirect
	case 4, 5, 6:
		return ClassFailure
	}
	return ClassInvalid
}
