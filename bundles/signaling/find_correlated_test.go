package signaling

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// Helpers shared by the correlation, report, message and ladder tests
// (prefixed "cr" to stay clear of the other signaling tools' tests).

// crLoad loads capture files into a new engine and waits for the load.
func crLoad(t testing.TB, paths ...string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, engine.Config{Node: "test-node"}, paths...)
}

// crInvoke provisions the bundle on a capture and calls one tool.
func crInvoke(t testing.TB, c *engine.Capture, name string, args any) (sdk.Reply, error) {
	t.Helper()
	tools, err := Bundle{}.Provision(context.Background(), sdk.NewEnv(sdk.EnvOptions{Services: []any{c}}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == name {
			return tl.Invoke(context.Background(), b, sdk.DefaultLimits())
		}
	}
	t.Fatalf("%s not provisioned", name)
	return sdk.Reply{}, nil
}

// crCall calls a tool that must succeed and decodes its first block into v.
func crCall(t testing.TB, c *engine.Capture, name string, args any, v any) sdk.Reply {
	t.Helper()
	r, err := crInvoke(t, c, name, args)
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(r.Blocks[0]), v); err != nil {
			t.Fatalf("%s: first block: %v\n%s", name, err, r.Blocks[0])
		}
	}
	return r
}

// crCode returns the JSON-RPC code of a tool error (0 for none).
func crCode(err error) int {
	if err == nil {
		return 0
	}
	return sdk.AsError(err).Code
}

// crUnfence strips the fence markers of one fenced field.
func crUnfence(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(s, sdk.FenceOpen), sdk.FenceClose)
}

// crPacket builds one SIP datagram for the router ("\n" become CRLF).
func crPacket(ts time.Time, src, dst, msg string) *packet.Packet {
	return &packet.Packet{
		TS: ts, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Transport: packet.TransportUDP, Origin: packet.OriginWire,
		Payload: []byte(strings.ReplaceAll(msg, "\n", "\r\n")),
	}
}

// crCallMessages are the INVITE, 200, ACK, BYE and 200 of one crafted call
// from a to b, with extra headers on the INVITE.
func crCallMessages(callID, a, b string, extra ...string) []struct{ src, dst, text string } {
	hdr := func(method string, cseq int, toTag string, ext []string) string {
		// The callee's user is the call's own (bob-<Call-ID>), so two
		// crafted calls are never tied by same_users unless a test says so.
		to := "<sip:bob-" + callID + "@example.com>"
		if toTag != "" {
			to += ";tag=" + toTag
		}
		h := fmt.Sprintf("Via: SIP/2.0/UDP %s;branch=z9hG4bK-%s-%s-%d\nFrom: \"Alice\" <sip:alice@example.com>;tag=a1\nTo: %s\nCall-ID: %s\nCSeq: %d %s\n",
			a, callID, method, cseq, to, callID, cseq, method)
		for _, e := range ext {
			h += e + "\n"
		}
		return h
	}
	return []struct{ src, dst, text string }{
		{a, b, "INVITE sip:bob@example.com SIP/2.0\n" + hdr("INVITE", 1, "", extra) + "Content-Length: 0\n\n"},
		{b, a, "SIP/2.0 200 OK\n" + hdr("INVITE", 1, "b1", nil) + "Content-Length: 0\n\n"},
		{a, b, "ACK sip:bob@example.com SIP/2.0\n" + hdr("ACK", 1, "b1", nil) + "Content-Length: 0\n\n"},
		{a, b, "BYE sip:bob@example.com SIP/2.0\n" + hdr("BYE", 2, "b1", nil) + "Content-Length: 0\n\n"},
		{b, a, "SIP/2.0 200 OK\n" + hdr("BYE", 2, "b1", nil) + "Content-Length: 0\n\n"},
	}
}

// crafted is one crafted call for crCapture.
type crafted struct {
	callID string
	at     time.Duration
	a, b   string
	extra  []string
}

var crT0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// crCapture feeds crafted calls to a new engine, in time order.
func crCapture(t testing.TB, calls ...crafted) *engine.Capture {
	t.Helper()
	type timed struct {
		at time.Time
		p  *packet.Packet
	}
	var all []timed
	for _, cl := range calls {
		for i, m := range crCallMessages(cl.callID, cl.a, cl.b, cl.extra...) {
			at := crT0.Add(cl.at + time.Duration(i)*time.Second)
			all = append(all, timed{at, crPacket(at, m.src, m.dst, m.text)})
		}
	}
	slices.SortStableFunc(all, func(x, y timed) int { return x.at.Compare(y.at) })
	c := engine.New(engine.Config{Node: "test-node"}, nil)
	for _, m := range all {
		c.HandlePacket(m.p)
	}
	return c
}

// crTshark runs tshark (skipping the test when it is not installed).
func crTshark(t testing.TB, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed")
	}
	out, err := exec.Command("tshark", args...).Output()
	if err != nil {
		t.Fatalf("tshark %v: %v", args, err)
	}
	return out
}

// wireMessage is one SIP message as tshark reads it.
type wireMessage struct {
	frame   int
	at      float64 // epoch seconds
	src     string
	dst     string
	callID  string
	method  string // requests
	status  int    // responses
	headers []string
	body    string
}

// header returns the values of the header lines with one of the names.
func (w *wireMessage) header(names ...string) []string {
	var out []string
	for _, h := range w.headers {
		name, value, _ := strings.Cut(h, ":")
		for _, n := range names {
			if strings.EqualFold(strings.TrimSpace(name), n) {
				out = append(out, strings.TrimSpace(value))
			}
		}
	}
	return out
}

// crWire reads every SIP message of a public capture with tshark, in frame
// order.
func crWire(t testing.TB, name string) []wireMessage {
	t.Helper()
	out := crTshark(t, "-r", testcap.Public(name), "-Y", "sip", "-T", "json",
		"-e", "frame.number", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "ip.dst", "-e", "ipv6.src", "-e", "ipv6.dst",
		"-e", "sip.Call-ID", "-e", "sip.Method", "-e", "sip.Status-Code", "-e", "sip.msg_hdr")
	var pkts []struct {
		Source struct {
			Layers map[string][]string `json:"layers"`
		} `json:"_source"`
	}
	if err := json.Unmarshal(out, &pkts); err != nil {
		t.Fatalf("tshark json: %v", err)
	}
	var msgs []wireMessage
	for _, p := range pkts {
		l := p.Source.Layers
		one := func(k string) string {
			if len(l[k]) == 0 {
				return ""
			}
			return l[k][0]
		}
		if len(l["sip.msg_hdr"]) != 1 {
			t.Fatalf("frame %s carries %d SIP messages; the comparison reads one per frame", one("frame.number"), len(l["sip.msg_hdr"]))
		}
		w := wireMessage{callID: one("sip.Call-ID"), method: one("sip.Method"), src: one("ip.src"), dst: one("ip.dst")}
		if w.src == "" {
			w.src, w.dst = one("ipv6.src"), one("ipv6.dst")
		}
		w.frame, _ = strconv.Atoi(one("frame.number"))
		w.at, _ = strconv.ParseFloat(one("frame.time_epoch"), 64)
		w.status, _ = strconv.Atoi(one("sip.Status-Code"))
		hdr, body, _ := strings.Cut(one("sip.msg_hdr"), "\r\n\r\n")
		w.body = body
		for _, line := range strings.Split(hdr, "\r\n") {
			if line != "" {
				w.headers = append(w.headers, line)
			}
		}
		msgs = append(msgs, w)
	}
	return msgs
}

// oracleLeg is what the tshark reading says about one pair of Call-IDs.
type oracleLeg struct {
	callID   string
	strategy string
	gapMs    int64
}

// crOracle applies the correlation rules to tshark's reading of a capture,
// independently of core/correlate: for every other Call-ID, the identifiers
// both share (Session-ID UUID halves, X-Call-ID naming, P-Charging-Vector,
// an SDP o= tuple with a non-zero sess-id, an INVITE Via branch) or, failing
// them, the timing rule (same family of opening method, a shared IP
// address, first messages within 2 s).
func crOracle(msgs []wireMessage, source string) []oracleLeg {
	type facts struct {
		first   float64
		method  string
		hosts   map[string]bool
		uuids   map[string]bool
		named   map[string]bool
		origins map[string]bool
		branch  map[string]bool
		icids   map[string]bool
	}
	by := map[string]*facts{}
	var order []string
	for i := range msgs {
		w := &msgs[i]
		f := by[w.callID]
		if f == nil {
			f = &facts{first: w.at, method: w.method, hosts: map[string]bool{}, uuids: map[string]bool{}, named: map[string]bool{},
				origins: map[string]bool{}, branch: map[string]bool{}, icids: map[string]bool{}}
			by[w.callID] = f
			order = append(order, w.callID)
		}
		f.hosts[w.src], f.hosts[w.dst] = true, true
		for _, v := range w.header("Session-ID") {
			local, params, _ := strings.Cut(v, ";")
			for _, u := range []string{local, strings.TrimPrefix(strings.TrimSpace(params), "remote=")} {
				if u = strings.ToLower(strings.TrimSpace(u)); len(u) == 32 && strings.Trim(u, "0") != "" {
					f.uuids[u] = true
				}
			}
		}
		for _, v := range w.header("X-Call-ID") {
			f.named[v] = true
		}
		for _, v := range w.header("P-Charging-Vector") {
			f.icids[v] = true
		}
		for _, line := range strings.Split(w.body, "\r\n") {
			if o, ok := strings.CutPrefix(line, "o="); ok {
				if p := strings.Fields(o); len(p) == 6 && strings.Trim(p[1], "0") != "" {
					f.origins[p[0]+" "+p[1]+" "+p[3]+" "+p[4]+" "+p[5]] = true
				}
			}
		}
		if w.method == "INVITE" {
			for _, v := range w.header("Via", "v") {
				for _, p := range strings.Split(v, ";") {
					if b, ok := strings.CutPrefix(strings.TrimSpace(p), "branch="); ok && len(b) >= 8 {
						f.branch[b] = true
					}
				}
			}
		}
	}
	family := func(m string) string {
		switch m {
		case "INVITE", "ACK", "BYE", "CANCEL", "PRACK":
			return "INVITE"
		case "SUBSCRIBE", "NOTIFY":
			return "SUBSCRIBE"
		case "REGISTER":
			return "REGISTER"
		}
		return "generic"
	}
	shares := func(a, b map[string]bool) bool {
		for k := range a {
			if b[k] {
				return true
			}
		}
		return false
	}
	src := by[source]
	var out []oracleLeg
	for _, id := range order {
		f := by[id]
		if id == source {
			continue
		}
		switch {
		case shares(src.uuids, f.uuids):
			out = append(out, oracleLeg{id, "session_id", 0})
		case src.named[id] || f.named[source] || shares(src.named, f.named):
			out = append(out, oracleLeg{id, "x_call_id", 0})
		case shares(src.icids, f.icids):
			out = append(out, oracleLeg{id, "charging_vector", 0})
		case shares(src.origins, f.origins):
			out = append(out, oracleLeg{id, "sdp_origin", 0})
		case shares(src.branch, f.branch):
			out = append(out, oracleLeg{id, "via_branch", 0})
		case family(src.method) == family(f.method) && shares(src.hosts, f.hosts) && math.Abs(f.first-src.first) <= 2:
			out = append(out, oracleLeg{id, "timing_heuristic", int64(math.Abs(f.first-src.first) * 1000)})
		}
	}
	return out
}

func TestFindCorrelatedOnPublicCaptures(t *testing.T) {
	cases := []struct {
		name    string
		capture string
		source  string
		// want is what reading the messages with tshark showed:
		// b2bua-asterisk.pcapng is Asterisk re-originating the call
		// (new Call-ID, tags, branches and SDP origin on the B leg), so
		// only the timing guess ties the legs: the A leg's INVITE (frame
		// 19, 12.038851 s) and the B leg's (frame 24, 12.042406 s) are
		// 3.555 ms apart and both talk to 172.16.98.101. sip-proxy.pcap is
		// a stateful proxy that kept the Call-ID: one dialog, no other leg.
		want          []string
		heuristicOnly bool
		// hop and hopEvidence: what a no-leg answer says of the hop.
		hop, hopEvidence string
	}{
		{"B2BUA A leg", "b2bua-asterisk.pcapng", "M2Q0ZDc1ZGM1NzIyMTlhZTA3NDU3NTgzMzA5YmJmZWQ.",
			[]string{"37686afc57ce24ac655742b3644a7bb8@172.16.98.101:5060 timing_heuristic 50 gap=3"}, true, "", ""},
		{"B2BUA B leg", "b2bua-asterisk.pcapng", "37686afc57ce24ac655742b3644a7bb8@172.16.98.101:5060",
			[]string{"M2Q0ZDc1ZGM1NzIyMTlhZTA3NDU3NTgzMzA5YmJmZWQ. timing_heuristic 50 gap=3"}, true, "", ""},
		{"B2BUA: two SUBSCRIBEs of one phone in the same millisecond are a guess", "b2bua-asterisk.pcapng", "uVLqPBHzonzafYtf4mb61g..",
			[]string{"wW4O8aPUVBylqQEYo_ROXg.. timing_heuristic 50 gap=0"}, true, "", ""},
		// One hop of a REGISTER: nothing shows a proxy, so none is claimed.
		{"B2BUA REGISTER: nothing", "b2bua-asterisk.pcapng", "NWVjMzY1YTgzYWY1MGQ3MTRiYjQ5ODFlNjMzY2NmNGE.",
			[]string{}, false, "unknown", ""},
		// Frames 1 and 3: the INVITE 10.33.6.101→10.33.6.102 with one Via,
		// then 10.33.6.102→10.33.6.100 with two.
		{"stateful proxy kept the Call-ID", "sip-proxy.pcap", "75104938772201062721@10.33.6.101",
			[]string{}, false, "proxy", "INVITE CSeq 1 seen on two hops: 10.33.6.101:5060→10.33.6.102:5080 with 1 Via (frame sip-proxy.pcap#1@"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := crLoad(t, testcap.Public(tc.capture))
			var got FindCorrelated
			crCall(t, c, "find_correlated", map[string]any{"call_id": tc.source}, &got)
			lines := []string{}
			for _, l := range got.Legs {
				s := fmt.Sprintf("%s %s %d", l.CallID, l.Strategy, l.Score)
				if l.ObservedGapMs != nil {
					s += fmt.Sprintf(" gap=%d", *l.ObservedGapMs)
				}
				if l.IdentifierMatch != (l.Strategy != "timing_heuristic" && l.Strategy != "same_users") {
					t.Errorf("%s: identifier_match %v with strategy %s", l.CallID, l.IdentifierMatch, l.Strategy)
				}
				lines = append(lines, s)
			}
			if strings.Join(lines, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got legs\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
			}
			if got.SourceCallID != tc.source || got.TotalMatched != len(tc.want) || got.Returned != len(tc.want) || got.HeuristicOnly != tc.heuristicOnly {
				t.Errorf("got source %q total %d returned %d heuristic_only %v, want %q %d %d %v",
					got.SourceCallID, got.TotalMatched, got.Returned, got.HeuristicOnly, tc.source, len(tc.want), len(tc.want), tc.heuristicOnly)
			}
			if got.TimingClock != nil {
				t.Errorf("got timing_clock %+v from a file: its gaps are capture time, the analysis host's clock is no evidence", got.TimingClock)
			}
			if len(got.Legs) == 0 && (got.Hop != tc.hop || !strings.Contains(got.HopEvidence, tc.hopEvidence)) {
				t.Errorf("got hop %q evidence %q, want %q with %q", got.Hop, got.HopEvidence, tc.hop, tc.hopEvidence)
			}
			if len(got.Legs) > 0 && (got.Hop != "" || got.HopEvidence != "") {
				t.Errorf("got hop %q %q beside legs", got.Hop, got.HopEvidence)
			}
			if !got.SourceExhausted || got.CaptureIdentity.Node != "test-node" {
				t.Errorf("got source_exhausted %v node %q", got.SourceExhausted, got.CaptureIdentity.Node)
			}

			// The same answer from tshark's reading of the messages.
			var oracle []string
			for _, o := range crOracle(crWire(t, tc.capture), tc.source) {
				s := fmt.Sprintf("%s %s", o.callID, o.strategy)
				if o.strategy == "timing_heuristic" {
					s += fmt.Sprintf(" %d gap=%d", 50, o.gapMs)
				}
				oracle = append(oracle, s)
			}
			if strings.Join(oracle, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("tshark's reading gives\n%s\nwant\n%s", strings.Join(oracle, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestFindCorrelatedOnCraftedLegs(t *testing.T) {
	c := crCapture(t,
		crafted{callID: "a-leg", a: "192.0.2.1:5060", b: "192.0.2.10:5060", extra: []string{"Session-ID: ab30317f1a784dc48ff824d0d3715d86;remote=00000000000000000000000000000000"}},
		crafted{callID: "b-leg", at: 40 * time.Millisecond, a: "192.0.2.10:5060", b: "192.0.2.20:5060",
			extra: []string{"Session-ID: 47755a9de7794ba387653f2099600ef2;remote=ab30317f1a784dc48ff824d0d3715d86"}},
		crafted{callID: "c-leg", at: 60 * time.Millisecond, a: "192.0.2.10:5060", b: "192.0.2.30:5060", extra: []string{"X-Call-ID: a-leg"}},
		crafted{callID: "bystander", at: 900 * time.Millisecond, a: "192.0.2.10:5060", b: "192.0.2.40:5060"},
	)
	cases := []struct {
		name   string
		args   map[string]any
		want   string
		total  int
		clock  bool
		hOnly  bool
		errors int
	}{
		// The capture is fed packet by packet, no live source: no host
		// clock reading beside a guess.
		{"every leg", map[string]any{"call_id": "a-leg"}, "b-leg:session_id c-leg:x_call_id bystander:timing_heuristic", 3, false, false, 0},
		{"limit keeps the best", map[string]any{"call_id": "a-leg", "limit": 2}, "b-leg:session_id c-leg:x_call_id", 3, false, false, 0},
		{"bystander sees only guesses, nearest first", map[string]any{"call_id": "bystander"}, "c-leg:timing_heuristic b-leg:timing_heuristic a-leg:timing_heuristic", 3, false, true, 0},
		{"unknown Call-ID is an empty answer", map[string]any{"call_id": "nobody"}, "", 0, false, false, 0},
		{"call_id required", map[string]any{}, "", 0, false, false, sdk.CodeInvalidParams},
		{"negative limit", map[string]any{"call_id": "a-leg", "limit": -1}, "", 0, false, false, sdk.CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := crInvoke(t, c, "find_correlated", tc.args)
			if crCode(err) != tc.errors {
				t.Fatalf("got error %v, want code %d", err, tc.errors)
			}
			if err != nil {
				return
			}
			var got FindCorrelated
			if err := json.Unmarshal([]byte(r.Blocks[0]), &got); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, l := range got.Legs {
				parts = append(parts, l.CallID+":"+l.Strategy)
			}
			if g := strings.Join(parts, " "); g != tc.want || got.TotalMatched != tc.total ||
				(got.TimingClock != nil) != tc.clock || got.HeuristicOnly != tc.hOnly {
				t.Errorf("got %q total %d clock %v heuristic_only %v, want %q %d %v %v",
					g, got.TotalMatched, got.TimingClock != nil, got.HeuristicOnly, tc.want, tc.total, tc.clock, tc.hOnly)
			}
			if !strings.Contains(r.Blocks[0], `"legs":[`) {
				t.Errorf("legs must be an array, never null: %s", r.Blocks[0])
			}
			if strings.Contains(r.Blocks[0], "timing_clock") {
				t.Errorf("timing_clock on a capture no live source fed: %s", r.Blocks[0])
			}
		})
	}
}

// TestTimingClockOnlyForALiveSource: the analysis host's clock stamped only
// the frames a live source read; a file's or a HEP agent's gaps are capture
// time, and a reading of this host's clock says nothing of them.
func TestTimingClockOnlyForALiveSource(t *testing.T) {
	for _, tc := range []struct {
		source string
		want   bool
	}{{"file", false}, {"hep", false}, {"none", false}, {"live", true}, {"file+live", true}} {
		if got := timingClock(tc.source) != nil; got != tc.want {
			t.Errorf("%s: got clock %v, want %v", tc.source, got, tc.want)
		}
	}
}

// TestFindCorrelatedResistsALoadGenerator: sipp-branch-scenario.pcapng's
// 1,334 calls all run ua1 to ua2 within milliseconds of each other, with tags
// SIPp numbers by a counter (4461SIPpTag001, 4461SIPpTag0010, ...). Neither is
// evidence of a B2BUA: a tag that prefixes a longer counter is no embedded
// token, and users shared by many calls in the window identify nothing. Before
// the fix 1-4461 was tied to 10-4461 by embedded_tag (75, an identifier) and
// 3-4461 to 2-4461 by same_users.
func TestFindCorrelatedResistsALoadGenerator(t *testing.T) {
	c := crLoad(t, testcap.Public("sipp-branch-scenario.pcapng"))
	for i := 1; i <= 30; i++ {
		id := fmt.Sprintf("%d-4461@127.0.1.1", i)
		var got FindCorrelated
		crCall(t, c, "find_correlated", map[string]any{"call_id": id}, &got)
		for _, l := range got.Legs {
			if l.Strategy == "embedded_tag" || l.Strategy == "same_users" || l.IdentifierMatch {
				t.Errorf("%s: tied to %s by %s (identifier %v)", id, l.CallID, l.Strategy, l.IdentifierMatch)
			}
		}
	}
}
