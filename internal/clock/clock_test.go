package clock

import (
	"testing"
	"time"
)

func TestFakeTickerTicksWhenAdvanced(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := NewFake(start)
	tk := f.NewTicker(time.Second)
	select {
	case <-tk.C():
		t.Fatal("a tick before the clock moved")
	default:
	}
	f.Advance(999 * time.Millisecond)
	select {
	case <-tk.C():
		t.Fatal("a tick before its interval passed")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case got := <-tk.C():
		if want := start.Add(time.Second); !got.Equal(want) {
			t.Errorf("tick at %v, want %v", got, want)
		}
	default:
		t.Fatal("no tick after its interval")
	}
	// Like time.Ticker: one tick is buffered, the rest are dropped.
	f.Advance(5 * time.Second)
	<-tk.C()
	select {
	case <-tk.C():
		t.Fatal("more than one tick buffered")
	default:
	}
	// The next tick is on the ticker's own schedule (t0+7s).
	f.Advance(999 * time.Millisecond)
	select {
	case <-tk.C():
		t.Fatal("a tick off the ticker's schedule")
	default:
	}
	f.Advance(time.Millisecond)
	<-tk.C()
	if got, want := f.Now(), start.Add(7*time.Second); !got.Equal(want) {
		t.Errorf("Now %v, want %v", got, want)
	}
}

func TestFakeWaitTickers(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	started := make(chan Ticker)
	go func() { started <- f.NewTicker(time.Second) }()
	f.WaitTickers(1)
	tk := <-started
	if n, _ := f.Tickers(); n != 1 {
		t.Fatalf("%d tickers, want 1", n)
	}
	_, changed := f.Tickers()
	tk.Stop()
	<-changed
	if n, _ := f.Tickers(); n != 0 {
		t.Fatalf("%d tickers after Stop, want 0", n)
	}
	tk.Stop() // twice is fine
	f.Advance(2 * time.Second)
	select {
	case <-tk.C():
		t.Fatal("a stopped ticker ticked")
	default:
	}
}

func TestOr(t *testing.T) {
	if _, ok := Or(nil).(realClock); !ok {
		t.Error("Or(nil) is not the real clock")
	}
	f := NewFake(time.Unix(0, 0))
	if Or(f) != Clock(f) {
		t.Error("Or(f) is not f")
	}
}
