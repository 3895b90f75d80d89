package sdk

import (
	"errors"
	"fmt"
)

// JSON-RPC error codes. A tool's refusal (CodeInvalidParams) is answered as
// a tool execution error, a result with isError set that the model reads
// (MCP 2025-11-25, tools: error handling); the other codes are JSON-RPC
// errors. docs/mcp-protocol.md lists both.
const (
	// CodeInvalidParams: bad input, bad filter, unknown call_id, sandbox
	// violation, disabled feature, gate flag not set. A tool answers it
	// as isError; a resource read or a subscription as a JSON-RPC error.
	CodeInvalidParams = -32602
	// CodeInternal: filesystem or decoder failure and other server faults.
	CodeInternal = -32603
	// CodeUnavailable: at capacity or rate limited; the caller may retry.
	CodeUnavailable = -32000
)

// Kind is the stable string code of an error, the "code" of a tool
// execution error's structured body (docs/mcp-protocol.md, "Error codes").
type Kind string

// The kinds of error. A refusal's kind says what the caller should change;
// internal and unavailable are the server's.
const (
	// KindInvalidArgument: an argument's value is wrong (type, range,
	// format, a combination that cannot hold).
	KindInvalidArgument Kind = "invalid_argument"
	// KindUnknownArgument: an argument or field name the tool does not
	// know; Valid lists the names it knows.
	KindUnknownArgument Kind = "unknown_argument"
	// KindMissingArgument: a required argument is absent.
	KindMissingArgument Kind = "missing_argument"
	// KindInvalidFilter: a filter expression that does not compile;
	// Position is the byte offset of the problem.
	KindInvalidFilter Kind = "invalid_filter"
	// KindInvalidCursor: a cursor that is not the next_cursor of an
	// earlier page of this tool.
	KindInvalidCursor Kind = "invalid_cursor"
	// KindUnknownID: a Call-ID, stream, rule, format or other name that
	// names nothing this server holds.
	KindUnknownID Kind = "unknown_id"
	// KindNotEnabled: a gate: the feature needs a flag the operator did
	// not set (--mcp-file-root, ...) or the token's scope does not allow.
	KindNotEnabled Kind = "not_enabled"
	// KindFileRefused: the file sandbox refused a file name.
	KindFileRefused Kind = "file_refused"
	// KindTooLarge: the answer does not fit the response byte bound.
	KindTooLarge Kind = "response_too_large"
	// KindInternal: the server failed (a JSON-RPC -32603 error).
	KindInternal Kind = "internal"
	// KindUnavailable: at capacity or rate limited (a JSON-RPC -32000
	// error); retry shortly.
	KindUnavailable Kind = "unavailable"
)

// Error is a tool-call failure. A refusal (Code CodeInvalidParams) of a
// tool call is answered as a result with isError set, Message as its text
// block and {"error": Body} as its structuredContent; any other code is a
// JSON-RPC error with Code and Message.
type Error struct {
	// Code is the JSON-RPC error code.
	Code int
	// Kind is the stable string code; empty means the default of Code
	// (invalid_argument, internal, unavailable).
	Kind Kind
	// Message is the error text the caller reads.
	Message string
	// Argument, when set, names the argument at fault.
	Argument string
	// Position, when set, is the byte offset (from 0) of the problem in
	// Argument's value (a filter expression).
	Position *int
	// Valid, when set, lists the values or names Argument accepts.
	Valid []string
}

func (e *Error) Error() string { return e.Message }

// Refusal says whether the error is the caller's to fix: a tool answers it
// as a tool execution error (isError), not a JSON-RPC error.
func (e *Error) Refusal() bool { return e.Code == CodeInvalidParams }

// StableKind is Kind, or the default kind of Code when Kind is empty.
func (e *Error) StableKind() Kind {
	switch {
	case e.Kind != "":
		return e.Kind
	case e.Code == CodeInvalidParams:
		return KindInvalidArgument
	case e.Code == CodeUnavailable:
		return KindUnavailable
	default:
		return KindInternal
	}
}

// ErrorBody is the structured body of a tool execution error:
// structuredContent is {"error": ErrorBody}.
type ErrorBody struct {
	Code     Kind     `json:"code"`
	Message  string   `json:"message"`
	Argument string   `json:"argument,omitempty"`
	Position *int     `json:"position,omitempty"`
	Valid    []string `json:"valid,omitempty"`
}

// Body is the error's structured body.
func (e *Error) Body() ErrorBody {
	return ErrorBody{Code: e.StableKind(), Message: e.Message, Argument: e.Argument, Position: e.Position, Valid: e.Valid}
}

// InvalidParams returns a -32602 error: the caller's input is wrong (kind
// invalid_argument).
func InvalidParams(format string, a ...any) error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// Refuse returns a refusal of the given kind naming the argument at fault
// (empty when none is); chain At and Accepting to add a position or the
// valid set.
func Refuse(kind Kind, argument string, format string, a ...any) *Error {
	return &Error{Code: CodeInvalidParams, Kind: kind, Argument: argument, Message: fmt.Sprintf(format, a...)}
}

// UnknownID refuses an argument whose value names nothing held (a
// Call-ID, stream, rule).
func UnknownID(argument string, format string, a ...any) error {
	return Refuse(KindUnknownID, argument, format, a...)
}

// NotEnabled refuses a call the operator has not enabled (a gate).
func NotEnabled(argument string, format string, a ...any) error {
	return Refuse(KindNotEnabled, argument, format, a...)
}

// At sets the byte offset of the problem in the argument's value.
func (e *Error) At(position int) *Error {
	e.Position = &position
	return e
}

// Accepting sets the values or names the argument accepts.
func (e *Error) Accepting(valid []string) *Error {
	e.Valid = valid
	return e
}

// Internal returns a -32603 error: the server failed.
func Internal(format string, a ...any) error {
	return &Error{Code: CodeInternal, Message: fmt.Sprintf(format, a...)}
}

// Unavailable returns a -32000 error: retryable refusal (capacity, rate).
func Unavailable(format string, a ...any) error {
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf(format, a...)}
}

// AsError returns err as an *Error; an error of another kind becomes an
// internal error carrying its text.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
