package host

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Token scopes.
const (
	scopeFull    = "full"
	scopeRead    = "read"
	scopeMetrics = "metrics"
	scopeActions = "actions"
)

// tokenAudience binds a signed token to the MCP endpoint: a token minted for
// another audience (the REST API) is rejected.
const tokenAudience = "mcp"

// signedPrefix starts every signed token.
const signedPrefix = "s2."

// identity is a verified caller.
type identity struct {
	Scope   string
	TokenID string
}

// claims are a signed token's payload.
type claims struct {
	ID    string `json:"id"`
	Scope string `json:"scope"`
	Exp   int64  `json:"exp"`
	Aud   string `json:"aud"`
}

// verifier checks bearer tokens: a static token or a signed token checked
// against every signing key, the revoked list, its expiry and audience.
// Comparisons are constant-time. Every rejection is the same error so the
// challenge cannot be an oracle.
type verifier struct {
	static      []byte // sha256 of the static token, nil when none
	keys        [][]byte
	revokedPath string
	now         func() time.Time

	mu          sync.Mutex
	revoked     map[string]bool
	revokedMod  time.Time
	revokedSize int64
}

var errInvalidToken = errors.New("invalid token")

func (v *verifier) configured() bool { return v.static != nil || len(v.keys) > 0 }

func newVerifier(cfg *Config) (*verifier, error) {
	v := &verifier{now: time.Now, revokedPath: cfg.MCP.RevokedFile}
	tok := cfg.MCP.Token
	if f := cfg.MCP.TokenFile; f != "" {
		if tok != "" {
			return nil, usagef("--mcp-token and --mcp-token-file are exclusive")
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, usagef("reading --mcp-token-file: %v", err)
		}
		tok = strings.TrimSpace(string(b))
		if tok == "" {
			return nil, usagef("--mcp-token-file %s is empty", f)
		}
	}
	if tok != "" {
		if len(tok) < 16 {
			return nil, usagef("the static token is %d characters; use at least 16", len(tok))
		}
		h := sha256.Sum256([]byte(tok))
		v.static = h[:]
	}
	keys, err := signingKeys(cfg)
	if err != nil {
		return nil, err
	}
	v.keys = keys
	if v.revokedPath != "" {
		if err := v.reloadRevoked(); err != nil {
			return nil, usagef("reading --mcp-revoked-file: %v", err)
		}
	}
	return v, nil
}

func signingKeys(cfg *Config) ([][]byte, error) {
	var keys [][]byte
	for _, k := range cfg.MCP.SigningKey {
		if k == "" {
			continue
		}
		keys = append(keys, []byte(k))
	}
	for _, f := range cfg.MCP.SigningKeyFile {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, usagef("reading --mcp-signing-key-file: %v", err)
		}
		if k := strings.TrimSpace(string(b)); k != "" {
			keys = append(keys, []byte(k))
		}
	}
	for _, k := range keys {
		if len(k) < 32 {
			return nil, usagef("a signing key is %d bytes; use at least 32", len(k))
		}
	}
	return keys, nil
}

// reloadRevoked re-reads the revoked-id file when it changed.
func (v *verifier) reloadRevoked() error {
	st, err := os.Stat(v.revokedPath)
	if err != nil {
		return err
	}
	if st.ModTime().Equal(v.revokedMod) && st.Size() == v.revokedSize && v.revoked != nil {
		return nil
	}
	b, err := os.ReadFile(v.revokedPath)
	if err != nil {
		return err
	}
	m := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			m[line] = true
		}
	}
	v.revoked, v.revokedMod, v.revokedSize = m, st.ModTime(), st.Size()
	return nil
}

func (v *verifier) isRevoked(id string) bool {
	if v.revokedPath == "" {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.reloadRevoked(); err != nil && v.revoked == nil {
		return true // never read: cannot tell, fail closed
	}
	// A file that became unreadable (e.g. after the privilege drop) keeps
	// the last list read: revocations never disappear.
	return v.revoked[id]
}

// verify checks a presented token.
func (v *verifier) verify(token string) (identity, error) {
	if v.static != nil {
		h := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(h[:], v.static) == 1 {
			return identity{Scope: scopeFull, TokenID: "static"}, nil
		}
	}
	if len(v.keys) == 0 || !strings.HasPrefix(token, signedPrefix) {
		return identity{}, errInvalidToken
	}
	body, sig, ok := strings.Cut(token[len(signedPrefix):], ".")
	if !ok {
		return identity{}, errInvalidToken
	}
	// Strict: the signature's last character carries unused low bits; a
	// lenient decoder would accept four spellings of one signature.
	gotSig, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil {
		return identity{}, errInvalidToken
	}
	match := 0
	for _, k := range v.keys {
		want := sign(k, body)
		match |= subtle.ConstantTimeCompare(gotSig, want)
	}
	if match != 1 {
		return identity{}, errInvalidToken
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	if err != nil {
		return identity{}, errInvalidToken
	}
	var c claims
	if err := json.Unmarshal(raw, &c); err != nil {
		return identity{}, errInvalidToken
	}
	switch {
	case c.Aud != tokenAudience,
		c.ID == "",
		v.now().Unix() >= c.Exp,
		c.Scope != scopeFull && c.Scope != scopeRead && c.Scope != scopeActions, // metrics tokens do not open MCP
		v.isRevoked(c.ID):
		return identity{}, errInvalidToken
	}
	return identity{Scope: c.Scope, TokenID: c.ID}, nil
}

func sign(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(signedPrefix + body))
	return m.Sum(nil)
}

// mintToken builds a signed token with the first signing key.
func mintToken(key []byte, id, scope, aud string, exp time.Time) (string, error) {
	switch scope {
	case scopeFull, scopeRead, scopeMetrics, scopeActions:
	default:
		return "", usagef("--token-scope %q: want full, read, metrics or actions", scope)
	}
	if id == "" {
		return "", usagef("--mint-token needs --token-id")
	}
	raw, err := json.Marshal(claims{ID: id, Scope: scope, Exp: exp.Unix(), Aud: aud})
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(raw)
	return signedPrefix + body + "." + base64.RawURLEncoding.EncodeToString(sign(key, body)), nil
}

// challenge builds the WWW-Authenticate value. presented says a token was
// sent (and rejected): only then is an error code added (RFC 6750 §3.1).
// The text is identical for expired, revoked, forged and wrong-audience or
// wrong-scope tokens.
func challenge(presented bool, metadataURL string) string {
	c := `Bearer realm="sipnab"`
	if presented {
		c += `, error="invalid_token", error_description="the access token is invalid"`
	}
	if metadataURL != "" {
		c += fmt.Sprintf(`, resource_metadata=%q`, metadataURL)
	}
	return c
}
