package host

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Audit outcomes.
const (
	outcomeOK        = "ok"
	outcomeToolError = "tool_error"
	outcomeRefused   = "refused"
	// outcomeTimedOut: the call was answered at its deadline
	// (--mcp-call-timeout) while the tool had not returned.
	outcomeTimedOut = "timed_out"
)

// maxAuditArgsBytes bounds the args string of an audit record.
const maxAuditArgsBytes = 1024

// maxTokenIDChars is where a token id is cut in the caller string (CAP).
const maxTokenIDChars = 64

// auditRecord is one tools/call as the audit file records it.
type auditRecord struct {
	Seq       uint64  `json:"seq"`
	TS        string  `json:"ts"`
	Tool      string  `json:"tool"`
	ID        string  `json:"id"`
	Caller    string  `json:"caller"`
	Outcome   string  `json:"outcome"`
	ElapsedMS int64   `json:"elapsed_ms"`
	Args      string  `json:"args"`
	Error     *string `json:"error"`
}

// auditor writes the mcp_audit log line and, with --mcp-audit-file, one JSON
// line per record: O_APPEND, created 0600, one write per record (newline
// attached) under a mutex, unbuffered, no fsync.
type auditor struct {
	log  hclog.Logger
	mu   sync.Mutex
	f    *os.File
	seq  uint64
	fail func() error // test hook: makes the next write fail
}

func openAuditor(log hclog.Logger, path string) (*auditor, error) {
	a := &auditor{log: log}
	if path == "" {
		return a, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, usagef("opening --mcp-audit-file: %v", err)
	}
	a.f = f
	return a, nil
}

func (a *auditor) close() {
	if a.f != nil {
		_ = a.f.Close()
	}
}

// record writes the log line and the file record. An error means the file
// record could not be written: the caller must refuse the call.
func (a *auditor) record(tool, id, caller, outcome string, elapsed time.Duration, args string, callErr string) error {
	fields := []any{"tool", tool, "id", id, "caller", caller, "outcome", outcome, "elapsed_ms", elapsed.Milliseconds(), "args", args}
	if callErr != "" {
		fields = append(fields, "error", callErr)
	}
	// Every outcome logs at info, so --quiet hides the audit line unless
	// SIPNAB_LOG=mcp_audit=info asks for it; the file records everything.
	a.log.Info("tools/call", fields...)
	if a.f == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	rec := auditRecord{Seq: a.seq, TS: time.Now().UTC().Format(time.RFC3339Nano), Tool: tool, ID: id, Caller: caller,
		Outcome: outcome, ElapsedMS: elapsed.Milliseconds(), Args: args}
	if callErr != "" {
		rec.Error = &callErr
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding audit record: %w", err)
	}
	line = append(line, '\n')
	if a.fail != nil {
		if err := a.fail(); err != nil {
			a.seq--
			return err
		}
	}
	if _, err := a.f.Write(line); err != nil {
		a.seq--
		return fmt.Errorf("writing audit record: %w", err)
	}
	return nil
}

// secretArg reports argument names whose values never reach the record.
func secretArg(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"password", "passwd", "secret", "token", "passphrase", "credential", "api_key", "apikey"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// boundArgs renders tool arguments as one bounded line: compact JSON with
// keys sorted, password-like values replaced by [REDACTED], cut at
// maxAuditArgsBytes with …(truncated).
func boundArgs(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		s := string(raw)
		if s == "" || s == "null" {
			return "{}"
		}
		return cut(strings.Join(strings.Fields(s), " "), maxAuditArgsBytes)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		if secretArg(k) {
			b.WriteString(`"[REDACTED]"`)
			continue
		}
		var v any
		if json.Unmarshal(m[k], &v) == nil {
			vb, _ := json.Marshal(v)
			b.Write(vb)
		}
	}
	b.WriteByte('}')
	return cut(b.String(), maxAuditArgsBytes)
}

func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…(truncated)"
}

// tokenLabel percent-encodes a token id (so a space, quote or newline cannot
// forge a field or a line) and cuts it at 64 characters, marked, so a prefix
// never reads as a whole id.
func tokenLabel(id string) string {
	enc := url.PathEscape(id)
	enc = strings.ReplaceAll(enc, "=", "%3D")
	r := []rune(enc)
	if len(r) > maxTokenIDChars {
		return string(r[:maxTokenIDChars]) + "…(truncated)"
	}
	return enc
}
