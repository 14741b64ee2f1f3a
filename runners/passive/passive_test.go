package passive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/internal/testutil"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql"
	"github.com/benchtune/bench/trial"
)

var targets = trial.Objectives{{Name: "score"}, {Name: "tps", Max: true}}

func TestPassiveParse(t *testing.T) {
	ok := []struct {
		in     string
		status trial.Status
		res    map[string]any
		reason string
	}{
		{"score=1.5 tps=200", trial.SUCCEEDED, map[string]any{"score": 1.5, "tps": 200.0}, ""},
		{"  score = -2e-3,tps=7, lat=1 ", trial.SUCCEEDED, map[string]any{"score": -0.002, "tps": 7.0, "lat": 1.0}, ""},
		{"fail", trial.FAILED, nil, "marked failed by hand"},
		{"FAILED: phone rebooted", trial.FAILED, nil, "phone rebooted"},
		{"skip", trial.CANCELED, nil, "skipped by hand"},
		{"skip  battery  low", trial.CANCELED, nil, "skipped by hand: battery  low"},
	}
	for _, tc := range ok {
		out, err := Parse(tc.in, targets)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if out.Status != tc.status || out.FailureReason != tc.reason || out.Ts.IsZero() {
			t.Errorf("%q: %+v", tc.in, out)
		}
		if diff := cmp.Diff(tc.res, out.Results); tc.res != nil && diff != "" {
			t.Errorf("%q: results (-want +got):\n%s", tc.in, diff)
		}
	}
	bad := []struct{ in, want string }{
		{"", "the answer is empty"},
		{"score=abc tps=1", `metric "score": "abc" is not a number`},
		{"score=nan tps=1", `metric "score": "nan" is not a number`},
		{"score=1 tps=inf", `metric "tps": "inf" is not a number`},
		{"score=1", `the result has no "tps", an optimization target (tps to maximize); give score=NUMBER tps=NUMBER`},
		{"score=1 tps=2 score=3", `metric "score" is given twice`},
		{"score=1 tps", `"tps" is not metric=value`},
		{"tps=1 score=", `metric "score" has no value`},
		{"1.5", `"1.5" is not metric=value`},
	}
	for _, tc := range bad {
		_, err := Parse(tc.in, targets)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.want)
		}
	}
	if got := Targets(trial.Objectives{{Name: "a"}}, trial.Objectives{{Name: "b", Max: true}, {Name: "a", Max: true}}); len(got) != 2 || got[0].Max || got[1].Name != "b" {
		t.Errorf("Targets: %v", got)
	}
}

func TestPassiveCommand(t *testing.T) {
	d := NewDesk(nil, targets, Options{Command: `adb shell run --level $level --mode ${mode} --id $trial_id --x $unknown $$level`})
	spec := schedulers.Spec{TrialID: 7, Params: map[string]string{"level": "6", "mode": "safe mode; rm -rf /"},
		Globals: map[string]any{"trial_id": int64(7)}}
	want := `adb shell run --level 6 --mode 'safe mode; rm -rf /' --id 7 --x $unknown $level`
	if got := d.Command(spec); got != want {
		t.Errorf("command\n got %s\nwant %s", got, want)
	}
	if diff := cmp.Diff([]string{"level", "mode", "trial_id", "unknown"}, Names(`a $level ${mode} $level $trial_id $unknown $$escaped`)); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if NewDesk(nil, targets, Options{}).Command(spec) != "" {
		t.Error("no template: no command")
	}
}

func TestPassiveConsole(t *testing.T) {
	var b bytes.Buffer
	c := NewConsole(&b)
	fmt.Fprintln(c, "one")
	c.SetPrompt("p> ")
	c.Show()
	c.Show()
	fmt.Fprintln(c, "two") // another writer's line goes below the prompt, then the prompt again
	c.Entered()            // the person typed a line: the terminal echoed its newline
	fmt.Fprintln(c, "three")
	c.SetPrompt("")
	fmt.Fprintln(c, "four")
	if want := "one\np> \ntwo\np> three\np> \nfour\n"; b.String() != want {
		t.Errorf("console wrote %q, want %q", b.String(), want)
	}
}

func newExperiment(t *testing.T) storage.Experiment {
	t.Helper()
	st, err := storage.Open(context.Background(), storage.Config{DriverName: "sqlite", Database: filepath.Join(t.TempDir(), "b.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "ph",
		Objectives: []storage.Objective{{Name: "score", Direction: "min"}, {Name: "tps", Direction: "max"}}})
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPassiveDesk: two trials wait at once on two runners. Typed answers
// must name the trial; refused ones leave it waiting; a typed answer is
// returned as the outcome; a result stored from outside (bench submit) is
// picked up from storage; a stop ends the wait as CANCELED, a hang
// timeout as TIMED_OUT; an interrupt returns at once.
func TestPassiveDesk(t *testing.T) {
	ctx := context.Background()
	exp := newExperiment(t)
	owned := exp.WithOwner("me:1:x", time.Minute)
	var ids []int
	for i := range 4 {
		tr, err := owned.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"level": fmt.Sprint(i)}, Running: true, TrialRunnerID: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tr.ID)
	}
	in, typer := io.Pipe()
	defer typer.Close()
	out := &testutil.SyncBuffer{}
	desk := NewDesk(owned, storage.Targets(exp.Info().Objectives), Options{In: in, Out: out, Poll: 10 * time.Millisecond,
		Command: "run --level $level"})
	runners := desk.Runners(2)
	if runners[1].ID() != 2 || runners[0].(schedulers.Recoverer).Engine() != Engine {
		t.Fatal("runner ids or engine")
	}
	type result struct {
		id  int
		out trial.Outcome
	}
	results := make(chan result, 4)
	attached := make(chan schedulers.Handle, 4)
	run := func(ctx context.Context, r schedulers.Runner, id int, act *services.Activity) {
		spec := schedulers.Spec{ExperimentID: "ph", TrialID: id, Params: map[string]string{"level": "5"}, Activity: act,
			Attach: func(ctx context.Context, h schedulers.Handle) error {
				attached <- h
				return owned.SetJob(ctx, id, h)
			}}
		go func() { results <- result{id, r.Run(ctx, spec)} }()
	}
	type_ := func(line string) {
		if _, err := io.WriteString(typer, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	act := services.NewActivity()
	run(ctx, runners[0], ids[0], act)
	run(ctx, runners[1], ids[1], nil)
	waitFor(t, "both trials shown", func() bool { return strings.Count(out.String(), "run --level 5") == 2 })
	h := <-attached
	if h.Engine != Engine || !strings.Contains(h.Request, "run --level 5") {
		t.Errorf("handle %+v", h)
	}
	<-attached
	before := act.LastActive()
	time.Sleep(2 * time.Millisecond)
	type_("score=1 tps=2")
	waitFor(t, "the ambiguous answer refused", func() bool { return strings.Contains(out.String(), "start the answer with the trial id") })
	type_(fmt.Sprintf("%d: score=abc tps=2", ids[0]))
	waitFor(t, "the bad value refused", func() bool {
		return strings.Contains(out.String(), fmt.Sprintf(`trial %d: result refused: metric "score": "abc" is not a number; the trial is still waiting`, ids[0]))
	})
	if !act.LastActive().After(before) {
		t.Error("an answer should count as the trial's activity")
	}
	type_("99: score=1 tps=2")
	waitFor(t, "an answer for a trial that does not wait", func() bool { return strings.Contains(out.String(), "trial 99 is not waiting") })
	type_(fmt.Sprintf("%d: score=1.5 tps=300", ids[0]))
	r := <-results
	if r.id != ids[0] || r.out.Status != trial.SUCCEEDED || r.out.Results["tps"] != 300.0 || len(r.out.Output) != 1 {
		t.Fatalf("typed answer: %+v", r)
	}
	// The other trial gets its result from outside (bench submit).
	if err := exp.Finish(ctx, ids[1], trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 2.0, "tps": 1.0}}); err != nil {
		t.Fatal(err)
	}
	r = <-results
	if r.id != ids[1] || r.out.Status != trial.SUCCEEDED || r.out.Results["score"] != 2.0 {
		t.Fatalf("submitted result: %+v", r)
	}
	if !strings.Contains(out.String(), "result stored from outside this bench") {
		t.Errorf("no message for the submitted result:\n%s", out.String())
	}
	// With one trial waiting, an answer needs no trial id.
	run(ctx, runners[0], ids[2], nil)
	waitFor(t, "the third trial's prompt", func() bool { return strings.HasSuffix(out.String(), fmt.Sprintf("result for trial %d> ", ids[2])) })
	type_("skip no time")
	if r = <-results; r.out.Status != trial.CANCELED || r.out.FailureReason != "skipped by hand: no time" {
		t.Fatalf("skip: %+v", r)
	}
	// A stop (bench stop), a hang timeout and an interrupt.
	for _, tc := range []struct {
		cause  error
		status trial.Status
		reason string
	}{
		{errors.New("stopped on request (bench stop)"), trial.CANCELED, "stopped on request (bench stop)"},
		{fmt.Errorf("no output for 1s: %w", services.ErrTimeout), trial.TIMED_OUT, "no result came: no output for 1s"},
		{nil, trial.CANCELED, "waiting for the result cancelled"},
	} {
		cctx, cancel := context.WithCancelCause(ctx)
		run(cctx, runners[1], ids[3], nil)
		waitFor(t, "the fourth trial shown", func() bool { return strings.HasSuffix(out.String(), fmt.Sprintf("result for trial %d> ", ids[3])) })
		cancel(tc.cause)
		if r = <-results; r.out.Status != tc.status || !strings.HasPrefix(r.out.FailureReason, tc.reason) {
			t.Errorf("cancel with %v: %+v", tc.cause, r.out)
		}
		out.Reset()
	}
	// Input ends: no more prompt.
	typer.Close()
	waitFor(t, "the reader to stop", func() bool {
		desk.mu.Lock()
		defer desk.mu.Unlock()
		return desk.inClosed
	})
}

// TestPassiveRecoverAndFinishedBeforeShown: a trial an earlier bench showed
// is shown again without a new job record; a trial whose result was
// submitted before it was shown returns the stored outcome.
func TestPassiveRecoverAndFinishedBeforeShown(t *testing.T) {
	ctx := context.Background()
	exp := newExperiment(t)
	tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"level": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	out := &testutil.SyncBuffer{}
	desk := NewDesk(exp, targets, Options{Out: out, Poll: 10 * time.Millisecond})
	r := desk.Runners(1)[0].(schedulers.Recoverer)
	done := make(chan trial.Outcome, 1)
	spec := schedulers.Spec{ExperimentID: "ph", TrialID: tr.ID, Params: tr.Params, Attach: func(context.Context, schedulers.Handle) error {
		t.Error("Recover must not record the job again")
		return nil
	}}
	go func() { done <- r.Recover(ctx, spec, schedulers.Handle{Engine: Engine, Ref: "{}"}) }()
	waitFor(t, "the trial shown again", func() bool { return strings.Contains(out.String(), "still waiting for its result") })
	if !strings.Contains(out.String(), "bench submit ph 1 score=NUMBER tps=NUMBER") {
		t.Errorf("without a prompt the trial should say how to submit:\n%s", out.String())
	}
	if err := exp.Finish(ctx, tr.ID, Failed("broke")); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o.Status != trial.FAILED || o.FailureReason != "broke" {
		t.Fatalf("%+v", o)
	}
	// Finished before it was shown: Attach fails, the stored outcome wins.
	tr2, _ := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"level": "2"}})
	if err := exp.Finish(ctx, tr2.ID, Skipped("")); err != nil {
		t.Fatal(err)
	}
	spec = schedulers.Spec{ExperimentID: "ph", TrialID: tr2.ID, Params: tr2.Params, Attach: func(ctx context.Context, h schedulers.Handle) error {
		return exp.SetJob(ctx, tr2.ID, h)
	}}
	if o := desk.Runners(1)[0].Run(ctx, spec); o.Status != trial.CANCELED || o.FailureReason != SkipPrefix {
		t.Fatalf("%+v", o)
	}
}
