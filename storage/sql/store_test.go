package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/benchtune/bench/storage"
)

func TestExperimentCreateAndResume(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		var logs logBuffer
		cfg := b.fresh(t)
		cfg.Logger = logs.logger()
		s := open(t, cfg)
		info := storage.ExperimentInfo{
			ID:            "exp1",
			Description:   "first",
			RootEnvConfig: "env.jsonc",
			GitRepo:       "repo",
			GitCommit:     "aaaa",
			Objectives: []storage.Objective{
				{Name: "throughput", Direction: "MAX", Weight: 2},
				{Name: "latency", Direction: "min"},
			},
		}
		before := time.Now().UTC().Add(-time.Second)
		exp, resumed, err := s.Experiment(ctx, info)
		if err != nil {
			t.Fatal(err)
		}
		if resumed {
			t.Fatal("a new experiment was reported as resumed")
		}
		got := exp.Info()
		if got.TsStart.Before(before) || got.TsStart.Location() != time.UTC {
			t.Errorf("TsStart = %v, want a UTC time after %v", got.TsStart, before)
		}
		want := storage.ExperimentInfo{
			ID: "exp1", Description: "first", RootEnvConfig: "env.jsonc", GitRepo: "repo", GitCommit: "aaaa",
			Objectives: []storage.Objective{{Name: "throughput", Direction: "max", Weight: 2}, {Name: "latency", Direction: "min"}},
			Status:     trial.PENDING,
		}
		ignore := cmpopts.IgnoreFields(storage.ExperimentInfo{}, "TsStart", "DriverName", "DriverPID")
		if diff := cmp.Diff(want, got, ignore); diff != "" {
			t.Errorf("Info() mismatch (-want +got):\n%s", diff)
		}
		if got.DriverPID == 0 {
			t.Errorf("DriverPID not recorded")
		}
		if strings.Contains(logs.String(), "WARN") {
			t.Errorf("unexpected warning creating an experiment:\n%s", logs.String())
		}

		// Resume with another commit and other objectives: a warning, and
		// the stored description and objectives are kept.
		info2 := info
		info2.Description = "second"
		info2.GitCommit = "bbbb"
		info2.Objectives = []storage.Objective{{Name: "latency", Direction: "max"}}
		exp2, resumed, err := s.Experiment(ctx, info2)
		if err != nil {
			t.Fatal(err)
		}
		if !resumed {
			t.Fatal("an existing experiment was not reported as resumed")
		}
		if diff := cmp.Diff(want, exp2.Info(), ignore); diff != "" {
			t.Errorf("resumed Info() mismatch (-want +got):\n%s", diff)
		}
		l := logs.String()
		for _, w := range []string{"git commit", "stored_commit=aaaa", "commit=bbbb", "objectives differ"} {
			if !strings.Contains(l, w) {
				t.Errorf("log lacks %q:\n%s", w, l)
			}
		}

		// LoadExperiment and Experiments see it; unknown ids are ErrNotFound.
		loaded, err := s.LoadExperiment(ctx, "exp1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(exp.Info(), loaded.Info(), cmpopts.IgnoreFields(storage.ExperimentInfo{}, "DriverName", "DriverPID")); diff != "" {
			t.Errorf("LoadExperiment mismatch (-want +got):\n%s", diff)
		}
		_, err = s.LoadExperiment(ctx, "nope")
		wantErr(t, err, storage.ErrNotFound, "LoadExperiment(nope)")

		if err := exp.SetStatus(ctx, trial.RUNNING, time.Time{}); err != nil {
			t.Fatal(err)
		}
		exp3 := newExperiment(t, s, "exp0")
		tr := mustTrial(t, exp3, map[string]string{"x": "1"})
		mustTrial(t, exp3, map[string]string{"x": "2"})
		mustFinish(t, exp3, tr.ID, trial.SUCCEEDED, nil)
		if err := exp3.SetStatus(ctx, trial.SUCCEEDED, at(100)); err != nil {
			t.Fatal(err)
		}
		list, err := s.Experiments(ctx)
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			ID     string
			Status trial.Status
			TsEnd  time.Time
			Trials map[trial.Status]int
			Objs   int
		}
		var rows []row
		for _, e := range list {
			rows = append(rows, row{e.ID, e.Status, e.TsEnd, e.Trials, len(e.Objectives)})
		}
		wantRows := []row{
			{"exp0", trial.SUCCEEDED, at(100).Truncate(time.Microsecond), map[trial.Status]int{trial.SUCCEEDED: 1, trial.PENDING: 1}, 1},
			{"exp1", trial.RUNNING, time.Time{}, map[trial.Status]int{}, 2},
		}
		if diff := cmp.Diff(wantRows, rows); diff != "" {
			t.Errorf("Experiments mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestExperimentInvalid(t *testing.T) {
	s := open(t, sqliteBackend.fresh(t))
	ctx := context.Background()
	tests := []struct {
		name string
		info storage.ExperimentInfo
		want string
	}{
		{"empty id", storage.ExperimentInfo{ID: "  "}, "experiment id is empty"},
		{"bad direction", storage.ExperimentInfo{ID: "x", Objectives: []storage.Objective{{Name: "a", Direction: "up"}}}, `direction "up"`},
		{"no name", storage.ExperimentInfo{ID: "x", Objectives: []storage.Objective{{Direction: "min"}}}, "has no name"},
		{"twice", storage.ExperimentInfo{ID: "x", Objectives: []storage.Objective{{Name: "a", Direction: "min"}, {Name: "a", Direction: "max"}}}, "given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.Experiment(ctx, tc.info)
			wantErr(t, err, storage.ErrInvalid, tc.name)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

func TestTrialIDsContinue(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		s, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		info := storage.ExperimentInfo{ID: "e", FirstTrialID: 5, Objectives: []storage.Objective{{Name: "score", Direction: "min"}}}
		exp, _, err := s.Experiment(ctx, info)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for i := range 3 {
			got = append(got, mustTrial(t, exp, map[string]string{"i": fmt.Sprint(i)}).ID)
		}
		other := newExperiment(t, s, "other")
		got = append(got, mustTrial(t, other, map[string]string{"i": "0"}).ID)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		// A new process (a new Store) resumes: ids go on from max+1, and
		// FirstTrialID no longer matters.
		s = open(t, cfg)
		info.FirstTrialID = 1
		exp, resumed, err := s.Experiment(ctx, info)
		if err != nil || !resumed {
			t.Fatalf("resume: resumed=%v err=%v", resumed, err)
		}
		got = append(got, mustTrial(t, exp, map[string]string{"i": "3"}).ID)
		if diff := cmp.Diff([]int{5, 6, 7, 1, 8}, got); diff != "" {
			t.Errorf("trial ids (-want +got):\n%s", diff)
		}
	})
}

func TestConfigDedup(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		e1 := newExperiment(t, s, "e1")
		e2 := newExperiment(t, s, "e2")
		pA := map[string]string{"x": "1", "y": "a"}
		pB := map[string]string{"x": "2", "y": "a"}
		a1, err := e1.NewTrial(ctx, storage.TrialSpec{ConfigHash: "hashA", Params: pA})
		if err != nil {
			t.Fatal(err)
		}
		a2, err := e2.NewTrial(ctx, storage.TrialSpec{ConfigHash: "hashA", Params: pA})
		if err != nil {
			t.Fatal(err)
		}
		bb, err := e2.NewTrial(ctx, storage.TrialSpec{ConfigHash: "hashB", Params: pB})
		if err != nil {
			t.Fatal(err)
		}
		// Without a hash, the parameters' hash is used.
		c1 := mustTrial(t, e1, pB)
		c2 := mustTrial(t, e2, map[string]string{"y": "a", "x": "2"})
		if a1.ConfigID != a2.ConfigID || c1.ConfigID != c2.ConfigID {
			t.Errorf("same config stored twice: %d/%d %d/%d", a1.ConfigID, a2.ConfigID, c1.ConfigID, c2.ConfigID)
		}
		if a1.ConfigID == bb.ConfigID || bb.ConfigID == c1.ConfigID {
			t.Errorf("different configs share an id: %d %d %d", a1.ConfigID, bb.ConfigID, c1.ConfigID)
		}
		if c1.ConfigHash != storage.HashParams(pB) {
			t.Errorf("ConfigHash = %q, want HashParams", c1.ConfigHash)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM config"); n != 3 {
			t.Errorf("%d configs stored, want 3", n)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM config_param"); n != 6 {
			t.Errorf("%d config params stored, want 6", n)
		}
		// A known hash with other values is a caller bug: refused, nothing stored.
		_, err = e1.NewTrial(ctx, storage.TrialSpec{ConfigHash: "hashA", Params: pB})
		wantErr(t, err, storage.ErrInvalid, "hash reused with other params")
		if n := count(t, s, "SELECT COUNT(*) FROM trial"); n != 5 {
			t.Errorf("%d trials stored, want 5", n)
		}
		got, err := e2.Trials(ctx, storage.TrialFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]map[string]string{pA, pB, pB}, []map[string]string{got[0].Params, got[1].Params, got[2].Params}); diff != "" {
			t.Errorf("params (-want +got):\n%s", diff)
		}
	})
}

func TestStatusHistory(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "1"}, TsStart: at(0), TrialRunnerID: 2,
			Metadata: map[string]string{"optimizer": "mock", "repeat_i": "1", "opt_target_0": "score", "opt_direction_0": "min"}})
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			status trial.Status
			ts     time.Time
		}{
			{trial.READY, at(1)},
			{trial.RUNNING, at(2)},
			{trial.RUNNING, at(2)}, // the same record again is kept once
			{trial.RUNNING, at(3)},
		}
		for _, st := range steps {
			if err := exp.UpdateStatus(ctx, tr.ID, st.status, st.ts); err != nil {
				t.Fatalf("UpdateStatus(%s): %v", st.status, err)
			}
		}
		d := mustDetail(t, exp, tr.ID)
		if d.Status != trial.RUNNING || !d.TsStart.Equal(at(3).Truncate(time.Microsecond)) || d.Finished() {
			t.Errorf("running trial: status %s start %v finished %v", d.Status, d.TsStart, d.Finished())
		}
		if d.Results != nil {
			t.Errorf("unfinished trial has results %v", d.Results)
		}
		if err := exp.SetTrialRunner(ctx, tr.ID, 3); err != nil {
			t.Fatal(err)
		}
		mustFinishAt := storage.TrialOutcome{Status: trial.FAILED, Ts: at(10), FailureReason: "run: exit status 3"}
		if err := exp.Finish(ctx, tr.ID, mustFinishAt); err != nil {
			t.Fatal(err)
		}
		d = mustDetail(t, exp, tr.ID)
		us := func(sec int) time.Time { return at(sec).Truncate(time.Microsecond) }
		want := []storage.StatusChange{
			{Ts: us(0), Status: trial.PENDING},
			{Ts: us(1), Status: trial.READY},
			{Ts: us(2), Status: trial.RUNNING},
			{Ts: us(3), Status: trial.RUNNING},
			{Ts: us(10), Status: trial.FAILED},
		}
		if diff := cmp.Diff(want, d.History); diff != "" {
			t.Errorf("history (-want +got):\n%s", diff)
		}
		wantTrial := storage.Trial{
			ExperimentID: "e", ID: tr.ID, ConfigID: tr.ConfigID, ConfigHash: tr.ConfigHash, TrialRunnerID: 3,
			Status: trial.FAILED, TsStart: us(3), TsEnd: us(10),
			Params:   map[string]string{"x": "1"},
			Metadata: map[string]string{"optimizer": "mock", "repeat_i": "1", "opt_target_0": "score", "opt_direction_0": "min"},
			Results:  storage.Metrics{}, FailureReason: "run: exit status 3",
		}
		if diff := cmp.Diff(wantTrial, d.Trial); diff != "" {
			t.Errorf("trial (-want +got):\n%s", diff)
		}

		// A finished trial never changes; unknown trials and bad statuses are errors.
		wantErr(t, exp.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}), storage.ErrFinished, "UpdateStatus after Finish")
		wantErr(t, exp.SetTrialRunner(ctx, tr.ID, 1), storage.ErrFinished, "SetTrialRunner after Finish")
		wantErr(t, exp.UpdateStatus(ctx, 999, trial.RUNNING, time.Time{}), storage.ErrNotFound, "UpdateStatus of unknown trial")
		wantErr(t, exp.UpdateStatus(ctx, tr.ID, trial.SUCCEEDED, time.Time{}), storage.ErrInvalid, "UpdateStatus(SUCCEEDED)")
		wantErr(t, exp.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.RUNNING}), storage.ErrInvalid, "Finish(RUNNING)")
		wantErr(t, exp.Finish(ctx, 999, storage.TrialOutcome{Status: trial.SUCCEEDED}), storage.ErrNotFound, "Finish of unknown trial")
		_, err = exp.Trial(ctx, 999)
		wantErr(t, err, storage.ErrNotFound, "Trial(999)")
		if diff := cmp.Diff(d, mustDetail(t, exp, tr.ID)); diff != "" {
			t.Errorf("finished trial changed (-before +after):\n%s", diff)
		}
	})
}

func TestFinishIsAtomic(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		tr := mustTrial(t, exp, map[string]string{"x": "1"})
		if err := exp.UpdateStatus(ctx, tr.ID, trial.RUNNING, at(1)); err != nil {
			t.Fatal(err)
		}
		before := mustDetail(t, exp, tr.ID)
		if _, err := s.DB().ExecContext(ctx, b.failTelemetry); err != nil {
			t.Fatalf("install failing trigger: %v", err)
		}
		outcome := storage.TrialOutcome{
			Status:  trial.SUCCEEDED,
			Ts:      at(5),
			Results: map[string]any{"score": 1.5, "note": "ok"},
			Telemetry: []storage.Telemetry{
				{Ts: at(2), Metric: "cpu", Value: 0.5},
				{Ts: at(3), Metric: "boom", Value: 1}, // the database refuses this one
			},
			Output:        []storage.Output{{Phase: "run", Env: "local", Command: "true", Stdout: "out"}},
			FailureReason: "",
		}
		err := exp.Finish(ctx, tr.ID, outcome)
		if err == nil || !strings.Contains(err.Error(), "injected telemetry failure") {
			t.Fatalf("Finish with a failing telemetry row: got %v, want the injected failure", err)
		}
		after := mustDetail(t, exp, tr.ID)
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("a failed Finish left traces (-before +after):\n%s", diff)
		}
		for _, table := range []string{"trial_result", "trial_telemetry", "trial_output"} {
			if n := count(t, s, "SELECT COUNT(*) FROM "+table); n != 0 {
				t.Errorf("%s has %d rows after a failed Finish", table, n)
			}
		}
		pending, err := exp.PendingTrials(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{tr.ID}, ids(pending)); diff != "" {
			t.Errorf("pending after a failed Finish (-want +got):\n%s", diff)
		}

		// Without the bad row it goes through, once.
		outcome.Telemetry = outcome.Telemetry[:1]
		if err := exp.Finish(ctx, tr.ID, outcome); err != nil {
			t.Fatal(err)
		}
		done := mustDetail(t, exp, tr.ID)
		if done.Status != trial.SUCCEEDED || len(done.Telemetry) != 1 || len(done.Output) != 1 || len(done.Results) != 2 {
			t.Errorf("finished trial: %+v", done)
		}
		again := outcome
		again.Status = trial.FAILED
		again.Results = map[string]any{"score": 99}
		again.FailureReason = "late"
		wantErr(t, exp.Finish(ctx, tr.ID, again), storage.ErrFinished, "second Finish")
		if diff := cmp.Diff(done, mustDetail(t, exp, tr.ID)); diff != "" {
			t.Errorf("a second Finish changed the trial (-before +after):\n%s", diff)
		}
	})
}

// TestFinishAndQueue: finishing a trial and queuing the next one is one
// transaction; a failure of either part leaves both undone.
func TestFinishAndQueue(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		first, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "1"}, TsStart: at(0), Running: true})
		if err != nil {
			t.Fatal(err)
		}
		out := storage.TrialOutcome{Status: trial.SUCCEEDED, Ts: at(5), Results: map[string]any{"score": 2.5},
			Output: []storage.Output{{Phase: "run", Env: "local", Command: "true", Stdout: "score=2.5"}}}
		next, err := exp.FinishAndQueue(ctx, first.ID, out, storage.TrialSpec{Params: map[string]string{"x": "2"}, TsStart: at(5), Running: true,
			Metadata: map[string]string{"repeat_i": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if next.ID != first.ID+1 || next.Status != trial.RUNNING || next.ConfigID == first.ConfigID {
			t.Errorf("next trial %+v", next)
		}
		d := mustDetail(t, exp, first.ID)
		if d.Status != trial.SUCCEEDED || d.Results["score"] != 2.5 || len(d.Output) != 1 {
			t.Errorf("finished trial %+v", d)
		}
		n := mustDetail(t, exp, next.ID)
		us := at(5).Truncate(time.Microsecond)
		wantHistory := []storage.StatusChange{{Ts: us, Status: trial.PENDING}, {Ts: us, Status: trial.RUNNING}}
		if diff := cmp.Diff(wantHistory, n.History); diff != "" || n.Metadata["repeat_i"] != "1" {
			t.Errorf("queued trial %+v, history (-want +got):\n%s", n.Trial, diff)
		}

		// The next trial cannot be stored (its hash is stored with other
		// values): the finish is rolled back with it.
		before := mustDetail(t, exp, next.ID)
		trials := count(t, s, "SELECT COUNT(*) FROM trial")
		_, err = exp.FinishAndQueue(ctx, next.ID, out, storage.TrialSpec{ConfigHash: first.ConfigHash, Params: map[string]string{"x": "9"}})
		wantErr(t, err, storage.ErrInvalid, "FinishAndQueue with a conflicting config")
		if diff := cmp.Diff(before, mustDetail(t, exp, next.ID)); diff != "" {
			t.Errorf("a failed FinishAndQueue finished the trial (-before +after):\n%s", diff)
		}
		if got := count(t, s, "SELECT COUNT(*) FROM trial"); got != trials {
			t.Errorf("%d trials after a failed FinishAndQueue, want %d", got, trials)
		}
		// Finishing a finished trial fails the same way, queuing nothing.
		_, err = exp.FinishAndQueue(ctx, first.ID, out, storage.TrialSpec{Params: map[string]string{"x": "3"}})
		wantErr(t, err, storage.ErrFinished, "FinishAndQueue of a finished trial")
		if got := count(t, s, "SELECT COUNT(*) FROM trial"); got != trials {
			t.Errorf("%d trials after a refused FinishAndQueue, want %d", got, trials)
		}
	})
}

func TestFinishRejectsBadOutcome(t *testing.T) {
	s := open(t, sqliteBackend.fresh(t))
	exp := newExperiment(t, s, "e")
	tr := mustTrial(t, exp, nil)
	ctx := context.Background()
	tests := []struct {
		name string
		out  storage.TrialOutcome
	}{
		{"result type", storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"x": []int{1}}}},
		{"result name", storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{" ": 1}}},
		{"telemetry name", storage.TrialOutcome{Status: trial.SUCCEEDED, Telemetry: []storage.Telemetry{{Ts: at(1), Value: 1}}}},
		{"telemetry time", storage.TrialOutcome{Status: trial.SUCCEEDED, Telemetry: []storage.Telemetry{{Metric: "m", Value: 1}}}},
		{"telemetry type", storage.TrialOutcome{Status: trial.SUCCEEDED, Telemetry: []storage.Telemetry{{Ts: at(1), Metric: "m", Value: map[string]int{}}}}},
		{"status", storage.TrialOutcome{Status: trial.UNKNOWN}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, exp.Finish(ctx, tr.ID, tc.out), storage.ErrInvalid, tc.name)
		})
	}
	if d := mustDetail(t, exp, tr.ID); d.Finished() {
		t.Errorf("a refused Finish finished the trial")
	}
}

func TestPendingAndCompleted(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		other := newExperiment(t, s, "other")
		mustTrial(t, other, map[string]string{"x": "0"}) // must not show up
		final := map[int]trial.Status{
			1: trial.SUCCEEDED, 2: trial.FAILED, 3: trial.CANCELED, 4: trial.TIMED_OUT, 8: trial.SUCCEEDED,
		}
		running := map[int]trial.Status{5: trial.READY, 6: trial.RUNNING}
		for i := 1; i <= 8; i++ {
			tr := mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
			if tr.ID != i {
				t.Fatalf("trial id %d, want %d", tr.ID, i)
			}
			if st, ok := running[i]; ok {
				if err := exp.UpdateStatus(ctx, i, st, time.Time{}); err != nil {
					t.Fatal(err)
				}
			}
			if st, ok := final[i]; ok {
				mustFinish(t, exp, i, st, map[string]any{"score": float64(i) / 2, "host": "h" + fmt.Sprint(i)})
			}
		}
		pending, err := exp.PendingTrials(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{5, 6, 7}, ids(pending)); diff != "" {
			t.Errorf("PendingTrials (-want +got):\n%s", diff)
		}
		if pending[1].Status != trial.RUNNING || pending[1].Params["x"] != "6" || pending[1].Results != nil {
			t.Errorf("pending trial 6: %+v", pending[1])
		}
		done, err := exp.CompletedTrials(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{1, 2, 4, 8}, ids(done)); diff != "" {
			t.Errorf("CompletedTrials(0) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(storage.Metrics{"score": 2.0, "host": "h4"}, done[2].Results); diff != "" {
			t.Errorf("results of trial 4 (-want +got):\n%s", diff)
		}
		if done[2].Params["x"] != "4" {
			t.Errorf("params of trial 4: %v", done[2].Params)
		}
		done, err = exp.CompletedTrials(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{4, 8}, ids(done)); diff != "" {
			t.Errorf("CompletedTrials(2) (-want +got):\n%s", diff)
		}

		filters := []struct {
			f    storage.TrialFilter
			want []int
		}{
			{storage.TrialFilter{}, []int{1, 2, 3, 4, 5, 6, 7, 8}},
			{storage.TrialFilter{Limit: 3}, []int{1, 2, 3}},
			{storage.TrialFilter{AfterID: 6}, []int{7, 8}},
			{storage.TrialFilter{Statuses: []trial.Status{trial.SUCCEEDED}}, []int{1, 8}},
			{storage.TrialFilter{Statuses: []trial.Status{trial.SUCCEEDED, trial.CANCELED}, AfterID: 1, Limit: 1}, []int{3}},
			{storage.TrialFilter{Statuses: []trial.Status{}}, []int{}},
		}
		for _, tc := range filters {
			got, err := exp.Trials(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("Trials(%+v) (-want +got):\n%s", tc.f, diff)
			}
			for _, tr := range got {
				if tr.Params["x"] != fmt.Sprint(tr.ID) {
					t.Errorf("Trials(%+v): trial %d has params %v", tc.f, tr.ID, tr.Params)
				}
				if tr.Finished() != (tr.Results != nil) {
					t.Errorf("trial %d: finished=%v results=%v", tr.ID, tr.Finished(), tr.Results)
				}
			}
		}
	})
}

func TestConcurrentWriters(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		s := open(t, cfg)
		exp := newExperiment(t, s, "e")
		// Half the workers write through a second Store on the same
		// database, as another process would.
		exp2, err := open(t, cfg).LoadExperiment(ctx, "e")
		if err != nil {
			t.Fatal(err)
		}
		const workers, per = 6, 15
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					// A few configs shared between workers exercise the dedup race.
					exp := exp
					if w%2 == 1 {
						exp = exp2
					}
					tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"c": fmt.Sprint(i % 4)}, TrialRunnerID: w + 1})
					if err != nil {
						errs <- err
						return
					}
					if err := exp.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}); err != nil {
						errs <- err
						return
					}
					out := storage.TrialOutcome{
						Status:    trial.SUCCEEDED,
						Results:   map[string]any{"score": float64(tr.ID), "worker": w},
						Telemetry: []storage.Telemetry{{Ts: time.Now(), Metric: "m", Value: tr.ID}},
						Output:    []storage.Output{{Phase: "run", Env: "e", Command: "true", Stdout: fmt.Sprint(tr.ID)}},
					}
					if err := exp.Finish(ctx, tr.ID, out); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		// Readers run alongside.
		stop := make(chan struct{})
		var rwg sync.WaitGroup
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := exp.Trials(ctx, storage.TrialFilter{}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Experiments(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
		wg.Wait()
		close(stop)
		rwg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		all, err := exp.Trials(ctx, storage.TrialFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != workers*per {
			t.Fatalf("%d trials, want %d", len(all), workers*per)
		}
		for i, tr := range all {
			if tr.ID != i+1 {
				t.Fatalf("trial ids not dense: position %d has id %d", i, tr.ID)
			}
			if score, ok := tr.Results.Float("score"); !ok || score != float64(tr.ID) || tr.Status != trial.SUCCEEDED {
				t.Errorf("trial %d: status %s results %v", tr.ID, tr.Status, tr.Results)
			}
		}
		if n := count(t, s, "SELECT COUNT(*) FROM config"); n != 4 {
			t.Errorf("%d configs, want 4", n)
		}
	})
}

func TestResultValues(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		tr := mustTrial(t, exp, nil)
		mustFinish(t, exp, tr.ID, trial.SUCCEEDED, map[string]any{
			"int": 42, "neg": int64(-7), "float": 0.1, "tiny": 1e-300, "f32": float32(1.5), "nan": math.NaN(), "inf": math.Inf(1),
			"str": "fast", "numstr": "3.25", "bool": true, "null": nil, "empty": "", "unicode": "ünï ✓",
		})
		got := mustDetail(t, exp, tr.ID).Results
		want := storage.Metrics{
			"int": 42.0, "neg": -7.0, "float": 0.1, "tiny": 1e-300, "f32": 1.5, "inf": math.Inf(1),
			"str": "fast", "numstr": 3.25, "bool": "true", "null": nil, "empty": "", "unicode": "ünï ✓",
		}
		nan := got["nan"]
		delete(got, "nan")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
		if f, ok := nan.(float64); !ok || !math.IsNaN(f) {
			t.Errorf("nan came back as %#v", nan)
		}
		got["nan"] = nan
		if f, ok := got.Float("numstr"); !ok || f != 3.25 {
			t.Errorf("Float(numstr) = %v, %v", f, ok)
		}
		if _, ok := got.Float("str"); ok {
			t.Errorf("Float(str) reported a number")
		}
		if got.Text("int") != "42" || got.Text("null") != "" {
			t.Errorf("Text: %q %q", got.Text("int"), got.Text("null"))
		}
		js, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("results do not marshal to JSON: %v", err)
		}
		for _, w := range []string{`"nan":"nan"`, `"inf":"inf"`, `"int":42`, `"null":null`, `"str":"fast"`} {
			if !strings.Contains(string(js), w) {
				t.Errorf("JSON %s lacks %s", js, w)
			}
		}
		// Stored as text, as mlos_bench does.
		var text string
		if err := s.DB().QueryRowContext(ctx, s.dialect.rebind("SELECT metric_value FROM trial_result WHERE metric_id = ?"), "float").Scan(&text); err != nil || text != "0.1" {
			t.Errorf("stored text of 0.1: %q, %v", text, err)
		}
	})
}

func TestTelemetryUTC(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		tr := mustTrial(t, exp, nil)
		india := time.FixedZone("IST", 5*3600+1800)
		pst := time.FixedZone("PST", -8*3600)
		local := time.Date(2026, 3, 14, 20, 39, 26, 123456789, india) // 15:09:26.123456789 UTC
		tel := []storage.Telemetry{
			{Ts: local.Add(time.Second).In(pst), Metric: "mem", Value: "12 MiB"},
			{Ts: local, Metric: "cpu", Value: 0.25},
			{Ts: local, Metric: "cpu", Value: 0.99}, // same (ts, metric): kept once, the first
			{Ts: local, Metric: "accel", Value: nil},
		}
		if err := exp.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Ts: local.Add(2 * time.Second), Telemetry: tel}); err != nil {
			t.Fatal(err)
		}
		d := mustDetail(t, exp, tr.ID)
		base := time.Date(2026, 3, 14, 15, 9, 26, 123456000, time.UTC)
		want := []storage.Telemetry{
			{Ts: base, Metric: "accel", Value: nil},
			{Ts: base, Metric: "cpu", Value: 0.25},
			{Ts: base.Add(time.Second), Metric: "mem", Value: "12 MiB"},
		}
		if diff := cmp.Diff(want, d.Telemetry); diff != "" {
			t.Errorf("telemetry (-want +got):\n%s", diff)
		}
		for _, tm := range append([]time.Time{d.TsStart, d.TsEnd}, d.Telemetry[0].Ts) {
			if tm.Location() != time.UTC {
				t.Errorf("time %v is not in UTC", tm)
			}
		}
		if !d.TsEnd.Equal(base.Add(2 * time.Second)) {
			t.Errorf("TsEnd = %v", d.TsEnd)
		}
	})
}

func TestOutputRoundTrip(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		tr := mustTrial(t, exp, nil)
		big := strings.Repeat("0123456789abcdef\n", 1<<14) // 272 KiB
		out := []storage.Output{
			{Phase: "setup", Env: "root/db", Line: 0, Command: "echo 'set up' && mkdir -p x", ExitCode: 0, Stdout: "set up\n", Start: at(1), Duration: 1500 * time.Millisecond},
			{Phase: "run", Env: "root/db", Line: 1, Command: "./bench --threads=4", ExitCode: 0, Stdout: big, Stderr: "warn: slow\n", Truncated: true, Start: at(3), Duration: time.Minute},
			{Phase: "run", Env: "root/db", Line: 2, Command: "cat binary", ExitCode: 3, Stdout: "a\x00b\xffc", Stderr: "ünï", TimedOut: true},
			{Phase: "teardown", Env: "root", Command: "rm -rf x"},
		}
		if err := exp.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.FAILED, Output: out, FailureReason: "run: exit status 3\x00"}); err != nil {
			t.Fatal(err)
		}
		d := mustDetail(t, exp, tr.ID)
		want := slices.Clone(out)
		want[0].Start = want[0].Start.Truncate(time.Microsecond)
		want[1].Start = want[1].Start.Truncate(time.Microsecond)
		want[2].Stdout = "a\uFFFDb\uFFFDc" // NUL and invalid UTF-8 are replaced
		if diff := cmp.Diff(want, d.Output); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
		if d.FailureReason != "run: exit status 3\uFFFD" {
			t.Errorf("FailureReason = %q", d.FailureReason)
		}
	})
}

func TestMigrations(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		cfg.LazySchemaCreate = true
		s := open(t, cfg)
		tables, err := s.Tables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(tables) != 0 {
			t.Errorf("lazy_schema_create: tables %v exist before the first use", tables)
		}
		if _, err := s.Experiments(ctx); err != nil {
			t.Fatal(err)
		}
		tables, err = s.Tables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantTables := []string{"bench_feed", "bench_schema_version", "config", "config_param", "experiment", "objectives",
			"trial", "trial_output", "trial_param", "trial_result", "trial_status", "trial_telemetry", "worker"}
		if b.name == "postgres" {
			wantTables = wantTables[1:] // no bench_feed since schema version 9
		}
		if diff := cmp.Diff(wantTables, tables); diff != "" {
			t.Errorf("tables (-want +got):\n%s", diff)
		}
		cur, latest, err := s.SchemaVersion(ctx)
		if err != nil || cur != latest || latest < 1 {
			t.Fatalf("SchemaVersion = %d, %d, %v", cur, latest, err)
		}
		versionRows := count(t, s, "SELECT COUNT(*) FROM "+versionTable)
		// Migrating again, and opening again, change nothing.
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		cfg.LazySchemaCreate = false
		open(t, cfg)
		if n := count(t, s, "SELECT COUNT(*) FROM "+versionTable); n != versionRows {
			t.Errorf("migrating twice added version rows: %d -> %d", versionRows, n)
		}

		// A database written by a newer bench is refused with a clear error.
		if _, err := s.DB().ExecContext(ctx, s.dialect.rebind("INSERT INTO "+versionTable+" (version_id, is_applied) VALUES (?, ?)"), latest+1, true); err != nil {
			t.Fatal(err)
		}
		_, err = Open(ctx, cfg)
		wantErr(t, err, storage.ErrSchemaTooNew, "Open of a newer schema")
		if !strings.Contains(err.Error(), fmt.Sprintf("schema version %d", latest+1)) || !strings.Contains(err.Error(), "newer bench") {
			t.Errorf("unclear error: %v", err)
		}
	})
}

func TestConcurrentFirstOpen(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.fresh(t)
		const n = 4
		var wg sync.WaitGroup
		errs := make([]error, n)
		stores := make([]*Store, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stores[i], errs[i] = Open(context.Background(), cfg)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("Open %d: %v", i, err)
				continue
			}
			if _, err := stores[i].Experiments(context.Background()); err != nil {
				t.Errorf("Experiments on store %d: %v", i, err)
			}
			stores[i].Close()
		}
	})
}

func TestMemory(t *testing.T) {
	ctx := context.Background()
	for _, db := range []string{":memory:", ""} {
		s := open(t, storage.Config{DriverName: "sqlite+pysqlite", Database: db, LazySchemaCreate: true})
		if s.Describe() != "sqlite in memory (nothing is kept)" {
			t.Errorf("Describe = %q", s.Describe())
		}
		exp := newExperiment(t, s, "m")
		tr := mustTrial(t, exp, map[string]string{"x": "1"})
		mustFinish(t, exp, tr.ID, trial.SUCCEEDED, map[string]any{"score": 1})
		got, err := exp.CompletedTrials(ctx, 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("CompletedTrials = %v, %v", got, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tests := []struct {
		name   string
		cfg    storage.Config
		target error
		want   string
	}{
		{"mssql", storage.Config{DriverName: "mssql+pyodbc", Database: "x", Password: "hunter2"}, storage.ErrUnsupportedDriver, `"mssql+pyodbc"`},
		{"duckdb", storage.Config{DriverName: "duckdb", Database: "x"}, storage.ErrUnsupportedDriver, "sqlite"},
		{"no driver", storage.Config{Database: "x"}, storage.ErrUnsupportedDriver, "no drivername"},
		{"no create", storage.Config{DriverName: "sqlite", Database: dir + "/missing.sqlite", NoCreate: true}, storage.ErrNoDatabase, "missing.sqlite"},
		{"no folder", storage.Config{DriverName: "sqlite", Database: dir + "/nope/x.sqlite"}, storage.ErrInvalid, "does not exist"},
		{"sqlite password", storage.Config{DriverName: "sqlite", Database: dir + "/x.sqlite", Password: "hunter2"}, storage.ErrInvalid, "no host"},
		{"sqlite query", storage.Config{DriverName: "sqlite", Database: dir + "/x.sqlite", Query: map[string]string{"mode": "ro"}}, storage.ErrInvalid, `"mode"`},
		{"pg password in query", storage.Config{DriverName: "postgresql", Host: "127.0.0.1", Query: map[string]string{"password": "hunter2"}}, storage.ErrInvalid, "password"},
		{"mysql password in query", storage.Config{DriverName: "mysql+mysqlconnector", Host: "127.0.0.1", Database: "x", Query: map[string]string{"password": "hunter2"}}, storage.ErrInvalid, "password"},
		{"mysql no database", storage.Config{DriverName: "mysql", Host: "127.0.0.1", Password: "hunter2"}, storage.ErrInvalid, "needs a database"},
		{"mysql bad option", storage.Config{DriverName: "mysql", Host: "127.0.0.1", Database: "x", Password: "hunter2", Query: map[string]string{"timeout": "soon"}}, storage.ErrInvalid, `"soon"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(ctx, tc.cfg)
			wantErr(t, err, tc.target, tc.name)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the password: %v", err)
			}
			// The same through the registry.
			st, err := storage.Open(ctx, tc.cfg)
			wantErr(t, err, tc.target, tc.name+" via storage.Open")
			if st != nil {
				t.Errorf("storage.Open failed and returned a non-nil Storage %#v", st)
			}
		})
	}
}

func TestPostgresPasswordHidden(t *testing.T) {
	ctx := context.Background()
	cfg := freshPostgres(t)
	const secret = "s3cr3t-Pa55"
	cfg.Password = secret
	// The test server trusts everyone, so the password is accepted...
	s := open(t, cfg)
	if strings.Contains(s.Describe(), secret) || !strings.HasPrefix(s.Describe(), "postgresql postgres@127.0.0.1:") {
		t.Errorf("Describe = %q", s.Describe())
	}
	// ...and errors that reach the server or fail to connect never show it.
	bad := cfg
	bad.Database = "no_such_db"
	_, err := Open(ctx, bad)
	if err == nil {
		t.Fatal("Open of a missing database succeeded")
	}
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "no_such_db") {
		t.Errorf("error shows the password or not the problem: %v", err)
	}
	// Whatever a driver puts in its errors, the password is scrubbed and
	// the error chain kept.
	inner := fmt.Errorf("dial: password %s rejected: %w", secret, storage.ErrInvalid)
	scrubbed := s.scrub(inner)
	if strings.Contains(scrubbed.Error(), secret) || !errors.Is(scrubbed, storage.ErrInvalid) {
		t.Errorf("scrub: %v (errors.Is=%v)", scrubbed, errors.Is(scrubbed, storage.ErrInvalid))
	}
	closed := cfg
	closed.Port = 1
	closed.Query = map[string]string{"connect_timeout": "2", "sslmode": "disable"}
	_, err = Open(ctx, closed)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Open on a closed port: %v", err)
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(f, cfg); strings.Contains(out, secret) {
			t.Errorf("Sprintf(%s, cfg) shows the password: %s", f, out)
		}
	}
}

// TestMySQLPasswordHidden: the MySQL test server checks the password, so
// a wrong one fails to connect; neither the right nor the wrong one shows
// in what bench says.
func TestMySQLPasswordHidden(t *testing.T) {
	ctx := context.Background()
	cfg := freshMySQL(t)
	secret := cfg.Password
	if secret == "" {
		t.Fatal("BENCH_TEST_MYSQL_URL has no password")
	}
	cfg.DriverName = "mysql+mysqlconnector"
	var logs logBuffer
	cfg.Logger = logs.logger()
	cfg.LogSQL = true
	s := open(t, cfg)
	newExperiment(t, s, "e")
	want := fmt.Sprintf("mysql %s@%s:%d/%s", cfg.Username, cfg.Host, cfg.Port, cfg.Database)
	if s.Describe() != want {
		t.Errorf("Describe = %q, want %q", s.Describe(), want)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the logs show the password:\n%s", logs.String())
	}
	const wrong = "wr0ng-Pa55"
	bad := cfg
	bad.Password = wrong
	_, err := Open(ctx, bad)
	if err == nil {
		t.Fatal("Open with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), "Access denied") {
		t.Errorf("error shows the password or not the problem: %v", err)
	}
	bad = cfg
	bad.Database = "no_such_db"
	if _, err = Open(ctx, bad); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "no_such_db") {
		t.Errorf("Open of a missing database: %v", err)
	}
	closed := cfg
	closed.Port = 1
	closed.Query = map[string]string{"timeout": "2s"}
	if _, err = Open(ctx, closed); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Open on a closed port: %v", err)
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(f, cfg); strings.Contains(out, secret) {
			t.Errorf("Sprintf(%s, cfg) shows the password: %s", f, out)
		}
	}
}

// TestMySQLSocket: a Unix socket is given as the host or, as SQLAlchemy's
// MySQL drivers take it, as query.unix_socket.
func TestMySQLSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	for _, cfg := range []storage.Config{
		{DriverName: "mysql", Host: sock, Database: "x", Password: "hunter2"},
		{DriverName: "mysql+pymysql", Database: "x", Password: "hunter2", Query: map[string]string{"unix_socket": sock}},
	} {
		_, err := Open(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "mysql @"+sock+"/x") || !strings.Contains(err.Error(), "dial unix") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%v) = %v, want a failure to dial %s", cfg, err, sock)
		}
	}
}

// TestMySQLSchema: the MySQL tables compare text exactly (no case folding),
// keep long captured output whole (no 64 KiB TEXT limit) and refuse a key
// longer than its column instead of cutting it.
func TestMySQLSchema(t *testing.T) {
	ctx := context.Background()
	s := open(t, freshMySQL(t))
	a := newExperiment(t, s, "exp")
	b := newExperiment(t, s, "EXP")
	if a.Info().ID == b.Info().ID {
		t.Fatal("experiments differing in case are one")
	}
	tr := mustTrial(t, a, map[string]string{"x": "1", "X": "2"})
	long := strings.Repeat("0123456789abcdef", 1<<14) // 256 KiB
	err := a.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1, "Score": 2},
		Output: []storage.Output{{Phase: "run", Command: "cat big", Stdout: long, Stderr: "é\x00\xff"}}})
	if err != nil {
		t.Fatal(err)
	}
	d := mustDetail(t, a, tr.ID)
	if d.Params["x"] != "1" || d.Params["X"] != "2" || len(d.Results) != 2 {
		t.Errorf("params %v, results %v", d.Params, d.Results)
	}
	if len(d.Output) != 1 || d.Output[0].Stdout != long || d.Output[0].Stderr != "é\uFFFD\uFFFD" {
		t.Errorf("output not kept whole: %d bytes", len(d.Output[0].Stdout))
	}
	if _, _, err := s.Experiment(ctx, storage.ExperimentInfo{ID: strings.Repeat("x", 256), Objectives: []storage.Objective{{Name: "s", Direction: "min"}}}); err == nil {
		t.Error("an experiment id longer than 255 characters was stored")
	}
}

func TestSQLiteDescribe(t *testing.T) {
	cfg := sqliteBackend.fresh(t)
	s := open(t, cfg)
	if want := "sqlite file " + cfg.Database; s.Describe() != want {
		t.Errorf("Describe = %q, want %q", s.Describe(), want)
	}
	var mode string
	if err := s.DB().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v", mode, err)
	}
	var fk int
	if err := s.DB().QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v", fk, err)
	}
}

func TestLogSQL(t *testing.T) {
	var logs logBuffer
	cfg := sqliteBackend.fresh(t)
	cfg.LogSQL = true
	cfg.Logger = logs.logger()
	s := open(t, cfg)
	newExperiment(t, s, "e")
	if !strings.Contains(logs.String(), "INSERT INTO experiment") {
		t.Errorf("log_sql did not log the statements:\n%s", logs.String())
	}
}

// Notes recorded with an experiment are kept, each once, across resumes.
func TestExperimentNotes(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		objs := []storage.Objective{{Name: "score", Direction: "min"}}
		exp, _, err := s.Experiment(ctx, storage.ExperimentInfo{ID: "n", Objectives: objs, Notes: []string{"insecure ssh", ""}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"insecure ssh"}, exp.Info().Notes); diff != "" {
			t.Errorf("notes (-want +got):\n%s", diff)
		}
		exp, resumed, err := s.Experiment(ctx, storage.ExperimentInfo{ID: "n", Objectives: objs, Notes: []string{"second", "insecure ssh"}})
		if err != nil || !resumed {
			t.Fatal(resumed, err)
		}
		want := []string{"insecure ssh", "second"}
		if diff := cmp.Diff(want, exp.Info().Notes); diff != "" {
			t.Errorf("notes after resume (-want +got):\n%s", diff)
		}
		// A run without notes keeps them; listing shows them.
		if _, _, err := s.Experiment(ctx, storage.ExperimentInfo{ID: "n", Objectives: objs}); err != nil {
			t.Fatal(err)
		}
		exps, err := s.Experiments(ctx)
		if err != nil || len(exps) != 1 {
			t.Fatal(exps, err)
		}
		if diff := cmp.Diff(want, exps[0].Notes); diff != "" {
			t.Errorf("listed notes (-want +got):\n%s", diff)
		}
	})
}
