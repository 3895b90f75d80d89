package host

import (
	"strings"
	"testing"
	"time"
)

// FuzzVerifyToken: no presented token panics the verifier, and none but a
// correctly signed, unexpired, unrevoked mcp token of a known scope passes.
func FuzzVerifyToken(f *testing.F) {
	key := []byte(strings.Repeat("k", 32))
	good, _ := mintToken(key, "agent", "read", tokenAudience, time.Unix(4102444800, 0))
	for _, s := range []string{good, "", "s2.", "s2..", "s2.e30.AAAA", good + "x", "static-token-0123456789", "Bearer x"} {
		f.Add(s)
	}
	v := &verifier{keys: [][]byte{key}, now: func() time.Time { return time.Unix(1700000000, 0) }}
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := v.verify(tok)
		if err != nil {
			if err != errInvalidToken {
				t.Fatalf("error %v is not the one invalid-token error", err)
			}
			return
		}
		if id.TokenID == "" || (id.Scope != scopeFull && id.Scope != scopeRead && id.Scope != scopeActions) {
			t.Fatalf("accepted %q as %+v", tok, id)
		}
	})
}

// FuzzBoundArgs: the audit args line is bounded and single-line.
func FuzzBoundArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"password":"x"}`, `{"a":"` + strings.Repeat("\n", 2000) + `"}`, `[`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := boundArgs(raw)
		if len(s) > maxAuditArgsBytes+len("…(truncated)") {
			t.Fatalf("args of %d bytes", len(s))
		}
		if strings.ContainsAny(s, "\n\r") {
			t.Fatalf("args line breaks: %q", s)
		}
	})
}
