package sql

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func step(n int64) *int64 { return &n }

// Progress reports are telemetry rows with their step; the outcome's own
// telemetry (no step) is stored beside them, and the trial's detail gives
// both back in time order.
func TestAddProgress(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e").WithOwner("me", time.Minute)
		tr := mustTrial(t, exp, nil)
		reports := []trial.Progress{
			{Step: 0, Ts: at(1), Values: map[string]any{"loss": 0.9, "acc": 0.1}},
			{Step: 1, Ts: at(2), Values: map[string]any{"loss": 0.5}},
		}
		if err := exp.AddProgress(ctx, tr.ID, reports[:1]); err != nil {
			t.Fatal(err)
		}
		if err := exp.AddProgress(ctx, tr.ID, reports[1:]); err != nil {
			t.Fatal(err)
		}
		// A repeated report keeps the first value.
		if err := exp.AddProgress(ctx, tr.ID, []trial.Progress{{Step: 1, Ts: at(2), Values: map[string]any{"loss": 7.0}}}); err != nil {
			t.Fatal(err)
		}
		if err := exp.AddProgress(ctx, tr.ID, nil); err != nil {
			t.Fatal(err)
		}
		out := storage.TrialOutcome{Status: trial.SUCCEEDED, Ts: at(4), Results: map[string]any{"loss": 0.2},
			Telemetry: []storage.Telemetry{{Ts: at(3), Metric: "cpu", Value: 0.5}}}
		if err := exp.Finish(ctx, tr.ID, out); err != nil {
			t.Fatal(err)
		}
		// After the end: still stored (a late batch of the same run).
		if err := exp.AddProgress(ctx, tr.ID, []trial.Progress{{Step: 2, Ts: at(5), Values: map[string]any{"loss": 0.2, "note": "done"}}}); err != nil {
			t.Fatal(err)
		}
		want := []storage.Telemetry{
			{Ts: at(1), Metric: "acc", Value: 0.1, Step: step(0)},
			{Ts: at(1), Metric: "loss", Value: 0.9, Step: step(0)},
			{Ts: at(2), Metric: "loss", Value: 0.5, Step: step(1)},
			{Ts: at(3), Metric: "cpu", Value: 0.5},
			{Ts: at(5), Metric: "loss", Value: 0.2, Step: step(2)},
			{Ts: at(5), Metric: "note", Value: "done", Step: step(2)},
		}
		if diff := cmp.Diff(want, mustDetail(t, exp, tr.ID).Telemetry); diff != "" {
			t.Errorf("telemetry (-want +got):\n%s", diff)
		}
		wantErr(t, exp.AddProgress(ctx, 99, reports), storage.ErrNotFound, "progress of an unknown trial")
		wantErr(t, exp.AddProgress(ctx, tr.ID, []trial.Progress{{Step: 3, Values: map[string]any{" ": 1}}}), storage.ErrInvalid, "a metric without a name")
		// A zero Ts is now.
		before := time.Now().Add(-time.Second)
		if err := exp.AddProgress(ctx, tr.ID, []trial.Progress{{Step: 9, Values: map[string]any{"x": 1}}}); err != nil {
			t.Fatal(err)
		}
		tel := mustDetail(t, exp, tr.ID).Telemetry
		if last := tel[len(tel)-1]; last.Metric != "x" || *last.Step != 9 || last.Ts.Before(before) {
			t.Errorf("progress without a time stored as %+v", last)
		}
	})
}

// An adopted mlos_bench database takes progress, and mlos_bench's own
// query of trial_telemetry still reads every row.
func TestAddProgressMlosDatabase(t *testing.T) {
	forEachMlos(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg, db := mlosDB(t, b, mlosVersions[len(mlosVersions)-1])
		db.Close()
		s := open(t, cfg)
		exp, err := s.LoadExperiment(ctx, "mlos-exp")
		if err != nil {
			t.Fatal(err)
		}
		before := count(t, s, `SELECT COUNT(*) FROM trial_telemetry`)
		if err := exp.AddProgress(ctx, 4, []trial.Progress{{Step: 3, Ts: at(100), Values: map[string]any{"loss": 0.5}}}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, `SELECT COUNT(*) FROM (SELECT exp_id, trial_id, ts, metric_id, metric_value FROM trial_telemetry) x`); n != before+1 {
			t.Errorf("mlos_bench's query of trial_telemetry reads %d rows, want %d", n, before+1)
		}
	})
}
