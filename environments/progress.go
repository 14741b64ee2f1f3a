package environments

import (
	"context"

	"github.com/benchtune/bench/trial"
)

type progressKey struct{}

// WithProgress returns a context whose environments report their running
// trial's intermediate results (trial.Progress) to f (the runner passes
// its Spec.Progress). A nil f reports nowhere.
func WithProgress(ctx context.Context, f func(trial.Progress)) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, f)
}

// ReportProgress reports an intermediate result of the running trial to
// the listener of ctx, if any; it tells whether one listens.
func ReportProgress(ctx context.Context, p trial.Progress) bool {
	f, _ := ctx.Value(progressKey{}).(func(trial.Progress))
	if f == nil {
		return false
	}
	f(p)
	return true
}
