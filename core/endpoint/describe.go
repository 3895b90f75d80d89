package endpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/analysis"
	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/media"
)

// Bounds of describe_endpoint's sender-keyed tables.
const (
	// MaxMethods is the most opening methods by_method keeps; dialogs
	// opened by others count under OtherMethods.
	MaxMethods = 64
	// OtherMethods is by_method's bucket past MaxMethods.
	OtherMethods = "(other)"
	// MaxBanners is the most distinct banners tracked; more are counted in
	// Report.BannersDropped.
	MaxBanners = 1024
	// MaxCodecs is the most distinct codec names kept.
	MaxCodecs = 64
)

// Selector is the endpoint asked about: an address, or a SIP URI user part.
type Selector struct {
	IP   netip.Addr
	User string
}

// ParseSelector checks exactly one of ip and user. Neither, or both (the
// caller could mean their intersection or their union), is an error.
func ParseSelector(ip, user string) (Selector, error) {
	switch {
	case ip == "" && user == "":
		return Selector{}, errors.New("give exactly one of ip or user: an endpoint is an address or a URI user part")
	case ip != "" && user != "":
		return Selector{}, errors.New("give exactly one of ip or user, not both: they select different sets, and their intersection and their union are different answers")
	case ip != "":
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return Selector{}, fmt.Errorf("ip %q is not an address", clip(ip))
		}
		return Selector{IP: a.Unmap()}, nil
	}
	return Selector{User: user}, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return cutUTF8(s, 64) + "..."
	}
	return s
}

// Kind is "ip" or "user".
func (s Selector) Kind() string {
	if s.IP.IsValid() {
		return "ip"
	}
	return "user"
}

// Value is the selector's value.
func (s Selector) Value() string {
	if s.IP.IsValid() {
		return s.IP.String()
	}
	return s.User
}

// matches: an address on any message of the dialog (a re-originated leg,
// a re-INVITE from a second interface and a BYE from the far side belong
// to the call with addresses its opening message never had); a user as
// the dialog's From or To user, exactly (RFC 3261 §19.1.4).
func (s Selector) matches(d *dialog.Detail) bool {
	if !s.IP.IsValid() {
		return d.FromUser == s.User || d.ToUser == s.User
	}
	for i := range d.Messages {
		m := &d.Messages[i]
		if m.Src.Addr().Unmap() == s.IP || m.Dst.Addr().Unmap() == s.IP {
			return true
		}
	}
	return false
}

// wrote reports whether the endpoint wrote the message: an address as its
// source; a user on a request whose From user it is (the one case where
// the URI names the party that wrote the headers).
func (s Selector) wrote(m *dialog.Message) bool {
	if s.IP.IsValid() {
		return m.Src.Addr().Unmap() == s.IP
	}
	return m.Msg != nil && m.Msg.IsRequest && m.Msg.From.User == s.User
}

// BannerCount is one banner the endpoint sent, raw.
type BannerCount struct {
	Header string
	Value  string
	Count  int
}

// Calls are the endpoint's INVITE outcomes.
type Calls struct {
	Invites, WithFinalStatus, Failed int
	// FailureRatePct is Failed over WithFinalStatus in percent; nil when
	// no INVITE had a final status (an unmeasured endpoint is not clean).
	FailureRatePct *float64
	ByFinalStatus  map[string]int
}

// RegistrationSummary is the endpoint's REGISTER activity, counted on the
// dialogs that carry a REGISTER request (a REGISTER can arrive inside a
// dialog another method opened).
type RegistrationSummary struct {
	Applicable                   bool
	Dialogs, Requests            int
	Succeeded, Failed, AuthLoops int
	ProblemCallIDs               []string
	ProblemCallIDsOmitted        int
}

// Streams is the RTP attributed to the endpoint: an address matches the
// stream's source or destination; a user's are the streams of its dialogs.
type Streams struct {
	Count, Orphaned int
	Packets         uint64
	LostPackets     int64
	// MaxJitterMs is the worst running jitter; nil when none was measured.
	MaxJitterMs *float64
	// Codecs are the codec names, sorted, raw (from SDP: fence them).
	Codecs        []string
	CodecsDropped int
}

// Report is everything one endpoint did.
type Report struct {
	Kind, Endpoint         string
	Dialogs                int
	ByMethod, ByState      map[string]int
	MessagesSent, Received int
	// MessagesNotRead counts messages of the endpoint's dialogs past the
	// per-dialog retention cap: sent/received, banners and the fingerprint
	// cover the retained ones.
	MessagesNotRead int
	Calls           Calls
	Registration    RegistrationSummary
	Banners         []BannerCount
	BannersDistinct int
	BannersDropped  int
	Stack           Fingerprint
	Streams         Streams
	// Contact is the contact rewrite of the endpoint's first REGISTER; nil
	// when it sent none.
	Contact *ContactRewrite
	// Recent are the Call-IDs of the newest dialogs (by updated_at), at
	// most the limit; Truncated when there are more.
	Recent    []string
	Truncated bool
}

// Stores are what Describe reads.
type Stores struct {
	Dialogs *dialog.Store
	// Media is the stream store; nil when the engine keeps none.
	Media *media.Store
	// Analysis are the run's diagnosis options (the capture end included).
	Analysis analysis.Options
}

// EachDialog reads every dialog of the store with its messages, one at a
// time (the Detail is reused between calls: copy what you keep), checking
// ctx every 64 dialogs.
func EachDialog(ctx context.Context, ds *dialog.Store, fn func(*dialog.Detail)) error {
	var sc dialog.Scratch
	for i, id := range ds.CallIDs() {
		if i%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		d, ok := ds.GetWith(id, dialog.Options{Scratch: &sc})
		if !ok {
			continue
		}
		fn(&d)
	}
	return nil
}

type recentKey struct {
	at time.Time
	id string
}

// Describe answers describe_endpoint over the stores: every count covers
// every match; only Recent and the problem Call-IDs are bounded by limit.
func Describe(ctx context.Context, st Stores, sel Selector, limit int) (Report, error) {
	r := Report{Kind: sel.Kind(), Endpoint: sel.Value(), ByMethod: map[string]int{}, ByState: map[string]int{}}
	r.Calls.ByFinalStatus = map[string]int{}
	banners := map[[2]string]int{}
	var stack FingerprintAcc
	var recent []recentKey
	matched := map[string]bool{}
	var reg *Registration // the first REGISTER the endpoint wrote
	err := EachDialog(ctx, st.Dialogs, func(d *dialog.Detail) {
		if !sel.matches(d) {
			return
		}
		r.Dialogs++
		matched[d.CallID] = true
		recent = append(recent, recentKey{d.UpdatedAt, d.CallID})
		m := d.Method
		if _, ok := r.ByMethod[m]; !ok && len(r.ByMethod) >= MaxMethods {
			m = OtherMethods
		}
		r.ByMethod[m]++
		r.ByState[d.State]++
		r.MessagesNotRead += d.Bounds.MessagesNotRetained
		registers := false
		for i := range d.Messages {
			msg := &d.Messages[i]
			if sel.IP.IsValid() {
				if msg.Src.Addr().Unmap() == sel.IP {
					r.MessagesSent++
				}
				if msg.Dst.Addr().Unmap() == sel.IP {
					r.Received++
				}
			}
			if msg.Msg != nil && msg.Msg.IsRequest && msg.Msg.Method == "REGISTER" {
				registers = true
			}
			if !sel.wrote(msg) {
				continue
			}
			if h, v, ok := Banner(msg.Msg); ok && (sel.IP.IsValid() || h == "User-Agent") {
				k := [2]string{h, cutUTF8(v, MaxKeyBytes)}
				if _, seen := banners[k]; seen || len(banners) < MaxBanners {
					banners[k]++
				} else {
					r.BannersDropped++
				}
			}
			// Requests only: a response echoes the request's branch,
			// From tag and Call-ID.
			if msg.Msg != nil && msg.Msg.IsRequest && !msg.Retransmission {
				branch := ""
				if len(msg.Msg.Vias) > 0 {
					branch = msg.Msg.Vias[0].Branch
				}
				stack.Observe(branch, msg.Msg.From.Tag, msg.Msg.CallID)
			}
		}
		if d.Method == "INVITE" {
			r.Calls.Invites++
			if c := d.FinalStatusCode; c != 0 {
				r.Calls.WithFinalStatus++
				r.Calls.ByFinalStatus[strconv.Itoa(c)]++
				if c >= 400 {
					r.Calls.Failed++
				}
			}
		}
		if !registers {
			return
		}
		j := JudgeRegistration(d, st.Analysis)
		r.Registration.Dialogs++
		r.Registration.Requests += j.Requests
		if j.Succeeded {
			r.Registration.Succeeded++
		}
		if j.Failure != nil {
			r.Registration.Failed++
		}
		if j.IsAuthLoop() {
			r.Registration.AuthLoops++
		}
		if j.Problem() {
			if len(r.Registration.ProblemCallIDs) < limit {
				r.Registration.ProblemCallIDs = append(r.Registration.ProblemCallIDs, d.CallID)
			} else {
				r.Registration.ProblemCallIDsOmitted++
			}
		}
		if j.hasContact && wroteRegister(sel, d) && (reg == nil || j.RegisteredAt.Before(reg.RegisteredAt)) {
			reg = &j
		}
	})
	if err != nil {
		return Report{}, err
	}
	r.Registration.Applicable = r.Registration.Dialogs > 0
	if r.Calls.WithFinalStatus > 0 {
		v := roundPct(float64(r.Calls.Failed) / float64(r.Calls.WithFinalStatus) * 100)
		r.Calls.FailureRatePct = &v
	}
	r.BannersDistinct = len(banners)
	for k, n := range banners {
		r.Banners = append(r.Banners, BannerCount{Header: k[0], Value: k[1], Count: n})
	}
	slices.SortFunc(r.Banners, func(a, b BannerCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		if c := strings.Compare(a.Value, b.Value); c != 0 {
			return c
		}
		return strings.Compare(a.Header, b.Header)
	})
	r.Stack = stack.Finish()
	r.Streams = streamsOf(st.Media, sel, matched)
	if reg != nil {
		to, src := LaterRequests(reg.Contact, reg.AoR, reg.RegisteredAt, func(fn func([]dialog.Message)) {
			_ = EachDialog(ctx, st.Dialogs, func(d *dialog.Detail) { fn(d.Messages) })
		})
		if ctx.Err() != nil {
			return Report{}, ctx.Err()
		}
		c := Corroborate(reg.Contact, to, src)
		r.Contact = &c
	}
	slices.SortFunc(recent, func(a, b recentKey) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for i := 0; i < len(recent) && i < limit; i++ {
		r.Recent = append(r.Recent, recent[i].id)
	}
	r.Truncated = len(recent) > len(r.Recent)
	return r, nil
}

// wroteRegister: the endpoint wrote one of the dialog's REGISTER requests
// (an address as its source; a user as its To user, the AoR registered).
func wroteRegister(sel Selector, d *dialog.Detail) bool {
	for i := range d.Messages {
		m := &d.Messages[i]
		if m.Msg == nil || !m.Msg.IsRequest || m.Msg.Method != "REGISTER" {
			continue
		}
		if sel.IP.IsValid() && m.Src.Addr().Unmap() == sel.IP || !sel.IP.IsValid() && m.Msg.To.User == sel.User {
			return true
		}
	}
	return false
}

// streamsOf sums the streams of the endpoint.
func streamsOf(ms *media.Store, sel Selector, matched map[string]bool) Streams {
	var s Streams
	if ms == nil {
		return s
	}
	codecs := map[string]bool{}
	for _, si := range ms.All() {
		if !streamMatches(&si, sel, matched) {
			continue
		}
		s.Count++
		if si.Orphaned {
			s.Orphaned++
		}
		s.Packets += si.Packets
		if si.Lost > 0 {
			s.LostPackets += si.Lost
		}
		if j := si.JitterMs; j != nil && (s.MaxJitterMs == nil || *j > *s.MaxJitterMs) {
			v := *j
			s.MaxJitterMs = &v
		}
		if si.Codec != "" && !codecs[si.Codec] {
			if len(codecs) < MaxCodecs {
				codecs[si.Codec] = true
			} else {
				s.CodecsDropped++
			}
		}
	}
	for c := range codecs {
		s.Codecs = append(s.Codecs, c)
	}
	slices.Sort(s.Codecs)
	return s
}

func streamMatches(si *media.StreamInfo, sel Selector, matched map[string]bool) bool {
	if sel.IP.IsValid() {
		for _, ep := range []string{si.Src, si.Dst} {
			if ap, err := netip.ParseAddrPort(ep); err == nil && ap.Addr().Unmap() == sel.IP {
				return true
			}
		}
		return false
	}
	if matched[si.AssociatedDialog] {
		return true
	}
	for _, id := range si.SharedWith {
		if matched[id] {
			return true
		}
	}
	return false
}

// roundPct rounds to two decimals.
func roundPct(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
