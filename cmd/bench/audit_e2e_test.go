package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A newcomer who passes the database file itself to --storage (it takes a
// storage config) gets an error that says so, not a JSON syntax error
// about the word "SQLite".
func TestStorageGivenTheDatabaseFile(t *testing.T) {
	dir := experiment(t, "")
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "1")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"results", "--storage", "bench.sqlite"},
		{"show", "1", "--storage", "bench.sqlite"},
		{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--storage", "bench.sqlite"},
	} {
		r := runBench(t, dir, args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "syntax error") || !strings.Contains(r.stderr, "bench.sqlite: an SQLite database, not a config file: --storage takes a storage config") {
			t.Errorf("%v: stderr does not explain that --storage takes a config:\n%s", args, r.stderr)
		}
	}
}

// The commands an example's README gives one after the other read the
// storage the run wrote: a run with --storage X followed by "bench results"
// without it would read another database (bench.sqlite) and find nothing.
func TestExampleReadmeCommandsShareStorage(t *testing.T) {
	files, err := filepath.Glob("../../configs/examples/*/README.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example READMEs: %v", err)
	}
	storageOf := func(line string) string {
		f := strings.Fields(line)
		for i, w := range f {
			if (w == "--storage" || w == "--storage=") && i+1 < len(f) {
				return f[i+1]
			}
			if v, ok := strings.CutPrefix(w, "--storage="); ok {
				return v
			}
		}
		return ""
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		inBlock, runStorage, sawRun := false, "", false
		for n, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inBlock, sawRun = !inBlock, false
				continue
			}
			if !inBlock {
				continue
			}
			cmd := strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
			switch {
			case regexp.MustCompile(`(^|[\s/])bench (run\s|--config\s)`).MatchString(cmd):
				runStorage, sawRun = storageOf(cmd), true
			case sawRun && regexp.MustCompile(`(^|[\s/])bench (results|show|confirm|report|plot|export)\b`).MatchString(cmd):
				if got := storageOf(cmd); got != runStorage {
					t.Errorf("%s:%d: %q reads storage %q, but the run above wrote to %q", file, n+1, cmd, got, runStorage)
				}
			}
		}
	}
}

// bench show of a trial the experiment does not have says so once, in the
// words bench submit and bench plot use.
func TestShowMissingTrial(t *testing.T) {
	dir := experiment(t, "")
	if r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "1", "--experiment_id", "E"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, "show", "99")
	if r.code != 2 || strings.TrimSpace(r.stderr) != "bench: error: experiment E has no trial 99" {
		t.Errorf("bench show 99: exit %d, want 2 and one plain line:\n%s", r.code, r.stderr)
	}
}

// bench confirm with too few repeats for the test to ever reach its level
// says so, instead of only "no candidate beats the default" for a
// candidate that won every round.
func TestConfirmTooFewRepeats(t *testing.T) {
	dir := experiment(t, "")
	// Noise from the trial id, so that no two scores tie.
	write(t, dir, "run.sh", "#!/bin/sh\nset -e\nprintf 'metric,value\\nscore,%s\\n' \"$(( (xv - 30) * (xv - 30) + (trial_id * 37 % 50) ))\" > results.csv\n", 0o755)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": 8, "seed": 1}}`, 0o644)
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--no-progress"}
	if r := runBench(t, dir, append([]string{"--experiment_id", "C"}, args...)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, append([]string{"confirm", "C", "--top_k", "1", "--repeats", "3"}, args...)...)
	if r.code != 0 {
		t.Fatalf("confirm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "no candidate beats the default") || !strings.Contains(r.stdout, "the smallest possible p-value is 0.1") ||
		!strings.Contains(r.stdout, "more --repeats") {
		t.Errorf("confirm with 3 repeats should say that no candidate could be confirmed:\n%s", r.stdout)
	}
}

// Ctrl-C on the dashboard stops the dashboard: it runs no trial, so the
// message does not speak of stopping one and tearing down.
func TestUIInterruptMessage(t *testing.T) {
	dir := experiment(t, "")
	if r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "1"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	tmp := t.TempDir()
	log := filepath.Join(tmp, "ui.log")
	cmd := startBench(t, dir, tmp, "ui", "ui", "--listen", "127.0.0.1:0")
	defer func() { _ = cmd.Process.Kill() }()
	waitText(t, "the dashboard's address", fileText(log), "bench: dashboard of")
	_ = cmd.Process.Signal(os.Interrupt)
	waitExit(t, cmd, log)
	s := fileText(log)()
	if strings.Contains(s, "trial") || !strings.Contains(s, "bench: interrupted: stopping the dashboard") {
		t.Errorf("the dashboard's Ctrl-C message should say it stops the dashboard, and nothing of trials:\n%s", s)
	}
}

// On a terminal, bench run draws its progress bar (README: "On a
// terminal, a progress bar shows trials done / planned"); the per-trial
// log lines are for output that is not a terminal. script(1) gives bench
// a pseudo-terminal.
func TestProgressBarOnATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed (util-linux)")
	}
	dir := experiment(t, "")
	cmd := exec.Command(scriptBin, "-q", "-e", "-c",
		shellQuote(benchBin)+" --environment env.jsonc --optimizer opt.jsonc --max_suggestions 3", "/dev/null")
	cmd.Dir = dir
	cmd.Env = append(benchEnv(t), "TERM=xterm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench under script: %v\n%s", err, out)
	}
	s := string(out)
	if strings.Contains(s, "bench: trial finished") || !strings.Contains(s, "trials") || !strings.Contains(s, "3/3") {
		t.Errorf("on a terminal, bench run should draw its progress bar (3/3 trials), not log a line per trial:\n%q", s)
	}
}

// bench results --where with a name no trial has (a typo) is an error, as
// --sort with one is, instead of an empty table that reads "no trial has
// that value".
func TestResultsWhereUnknownName(t *testing.T) {
	dir := experiment(t, "")
	if r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "2"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, "results", "--where", "xvv=50")
	if r.code != 2 || !strings.Contains(r.stderr, `--where "xvv=50": no trial has a tunable or result named "xvv"`) {
		t.Errorf("--where with an unknown name: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{"xv=50", "config.xv=50", "score=400", "result.score=400"} {
		r := runBench(t, dir, "results", "--where", w, "--format", "csv")
		if r.code != 0 || !strings.Contains(r.stdout, "\n1,") {
			t.Errorf("--where %s: exit %d, want trial 1\n%s%s", w, r.code, r.stdout, r.stderr)
		}
	}
}

// bench stop on an experiment that no bench runs says so without first
// claiming to have asked "the running bench".
func TestStopWhenNotRunning(t *testing.T) {
	dir := experiment(t, "")
	if r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "1", "--experiment_id", "S"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, "stop", "S")
	if r.code != 0 || strings.Contains(r.stderr, "asked the running bench") || !strings.Contains(r.stderr, "not running now") {
		t.Errorf("stop of a finished experiment: exit %d\n%s", r.code, r.stderr)
	}
}

// The best configuration's line leaves the CV out when it is undefined
// (every run scored 0: a mean of 0), as bench results --by-config does,
// instead of printing "CV NaN%".
func TestBestLineWithoutNaNCV(t *testing.T) {
	dir := experiment(t, "")
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": 8, "seed": 1}}`, 0o644)
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--no-progress"}
	if r := runBench(t, dir, append([]string{"--experiment_id", "Z"}, args...)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	// 5+5 repeats: with ties the exact test's smallest p is 0.008 (3+3
	// could never confirm the candidate; TestConfirmTiedScoresExact).
	r := runBench(t, dir, append([]string{"confirm", "Z", "--top_k", "1", "--repeats", "5"}, args...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "score=0 over 5 runs") {
		t.Fatalf("confirm: exit %d, want the best at score 0 over 5 runs\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "NaN") {
		t.Errorf("the summary prints NaN:\n%s", r.stdout)
	}
}

// A bad --aggregate is refused before anything is printed: no table
// header on stdout above the error.
func TestResultsBadAggregatePrintsNothing(t *testing.T) {
	dir := experiment(t, "")
	if r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "2"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, "results", "--by-config", "--aggregate", "nope")
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, `unknown aggregation "nope"`) {
		t.Errorf("--aggregate nope: exit %d\nstdout: %q\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// --storage naming a database file that does not exist yet (a newcomer's
// guess at a new database) says that --storage takes a config.
func TestStorageGivenANewDatabaseFile(t *testing.T) {
	dir := experiment(t, "")
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--storage", "new.sqlite")
	if r.code != 2 || !strings.Contains(r.stderr, "new.sqlite: config file not found") ||
		!strings.Contains(r.stderr, "--storage takes a storage config file") {
		t.Errorf("--storage new.sqlite: exit %d\n%s", r.code, r.stderr)
	}
}

// --best 0 is refused as --best -1 is ("--best must be >= 1"), instead of
// showing every trial.
func TestResultsBestZero(t *testing.T) {
	dir := experiment(t, "")
	if r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "2"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, "results", "--best", "0")
	if r.code != 2 || !strings.Contains(r.stderr, "--best must be >= 1, got 0") {
		t.Errorf("--best 0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// bench plot --log NAME with a name that is no tunable of the experiment
// (a typo) is an error, instead of plots drawn on a linear axis without a
// word.
func TestPlotLogUnknownTunable(t *testing.T) {
	dir := experiment(t, "")
	if r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "2", "--experiment_id", "P"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, "plot", "P", "--log", "xvv", "-o", "plots")
	if r.code != 2 || !strings.Contains(r.stderr, `--log "xvv": experiment P has no tunable "xvv" (its tunables: mode, xv)`) {
		t.Errorf("plot --log xvv: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBench(t, dir, "plot", "P", "--log", "xv", "-o", "plots"); r.code != 0 {
		t.Errorf("plot --log xv: exit %d\n%s", r.code, r.stderr)
	}
}

// During a confirmation the progress lines count its trials as planned:
// no "done=16 planned=4" (the search budget only).
func TestConfirmProgressPlanned(t *testing.T) {
	dir := experiment(t, "")
	write(t, dir, "run.sh", "#!/bin/sh\nset -e\nprintf 'metric,value\\nscore,%s\\n' \"$(( (xv - 30) * (xv - 30) ))\" > results.csv\n", 0o755)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": 4, "seed": 1}}`, 0o644)
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc"}
	if r := runBench(t, dir, append([]string{"--experiment_id", "P"}, args...)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, append([]string{"confirm", "P", "--top_k", "1", "--repeats", "3"}, args...)...)
	if r.code != 0 {
		t.Fatalf("confirm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	re := regexp.MustCompile(`trial finished .*done=(\d+) planned=(\d+)`)
	lines := re.FindAllStringSubmatch(r.stderr, -1)
	if len(lines) != 6 {
		t.Fatalf("want 6 progress lines (1 candidate and the defaults, 3 rounds):\n%s", r.stderr)
	}
	for _, m := range lines {
		done, _ := strconv.Atoi(m[1])
		planned, _ := strconv.Atoi(m[2])
		if planned != 4+6 {
			t.Errorf("%s: planned %d, want 10 (4 searched + 6 confirmation trials)", m[0], planned)
		}
		if done > planned {
			t.Errorf("%s: done past planned", m[0])
		}
	}
}

// After a confirmation the best is the winning configuration's aggregate
// over its runs: the summary says so ("Best configuration C: score median
// V (min) over 3 runs; its best run: trial N"), not "Best trial N:
// score=V" with V a median that no trial scored, and V reads as bench
// results writes it (6 significant digits), not 400.12345670000003.
func TestSummaryBestAggregate(t *testing.T) {
	dir := experiment(t, "")
	write(t, dir, "run.sh", "#!/bin/sh\nset -e\nprintf 'metric,value\\nscore,%s.1234567\\n' \"$(( (xv - 30) * (xv - 30) ))\" > results.csv\n", 0o755)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": 4, "seed": 1}}`, 0o644)
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--no-progress"}
	r := runBench(t, dir, append([]string{"--experiment_id", "S"}, args...)...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	// Without repeats the best is one trial, as mlos_bench's answer.
	if !regexp.MustCompile(`(?m)^Best trial \d+: score=\d+\.\d+ \(min\)$`).MatchString(r.stdout) || strings.Contains(r.stdout, "1234567") {
		t.Errorf("run summary:\n%s", r.stdout)
	}
	r = runBench(t, dir, append([]string{"confirm", "S", "--top_k", "1", "--repeats", "3", "--repeat_aggregate", "median"}, args...)...)
	if r.code != 0 {
		t.Fatalf("confirm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	re := regexp.MustCompile(`(?m)^Best configuration (\d+): score median \d+\.\d+ \(min\) over 3 runs; its best run: trial \d+$`)
	m := re.FindStringSubmatch(r.stdout)
	if m == nil || strings.Contains(r.stdout, "Best trial") || strings.Contains(r.stdout, "1234567") {
		t.Fatalf("confirm summary:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "Best: config "+m[1]+" ") {
		t.Errorf("the best line and the Best: detail name different configurations:\n%s", r.stdout)
	}
}
