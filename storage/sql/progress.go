package sql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Intermediate results of running trials (trial.Progress), stored as
// telemetry rows with a step (migration 00006_progress_step).

// AddProgress stores progress reports of a trial as telemetry with their
// step (see storage.Experiment).
func (e *experiment) AddProgress(ctx context.Context, trialID int, reports []trial.Progress) error {
	now := time.Now()
	var tel []storage.Telemetry
	for _, p := range reports {
		tel = append(tel, p.Telemetry(now)...)
	}
	rows, err := e.telemetryRows(trialID, tel)
	if err != nil || len(rows) == 0 {
		return err
	}
	err = e.s.write(ctx, func(r runner) error {
		var n int
		if err := r.queryRow(ctx, `SELECT COUNT(*) FROM trial WHERE exp_id = ? AND trial_id = ?`, e.info.ID, trialID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: trial %d of experiment %q", storage.ErrNotFound, trialID, e.info.ID)
		}
		return e.insertTelemetry(ctx, r, rows)
	})
	if err != nil {
		return fmt.Errorf("storage: store the progress of trial %d of %q: %w", trialID, e.info.ID, err)
	}
	return nil
}

// telemetryRows checks telemetry and converts it to trial_telemetry rows
// (exp_id, trial_id, ts, metric_id, metric_value, step); a repeated
// (ts, metric) keeps its first value.
func (e *experiment) telemetryRows(trialID int, tel []storage.Telemetry) ([][]any, error) {
	type telKey struct {
		ts     time.Time
		metric string
	}
	seen := map[telKey]bool{}
	rows := make([][]any, 0, len(tel))
	for i, t := range tel {
		name := clean(strings.TrimSpace(t.Metric))
		if name == "" {
			return nil, fmt.Errorf("%w: trial %d: telemetry %d has no metric name", storage.ErrInvalid, trialID, i)
		}
		if t.Ts.IsZero() {
			return nil, fmt.Errorf("%w: trial %d: telemetry %d (%s) has no timestamp", storage.ErrInvalid, trialID, i, name)
		}
		tts := normTime(t.Ts)
		if seen[telKey{tts, name}] {
			continue
		}
		seen[telKey{tts, name}] = true
		v, err := storedValue(t.Value)
		if err != nil {
			return nil, fmt.Errorf("trial %d: telemetry %q: %w", trialID, name, err)
		}
		var step any
		if t.Step != nil {
			step = *t.Step
		}
		rows = append(rows, []any{e.info.ID, trialID, e.s.dialect.ts(tts), name, v, step})
	}
	return rows, nil
}

// insertTelemetry inserts telemetryRows; a (ts, metric) already stored
// for the trial keeps its value.
func (e *experiment) insertTelemetry(ctx context.Context, r runner, rows [][]any) error {
	return r.insertRows(ctx, "trial_telemetry", []string{"exp_id", "trial_id", "ts", "metric_id", "metric_value", "step"}, rows,
		e.s.dialect.ignoreDup("exp_id, trial_id, ts, metric_id"))
}
