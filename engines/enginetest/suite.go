// Package enginetest is the test suite every execution engine runs (the
// shape of Nomad's driver test harness and restic's backend tests): one
// set of behaviours, checked the same way for each engine, with the real
// `bench exec-trial` on the far side. An engine joins by giving a Harness;
// cases its engine cannot show are skipped with the reason, never passed.
//
// The suite writes a tiny experiment (a LocalEnv whose run script reads
// what to do from a file per trial) into a fresh folder per case, runs
// trials through engines.Runner as the scheduler does, and checks the
// outcome and how often each trial's script ran.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/trial"
)

// Harness is what an engine gives the suite.
type Harness struct {
	// New builds the engine for an experiment folder (the driver's
	// working folder: the far side loads env.jsonc from there). config
	// holds extra engine keys (common ones such as hang_timeout, or the
	// engine's own); "bench" is the harness's business.
	New func(t *testing.T, dir string, config map[string]any) engines.Engine
	// CancelOutside cancels a running job as someone other than bench
	// would (scancel, TerminateJob, a kill of the far side); nil skips the
	// case.
	CancelOutside func(t *testing.T, ref engines.Ref)
	// OutsideCancel is the status of a trial whose job was cancelled from
	// outside: FAILED where the engine tells its own cancel from a person's
	// (Slurm, Batch), CANCELED where a signal can only be a person's.
	OutsideCancel trial.Status
	// OutsideCancelReason is a part of that trial's failure reason (the
	// engine's word for the job's end).
	OutsideCancelReason string
	// TimeLimit are engine keys that stop a job after a short time, and
	// how long that may take at most; nil skips the case.
	TimeLimit     map[string]any
	TimeLimitWait time.Duration
	// NoTimeLimit says why the case is skipped when TimeLimit is nil.
	NoTimeLimit string
	// NotIdempotent, when set, says why a second Submit of the same job
	// submits again (the case is skipped with it).
	NotIdempotent string
	// NoProgress, when set, says why the engine cannot read a running
	// job's progress (the case is skipped with it).
	NoProgress string
}

// Run runs every case of the suite on the harness's engine.
func Run(t *testing.T, h Harness) {
	t.Run("SubmitPollFetch", func(t *testing.T) { t.Parallel(); submitPollFetch(t, h) })
	t.Run("Cancel", func(t *testing.T) { t.Parallel(); cancelled(t, h) })
	t.Run("Recover", func(t *testing.T) { t.Parallel(); recoverJob(t, h) })
	t.Run("RelaunchHung", func(t *testing.T) { t.Parallel(); relaunchHung(t, h) })
	t.Run("OutsideCancel", func(t *testing.T) { t.Parallel(); outsideCancel(t, h) })
	t.Run("TimeLimit", func(t *testing.T) { t.Parallel(); timeLimit(t, h) })
	t.Run("IdempotentResubmit", func(t *testing.T) { t.Parallel(); idempotent(t, h) })
	t.Run("Progress", func(t *testing.T) { t.Parallel(); progress(t, h) })
}

// runScript does what $marker_dir/mode-$trial_id says: "sleep N" (quiet),
// "progress" (reports step 0, waits for $marker_dir/gate-$trial_id, then
// reports step 1), or nothing; then writes the score (the trial id).
const runScript = `#!/bin/sh
set -e
echo "$trial_id" >> "$marker_dir/started"
mode=$(cat "$marker_dir/mode-$trial_id" 2>/dev/null || true)
case "$mode" in
sleep*) touch "$marker_dir/running-$trial_id"; sleep ${mode#sleep } ;;
progress)
	echo "BENCH_PROGRESS step=0 loss=0.9"
	i=0; while [ ! -e "$marker_dir/gate-$trial_id" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done
	[ -e "$marker_dir/gate-$trial_id" ] || { echo "no progress seen while running" >&2; exit 9; }
	echo "BENCH_PROGRESS step=1 loss=0.5" ;;
esac
printf 'metric,value\nscore,%s\n' "$trial_id" > results.csv
`

// experiment is one case's folder.
type experiment struct {
	dir string
	eng engines.Engine
}

func newExperiment(t *testing.T, h Harness, config map[string]any) *experiment {
	t.Helper()
	dir := t.TempDir()
	// Far sides (Slurm jobs) may run as other processes: readable folder.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("env.jsonc", `{"name": "suite", "class": "mlos_bench.environments.local.LocalEnv",
		"config": {"const_args": {"marker_dir": "`+dir+`"}, "shell_env_params": ["trial_id", "marker_dir"],
			"run": ["run.sh"], "read_results_file": "results.csv", "progress_pattern": "^BENCH_PROGRESS\\b"}}`, 0o644)
	write("run.sh", runScript, 0o755)
	return &experiment{dir: dir, eng: h.New(t, dir, config)}
}

func (x *experiment) mode(t *testing.T, id int, mode string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(x.dir, fmt.Sprintf("mode-%d", id)), []byte(mode), 0o644); err != nil {
		t.Fatal(err)
	}
}

// starts counts how often trial id's script started.
func (x *experiment) starts(id int) int {
	b, _ := os.ReadFile(filepath.Join(x.dir, "started"))
	n := 0
	for _, f := range strings.Fields(string(b)) {
		if f == fmt.Sprint(id) {
			n++
		}
	}
	return n
}

// waitRunning waits until trial id's script runs its sleep.
func (x *experiment) waitRunning(t *testing.T, id int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(x.dir, fmt.Sprintf("running-%d", id))); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("trial %d did not start within 2 minutes", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runner returns an engine runner as the launcher builds it.
func (x *experiment) runner(common engines.Common) *engines.Runner {
	if common.PollInterval == 0 {
		common.PollInterval = decode.Duration(200 * time.Millisecond)
	}
	base := engines.Base{Args: []string{"--environment", "env.jsonc"}, Dir: x.dir, Owner: "suite"}
	return engines.NewRunners(x.eng, common, base, nil)[0]
}

// handles records the jobs a trial was submitted as (spec.Attach).
type handles struct {
	mu sync.Mutex
	hs []schedulers.Handle
}

func (h *handles) attach(_ context.Context, hd schedulers.Handle) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hs = append(h.hs, hd)
	return nil
}

func (h *handles) last(t *testing.T) schedulers.Handle {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.hs) == 0 {
		t.Fatal("no job was recorded with the trial")
	}
	return h.hs[len(h.hs)-1]
}

// wait returns once a job has been recorded (the runner records it right
// after the submission, which may come after the script has started).
func (h *handles) wait(t *testing.T) {
	t.Helper()
	for i := 0; ; i++ {
		h.mu.Lock()
		n := len(h.hs)
		h.mu.Unlock()
		if n > 0 {
			return
		}
		if i > 12000 {
			t.Fatal("no job was recorded with the trial within 2 minutes")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func spec(id int, hs *handles) schedulers.Spec {
	return schedulers.Spec{ExperimentID: "suite", TrialID: id, Params: map[string]string{}, Attach: hs.attach}
}

// runAsync runs a trial in a goroutine; the channel gets its outcome.
func runAsync(ctx context.Context, r *engines.Runner, s schedulers.Spec) <-chan trial.Outcome {
	ch := make(chan trial.Outcome, 1)
	go func() { ch <- r.Run(ctx, s) }()
	return ch
}

func waitOutcome(t *testing.T, ch <-chan trial.Outcome, within time.Duration) trial.Outcome {
	t.Helper()
	select {
	case out := <-ch:
		return out
	case <-time.After(within):
		t.Fatalf("no outcome within %s", within)
	}
	return trial.Outcome{}
}

// waitEnded polls a job until the engine says it is over.
func waitEnded(t *testing.T, eng engines.Engine, ref engines.Ref) engines.State {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := eng.Poll(context.Background(), ref)
		if err == nil && st.Phase.Final() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not over after 2 minutes: %+v %v", ref, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// submitPollFetch: a trial runs, its outcome (score = trial id) comes
// back, its script ran once.
func submitPollFetch(t *testing.T, h Harness) {
	x := newExperiment(t, h, nil)
	hs := &handles{}
	out := x.runner(engines.Common{}).Run(t.Context(), spec(1, hs))
	if out.Status != trial.SUCCEEDED || out.Results["score"] != 1.0 {
		t.Fatalf("outcome %s %v (%s), want SUCCEEDED with score 1", out.Status, out.Results, out.FailureReason)
	}
	if n := x.starts(1); n != 1 {
		t.Errorf("the script ran %d times, want 1", n)
	}
	if hd := hs.last(t); hd.Submits != 1 || hd.Ref == "" || !strings.Contains(hd.Request, `"trial_id":1`) {
		t.Errorf("recorded job %+v", hd)
	}
}

// cancelled: a trial stopped by bench (a cause: bench stop) is CANCELED
// and its job ends.
func cancelled(t *testing.T, h Harness) {
	x := newExperiment(t, h, nil)
	x.mode(t, 1, "sleep 600")
	hs := &handles{}
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	ch := runAsync(ctx, x.runner(engines.Common{}), spec(1, hs))
	x.waitRunning(t, 1)
	cancel(errors.New("stopped by bench stop"))
	out := waitOutcome(t, ch, 2*time.Minute)
	if out.Status != trial.CANCELED || !strings.Contains(out.FailureReason, "bench stop") {
		t.Errorf("outcome %s %q, want CANCELED by bench stop", out.Status, out.FailureReason)
	}
	waitEnded(t, x.eng, engines.Ref(hs.last(t).Ref))
}

// recoverJob: bench is interrupted while the trial runs (no cause): the
// job is left running; a later Recover with the recorded handle follows
// the same job to its outcome, and the script ran once.
func recoverJob(t *testing.T, h Harness) {
	x := newExperiment(t, h, nil)
	x.mode(t, 1, "sleep 3")
	hs := &handles{}
	ctx, cancel := context.WithCancel(t.Context())
	ch := runAsync(ctx, x.runner(engines.Common{}), spec(1, hs))
	x.waitRunning(t, 1)
	hs.wait(t) // interrupted with its job recorded, as a resume finds it
	cancel()
	if out := waitOutcome(t, ch, 2*time.Minute); out.Status != trial.CANCELED || !strings.Contains(out.FailureReason, "left running") {
		t.Fatalf("interrupted: %s %q, want CANCELED, the job left running", out.Status, out.FailureReason)
	}
	out := x.runner(engines.Common{}).Recover(t.Context(), spec(1, hs), hs.last(t))
	if out.Status != trial.SUCCEEDED || out.Results["score"] != 1.0 {
		t.Fatalf("recovered: %s %v (%s), want SUCCEEDED", out.Status, out.Results, out.FailureReason)
	}
	if n := x.starts(1); n != 1 {
		t.Errorf("the script ran %d times, want 1 (re-attached, not run again)", n)
	}
}

// relaunchHung: a job without progress for hang_timeout is cancelled and
// submitted again with the same request, max_relaunches times; then the
// trial is TIMED_OUT.
func relaunchHung(t *testing.T, h Harness) {
	x := newExperiment(t, h, nil)
	x.mode(t, 1, "sleep 600")
	hs := &handles{}
	one := 1
	common := engines.Common{HangTimeout: decode.Duration(3 * time.Second), MaxRelaunches: &one}
	out := x.runner(common).Run(t.Context(), spec(1, hs))
	if out.Status != trial.TIMED_OUT {
		t.Errorf("outcome %s %q, want TIMED_OUT after a relaunch", out.Status, out.FailureReason)
	}
	hs.mu.Lock()
	n := len(hs.hs)
	same := n == 2 && hs.hs[0].Request == hs.hs[1].Request && hs.hs[1].Submits == 2
	hs.mu.Unlock()
	if !same {
		t.Errorf("%d jobs recorded, want 2 with the same request (the second: submission 2)", n)
	}
	if c := x.starts(1); c != 2 {
		t.Errorf("the script ran %d times, want 2", c)
	}
}

// outsideCancel: the job is cancelled by someone else while it runs.
func outsideCancel(t *testing.T, h Harness) {
	if h.CancelOutside == nil {
		t.Skip("this engine's harness has no way to cancel a job from outside")
	}
	x := newExperiment(t, h, nil)
	x.mode(t, 1, "sleep 600")
	hs := &handles{}
	ch := runAsync(t.Context(), x.runner(engines.Common{}), spec(1, hs))
	x.waitRunning(t, 1)
	h.CancelOutside(t, engines.Ref(hs.last(t).Ref))
	out := waitOutcome(t, ch, 3*time.Minute)
	if out.Status != h.OutsideCancel || !strings.Contains(out.FailureReason, h.OutsideCancelReason) {
		t.Errorf("outcome %s %q, want %s (%q)", out.Status, out.FailureReason, h.OutsideCancel, h.OutsideCancelReason)
	}
}

// timeLimit: a job past the engine's time limit is TIMED_OUT.
func timeLimit(t *testing.T, h Harness) {
	if h.TimeLimit == nil {
		t.Skip(h.NoTimeLimit)
	}
	x := newExperiment(t, h, h.TimeLimit)
	x.mode(t, 1, "sleep 600")
	ch := runAsync(t.Context(), x.runner(engines.Common{}), spec(1, &handles{}))
	out := waitOutcome(t, ch, h.TimeLimitWait)
	if out.Status != trial.TIMED_OUT {
		t.Errorf("outcome %s %q, want TIMED_OUT", out.Status, out.FailureReason)
	}
}

// idempotent: a second Submit of the same attempt of the same trial by a
// new engine on the same folder (a restarted bench that never recorded the
// first) follows the first job: the script runs once.
func idempotent(t *testing.T, h Harness) {
	if h.NotIdempotent != "" {
		t.Skip(h.NotIdempotent)
	}
	x := newExperiment(t, h, nil)
	x.mode(t, 1, "sleep 2")
	r := x.runner(engines.Common{})
	job := engines.Job{Name: engines.JobName("suite", 1), Request: r.Request(spec(1, &handles{})).Encode(), Slot: 1}
	first, err := x.eng.Submit(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	restarted := h.New(t, x.dir, nil)
	second, err := restarted.Submit(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, x.eng, first)
	st := waitEnded(t, restarted, second)
	if st.Phase != engines.Done {
		t.Errorf("the second submission's job: %+v", st)
	}
	if n := x.starts(1); n != 1 {
		t.Errorf("the script ran %d times after two submissions of the same attempt, want 1", n)
	}
}

// progress: a job's progress reaches Spec.Progress while the job runs
// (the script waits for the driver to have seen step 0 before it goes
// on), in step order, with the far side's times.
func progress(t *testing.T, h Harness) {
	if h.NoProgress != "" {
		t.Skip(h.NoProgress)
	}
	x := newExperiment(t, h, nil)
	x.mode(t, 1, "progress")
	var (
		mu  sync.Mutex
		got []trial.Progress
	)
	s := spec(1, &handles{})
	s.Progress = func(p trial.Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
		if p.Step == 0 {
			_ = os.WriteFile(filepath.Join(x.dir, "gate-1"), nil, 0o644)
		}
	}
	out := x.runner(engines.Common{}).Run(t.Context(), s)
	if out.Status != trial.SUCCEEDED {
		t.Fatalf("outcome %s (%s), want SUCCEEDED", out.Status, out.FailureReason)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Step != 0 || got[1].Step != 1 || got[0].Values["loss"] != 0.9 || got[1].Values["loss"] != 0.5 {
		t.Fatalf("progress %+v, want steps 0 and 1", got)
	}
	if got[0].Ts.IsZero() || got[1].Ts.Before(got[0].Ts) {
		t.Errorf("progress times %v, %v: want the far side's, in order", got[0].Ts, got[1].Ts)
	}
}
