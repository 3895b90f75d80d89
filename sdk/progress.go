package sdk

import "context"

// ProgressFunc sends one progress notification for the current call.
type ProgressFunc func(progress, total float64, message string)

type progressKey struct{}

// WithProgress returns a context carrying the call's progress sender (the
// host sets it when the client asked for progress with a progressToken).
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// Progress reports how far a long call got (total 0 when unknown). It is
// best effort: nothing is sent when the client did not ask for progress,
// and a client may never see the last notification before the answer.
func (c *Call) Progress(ctx context.Context, progress, total float64, message string) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && fn != nil {
		fn(progress, total, message)
	}
}
