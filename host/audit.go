package host

import (
	"encoding/json"
	"fmt"
	"io"
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
	// outcomeRunning: the record reserved before the call ran (reserve);
	// the call's end rewrites it in place with its outcome. A record left
	// running names a call still in flight, or one whose end could not
	// be written.
	outcomeRunning = "running"
)

// maxAuditErrorBytes bounds the error string of a reserved record.
const maxAuditErrorBytes = 512

// slotSlack is the room a reserved record keeps for what is known only at
// the call's end: the outcome, elapsed_ms and the error (escaped).
const slotSlack = 2*maxAuditErrorBytes + 96

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
	log   hclog.Logger
	mu    sync.Mutex
	f     *os.File
	patch *os.File // the same file without O_APPEND: completes reserved records in place
	seq   uint64
	fail  func() error // test hook: makes the next write fail
	// failPatch is a test hook: makes the next in-place completion fail.
	failPatch func() error
}

// auditSlot is a record reserved before a call runs: where it lies in the
// file, its padded size (newline excluded) and what was known then.
type auditSlot struct {
	off  int64
	size int
	rec  auditRecord
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
	p, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		_ = f.Close()
		return nil, usagef("opening --mcp-audit-file: %v", err)
	}
	a.f, a.patch = f, p
	return a, nil
}

// toFile says records go to an --mcp-audit-file (and so may be reserved and
// then fail to complete).
func (a *auditor) toFile() bool { return a != nil && a.f != nil }

func (a *auditor) close() {
	if a.f != nil {
		_ = a.f.Close()
		_ = a.patch.Close()
	}
}

// logLine writes the mcp_audit log line. Every outcome logs at info, so
// --quiet hides the audit line unless SIPNAB_LOG=mcp_audit=info asks for
// it; the file records everything.
func (a *auditor) logLine(tool, id, caller, outcome string, elapsed time.Duration, args string, callErr string) {
	fields := []any{"tool", tool, "id", id, "caller", caller, "outcome", outcome, "elapsed_ms", elapsed.Milliseconds(), "args", args}
	if callErr != "" {
		fields = append(fields, "error", callErr)
	}
	a.log.Info("tools/call", fields...)
}

// reserve writes a call's record before the call runs, outcome running,
// padded with spaces so complete can rewrite it in place whatever the
// outcome: a call whose record cannot be written is refused before it
// runs, so "refused" is true. A nil slot without error means there is no
// audit file.
func (a *auditor) reserve(tool, id, caller, args string) (*auditSlot, error) {
	if a.f == nil {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	rec := auditRecord{Seq: a.seq, TS: time.Now().UTC().Format(time.RFC3339Nano), Tool: tool, ID: id, Caller: caller,
		Outcome: outcomeRunning, Args: args}
	line, err := json.Marshal(rec)
	if err != nil {
		a.seq--
		return nil, fmt.Errorf("encoding audit record: %w", err)
	}
	size := len(line) + slotSlack
	buf := make([]byte, size+1)
	copy(buf, line)
	for i := len(line); i < size; i++ {
		buf[i] = ' '
	}
	buf[size] = '\n'
	if a.fail != nil {
		if err := a.fail(); err != nil {
			a.seq--
			return nil, err
		}
	}
	// One writer, under the mutex: the append lands at the end as it is now.
	off, err := a.f.Seek(0, io.SeekEnd)
	if err != nil {
		a.seq--
		return nil, fmt.Errorf("writing audit record: %w", err)
	}
	if _, err := a.f.Write(buf); err != nil {
		a.seq--
		return nil, fmt.Errorf("writing audit record: %w", err)
	}
	return &auditSlot{off: off, size: size, rec: rec}, nil
}

// complete writes the log line and rewrites a reserved record in place
// with the call's outcome, elapsed time and error (cut to fit the slot).
// An error means the file still says running for a call that ran: the
// caller must say so in its answer, never that the call was refused.
func (a *auditor) complete(s *auditSlot, outcome string, elapsed time.Duration, callErr string) error {
	a.logLine(s.rec.Tool, s.rec.ID, s.rec.Caller, outcome, elapsed, s.rec.Args, callErr)
	rec := s.rec
	rec.Outcome, rec.ElapsedMS = outcome, elapsed.Milliseconds()
	if callErr != "" {
		e := cut(callErr, maxAuditErrorBytes)
		rec.Error = &e
	}
	line, err := json.Marshal(rec)
	for max := maxAuditErrorBytes / 2; err == nil && len(line) > s.size && rec.Error != nil; max /= 2 {
		// An error that escapes large (control characters, quotes) is cut
		// shorter until the record fits.
		e := cut(callErr, max)
		rec.Error = &e
		line, err = json.Marshal(rec)
		if max == 0 {
			break
		}
	}
	if err != nil || len(line) > s.size {
		return fmt.Errorf("encoding audit record: %d bytes for a %d-byte slot (%v)", len(line), s.size, err)
	}
	buf := make([]byte, s.size)
	copy(buf, line)
	for i := len(line); i < s.size; i++ {
		buf[i] = ' '
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failPatch != nil {
		if err := a.failPatch(); err != nil {
			return err
		}
	}
	if _, err := a.patch.WriteAt(buf, s.off); err != nil {
		return fmt.Errorf("completing audit record: %w", err)
	}
	return nil
}

// record writes the log line and the file record. An error means the file
// record could not be written: the caller must refuse the call.
func (a *auditor) record(tool, id, caller, outcome string, elapsed time.Duration, args string, callErr string) error {
	a.logLine(tool, id, caller, outcome, elapsed, args, callErr)
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
