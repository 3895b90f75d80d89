package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// WireReserve is what the JSON-RPC envelope adds around a tools/call
// result on the wire: {"jsonrpc":"2.0","id":…,"result":…}, the line's
// newline, a "resultType" member (sent to clients of the newest protocol
// version) and an id of up to 64 bytes of JSON. [Reply.WireBytes] counts
// it, so --mcp-max-response-bytes and a tool's max_response_bytes bound
// the whole JSON-RPC message (docs/bundles/core.md, Configuration).
const WireReserve = len(`{"jsonrpc":"2.0","id":,"result":}`) + 1 + len(`"resultType":"complete",`) + 64

// Result builds the tools/call result the host sends for a reply: the text
// blocks, then the provenance note when the answer is fenced, and
// structuredContent (the very text of the first block, no second
// serialization) when that block is a JSON object and the reply is neither
// a document (Reply.Document) nor an error result.
func (r Reply) Result() *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: r.IsError}
	for _, b := range r.Blocks {
		res.Content = append(res.Content, mcp.NewTextContent(b))
	}
	if r.Fenced {
		res.Content = append(res.Content, mcp.NewTextContent(ProvenanceNote))
	}
	if len(r.Blocks) > 0 && !r.IsError && !r.Document {
		if sc, ok := structuredText(r.Blocks[0]); ok {
			res.StructuredContent = sc
		}
	}
	return res
}

// structuredText returns the first block as structuredContent when it is a
// JSON object.
func structuredText(text string) (json.RawMessage, bool) {
	b := bytes.TrimSpace([]byte(text))
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil, false
	}
	return json.RawMessage(b), true
}

// WireBytes is the size of the JSON-RPC message carrying the reply: its
// result serialized as the transports send it (text blocks escaped as JSON
// strings, structuredContent beside them) plus [WireReserve].
func (r Reply) WireBytes() int {
	b, err := json.Marshal(r.Result())
	if err != nil {
		return 0
	}
	return len(b) + WireReserve
}

// wireEstimate is WireBytes without serializing the blocks: the result's
// skeleton (every block empty) plus each block's length as a JSON string
// (escapedLen) plus structuredContent, the first block's own bytes. It
// equals WireBytes for answers sipnab serializes itself (compact JSON
// whose strings json.Marshal already escaped) and is never below it for
// pretty-printed JSON; a tool measuring candidate pages uses it, so a page
// costs one pass over its bytes, not a serialization.
func (r Reply) wireEstimate() int {
	res := r.Result()
	skel := Reply{Blocks: make([]string, len(r.Blocks)), Fenced: r.Fenced, IsError: r.IsError, Document: r.Document}.Result()
	n := 0
	if sc, ok := res.StructuredContent.(json.RawMessage); ok {
		skel.StructuredContent = json.RawMessage("{}")
		n += len(sc) - 2
	}
	b, err := json.Marshal(skel)
	if err != nil {
		return 0
	}
	n += len(b) + WireReserve
	for _, blk := range r.Blocks {
		n += escapedLen(blk)
	}
	return n
}

// escapedLen is the length of s inside a JSON string as encoding/json
// writes it (HTML-safe): quotes, backslashes and the short control escapes
// take 2 bytes, other control characters, <, >, &, U+2028, U+2029 and each
// invalid UTF-8 byte (written as U+FFFD) take 6.
func escapedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// ResponseBudget is the byte budget of this call's answer on the wire:
// --mcp-max-response-bytes, lowered by requested (a tool's
// max_response_bytes argument; 0 means none). A negative request is
// refused.
func (c *Call) ResponseBudget(requested int) (int, error) {
	if requested < 0 {
		return 0, Refuse(KindInvalidArgument, "max_response_bytes", "max_response_bytes must be positive, got %d", requested)
	}
	limit := c.limits.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	if requested > 0 && requested < limit {
		limit = requested
	}
	return limit, nil
}

// encodeAnswer serializes a handler's answer as Invoke will: nonnull
// fields filled (when the tool set an encoder), the fields projection
// applied and limit_applied appended when --mcp-max-rows clamped the
// call, so WireBytes counts every byte Invoke sends.
func (c *Call) encodeAnswer(out any) ([]byte, error) {
	var b []byte
	var err error
	if c.encode != nil {
		b, err = c.encode(out)
	} else {
		b, err = json.Marshal(out)
	}
	if err != nil {
		return nil, err
	}
	if c.projRows != "" {
		if b, err = Project(b, c.projRows, c.projFields); err != nil {
			return nil, err
		}
	}
	if c.limitApplied != 0 {
		return withLimitApplied(b, c.limitApplied)
	}
	return b, nil
}

// WireBytes is the size on the wire of the answer out if the handler
// returned it now: serialized as Invoke serializes it (fields projection
// included), with the blocks added so far and the provenance note when
// anything was fenced, wrapped as the host wraps it.
func (c *Call) WireBytes(out any) (int, error) {
	b, err := c.encodeAnswer(out)
	if err != nil {
		return 0, err
	}
	return c.reply(string(b), false).wireEstimate(), nil
}

func (c *Call) reply(first string, document bool) Reply {
	return Reply{Blocks: append([]string{first}, c.extra...), Fenced: c.fenced, IsError: c.isError, Document: document}
}

// FitRows is the page fitting every tool shares: it returns the largest k
// in [0, n] whose answer build(k) fits budget bytes on the wire
// ([Call.WireBytes]). build(k) returns the answer holding the first k rows,
// its envelope saying what was left out (truncated, next_cursor, a count).
// Whole answers are measured, so the page picked fits exactly as it is
// sent; k == n when everything fits. A caller that gets 0 with n > 0
// should refuse, naming the budget: one row does not fit.
func (c *Call) FitRows(n, budget int, build func(k int) any) (int, error) {
	return FitCount(n, func(k int) (bool, error) {
		size, err := c.WireBytes(build(k))
		if err != nil {
			return false, fmt.Errorf("sizing the answer: %w", err)
		}
		return size <= budget, nil
	})
}

// FitPage is [Call.FitRows] for a listing of n rows under this call's
// budget ([Call.ResponseBudget] of requested, a tool's max_response_bytes
// or 0): it returns how many leading rows the answer holds, and refuses
// (invalid params, naming the bytes an answer with one row needs) when not
// even one row fits, rather than answer an empty page that could never
// move on. what names a row in that message ("row", "hit", "stream"). The
// refusal is response_too_large, naming max_response_bytes when that
// argument set the budget.
func (c *Call) FitPage(n, requested int, what string, build func(k int) any) (int, error) {
	budget, err := c.ResponseBudget(requested)
	if err != nil {
		return 0, err
	}
	k, err := c.FitRows(n, budget, build)
	if err != nil {
		return 0, Internal("%v", err)
	}
	if k == 0 && n > 0 {
		need, _ := c.WireBytes(build(1))
		name, arg := "--mcp-max-response-bytes", ""
		if requested > 0 && requested == budget {
			name, arg = "max_response_bytes", "max_response_bytes"
		}
		return 0, Refuse(KindTooLarge, arg, "%s %d cannot hold one %s (an answer with one needs %d bytes on the wire): raise it, or name fewer fields where the tool takes fields", name, budget, what, need)
	}
	return k, nil
}

// DocumentWireBytes is the size on the wire of a rendered document
// (Call.ReplyText) if the handler replied with it now, with the blocks
// added so far and the provenance note when anything was fenced.
func (c *Call) DocumentWireBytes(doc string) int {
	return c.reply(doc, true).wireEstimate()
}

// FitCount returns the largest k in [0, n] for which fits(k) holds, given
// that fits is monotone (a larger k never fits where a smaller one does
// not); 0 when none does. It tries n first (most answers fit whole), then
// gallops up from 1 and binary searches the last step, so a tool
// measuring whole answers pays about log k measurements each no larger
// than about twice its budget, whatever n is.
func FitCount(n int, fits func(k int) (bool, error)) (int, error) {
	// Most answers fit whole: one measurement.
	if ok, err := fits(n); err != nil || ok {
		return n, err
	}
	lo, hi := 0, n
	for step := 1; ; step *= 2 {
		k := min(step, n)
		ok, err := fits(k)
		if err != nil {
			return 0, err
		}
		if !ok {
			hi = k - 1
			break
		}
		lo = k
		if k == n {
			return n, nil
		}
	}
	// lo fits (or is 0), hi+1 does not.
	for lo < hi {
		mid := (lo + hi + 1) / 2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}

// FitText fits a rendered document (Call.ReplyText) to budget bytes on the
// wire: when it is too long, it keeps the longest run of whole leading
// lines that fits together with the line note(kept, total) appends, which
// says what was cut and how to see the rest. It returns the document and
// whether it was cut.
func (c *Call) FitText(doc string, budget int, note func(kept, total int) string) (string, bool) {
	if c.DocumentWireBytes(doc) <= budget {
		return doc, false
	}
	lines := strings.SplitAfter(doc, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	build := func(k int) string {
		kept := strings.Join(lines[:k], "")
		// A markdown code block left open would swallow the note.
		fences := 0
		for _, l := range lines[:k] {
			if strings.HasPrefix(l, "```") {
				fences++
			}
		}
		if fences%2 == 1 {
			kept += "```\n"
		}
		return kept + "\n" + note(k, len(lines)) + "\n"
	}
	k, _ := FitCount(len(lines)-1, func(k int) (bool, error) { return c.DocumentWireBytes(build(k)) <= budget, nil })
	return build(k), true
}

// WhenCut says, for a rendered document (Call.ReplyText) that the byte
// ceiling may cut, where the agent finds the rest, e.g. "get_dialog pages
// every message". The cut document ends with a line saying what was cut
// and this.
func (c *Call) WhenCut(rest string) { c.rest = rest }

// fitDocument cuts a rendered text document that does not fit
// --mcp-max-response-bytes on the wire at a line boundary and ends it
// with a line saying so (FitText). A JSON document (yang-json) is never
// cut: half a JSON text is no answer, so the host's ceiling refuses it
// whole.
func (c *Call) fitDocument(doc string) string {
	if strings.HasPrefix(strings.TrimSpace(doc), "{") {
		return doc
	}
	budget, _ := c.ResponseBudget(0)
	out, _ := c.FitText(doc, budget, func(kept, total int) string {
		rest := c.rest
		if rest == "" {
			rest = "ask a narrower view or raise the cap"
		}
		return fmt.Sprintf("[sipnab: truncated: true. This document stops after line %d of %d to fit --mcp-max-response-bytes (%d bytes on the wire); %s.]", kept, total, budget, rest)
	})
	return out
}
