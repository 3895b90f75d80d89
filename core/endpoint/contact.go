package endpoint

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/sipnab/sipnab/core/sip"
)

// Private Contact (engine.md §11): a phone behind NAT writes its private
// address into the Contact of its REGISTER; the registrar should route
// later requests to the address the REGISTER came from. The private
// Contact is an observation, not a finding: 1,660 of 2,226 REGISTER
// contacts (74.6 %) were private in a healthy estate. The finding needs a
// later request sent to the private host; the registered AoR (the To user)
// ties later requests to the endpoint, because a request sent to the
// private Contact carries no address of the endpoint's.

// Rewrite verdicts.
const (
	// VerdictRewritten: later requests went to the address the REGISTER
	// came from, none to the private Contact.
	VerdictRewritten = "rewritten"
	// VerdictNotRewritten: at least one later request went to the Contact
	// host (any one is a request nobody receives).
	VerdictNotRewritten = "not-rewritten"
	// VerdictNoLaterRequests: no later request to the AoR reached either
	// address in the capture; open, not clean.
	VerdictNoLaterRequests = "no-later-requests"
)

// ContactObservation is what one REGISTER's Contact said against where
// the REGISTER came from.
type ContactObservation struct {
	// ContactHost is the Contact URI's host (with its port when it had
	// one), raw; "" when the Contact is "*" or absent.
	ContactHost string
	// ContactHostPrivate: the host is an address the public internet does
	// not route (RFC 1918, RFC 4193, link-local, RFC 6598 shared space,
	// loopback); nil for a domain name, which resolves somewhere the
	// capture cannot see.
	ContactHostPrivate *bool
	// SourcePublic: the REGISTER came from a public address.
	SourcePublic bool
	// RewriteRequired: a private Contact from a public source, the shape a
	// registrar must rewrite.
	RewriteRequired bool
	contact         netip.Addr // ContactHost's address when it is one
	source          netip.Addr
}

// ContactRewrite settles an observation against the later requests.
type ContactRewrite struct {
	Observation ContactObservation
	// Verdict is rewritten, not-rewritten or no-later-requests.
	Verdict string
	// RequestsToContact and RequestsToSource count the later requests to
	// the AoR sent to the Contact host and to the REGISTER's source.
	RequestsToContact, RequestsToSource int
	// IsFinding: a rewrite was required and a later request went to the
	// private host.
	IsFinding bool
}

// shared is RFC 6598's shared address space (carrier-grade NAT).
var shared = netip.MustParsePrefix("100.64.0.0/10")

// Private reports whether the public internet does not route to a: RFC
// 1918 and RFC 4193 private space, link-local, RFC 6598 shared space and
// loopback.
func Private(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLoopback() || shared.Contains(a)
}

// ObserveContact reads a REGISTER's Contact against its source address.
func ObserveContact(m *sip.Message, src netip.Addr) ContactObservation {
	o := ContactObservation{source: src.Unmap()}
	o.SourcePublic = src.IsValid() && !Private(src)
	if m == nil {
		return o
	}
	na, ok := m.Contact()
	if !ok || strings.TrimSpace(na.URI) == "*" || na.Host == "" {
		return o
	}
	host := strings.TrimSuffix(strings.TrimPrefix(na.Host, "["), "]")
	o.ContactHost = na.Host
	if na.Port > 0 {
		if strings.Contains(host, ":") {
			o.ContactHost = "[" + host + "]:" + strconv.Itoa(na.Port)
		} else {
			o.ContactHost = na.Host + ":" + strconv.Itoa(na.Port)
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		o.contact = a.Unmap()
		p := Private(a)
		o.ContactHostPrivate = &p
		o.RewriteRequired = p && o.SourcePublic
	}
	return o
}

// Corroborate settles the observation on the later requests counted.
func Corroborate(o ContactObservation, toContact, toSource int) ContactRewrite {
	r := ContactRewrite{Observation: o, RequestsToContact: toContact, RequestsToSource: toSource}
	switch {
	case toContact > 0:
		r.Verdict = VerdictNotRewritten
	case toSource > 0:
		r.Verdict = VerdictRewritten
	default:
		r.Verdict = VerdictNoLaterRequests
	}
	r.IsFinding = o.RewriteRequired && r.Verdict == VerdictNotRewritten
	return r
}
