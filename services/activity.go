package services

import (
	"context"

	"github.com/benchtune/bench/trial"
)

// Activity records when a trial last showed signs of life, for hang
// detection (trial.Activity: the type lives in the leaf package, with the
// rest of a trial's vocabulary). The services touch the Activity of their
// context (ActivityFrom) whenever a command prints something.
type Activity = trial.Activity

// NewActivity returns an Activity whose first touch is now.
func NewActivity() *Activity { return trial.NewActivity() }

type activityKey struct{}

// WithActivity returns a context whose services record activity into a.
func WithActivity(ctx context.Context, a *Activity) context.Context {
	return context.WithValue(ctx, activityKey{}, a)
}

// ActivityFrom returns the Activity of ctx, or nil.
func ActivityFrom(ctx context.Context) *Activity {
	a, _ := ctx.Value(activityKey{}).(*Activity)
	return a
}
