package sql

import (
	"context"
	"github.com/benchtune/bench/trial"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
)

// benchTrial is the work of one trial as the scheduler does it: queue it,
// mark it running, finish it with a few results, telemetry and one
// captured command.
func benchTrial(b *testing.B, exp storage.Experiment, i int) {
	ctx := context.Background()
	tr, err := exp.NewTrial(ctx, storage.TrialSpec{
		Params:   map[string]string{"threads": strconv.Itoa(i % 16), "buffer": strconv.Itoa(i % 7), "mode": "fast"},
		Metadata: map[string]string{"optimizer": "bench", "repeat_i": "1"},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := exp.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	out := storage.TrialOutcome{
		Status:  trial.SUCCEEDED,
		Results: map[string]any{"score": float64(i), "latency": 0.5, "note": "ok"},
		Output:  []storage.Output{{Phase: "run", Env: "bench", Command: "./run.sh", Stdout: strings.Repeat("x", 1024), Start: now, Duration: time.Millisecond}},
	}
	for k := range 5 {
		out.Telemetry = append(out.Telemetry, storage.Telemetry{Ts: now.Add(time.Duration(k) * time.Millisecond), Metric: "cpu", Value: k})
	}
	if err := exp.Finish(ctx, tr.ID, out); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTrial measures NewTrial + UpdateStatus(RUNNING) + Finish per
// trial (ns/op is the storage cost of one trial).
func BenchmarkTrial(b *testing.B) {
	cases := []struct {
		name     string
		cfg      func(b *testing.B) storage.Config
		parallel bool
	}{
		{"sqlite", func(b *testing.B) storage.Config { return sqliteBackend.fresh(b) }, false},
		{"sqlite-sync-full", func(b *testing.B) storage.Config {
			c := sqliteBackend.fresh(b)
			c.Query = map[string]string{"synchronous": "FULL"}
			return c
		}, false},
		{"sqlite-parallel", func(b *testing.B) storage.Config { return sqliteBackend.fresh(b) }, true},
		{"sqlite-memory", func(b *testing.B) storage.Config { return storage.Config{DriverName: "sqlite", Database: ":memory:"} }, false},
		{"postgres", func(b *testing.B) storage.Config { return freshPostgres(b) }, false},
		{"postgres-parallel", func(b *testing.B) storage.Config { return freshPostgres(b) }, true},
		{"mysql", func(b *testing.B) storage.Config { return freshMySQL(b) }, false},
		{"mysql-parallel", func(b *testing.B) storage.Config { return freshMySQL(b) }, true},
	}
	// The same cases with a reader of the change feed polling as the
	// driver does (pollOthers: Changes once a second, after a first
	// Changes(0)), so that work a backend moves from writers to readers
	// is measured too. BENCH_FEED_POLL sets another interval.
	for _, bc := range cases[:len(cases):len(cases)] {
		if !strings.Contains(bc.name, "sync-full") && !strings.Contains(bc.name, "memory") {
			bc.name += "-poll"
			cases = append(cases, bc)
		}
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b, bc.cfg(b))
			exp := newExperiment(b, s, "bench")
			if strings.HasSuffix(bc.name, "-poll") {
				defer pollFeed(b, exp)()
			}
			b.ReportAllocs()
			b.ResetTimer()
			if !bc.parallel {
				for i := 0; b.Loop(); i++ {
					benchTrial(b, exp, i)
				}
				return
			}
			b.SetParallelism(2) // 2 writers per core, like several trial runners
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					benchTrial(b, exp, i)
				}
			})
		})
	}
}

// pollFeed starts a reader of exp's change feed that polls every
// BENCH_FEED_POLL (default 1s, the driver's rate) and returns the function
// that stops it, reporting its polls and trials read per op.
func pollFeed(b *testing.B, exp storage.Experiment) func() {
	every := time.Second
	if v := os.Getenv("BENCH_FEED_POLL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("BENCH_FEED_POLL=%q: want a positive duration", v)
		}
		every = d
	}
	ctx, cancel := context.WithCancel(context.Background())
	var polls, read int
	done := make(chan error, 1)
	go func() {
		_, since, err := exp.Changes(ctx, 0)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for err == nil {
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-tick.C:
			}
			var trs []storage.Trial
			trs, since, err = exp.Changes(ctx, since)
			polls++
			read += len(trs)
		}
		done <- err
	}()
	return func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(polls)/float64(b.N), "polls/op")
		b.ReportMetric(float64(read)/float64(b.N), "read/op")
	}
}

// BenchmarkTrials measures loading an experiment of 1000 finished trials
// with parameters and results (what `bench results` and resume read).
func BenchmarkTrials(b *testing.B) {
	s := open(b, sqliteBackend.fresh(b))
	exp := newExperiment(b, s, "bench")
	for i := range 1000 {
		benchTrial(b, exp, i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		trials, err := exp.Trials(ctx, storage.TrialFilter{})
		if err != nil || len(trials) != 1000 {
			b.Fatal(len(trials), err)
		}
	}
}

// BenchmarkSchedulerTrial measures the storage work of one trial as the
// sequential scheduler does it: the trial is queued already running, and
// its outcome (one result, one captured command) is stored either on its
// own (two commits per trial) or together with queuing the next trial
// (FinishAndQueue: one commit per trial).
func BenchmarkSchedulerTrial(b *testing.B) {
	spec := func(i int) storage.TrialSpec {
		return storage.TrialSpec{
			Params:   map[string]string{"value": strconv.Itoa(i)},
			Metadata: map[string]string{"optimizer": "bench", "repeat_i": "1", "is_defaults": "False"},
			Running:  true,
		}
	}
	outcome := func(i int) storage.TrialOutcome {
		return storage.TrialOutcome{
			Status:  trial.SUCCEEDED,
			Results: map[string]any{"score": float64(i)},
			Output:  []storage.Output{{Phase: "run", Env: "bench", Command: "echo score=$value", Stdout: "score=" + strconv.Itoa(i) + "\n", Start: time.Now(), Duration: time.Millisecond}},
		}
	}
	for _, backend := range []string{"sqlite", "sqlite-memory"} {
		for _, merged := range []bool{false, true} {
			name := backend + "/separate"
			if merged {
				name = backend + "/merged"
			}
			b.Run(name, func(b *testing.B) {
				cfg := storage.Config{DriverName: "sqlite", Database: ":memory:"}
				if backend == "sqlite" {
					cfg = sqliteBackend.fresh(b)
				}
				exp := newExperiment(b, open(b, cfg), "bench")
				ctx := context.Background()
				tr, err := exp.NewTrial(ctx, spec(0))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for i := 1; b.Loop(); i++ {
					if merged {
						tr, err = exp.FinishAndQueue(ctx, tr.ID, outcome(i), spec(i))
					} else {
						if err = exp.Finish(ctx, tr.ID, outcome(i)); err == nil {
							tr, err = exp.NewTrial(ctx, spec(i))
						}
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkOpen measures what a bench process pays before its first
// trial: opening the SQLite file, creating or checking the schema, and
// creating or resuming the experiment.
func BenchmarkOpen(b *testing.B) {
	for _, fresh := range []bool{true, false} {
		name := "existing"
		if fresh {
			name = "new-file"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				path := filepath.Join(dir, "bench.sqlite")
				if fresh {
					path = filepath.Join(dir, "bench"+strconv.Itoa(i)+".sqlite")
				}
				s, err := Open(ctx, storage.Config{DriverName: "sqlite", Database: path, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := s.Experiment(ctx, storage.ExperimentInfo{ID: "exp", RootEnvConfig: "env.jsonc",
					Objectives: []storage.Objective{{Name: "score", Direction: "min"}}}); err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewTrialBudget measures NewTrial of a new configuration in an
// experiment that holds 1,000 or 10,000 trials of distinct configurations,
// without a budget of configurations and with one (TrialSpec.MaxConfigs,
// which the scheduler sets to max_suggestions: one count over the
// experiment's trials per stored trial), on SQLite.
func BenchmarkNewTrialBudget(b *testing.B) {
	ctx := context.Background()
	for _, held := range []int{1000, 10000} {
		cfg := sqliteBackend.fresh(b)
		st, err := Open(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
		if err != nil {
			b.Fatal(err)
		}
		for i := range held {
			if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": strconv.Itoa(i)}, Metadata: map[string]string{"repeat_i": "1"}}); err != nil {
				b.Fatal(err)
			}
		}
		next := held
		for _, budget := range []int{0, 1 << 30} {
			name := "held=" + strconv.Itoa(held) + "/budget=off"
			if budget > 0 {
				name = "held=" + strconv.Itoa(held) + "/budget=on"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					next++
					if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": strconv.Itoa(next)}, Metadata: map[string]string{"repeat_i": "1"}, MaxConfigs: budget}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		st.Close()
	}
}
