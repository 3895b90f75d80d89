package sdk

import (
	"errors"
	"fmt"
)

// JSON-RPC error codes a tool call answers with.
const (
	// CodeInvalidParams: bad input, bad filter, unknown call_id, sandbox
	// violation, disabled feature, gate flag not set.
	CodeInvalidParams = -32602
	// CodeInternal: filesystem or decoder failure and other server faults.
	CodeInternal = -32603
	// CodeUnavailable: at capacity or rate limited; the caller may retry.
	CodeUnavailable = -32000
)

// Error is a tool-call failure answered as a JSON-RPC error with Code.
type Error struct {
	// Code is the JSON-RPC error code.
	Code int
	// Message is the error text the caller reads.
	Message string
}

func (e *Error) Error() string { return e.Message }

// InvalidParams returns a -32602 error: the caller's input is wrong.
func InvalidParams(format string, a ...any) error {
	return &Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
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
