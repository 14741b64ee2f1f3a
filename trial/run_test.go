package trial

import (
	"sync/atomic"
	"testing"
	"time"
)

// An Activity on an injected clock takes its first touch and every later
// one from that clock, never from the system's.
func TestActivityClock(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(start.UnixNano())
	a := NewActivityClock(func() time.Time { return time.Unix(0, now.Load()) })
	if got := a.LastActive(); !got.Equal(start) {
		t.Fatalf("first touch %v, want the clock's %v", got, start)
	}
	now.Add(int64(time.Minute))
	if got := a.LastActive(); !got.Equal(start) {
		t.Fatalf("LastActive moved without a touch: %v", got)
	}
	a.Touch()
	if got, want := a.LastActive(), start.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("after a touch %v, want %v", got, want)
	}
	// A clock that goes back does not move the last touch back.
	now.Add(-int64(30 * time.Second))
	a.Touch()
	if got, want := a.LastActive(), start.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("a touch at an earlier time moved LastActive to %v, want %v", got, want)
	}
	// The zero Activity (not made by a constructor) reads the real clock.
	var z Activity
	before := time.Now()
	z.Touch()
	if got := z.LastActive(); got.Before(before) {
		t.Errorf("zero Activity's touch at %v, before %v", got, before)
	}
}
