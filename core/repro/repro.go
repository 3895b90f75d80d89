// Package repro writes a SIPp scenario that replays the UAC side of one
// captured call to test a stated hypothesis (engine.md §16).
//
// # The hypothesis
//
// The caller names what it suspects: the aspects to pin (kept as captured)
// and the identity aspects to vary (regenerated per call by SIPp keywords).
// Every aspect ends in exactly one of four lists:
//
//   - pinned: written as captured (branch, call_id, cseq, headers,
//     request_uri, sdp, tags, user_agent);
//   - varied: a SIPp keyword per call ([branch], [call_id], a tag of
//     [pid]SIPpTag00[call_number]); only these three can vary, because
//     varying needs a generator and SIPp has none for SDP or a User-Agent;
//   - generated: a value of sipnab's own, the same on every run (CSeq 1,
//     a Request-URI of [service]@[remote_ip], a plain PCMU offer, a fixed
//     branch, Call-ID or tag);
//   - omitted: not written (the captured extension headers, the
//     User-Agent, a body that is not SDP).
//
// Identity aspects vary by default: replaying a captured Call-ID, tag and
// branch at a proxy is, to its transaction layer, a retransmission of a call
// it already answered. An aspect both pinned and varied is refused, because
// a scenario that silently picked one would encode a theory nobody stated.
// A pinned body brings its Content-Type: the aspect pins bytes, and the
// label must describe them.
//
// # What is replayed
//
// The opening request of the call's first INVITE leg (else of its first
// leg), as sent by the UAC (the source of that request; other hops of a
// proxy are ignored), each attempt of it after a 401/407 challenge
// (credentials from SIPp's -au/-ap through [authentication]), the responses
// it received (every observed provisional optional, the final mandatory),
// the ACK, a CANCEL and a BYE as the capture shows them. The asserted final
// status is what the UAC received; SIPp exits 0 only when the run reaches it.
//
// # Control characters and XML
//
// Control characters (and bidi controls) are stripped from every captured
// value written into the scenario, never escaped: a SIP header has no
// escape for them, and a CR or LF would start a new header in an artifact
// the operator runs against their own proxy. The message text sits in a
// CDATA section; the characters SIPp or XML would read as syntax are
// written as SIPp's \xHH escapes ('[' opens a SIPp keyword, '\' an escape,
// "]]>" would close the CDATA, a line's leading blank is trimmed by SIPp),
// and so are bytes that are not UTF-8, so a pinned value reaches the wire
// byte for byte. The fence code points U+27E6/U+27E7 are written as the
// escapes of their UTF-8 bytes too: the scenario travels unfenced in an MCP
// answer and must hold no marker a sender could forge. A caveat names the
// pinned aspects whose bytes the sender wrote.
package repro

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
)

// Aspects a hypothesis can name.
const (
	Branch     = "branch"
	CallID     = "call_id"
	CSeq       = "cseq"
	Headers    = "headers"
	RequestURI = "request_uri"
	SDP        = "sdp"
	Tags       = "tags"
	UserAgent  = "user_agent"
)

// Aspects lists every aspect, in the order the hypothesis lists them.
var Aspects = []string{Branch, CallID, CSeq, Headers, RequestURI, SDP, Tags, UserAgent}

// Varyable lists the aspects SIPp can regenerate per call.
var Varyable = []string{Branch, CallID, Tags}

// MaxAttempts bounds the challenged attempts replayed (an auth loop).
const MaxAttempts = 5

// MaxPauseMs caps the pause before a BYE the UAC sends (-d in the run line).
const MaxPauseMs = 3600 * 1000

// TimerBMs is how long the scenario waits for a final response (RFC 3261
// Timer B, 64*T1).
const TimerBMs = 32000

// ErrInput is wrapped by every error the caller can fix (bad aspects, a
// call that holds nothing to replay).
var ErrInput = errors.New("invalid repro request")

func inputErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, a...))
}

// Options state the hypothesis.
type Options struct {
	// Pin lists the aspects kept as captured.
	Pin []string
	// Vary lists the aspects SIPp regenerates per call; nil means every
	// varyable aspect not pinned.
	Vary []string
	// ScenarioFile names the scenario in the run line ("repro.xml" when
	// empty).
	ScenarioFile string
}

// Hypothesis says where every aspect went.
type Hypothesis struct {
	Pinned    []string `json:"pinned" desc:"aspects kept as captured"`
	Varied    []string `json:"varied" desc:"aspects regenerated per call by SIPp keywords"`
	Generated []string `json:"generated" desc:"aspects written with sipnab's own fixed values"`
	Omitted   []string `json:"omitted" desc:"aspects not written"`
}

// Asserted is what the scenario expects back.
type Asserted struct {
	// Provisional lists the provisional codes the UAC received (each
	// optional in the scenario; 100 is always accepted).
	Provisional []int `json:"provisional" desc:"provisional codes observed (optional in the scenario)"`
	// Challenges lists the 401/407 answers the UAC received before its
	// retries, in order.
	Challenges []int `json:"challenges,omitempty" desc:"401/407 challenges replayed before the retries"`
	// Final is the final status of the last attempt; absent when the
	// capture holds none (the scenario then asserts that none arrives
	// within Timer B).
	Final *int `json:"final,omitempty" desc:"final status the run must reach; absent when none was captured"`
}

// Result is a generated scenario.
type Result struct {
	Hypothesis Hypothesis
	Asserted   Asserted
	// Method is the replayed request's method.
	Method string
	// Scenario is the SIPp XML.
	Scenario string
	// Run is the sipp command line.
	Run string
	// Caveats say where the replay differs from the capture.
	Caveats []string
	// Stripped counts the control and bidi characters removed.
	Stripped int
}

// attempt is one sending of the opening request.
type attempt struct {
	req      *dialog.Message
	prov     []int
	provAt   time.Time // the last provisional before any CANCEL
	final    *dialog.Message
	cancel   *dialog.Message
	cancelTo []int // responses to the CANCEL
	ack      *dialog.Message
}

// flow is what the UAC side of the call did.
type flow struct {
	uac      netip.AddrPort
	method   string
	attempts []*attempt
	bye      *dialog.Message // BYE after a 2xx
	byeUAC   bool            // the UAC sent it
	byeResp  int             // final response to it (0 = none seen)
	lateBye  bool            // a BYE after a failure (not replayed)
	inDialog int             // other in-dialog requests not replayed
	answered time.Time       // 2xx arrival
}

// Generate writes the scenario for one call.
func Generate(det *dialog.Detail, o Options) (Result, error) {
	h, err := hypothesis(o)
	if err != nil {
		return Result{}, err
	}
	f, err := extract(det)
	if err != nil {
		return Result{}, err
	}
	g := &gen{h: h, f: f, pinned: set(h.Pinned), varied: set(h.Varied)}
	return g.render(o)
}

func set(l []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range l {
		m[x] = true
	}
	return m
}

// hypothesis sorts every aspect into its list.
func hypothesis(o Options) (Hypothesis, error) {
	known, vary := set(Aspects), set(Varyable)
	pin := map[string]bool{}
	for _, a := range o.Pin {
		if !known[a] {
			return Hypothesis{}, inputErr("unknown aspect %q in pin: the aspects are %s", a, strings.Join(Aspects, ", "))
		}
		pin[a] = true
	}
	varied, vr := map[string]bool{}, o.Vary
	if vr == nil {
		for _, a := range Varyable {
			if !pin[a] {
				varied[a] = true
			}
		}
	}
	for _, a := range vr {
		switch {
		case !known[a]:
			return Hypothesis{}, inputErr("unknown aspect %q in vary: only %s can vary", a, strings.Join(Varyable, ", "))
		case !vary[a]:
			return Hypothesis{}, inputErr("aspect %q cannot vary: only %s can (varying needs a generator, and SIPp has none for %s)",
				a, strings.Join(Varyable, ", "), a)
		case pin[a]:
			return Hypothesis{}, inputErr("aspect %q is both pinned and varied: say which, a scenario that silently picked one would encode a theory nobody stated", a)
		}
		varied[a] = true
	}
	h := Hypothesis{Pinned: []string{}, Varied: []string{}, Generated: []string{}, Omitted: []string{}}
	for _, a := range Aspects {
		switch {
		case pin[a]:
			h.Pinned = append(h.Pinned, a)
		case varied[a]:
			h.Varied = append(h.Varied, a)
		case a == Headers || a == UserAgent:
			h.Omitted = append(h.Omitted, a)
		default:
			h.Generated = append(h.Generated, a) // sdp may move to omitted once the body is known
		}
	}
	return h, nil
}
