package environments

import (
	"context"

	"github.com/benchtune/bench/trial"
)

type progressKey struct{}

// WithProgress returns a context whose environments report the running
// trial's intermediate results (trial.Progress) to fn: the runner's
// Spec.Progress. nil fn: nobody listens.
func WithProgress(ctx context.Context, fn func(trial.Progress)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, fn)
}

// ProgressFrom returns the progress listener of ctx, or nil.
func ProgressFrom(ctx context.Context) func(trial.Progress) {
	fn, _ := ctx.Value(progressKey{}).(func(trial.Progress))
	return fn
}

// ReportProgress reports an intermediate result of the running trial to
// the listener of ctx, if any; it tells whether one listens.
func ReportProgress(ctx context.Context, p trial.Progress) bool {
	f := ProgressFrom(ctx)
	if f == nil {
		return false
	}
	f(p)
	return true
}
