package schedulers

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// BenchmarkDriverIdlePoll measures what an idle driver does once a second
// to learn of other processes' results (pollOthers) on an experiment of
// 10,000 finished trials: "scan" is the way it was before the change feed
// (read every trial, as pollOthers did), "feed" is pollOthers now (the
// trials changed since the last poll, and the unfinished ones). Both run
// in the same process on the same SQLite file; ns/op is the driver's CPU
// per second of idling (SQLite runs in-process). scripts/bench-driver-idle.sh
// prints the ratio. The tick-* cases measure the whole once-a-second part
// of the driver's tick around it.
func BenchmarkDriverIdlePoll(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DriverName: "sqlite", Database: filepath.Join(b.TempDir(), "db.sqlite")})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		b.Fatal(err)
	}
	other := exp.WithOwner("elsewhere.example:1:ffff", 30e9)
	for i := range n {
		tr, err := other.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(i % 21)}, Metadata: map[string]string{"repeat_i": fmt.Sprint(i/21 + 1)}})
		if err != nil {
			b.Fatal(err)
		}
		if err := other.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": float64(i)}}); err != nil {
			b.Fatal(err)
		}
	}
	tun := testTunables(b)
	opt, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer", Config: map[string]any{"optimizer_type": "RANDOM"}, Tunables: tun.Copy()})
	if err != nil {
		b.Fatal(err)
	}
	runners := []Runner{NewLocalRunner(1, &parEnv{fakeEnv: fakeEnv{tun: tun.Copy()}, id: 1})}
	s, err := New(Config{ExperimentID: "e", Parallel: true, NumTrialRunners: 1, DriverOnly: true}, runners, opt, exp, Options{Tunables: tun})
	if err != nil {
		b.Fatal(err)
	}
	d, err := s.newDispatch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	d.others = true
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if err := d.pollOthersScan(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("feed", func(b *testing.B) {
		for b.Loop() {
			if err := d.pollOthers(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	// How an idle driver alone on its experiment looks for other
	// processes' trials once a second: "detect-counts" as it was before
	// (a count of every trial by status; a copy of the old detectOthers
	// below), "detect-feed" as it is now (the change feed since the
	// number last read).
	b.Run("detect-counts", func(b *testing.B) {
		for b.Loop() {
			d.others, d.trialCount = false, n
			d.detectOthersCounts(ctx)
		}
		if d.others {
			b.Fatal("detect-counts found other processes' trials: the case measured the wrong path")
		}
	})
	b.Run("detect-feed", func(b *testing.B) {
		for b.Loop() {
			d.others = false
			d.detectOthers(ctx)
		}
		if d.others {
			b.Fatal("detect-feed found other processes' trials: the case measured the wrong path")
		}
	})
	// The whole once-a-second part of an idle driver's tick, not only
	// pollOthers: stop requests, live workers and, with other processes
	// (tick-others), pollOthers; without them (tick-alone: this process
	// knows every trial, as a driver whose own or network workers' trials
	// run), the check for other processes' trials (detectOthers, the
	// change feed since the number last read).
	for _, others := range []bool{true, false} {
		name := "tick-alone"
		if others {
			name = "tick-others"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				d.others, d.lastStop, d.lastPoll = others, time.Time{}, time.Time{}
				d.trialCount = n
				if err := d.tick(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if !others && d.others {
				b.Fatal("tick-alone found other processes' trials: the case measured the wrong path")
			}
		})
	}
}

// pollOthersScan is pollOthers as it was before the change feed (the
// baseline of BenchmarkDriverIdlePoll): every trial read, every second.
func (d *dispatch) pollOthersScan(ctx context.Context) error {
	s := d.s
	all, err := s.exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return err
	}
	last := lastAttempts(all)
	others := false
	for _, t := range all {
		if !t.Finished() {
			if t.Owner != "" && t.Owner != s.o.Owner {
				others = true
				if trial.TakeOver(t.Owner, s.o.Owner, false) {
					if err := s.plain.WithOwner(t.Owner, s.cfg.Lease).Release(ctx); err != nil {
						return err
					}
				}
			}
			continue
		}
		if d.observed[t.ID] {
			continue
		}
		if _, mine := d.running[t.ID]; mine {
			continue
		}
		out := t.Outcome()
		if t.Status.IsFailed() && retriedLater(last, t) {
			d.observed[t.ID] = true
			continue
		}
		d.record(item{t: t, root: t.ID, foreign: true}, out)
		d.resolveWaiting(ctx, t.ID, out)
		if err := d.checkStop(out); err != nil {
			return err
		}
	}
	d.others = others || len(d.waiting) > 0
	return nil
}

// detectOthersCounts is detectOthers as it was before it read the change
// feed (the baseline of the detect-* cases): every trial counted by status,
// every second, against what this process knows.
func (d *dispatch) detectOthersCounts(ctx context.Context) {
	counts, err := d.s.exp.Counts(ctx)
	if err != nil {
		return
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	mine := d.trialCount + len(d.queue)
	for _, c := range d.retryCount {
		mine += c
	}
	if n > mine {
		d.others = true
	}
}
