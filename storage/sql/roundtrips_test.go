package sql

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// sqlCounter is a slog.Handler that records the statements a Store runs
// with LogSQL set (one record per round trip to the database).
type sqlCounter struct {
	mu      *sync.Mutex
	queries *[]string
}

func (h sqlCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h sqlCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h sqlCounter) WithGroup(string) slog.Handler            { return h }
func (h sqlCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "sql" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "query" {
			h.mu.Lock()
			*h.queries = append(*h.queries, a.Value.String())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestTrialRoundTrips: queuing, starting and finishing a trial of a new
// configuration (BenchmarkTrial's work) costs the statements it cost
// before the change feed (main at 482b609: 14, one round trip each): the
// feed takes its number in a round trip the transaction makes anyway
// (MySQL) or in the trial's own statement (SQLite, PostgreSQL), and on
// PostgreSQL no statement names bench_feed at all. A load-independent
// guard of the per-trial cost.
func TestTrialRoundTrips(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		var queries []string
		cfg := b.fresh(t)
		cfg.LogSQL = true
		cfg.Logger = slog.New(sqlCounter{mu: &sync.Mutex{}, queries: &queries})
		exp := newExperiment(t, open(t, cfg), "e")
		run := func(i int) {
			tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": strconv.Itoa(i)}, Metadata: map[string]string{"repeat_i": "1"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := exp.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			err = exp.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": float64(i)},
				Telemetry: []storage.Telemetry{{Ts: now, Metric: "cpu", Value: 1}},
				Output:    []storage.Output{{Phase: "run", Env: "e", Command: "./run.sh", Stdout: "ok", Start: now}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		run(0) // the experiment's first change creates its bench_feed row (MySQL)
		queries = queries[:0]
		const n = 10
		for i := 1; i <= n; i++ {
			run(i)
		}
		if got, want := len(queries), 14*n; got != want {
			t.Errorf("%d statements for %d trials, want %d (14 each):\n%s", got, n, want, strings.Join(queries[:len(queries)/n], "\n"))
		}
		for _, q := range queries {
			if strings.HasPrefix(q, "UPDATE bench_feed") {
				t.Errorf("a statement of the feed's own: %s", q)
			}
			if b.name == "postgres" && strings.Contains(q, "bench_feed") {
				t.Errorf("PostgreSQL: a statement on bench_feed (schema version 9 has none): %s", q)
			}
		}
	})
}
