package detect

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/sip"
)

// nonceUse is where a challenge's nonce was first seen.
type nonceUse struct {
	tx  uint64
	src netip.Addr
}

// observeDigest runs the digest detector (--digest-leak, engine.md §13;
// RFC 3261 §22.4, RFC 7616, RFC 8760) on one message: a 401/407 carrying
// a weak challenge is filed against its sender (the server), a request
// whose credentials omit cnonce under qop against the client.
func (d *Detector) observeDigest(ts time.Time, src netip.AddrPort, m *sip.Message) {
	from := src.Addr().Unmap()
	if m.IsRequest {
		for _, id := range []sip.HeaderID{sip.HdrAuthorization, sip.HdrProxyAuthorization} {
			for _, v := range m.HeaderValues(id) {
				p, ok := digestParams(v)
				if !ok {
					continue
				}
				if q, has := p["qop"]; has && q != "" {
					if _, c := p["cnonce"]; !c {
						d.record(RuleDigestNoCnonce, from, ts, fmt.Sprintf("credentials with qop=%s carry no cnonce (RFC 7616 §3.4) method=%s", quoteValue(q), quoteValue(m.Method)))
					}
				}
			}
		}
		return
	}
	if m.StatusCode != 401 && m.StatusCode != 407 {
		return
	}
	var challenges []map[string]string
	for _, id := range []sip.HeaderID{sip.HdrWWWAuthenticate, sip.HdrProxyAuthenticate} {
		for _, v := range m.HeaderValues(id) {
			if p, ok := digestParams(v); ok {
				challenges = append(challenges, p)
			}
		}
	}
	if len(challenges) == 0 {
		return
	}
	strong := false
	for _, p := range challenges {
		a := strings.ToUpper(p["algorithm"])
		if strings.HasPrefix(a, "SHA-256") || strings.HasPrefix(a, "SHA-512-256") {
			strong = true
		}
	}
	tx := txKey(m)
	for _, p := range challenges {
		a, has := p["algorithm"]
		if !strong {
			alg := quoteValue(a)
			if !has {
				alg = "absent (MD5, RFC 7616 §3.3)"
			}
			if !has || strings.HasPrefix(strings.ToUpper(a), "MD5") {
				d.record(RuleDigestWeak, from, ts, fmt.Sprintf("%d challenge algorithm=%s and no SHA-256 offered (RFC 8760)", m.StatusCode, alg))
			}
		}
		if q, has := p["qop"]; !has || q == "" {
			d.record(RuleDigestNoQop, from, ts, fmt.Sprintf("%d challenge without qop (RFC 7616 §3.3: no cnonce, no nc, replayable responses)", m.StatusCode))
		}
		if n, has := p["nonce"]; has && n != "" {
			k := cut(n)
			if u, seen := d.nonces.get(k); seen {
				if u.tx != tx {
					d.record(RuleDigestNonceReuse, from, ts, fmt.Sprintf("%d challenge repeats the nonce of an earlier transaction's challenge (first from %s)", m.StatusCode, u.src))
				}
			} else {
				d.nonces.put(k, nonceUse{tx: tx, src: from})
			}
		}
	}
}

// digestParams reads the auth-params of a Digest challenge or credentials
// (RFC 3261 §25.1 digest-cln, RFC 7616 §3.3): names lower-cased, quoted
// values unquoted. false when the scheme is not Digest.
func digestParams(v string) (map[string]string, bool) {
	v = strings.TrimSpace(v)
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "Digest") {
		return nil, false
	}
	out := map[string]string{}
	for len(rest) > 0 && len(out) < 32 {
		rest = strings.TrimLeft(rest, " \t,")
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			break
		}
		name := strings.ToLower(strings.TrimSpace(rest[:eq]))
		rest = strings.TrimLeft(rest[eq+1:], " \t")
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && rest[end] != '"' {
				if rest[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(rest) {
				val, rest = rest[1:], ""
			} else {
				val, rest = rest[1:end], rest[end+1:]
			}
		} else {
			c := strings.IndexByte(rest, ',')
			if c < 0 {
				c = len(rest)
			}
			val, rest = strings.TrimSpace(rest[:c]), rest[c:]
		}
		out[name] = val
	}
	return out, true
}
