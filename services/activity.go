package services

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Activity records when a trial last showed signs of life, for hang
// detection: the services touch it whenever a command prints something,
// and files whose modification time counts as activity (a telemetry file)
// can be watched. A scheduler stops a trial whose LastActive is too old.
//
// An Activity is safe for concurrent use. The methods of a nil *Activity
// do nothing (LastActive returns the zero time), so services call them
// without checking whether the context holds one.
type Activity struct {
	last atomic.Int64 // UnixNano of the latest touch

	mu      sync.Mutex
	watched []string
}

// NewActivity returns an Activity whose first touch is now.
func NewActivity() *Activity {
	a := &Activity{}
	a.last.Store(time.Now().UnixNano())
	return a
}

// Touch records activity now. It takes no lock: services call it on every
// chunk of output.
func (a *Activity) Touch() {
	if a == nil {
		return
	}
	now := time.Now().UnixNano()
	for {
		old := a.last.Load()
		if now <= old || a.last.CompareAndSwap(old, now) {
			return
		}
	}
}

// Watch adds a file whose modification time counts as activity. The file
// need not exist yet; watching a path twice is the same as once.
func (a *Activity) Watch(path string) {
	if a == nil || path == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.Contains(a.watched, path) {
		a.watched = append(a.watched, path)
	}
}

// Watched returns the watched paths, in the order they were added.
func (a *Activity) Watched() []string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.watched)
}

// LastActive returns the latest of the last touch (the creation time of an
// Activity made by NewActivity counts as one) and the modification times
// of the watched files that exist. It stats the watched files on each
// call.
func (a *Activity) LastActive() time.Time {
	if a == nil {
		return time.Time{}
	}
	var latest time.Time
	if n := a.last.Load(); n != 0 {
		latest = time.Unix(0, n)
	}
	for _, p := range a.Watched() {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(latest) {
			latest = fi.ModTime()
		}
	}
	return latest
}

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
