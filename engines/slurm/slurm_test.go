package slurm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/trial"
)

// fakeBench is a stand-in for `bench exec-trial --request R --outcome O`:
// it reads "sleep" and "mode" from the request, sleeps, and writes a
// SUCCEEDED outcome (mode "fail": exits 3 without one; "fail-after":
// writes the outcome, then exits 3).
const fakeBench = `#!/bin/sh
[ "$1" = exec-trial ] && [ "$2" = --request ] && [ "$4" = --outcome ] || { echo "bad arguments: $*" >&2; exit 2; }
req=$3 out=$5
field() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" "$req"; }
echo "fake bench: job $SLURM_JOB_ID started $(date +%s.%N) in $(pwd)"
if [ "$(field mode)" = interrupted ]; then
	# What bench exec-trial writes when a signal stopped the trial, then
	# a far side still finishing (a job in COMPLETING).
	printf '{"status":"CANCELED","failure_reason":"run cancelled","signal":"SIGTERM"}' > "$out.tmp" && mv "$out.tmp" "$out"
elif [ "$(field mode)" = failed-outcome ]; then
	# The signal reached the trial's script first: a FAILED outcome that
	# names no signal.
	printf '{"status":"FAILED","failure_reason":"run.sh exited with code 143"}' > "$out.tmp" && mv "$out.tmp" "$out"
fi
sleep "$(field sleep)"
case "$(field mode)" in
fail) echo "failing on purpose" >&2; exit 3 ;;
esac
# Like bench exec-trial, the outcome file comes last (the engine takes
# its presence for the end of the job).
echo "fake bench: ended $(date +%s.%N)"
printf '{"status":"SUCCEEDED","results":{"score":1}}' > "$out.tmp" && mv "$out.tmp" "$out"
[ "$(field mode)" = fail-after ] && exit 3
exit 0
`

// newTestEngine builds a Slurm engine on the test cluster whose jobs run
// the fake bench.
func newTestEngine(t *testing.T, config map[string]any) *Engine {
	t.Helper()
	testenv.Get(t, "BENCH_TEST_SLURM")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(dir, "fake-bench")
	if err := os.WriteFile(bench, []byte(fakeBench), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"bench": bench}
	if p := os.Getenv("BENCH_TEST_SLURM_PARTITION"); p != "" {
		cfg["partition"] = p
	}
	for k, v := range config {
		cfg[k] = v
	}
	e, err := engines.New(context.Background(), engines.Spec{Class: "bench.engines.SlurmEngine", Config: cfg},
		engines.Params{Slots: 8, Dir: dir, ExperimentID: "exp/" + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	return e.(*Engine)
}

func request(trialID int, sleep, mode string) []byte {
	b, _ := json.Marshal(map[string]any{"experiment_id": "x", "trial_id": trialID,
		"params": map[string]string{"sleep": sleep, "mode": mode}})
	return b
}

func submit(t *testing.T, e *Engine, trialID int, sleep, mode string) engines.Ref {
	t.Helper()
	ref, err := e.Submit(context.Background(), engines.Job{Name: engines.JobName("T", trialID), Request: request(trialID, sleep, mode), Slot: 1})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return ref
}

// waitFor polls a job until cond holds or the time is up; it returns the
// last state and the phases seen on the way.
func waitFor(t *testing.T, e *Engine, ref engines.Ref, within time.Duration, cond func(engines.State) bool) (engines.State, []engines.Phase) {
	t.Helper()
	var seen []engines.Phase
	deadline := time.Now().Add(within)
	for {
		st, err := e.Poll(context.Background(), ref)
		if err != nil {
			t.Fatalf("poll %s: %v", ref, err)
		}
		if len(seen) == 0 || seen[len(seen)-1] != st.Phase {
			seen = append(seen, st.Phase)
		}
		if cond(st) {
			return st, seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: still %s after %s (phases %v)", ref, st.Phase, within, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func final(st engines.State) bool { return st.Phase.Final() }

// TestSlurmSubmitPollFetch: a job runs the (fake) bench with the request
// and outcome paths, is Done, and its outcome and log come back.
func TestSlurmSubmitPollFetch(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, map[string]any{"time_limit": "10", "cpus_per_task": 2, "mem": "100M",
		"sbatch_args": []any{"--comment=from-bench", "--nice=5"}})
	job := submit(t, e, 1, "1", "")
	var r ref
	if err := json.Unmarshal(job, &r); err != nil || r.JobID == "" || r.Request == "" || r.Outcome == "" || r.Log == "" {
		t.Fatalf("ref %s: %v", job, err)
	}
	// The options reached Slurm.
	show, err := run(context.Background(), "scontrol", "show", "job", "-o", r.JobID)
	if err != nil {
		t.Fatal(err)
	}
	kv := fields(show)
	if name := kv["JobName"]; !strings.HasPrefix(name, "bench-T-1.0.") {
		t.Errorf("scontrol show job: JobName=%q, want bench-T-1.0.<hash> (name, attempt, hash)", name)
	}
	for k, want := range map[string]string{"TimeLimit": "00:10:00", "MinMemoryNode": "100M",
		"NumCPUs": "2", "Comment": "from-bench", "Nice": "5", "WorkDir": e.dir, "StdOut": r.Log} {
		if kv[k] != want {
			t.Errorf("scontrol show job: %s=%q, want %q", k, kv[k], want)
		}
	}
	if fi, err := os.Stat(r.Request); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("request file %s: %v %v", r.Request, fi.Mode(), err)
	}
	st, seen := waitFor(t, e, job, 60*time.Second, final)
	if st.Phase != engines.Done || st.Reason != "" {
		t.Fatalf("final state %+v (phases %v)", st, seen)
	}
	if st.Started.IsZero() || st.Ended.IsZero() || st.Ended.Before(st.Started) {
		t.Errorf("started %v, ended %v", st.Started, st.Ended)
	}
	res, err := e.Fetch(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engines.DecodeOutcome(res.Outcome)
	if err != nil {
		t.Fatalf("outcome %q: %v\nlog:\n%s", res.Outcome, err, res.Log)
	}
	if diff := cmp.Diff(trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}, out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	// The job ran in the driver's folder (--chdir).
	if !strings.Contains(res.Log, "fake bench: job "+r.JobID+" started") || !strings.Contains(res.Log, " in "+e.dir) {
		t.Errorf("log:\n%s", res.Log)
	}
	// Cancel of a finished job is not an error.
	if err := e.Cancel(context.Background(), job); err != nil {
		t.Errorf("cancel after the end: %v", err)
	}
}

// TestSlurmFailures: a job whose command exits non-zero without an
// outcome is Failed with Slurm's state and exit code; one that wrote its
// outcome is Done all the same.
func TestSlurmFailures(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, nil)
	bad := submit(t, e, 1, "0", "fail")
	after := submit(t, e, 2, "0", "fail-after")
	st, _ := waitFor(t, e, bad, 60*time.Second, final)
	if st.Phase != engines.Failed || !strings.Contains(st.Reason, "FAILED") || !strings.Contains(st.Reason, "exit code 3:0") {
		t.Errorf("failing job: %+v", st)
	}
	res, err := e.Fetch(context.Background(), bad)
	if err != nil || res.Outcome != nil || !strings.Contains(res.Log, "failing on purpose") {
		t.Errorf("fetch: %q %v\n%s", res.Outcome, err, res.Log)
	}
	st, _ = waitFor(t, e, after, 60*time.Second, final)
	if st.Phase != engines.Done {
		t.Errorf("job that wrote its outcome, then failed: %+v", st)
	}

	// Once the controller forgets a job, sacct (when the cluster has
	// accounting) says how it ended.
	if os.Getenv("BENCH_TEST_SLURM_ACCOUNTING") != "1" {
		return
	}
	var r ref
	_ = json.Unmarshal(bad, &r)
	deadline := time.Now().Add(20 * time.Second)
	for {
		in, known, err := sacct(context.Background(), r.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if known && in.state == "FAILED" && in.exit == "3:0" && !in.start.IsZero() && !in.end.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sacct: %+v, known %v", in, known)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSlurmTimeLimit: a job that runs past time_limit is killed by Slurm
// and ends TimedOut. Slurm counts whole minutes and checks limits every
// 30 s, so this takes 60 to 100 s.
func TestSlurmTimeLimit(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, map[string]any{"time_limit": 1})
	ref := submit(t, e, 1, "600", "")
	st, seen := waitFor(t, e, ref, 150*time.Second, final)
	if st.Phase != engines.TimedOut || !strings.Contains(st.Reason, "TIMEOUT") {
		t.Fatalf("state %+v (phases %v)", st, seen)
	}
}

// TestSlurmCancel: a running job is cancelled: Failed, CANCELLED.
func TestSlurmCancel(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, nil)
	ref := submit(t, e, 1, "120", "")
	waitFor(t, e, ref, 60*time.Second, func(st engines.State) bool { return st.Phase == engines.Running })
	if err := e.Cancel(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	st, _ := waitFor(t, e, ref, 60*time.Second, final)
	if st.Phase != engines.Failed || !strings.Contains(st.Reason, "CANCELLED") {
		t.Fatalf("state %+v", st)
	}
	if err := e.Cancel(context.Background(), ref); err != nil {
		t.Errorf("second cancel: %v", err)
	}
}

// TestSlurmConcurrent: 8 jobs on 8 slots, followed by 8 goroutines as
// the runners do, run at once (each starts before any ends, by the fake
// bench's own clock), and their polls share squeue calls.
func TestSlurmConcurrent(t *testing.T) {
	// Not parallel: the other tests' jobs would take CPUs.
	e := newTestEngine(t, map[string]any{"poll_interval": "200ms"})
	if e.Slots() != 8 {
		t.Fatalf("slots %d, want 8 (num_trial_runners)", e.Slots())
	}
	var refs []engines.Ref
	for i := 1; i <= 8; i++ {
		refs = append(refs, submit(t, e, i, "6", ""))
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		polls int
		errs  []error
	)
	for _, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(120 * time.Second)
			for time.Now().Before(deadline) {
				st, err := e.Poll(context.Background(), ref)
				mu.Lock()
				polls++
				mu.Unlock()
				if err != nil || st.Phase.Final() {
					if err == nil && st.Phase != engines.Done {
						err = fmt.Errorf("job %s: %+v", ref, st)
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
			mu.Lock()
			errs = append(errs, fmt.Errorf("job %s did not end", ref))
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var lastStart, firstEnd float64
	for _, ref := range refs {
		res, err := e.Fetch(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		var id string
		var started, ended float64
		for _, l := range strings.Split(res.Log, "\n") {
			fmt.Sscanf(l, "fake bench: job %s started %f", &id, &started)
			fmt.Sscanf(l, "fake bench: ended %f", &ended)
		}
		if started == 0 || ended == 0 {
			t.Fatalf("log of %s:\n%s", ref, res.Log)
		}
		lastStart = max(lastStart, started)
		if firstEnd == 0 || ended < firstEnd {
			firstEnd = ended
		}
	}
	if lastStart >= firstEnd {
		t.Errorf("the 8 jobs did not overlap: the last started at %.3f, the first ended at %.3f", lastStart, firstEnd)
	}
	if calls := e.squeues.Load(); calls*2 > int64(polls) {
		t.Errorf("%d squeue calls for %d polls: they are not shared", calls, polls)
	} else {
		t.Logf("%d squeue calls for %d polls of 8 jobs", calls, polls)
	}
}

// TestSlurmLostAndPilots: a job Slurm never knew is Lost; pilots are one
// job array whose tasks each run the command.
func TestSlurmLostAndPilots(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, nil)
	st, err := e.Poll(context.Background(), engines.Ref(`{"job_id": "987654321", "log": "/nonexistent"}`))
	if err != nil || st.Phase != engines.Lost {
		t.Errorf("unknown job: %+v %v", st, err)
	}
	if _, err := e.Poll(context.Background(), engines.Ref(`{"job_id": "1; rm -rf /"}`)); err == nil {
		t.Errorf("a bad job id was accepted")
	}

	refs, err := e.SubmitPilots(context.Background(), "bench-pilot-P", []string{"sh", "-c", `echo "pilot $SLURM_ARRAY_TASK_ID says $0"`, "it's me"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 3 {
		t.Fatalf("%d refs", len(refs))
	}
	for i, ref := range refs {
		st, _ := waitFor(t, e, ref, 60*time.Second, final)
		if st.Phase != engines.Done {
			t.Errorf("pilot %d: %+v", i+1, st)
		}
		res, err := e.Fetch(context.Background(), ref)
		if want := fmt.Sprintf("pilot %d says it's me", i+1); err != nil || !strings.Contains(res.Log, want) {
			t.Errorf("pilot %d log %q (want %q): %v", i+1, res.Log, want, err)
		}
	}
}

// TestSlurmConfig: config keys and their errors (no cluster needed).
func TestSlurmConfig(t *testing.T) {
	for _, tc := range []struct {
		config map[string]any
		err    string
	}{
		{map[string]any{"partitions": "x"}, `unknown config key "partitions"`},
		{map[string]any{"mem": "2 GB"}, `"mem"`},
		{map[string]any{"mem": "lots"}, `"mem"`},
		{map[string]any{"time_limit": "soon"}, `time_limit`},
		{map[string]any{"time_limit": -5}, `time_limit`},
		{map[string]any{"time_limit": true}, `time_limit`},
		{map[string]any{"cpus_per_task": -1}, `"cpus_per_task"`},
		{map[string]any{"cpus_per_task": "two"}, `"cpus_per_task"`},
		{map[string]any{"max_jobs": -1}, `"max_jobs"`},
		{map[string]any{"partition": "a b"}, `"partition"`},
		{map[string]any{"sbatch_args": []any{"--exclusive", "foo"}}, `"sbatch_args"[1]`},
		{map[string]any{"sbatch_args": []any{"--output=/tmp/x"}}, `--output`},
		{map[string]any{"sbatch_args": []any{"--arr=1-3"}}, `--array`},
		{map[string]any{"sbatch_args": []any{"-J", "x"}}, `-J`},
		{map[string]any{"sbatch_args": []any{"--"}}, `"--"`},
		{map[string]any{"sbatch_args": "--exclusive"}, `"sbatch_args"`},
	} {
		_, err := engines.New(context.Background(), engines.Spec{Class: "bench.engines.slurm.SlurmEngine", Config: tc.config},
			engines.Params{Slots: 2, Dir: t.TempDir(), ExperimentID: "x"})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want one naming %s", tc.config, err, tc.err)
		}
	}
}

func TestSlurmTimeLimitFormats(t *testing.T) {
	for in, want := range map[string]TimeLimit{
		`90`:           "0-00:01:30",
		`0.5`:          "", // error
		`3600`:         "0-01:00:00",
		`"30"`:         "30",
		`"1:30:00"`:    "1:30:00",
		`"2-00:00:00"`: "2-00:00:00",
		`"2-12"`:       "2-12",
		`"90s"`:        "0-00:01:30",
		`"1h30m"`:      "0-01:30:00",
		`"49h"`:        "2-01:00:00",
		`"unlimited"`:  "UNLIMITED",
		`"1:2:3:4"`:    "",
	} {
		var got TimeLimit
		err := json.Unmarshal([]byte(in), &got)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("%s: got %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestSlurmStatePhases(t *testing.T) {
	for state, want := range map[string]engines.Phase{
		"PENDING": engines.Queued, "CONFIGURING": engines.Queued, "RUNNING": engines.Running, "COMPLETING": engines.Running,
		"COMPLETED": engines.Done, "TIMEOUT": engines.TimedOut, "FAILED": engines.Failed, "CANCELLED": engines.Failed,
		"NODE_FAIL": engines.Failed, "OUT_OF_MEMORY": engines.Failed, "PREEMPTED": engines.Failed, "BOOT_FAIL": engines.Failed,
		"DEADLINE": engines.Failed,
	} {
		if got, ok := phase(state); !ok || got != want {
			t.Errorf("%s: %v %v, want %v", state, got, ok, want)
		}
	}
	if _, ok := phase("WHATEVER"); ok {
		t.Errorf("an unknown state was mapped")
	}
}

// TestSlurmExampleConfig: the example config's keys are the engine's.
func TestSlurmExampleConfig(t *testing.T) {
	path := filepath.Join("..", "..", "configs", "examples", "engines", "slurm.jsonc")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := source.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	m, err := configs.Object(doc)
	if err != nil {
		t.Fatal(err)
	}
	if m["class"] != "bench.engines.SlurmEngine" {
		t.Errorf("class %v", m["class"])
	}
	own, common := map[string]any{}, map[string]any{}
	for k, v := range m["config"].(map[string]any) {
		switch k {
		case "bench", "workdir", "poll_interval", "hang_timeout", "max_relaunches", "lost_after":
			common[k] = v
		default:
			own[k] = v
		}
	}
	var c engines.Common
	if err := decode.Into(common, &c); err != nil {
		t.Errorf("common keys: %v", err)
	}
	cfg, err := parseConfig(own)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TimeLimit != "0:30:00" || cfg.MaxJobs != 16 {
		t.Errorf("config %+v", cfg)
	}
}

// TestSlurmInterruptedOutcomeWaitsForSlurm: an outcome file that says a
// signal stopped the run is not taken for the job's end while Slurm still
// runs the job: the engine waits for Slurm's final state (here CANCELLED
// by scancel: Failed), which tells a time limit, a cancel and a person's
// interruption apart (issue 22, bugs 1 and 2).
func TestSlurmInterruptedOutcomeWaitsForSlurm(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"interrupted", "failed-outcome"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			untrustedOutcome(t, mode)
		})
	}
}

// untrustedOutcome: a job whose outcome file is not a success keeps
// running for the engine until Slurm ends it.
func untrustedOutcome(t *testing.T, mode string) {
	e := newTestEngine(t, nil)
	job := submit(t, e, 1, "600", mode)
	var r ref
	_ = json.Unmarshal(job, &r)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(r.Outcome); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job wrote no outcome")
		}
		time.Sleep(50 * time.Millisecond)
	}
	st, err := e.Poll(context.Background(), job)
	if err != nil || st.Phase != engines.Running {
		t.Fatalf("state %+v, %v: want running (Slurm has not ended the job)", st, err)
	}
	if err := e.Cancel(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	st, _ = waitFor(t, e, job, 60*time.Second, final)
	if st.Phase != engines.Failed || !strings.Contains(st.Reason, "CANCELLED") {
		t.Fatalf("state %+v: want failed, CANCELLED", st)
	}
}

// TestSlurmSubmitFindsEarlierSubmission: submitting the same attempt of the
// same trial again (a restarted bench that never recorded the first
// submission) returns the job Slurm already has; another attempt, or the
// same trial id with other values (an earlier experiment of the same id),
// is a new job.
func TestSlurmSubmitFindsEarlierSubmission(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, nil)
	id := func(raw engines.Ref) string {
		var r ref
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		return r.JobID
	}
	job := engines.Job{Name: engines.JobName("T", 1), Request: request(1, "30", ""), Slot: 1}
	first, err := e.Submit(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Cancel(context.Background(), first) })
	again, err := e.Submit(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if id(again) != id(first) {
		t.Errorf("second submission of the same attempt: job %s, want the first one's %s", id(again), id(first))
	}
	for name, other := range map[string]engines.Job{
		"next attempt": {Name: job.Name, Request: job.Request, Slot: 1, Attempt: 1},
		"other values": {Name: job.Name, Request: request(1, "31", ""), Slot: 1},
	} {
		r, err := e.Submit(context.Background(), other)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Cancel(context.Background(), r) })
		if id(r) == id(first) {
			t.Errorf("%s: got the first job %s, want a new one", name, id(r))
		}
	}
}
