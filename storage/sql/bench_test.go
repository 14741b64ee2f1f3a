package sql

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
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
	if err := exp.UpdateStatus(ctx, tr.ID, environments.RUNNING, time.Time{}); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	out := storage.TrialOutcome{
		Status:  environments.SUCCEEDED,
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
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b, bc.cfg(b))
			exp := newExperiment(b, s, "bench")
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
