package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/storage"
)

// passiveExperiment writes a benchmark run by hand: an environment with
// tunables and nothing to run, an optimizer with budget trials.
func passiveExperiment(t *testing.T, budget int) string {
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{"phone": {"cost": 1, "params": {
		"level": {"type": "int", "range": [0, 9], "default": 6},
		"mode": {"type": "categorical", "values": ["fast", "safe mode"], "default": "fast"}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{"name": "phone", "class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"], "config": {"tunable_params": ["phone"]}}`, 0o644)
	write(t, dir, "opt.jsonc", fmt.Sprintf(`{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": %d, "seed": 1, "optimization_targets": {"score": "min"}}}`, budget), 0o644)
	return dir
}

// waitText waits until read() holds want (after skip earlier matches).
func waitText(t *testing.T, what string, read func() string, want string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s := read()
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%q); got:\n%s", what, want, s)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func fileText(path string) func() string {
	return func() string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
}

// waitExit waits for a bench process and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, log string) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("bench did not exit:\n%s", fileText(log)())
	}
	return cmd.ProcessState.ExitCode()
}

// submitter returns a function that runs bench submit EXP ARGS... in dir
// and fails the test unless it exits want with wantText on stderr.
func submitter(t *testing.T, dir, exp string) func(want int, wantText string, a ...string) {
	return func(want int, wantText string, a ...string) {
		t.Helper()
		r := runBench(t, dir, append([]string{"submit", exp}, a...)...)
		if r.code != want || !strings.Contains(r.stderr, wantText) {
			t.Fatalf("bench submit %s %s: exit %d (want %d), want %q in:\n%s%s", exp, strings.Join(a, " "), r.code, want, wantText, r.stdout, r.stderr)
		}
	}
}

// TestPassiveSubmitEndToEnd: bench runs with the passive runner in the
// background (no terminal: no prompt) and bench submit gives the results:
// a value that is not a number and a missing target are refused (exit 2,
// nothing stored, the trial keeps waiting); a good result is stored and
// bench goes on; --failed and --skip; a finished trial is refused (exit
// 1). Interrupted (Ctrl-C) and killed (SIGKILL) while a trial waits, a
// restarted bench shows the same trial again; a result submitted while no
// bench runs is stored, and the next bench goes on from there.
func TestPassiveSubmitEndToEnd(t *testing.T) {
	dir := passiveExperiment(t, 5)
	tmp := t.TempDir()
	log := filepath.Join(tmp, "bench.log")
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--passive", "--no-reuse",
		"--passive_command", "adb shell run --level $level --mode $mode", "--experiment_id", "PS", "--no-progress"}
	db := filepath.Join(dir, "bench.sqlite")
	submit := submitter(t, dir, "PS")
	cmd := startBench(t, dir, tmp, "bench", args...)
	defer func() { _ = cmd.Process.Kill() }()
	out := waitText(t, "trial 1 shown", fileText(log), "── trial 1 of experiment PS: run it by hand")
	if !strings.Contains(out, "bench submit PS 1 score=NUMBER") || !strings.Contains(out, "adb shell run --level 6 --mode fast") {
		t.Errorf("trial 1 should show its command and how to submit:\n%s", out)
	}

	submit(2, `metric "score": "abc" is not a number; nothing stored, the trial is still waiting`, "1", "score=abc")
	submit(2, `the result has no "score", an optimization target`, "1", "latency=3")
	if rows := trialRows(t, db, "PS"); rows[1] != "RUNNING" {
		t.Fatalf("a refused result changed the trial: %v", rows)
	}
	submit(0, "stored trial 1 of experiment PS: SUCCEEDED latency=3 score=4.5", "1", "score=4.5", "latency=3")
	waitText(t, "trial 2 shown", fileText(log), "── trial 2 of experiment PS")
	submit(1, "trial 1 of experiment PS has already finished", "1", "score=1")
	submit(0, "FAILED (rig broke)", "2", "--failed", "rig broke")
	waitText(t, "trial 3 shown", fileText(log), "── trial 3 of experiment PS")
	submit(0, "CANCELED (skipped by hand)", "3", "--skip")
	waitText(t, "trial 4 shown", fileText(log), "── trial 4 of experiment PS")

	// Ctrl-C while trial 4 waits; the next bench shows it again.
	_ = cmd.Process.Signal(os.Interrupt)
	if code := waitExit(t, cmd, log); code != exitInterrupted {
		t.Fatalf("interrupted bench: exit %d\n%s", code, fileText(log)())
	}
	if s := fileText(log)(); !strings.Contains(s, "trial 4 is still waiting") {
		t.Errorf("the interrupted bench should say the trial still waits:\n%s", s)
	}
	// A person runs the trial: nothing "runs again" on resume, it waits again.
	if s := fileText(log)(); strings.Contains(s, "will run again") || !strings.Contains(s, "trial waits for its result again when the experiment is resumed") ||
		!strings.Contains(s, "interrupted: the waiting trials wait for their results again when you rerun the same command") {
		t.Errorf("the interrupted passive bench should say its trials wait again, not that they run again:\n%s", s)
	}
	cmd = startBench(t, dir, tmp, "bench2", args...)
	waitText(t, "trial 4 shown again", fileText(filepath.Join(tmp, "bench2.log")), "── trial 4 of experiment PS: still waiting for its result")

	// Killed while trial 4 waits; its result comes while no bench runs.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	submit(0, "no bench is waiting for it now", "4", "score=1", "latency=2")
	cmd = startBench(t, dir, tmp, "bench3", args...)
	log3 := filepath.Join(tmp, "bench3.log")
	out = waitText(t, "trial 5 shown", fileText(log3), "── trial 5 of experiment PS")
	if strings.Contains(out, "── trial 4") {
		t.Errorf("trial 4 was finished while no bench ran, but the next bench showed it again:\n%s", out)
	}
	submit(0, "skipped by hand: no time", "5", "--skip", "no", "time")
	// 3 of the 5 trials did not succeed: more than mlos_bench's 20%.
	if code := waitExit(t, cmd, log3); code != 1 || !strings.Contains(fileText(log3)(), "Too many trials failed: 3 out of 5") {
		t.Fatalf("last bench: exit %d, want 1 (too many trials failed)\n%s", code, fileText(log3)())
	}
	want := map[int]string{1: "SUCCEEDED", 2: "FAILED", 3: "CANCELED", 4: "SUCCEEDED", 5: "CANCELED"}
	if rows := trialRows(t, db, "PS"); fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("trials %v, want %v", rows, want)
	}
	if s := runBench(t, dir, "show", "4", "--experiment", "PS"); !strings.Contains(s.stdout, "Run by hand (passive runner)") ||
		!strings.Contains(s.stdout, "Command shown: adb shell run --level") || !strings.Contains(s.stdout, "result submitted with bench submit") {
		t.Errorf("bench show 4:\n%s", s.stdout)
	}
	// Usage errors.
	submit(2, "experiment PS has no trial 9", "9", "score=1")
	submit(2, "give either --failed or --skip", "5", "--failed", "x", "--skip")
	submit(2, "give the trial's results", "5")
}

// TestPassivePromptUnderTmux drives the terminal prompt: bench runs in a
// tmux session with two trial runners, the answers are typed with
// send-keys and the screen is read with capture-pane.
func TestPassivePromptUnderTmux(t *testing.T) {
	tmux := os.Getenv("BENCH_TEST_TMUX")
	if tmux == "" {
		var err error
		if tmux, err = exec.LookPath("tmux"); err != nil {
			if testenv.Strict() {
				t.Fatal("tmux is not installed: scripts/testenv/tmux.sh should have installed it")
			}
			t.Skip("tmux is not installed (apt-get install tmux, or run make test)")
		}
	}
	dir := passiveExperiment(t, 4)
	tmp := t.TempDir()
	sock := filepath.Join(tmp, "tmux.sock")
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") {
			env = append(env, kv)
		}
	}
	tm := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tmux, append([]string{"-S", sock}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	script := fmt.Sprintf(`cd %s && TMPDIR=%s %s --environment env.jsonc --optimizer opt.jsonc --passive --no-reuse --num_trial_runners 2 --experiment_id PT
echo "EXIT=$?"
sleep 600
`, shellQuote(dir), shellQuote(tmp), shellQuote(benchBin))
	write(t, tmp, "run.sh", script, 0o755)
	tm("new-session", "-d", "-s", "pt", "-x", "200", "-y", "50", "sh "+filepath.Join(tmp, "run.sh"))
	t.Cleanup(func() {
		cmd := exec.Command(tmux, "-S", sock, "kill-server")
		cmd.Env = env
		_ = cmd.Run()
	})
	screen := func() string { return tm("capture-pane", "-p", "-J", "-t", "pt", "-S", "-2000") }
	typeLine := func(line string) {
		tm("send-keys", "-t", "pt", "-l", line)
		tm("send-keys", "-t", "pt", "Enter")
	}
	waitText(t, "both trials shown", screen, "several trials wait: put the trial id first")
	// The two trials start at once, in either order.
	first := "1"
	if s := waitText(t, "the prompt for both", screen, "(start with the trial id:"); strings.Contains(s, "result for trial 2, 1") {
		first = "2"
	}
	typeLine("score=1")
	waitText(t, "an answer without a trial id refused", screen, "are waiting: start the answer with the trial id it is for, e.g. "+first+": score=NUMBER")
	typeLine("1: score=abc")
	waitText(t, "a value that is not a number refused", screen, `trial 1: result refused: metric "score": "abc" is not a number; the trial is still waiting`)
	typeLine("1: latency=3")
	waitText(t, "a missing target refused", screen, `trial 1: result refused: the result has no "score", an optimization target (score to minimize)`)
	typeLine("1: score=2.5 latency=3")
	waitText(t, "trial 1 stored", screen, "bench: trial finished trial=1 status=SUCCEEDED")
	waitText(t, "trial 3 shown", screen, "── trial 3 of experiment PT")
	typeLine("2: fail rig broke")
	waitText(t, "trial 2 failed", screen, `bench: trial finished trial=2 status=FAILED done=2 planned=4 reason="rig broke"`)
	waitText(t, "trial 4 shown", screen, "── trial 4 of experiment PT")
	typeLine("3: skip")
	waitText(t, "trial 3 skipped", screen, "bench: trial 3: CANCELED (skipped by hand)")
	waitText(t, "one trial left", screen, "result for trial 4> ")
	// The last one from another shell.
	if r := runBench(t, dir, "submit", "PT", "4", "score=7"); r.code != 0 {
		t.Fatalf("bench submit: exit %d\n%s", r.code, r.stderr)
	}
	out := waitText(t, "bench to exit", screen, "EXIT=")
	// 2 of the 4 trials did not succeed: more than mlos_bench's 20%, exit 1.
	if !strings.Contains(out, "EXIT=1") || !strings.Contains(out, "Too many trials failed: 2 out of 4") ||
		!strings.Contains(out, "trial 4: result stored from outside this bench (bench submit): SUCCEEDED score=7") {
		t.Errorf("screen:\n%s", out)
	}
	want := map[int]string{1: "SUCCEEDED", 2: "FAILED", 3: "CANCELED", 4: "SUCCEEDED"}
	if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "PT"); fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("trials %v, want %v", rows, want)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestPassiveProgressEndToEnd: the passive desk carries intermediate
// results to the scheduler, as every runner kind does. With ASHA, trial 1
// reports score 1 at step 1 (bench submit --step) and then its result;
// trial 2 reports a worse score at step 1 and is pruned by the scheduler
// (stored CANCELED, "pruned"), which only the scheduler's pruner, fed by
// the runner's Spec.Progress, can do. Bad --step uses store nothing.
func TestPassiveProgressEndToEnd(t *testing.T) {
	dir := passiveExperiment(t, 3)
	tmp := t.TempDir()
	log := filepath.Join(tmp, "bench.log")
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--passive", "--no-reuse",
		"--experiment_id", "PP", "--no-progress", "--pruner", "asha"}
	submit := submitter(t, dir, "PP")
	cmd := startBench(t, dir, tmp, "bench", args...)
	defer func() { _ = cmd.Process.Kill() }()
	out := waitText(t, "trial 1 shown", fileText(log), "── trial 1 of experiment PP: run it by hand")
	if !strings.Contains(out, "intermediate results: --step 3 loss=0.5") {
		t.Errorf("trial 1 should show how to report progress:\n%s", out)
	}
	submit(2, "give it without --failed or --skip", "1", "--step", "1", "--failed", "x")
	submit(2, `metric "score": "abc" is not a number; nothing stored`, "1", "--step", "1", "score=abc")
	submit(2, `invalid argument "x" for "--step" flag: the step must be a whole number >= 0`, "1", "--step", "x", "score=1")
	submit(2, `invalid argument "-1" for "--step" flag: the step must be a whole number >= 0`, "1", "--step", "-1", "score=1")
	submit(2, "--step 1 needs the intermediate results as METRIC=VALUE (e.g. --step 1 loss=0.5)", "1", "--step", "1")
	submit(2, `"score" is not metric=value (e.g. --step 3 loss=0.5); nothing stored`, "1", "--step", "1", "score")
	submit(0, "stored progress of trial 1 of experiment PP at step 1: score=1; the trial still waits for its result", "1", "--step", "1", "score=1")
	submit(0, "stored trial 1 of experiment PP: SUCCEEDED score=1", "1", "score=1")
	waitText(t, "trial 2 shown", fileText(log), "── trial 2 of experiment PP")
	submit(0, "stored progress of trial 2 of experiment PP at step 1: score=50", "2", "--step", "1", "score=50")
	waitText(t, "trial 2 pruned", fileText(log), "trial 2: canceled (pruned: score value 50 at rung 0 (step 1) ranks 2 of 2")
	waitText(t, "trial 3 shown", fileText(log), "── trial 3 of experiment PP")
	submit(0, "stored trial 3 of experiment PP: SUCCEEDED score=2", "3", "score=2")
	if code := waitExit(t, cmd, log); code != 0 {
		t.Fatalf("bench: exit %d\n%s", code, fileText(log)())
	}
	want := map[int]string{1: "SUCCEEDED", 2: "CANCELED", 3: "SUCCEEDED"}
	if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "PP"); fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("trials %v, want %v", rows, want)
	}
	if s := runBench(t, dir, "show", "2", "--experiment", "PP"); !strings.Contains(s.stdout, "pruned") {
		t.Errorf("bench show 2 should say the trial was pruned:\n%s", s.stdout)
	}
	// --format json lists each progress row with its step (docs/progress.md).
	if s := runBench(t, dir, "show", "2", "--experiment", "PP", "--format", "json"); !strings.Contains(s.stdout, `"step": 1`) {
		t.Errorf("bench show 2 --format json should list the report's step:\n%s", s.stdout)
	}
	// Each report is stored once, though bench submit stored it and the
	// scheduler's progress storage was handed it again.
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, want := range map[int]int{1: 1, 2: 1, 3: 0} {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM trial_telemetry WHERE exp_id = 'PP' AND trial_id = ? AND step IS NOT NULL`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("trial %d: %d progress rows stored, want %d", id, n, want)
		}
	}
}

// TestSubmitRefusesTrialNotRunByHand: a trial that no passive bench has
// shown (a script's trial left unfinished by an interrupted run, or one
// not shown yet) has no hand-run record: bench submit refuses a result
// and a progress report for it (exit 1) and stores nothing, where it used
// to finish the script's trial with a made-up result.
func TestSubmitRefusesTrialNotRunByHand(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DriverName: "sqlite", Database: filepath.Join(dir, "bench.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "S", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, running := range []bool{false, true} {
		if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "1"}, Running: running}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	submit := submitter(t, dir, "S")
	for _, id := range []string{"1", "2"} {
		submit(1, "is not waiting for a hand-run result: no bench --passive has shown it", id, "score=1")
		submit(1, "nothing stored", id, "--step", "1", "score=1")
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var finished, tel int
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM trial WHERE ts_end IS NOT NULL), (SELECT COUNT(*) FROM trial_telemetry)`).Scan(&finished, &tel); err != nil {
		t.Fatal(err)
	}
	if finished != 0 || tel != 0 {
		t.Errorf("%d trials finished and %d telemetry rows stored, want none", finished, tel)
	}
}
