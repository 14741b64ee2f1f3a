// Package clock is the time source of bench's timers that tests need to
// control: the dispatcher's tick, lease renewals (heartbeat), hang
// detection and storage's lease times. Real is the default; Fake is moved
// by hand, so that tests of leases and hangs run without sleeping.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes tickers.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker is a time.Ticker behind an interface.
type Ticker interface {
	// C delivers the ticks.
	C() <-chan time.Time
	Stop()
}

// Real is the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

// Or returns c, or the real clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}

// Fake is a clock that only moves when Advance is called. Its tickers
// behave like time.Ticker's: each has a buffer of one tick and drops the
// ticks its reader is too slow for. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[*fakeTicker]bool
	// changed is closed (and replaced) whenever a ticker starts or stops.
	changed chan struct{}
}

// NewFake returns a fake clock that reads start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, tickers: map[*fakeTicker]bool{}, changed: make(chan struct{})}
}

// Now returns the clock's time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTicker returns a ticker that ticks each time Advance moves the clock
// to or past its next tick. d must be positive.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTicker{f: f, every: d, next: f.now.Add(d), c: make(chan time.Time, 1)}
	f.tickers[t] = true
	f.notifyLocked()
	return t
}

// Advance moves the clock by d and delivers the ticks that came due (at
// most one buffered per ticker, as time.Ticker).
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	for t := range f.tickers {
		if f.now.Before(t.next) {
			continue
		}
		select {
		case t.c <- f.now:
		default:
		}
		for !f.now.Before(t.next) {
			t.next = t.next.Add(t.every)
		}
	}
}

// Tickers returns how many tickers are running, and a channel that is
// closed when that number changes: a test waits for the code under test
// to start (or stop) its timers before moving the clock.
func (f *Fake) Tickers() (int, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.tickers), f.changed
}

// WaitTickers blocks until at least n tickers are running.
func (f *Fake) WaitTickers(n int) {
	for {
		have, changed := f.Tickers()
		if have >= n {
			return
		}
		<-changed
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTicker struct {
	f     *Fake
	every time.Duration
	next  time.Time // guarded by f.mu
	c     chan time.Time
}

func (t *fakeTicker) C() <-chan time.Time { return t.c }

func (t *fakeTicker) Stop() {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.f.tickers[t] {
		delete(t.f.tickers, t)
		t.f.notifyLocked()
	}
}
