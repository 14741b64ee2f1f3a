package passive

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testutil"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		ok      bool
		step    int64
		values  map[string]any
	}{
		{in: "score=1 tps=2"},
		{in: "fail progress"},
		{in: "progress 3 loss=0.5", ok: true, step: 3, values: map[string]any{"loss": 0.5}},
		{in: "Progress: 0: loss = 0.5, acc=1", ok: true, step: 0, values: map[string]any{"loss": 0.5, "acc": 1.0}},
		{in: "progress", ok: true, err: "needs a step"},
		{in: "progress loss=0.5", ok: true, err: `the step "loss=0.5" is not a whole number`},
		{in: "progress -1 loss=0.5", ok: true, err: "not a whole number >= 0"},
		{in: "progress 2", ok: true, err: "no metric given"},
		{in: "progress 2 loss=abc", ok: true, err: `metric "loss": "abc" is not a number`},
		{in: "progress 2 loss", ok: true, err: `"loss" is not metric=value (e.g. progress 3 loss=0.5)`},
	} {
		p, ok, err := ParseProgress(tc.in)
		if ok != tc.ok {
			t.Errorf("%q: progress report = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want one saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if ok && (p.Step != tc.step || fmt.Sprint(p.Values) != fmt.Sprint(tc.values) || p.Ts.IsZero()) {
			t.Errorf("%q: %+v, want step %d values %v", tc.in, p, tc.step, tc.values)
		}
	}
	// A result keeps its messages (the words' parser is shared).
	if _, err := Parse("score", targets); err == nil || !strings.Contains(err.Error(), `"score" is not metric=value (e.g. score=NUMBER tps=NUMBER), fail [reason] or skip [reason]`) {
		t.Errorf("result message changed: %v", err)
	}
}

// lookCounter counts the waiting runner's looks at its trial.
type lookCounter struct {
	storage.Experiment
	n atomic.Int64
}

func (c *lookCounter) Trial(ctx context.Context, id int) (storage.TrialDetail, error) {
	c.n.Add(1)
	return c.Experiment.Trial(ctx, id)
}

// TestPassiveProgress: the passive desk carries a trial's intermediate
// results, as every runner kind does. Reports typed at the prompt
// ("progress STEP metric=value") and reports stored from outside (bench
// submit --step: AddProgress) reach the trial's Spec.Progress once each,
// in order, and are stored with the trial; a refused report leaves the
// trial waiting for its result.
func TestPassiveProgress(t *testing.T) {
	ctx := context.Background()
	exp := newExperiment(t)
	owned := &lookCounter{Experiment: exp.WithOwner("me:1:x", time.Minute)}
	tr, err := owned.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"level": "1"}, Running: true, TrialRunnerID: 1})
	if err != nil {
		t.Fatal(err)
	}
	in, typer := io.Pipe()
	defer typer.Close()
	out := &testutil.SyncBuffer{}
	desk := NewDesk(owned, storage.Targets(exp.Info().Objectives), Options{In: in, Out: out, Poll: 10 * time.Millisecond})
	var (
		mu  sync.Mutex
		got []trial.Progress
	)
	reports := func() []trial.Progress {
		mu.Lock()
		defer mu.Unlock()
		return append([]trial.Progress(nil), got...)
	}
	spec := schedulers.Spec{ExperimentID: "ph", TrialID: tr.ID, Params: map[string]string{"level": "1"},
		Progress: func(p trial.Progress) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
		}}
	done := make(chan trial.Outcome, 1)
	go func() { done <- desk.Runners(1)[0].Run(ctx, spec) }()
	type_ := func(line string) {
		if _, err := io.WriteString(typer, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the trial shown", func() bool { return strings.HasSuffix(out.String(), fmt.Sprintf("result for trial %d> ", tr.ID)) })
	if !strings.Contains(out.String(), "intermediate results (optional, while it runs): type  progress 3 loss=0.5") {
		t.Errorf("the trial's box does not say how to report progress:\n%s", out.String())
	}
	type_("progress x loss=1")
	waitFor(t, "the bad step refused", func() bool {
		return strings.Contains(out.String(), `the step "x" is not a whole number >= 0`) && strings.Contains(out.String(), "the trial is still waiting")
	})
	type_("progress 1 loss=0.9 acc=0.1")
	waitFor(t, "the typed report handed on", func() bool { return len(reports()) == 1 })
	// From another shell (bench submit --step stores it so).
	if err := exp.AddProgress(ctx, tr.ID, []trial.Progress{{Step: 2, Ts: time.Now().UTC(), Values: map[string]any{"loss": 0.5}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stored report handed on", func() bool { return len(reports()) == 2 })
	type_(fmt.Sprintf("%d: progress: 3 loss = 0.25", tr.ID))
	waitFor(t, "the third report handed on", func() bool { return len(reports()) == 3 })
	// More looks at the trial hand nothing on twice.
	looks := owned.n.Load()
	waitFor(t, "more looks at the trial", func() bool { return owned.n.Load() >= looks+5 })
	type_("score=1 tps=2")
	if o := <-done; o.Status != trial.SUCCEEDED {
		t.Fatalf("the result after the progress: %+v", o)
	}
	rs := reports()
	if len(rs) != 3 {
		t.Fatalf("%d reports handed on, want 3: %+v", len(rs), rs)
	}
	for i, want := range []struct {
		step int64
		loss float64
	}{{1, 0.9}, {2, 0.5}, {3, 0.25}} {
		if rs[i].Step != want.step || rs[i].Values["loss"] != want.loss {
			t.Errorf("report %d: %+v, want step %d loss %v", i, rs[i], want.step, want.loss)
		}
	}
	if rs[0].Values["acc"] != 0.1 {
		t.Errorf("the first report lost a value: %+v", rs[0])
	}
	d, err := exp.Trial(ctx, tr.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored := storage.ProgressOf(d.Telemetry); len(stored) != 3 {
		t.Errorf("stored progress: %+v, want the 3 reports", stored)
	}
}
