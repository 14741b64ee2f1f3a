// Command asha measures ASHA's wall time against the ideal, through the
// bench binary (issue 23): experiments whose trials report a learning
// curve of S steps, each step taking real time (a sleep), run with the
// ASHA pruner on 1, 4 and 16 trial runners, and without pruning on the
// same number of trials. From the trials' stored times and progress it
// computes, per run:
//
//	work     the steps the trials actually ran × the step time
//	ideal    work / runners: the wall time if every runner were busy all along
//	wall     the bench process's wall time (start-up, the canary, the drain at the end included)
//	wall/ideal and the runners' utilisation (trial time / (runners × span))
//
// and where the rest went: the canary (the first trial of a new
// experiment runs alone), the drain (the last trials running while other
// runners have nothing left to do), and the dispatch gap (a runner's
// trial end to its next trial's start). Then, at the largest runner
// count, ASHA against no pruning: on the same number of trials (wall time,
// best score), and with the same wall time (ASHA given the no-pruning
// run's wall time as max_time: trials and best score).
//
//	go run ./bench/asha                       # mock env, 256 trials of 27 × 50 ms, 1/4/16 runners
//	go run ./bench/asha -env script -step 200ms -runners 16   # a script printing BENCH_PROGRESS lines
//
// The mock environment (bench's MockEnv with mock_env_progress_steps)
// runs in the bench process; its curve orders the configurations as their
// final scores do at every step, so ASHA never stops the eventual best
// (the best case for pruning: quality lost to noisy early steps is what
// `go run ./bench/optbench -prune` measures). -env script runs a bash
// script per trial that sleeps (without a process per step) and prints
// `BENCH_PROGRESS step=K score=V` lines (progress_pattern).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

type options struct {
	bench     string
	env       string
	runners   []int
	noprune   []int
	trials    int
	steps     int
	step      time.Duration
	eta       int
	optimizer string
	seed      int
	noCanary  bool
	sameTime  bool
	keep      bool
}

func main() {
	var o options
	var runners, noprune string
	flag.StringVar(&o.bench, "bench", "", "bench binary to measure (default: go build ./cmd/bench into the work folder)")
	flag.StringVar(&o.env, "env", "mock", "mock (MockEnv, in the bench process) or script (a bash script per trial printing BENCH_PROGRESS lines)")
	flag.StringVar(&runners, "runners", "1,4,16", "trial runner counts to run ASHA with")
	flag.StringVar(&noprune, "noprune", "16", "runner counts to also run without pruning (same trials); '' for none")
	flag.IntVar(&o.trials, "trials", 256, "trials per run (max_suggestions)")
	flag.IntVar(&o.steps, "steps", 27, "steps of a full trial")
	flag.DurationVar(&o.step, "step", 50*time.Millisecond, "time of one step")
	flag.IntVar(&o.eta, "eta", 3, "ASHA's reduction factor (rungs at 1, eta, eta², ... below -steps)")
	flag.StringVar(&o.optimizer, "optimizer", "RANDOM", "optimizer_type: RANDOM, SMAC (bench's GP) or FLAML")
	flag.IntVar(&o.seed, "seed", 7, "optimizer seed")
	flag.BoolVar(&o.noCanary, "no-canary", false, "run with --no-canary (every runner starts with the first trials)")
	flag.BoolVar(&o.sameTime, "same-time", true, "also run ASHA with the no-pruning run's wall time as max_time, at the largest -noprune count")
	flag.BoolVar(&o.keep, "keep", false, "keep the work folder (configs, databases)")
	flag.Parse()
	var err error
	if o.runners, err = ints(runners); err == nil {
		o.noprune, err = ints(noprune)
	}
	if err == nil && (o.trials < 1 || o.steps < 1 || o.step <= 0 || o.eta < 2 || (o.env != "mock" && o.env != "script")) {
		err = fmt.Errorf("need -trials >= 1, -steps >= 1, -step > 0, -eta >= 2, -env mock|script")
	}
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "asha:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad runner count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// result is one experiment's figures.
type result struct {
	label                   string
	runners                 int
	pruned                  bool
	trials, succeeded, cut  int
	steps                   int64
	work, busy              float64 // seconds
	wall, span, alone, tail float64 // seconds
	gapMean, gapMax         float64 // seconds
	// midUtil is the runners' utilisation between the canary's end and
	// the last trial's start (the steady state: every runner could be
	// busy).
	midUtil float64
	best    float64
	maxTime time.Duration
}

func (r result) ideal() float64 { return r.work / float64(r.runners) }

func run(o options) error {
	work, err := os.MkdirTemp("", "bench-asha.")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "work folder:", work)
	} else {
		defer os.RemoveAll(work)
	}
	if o.bench == "" {
		o.bench = filepath.Join(work, "bench")
		cmd := exec.Command("go", "build", "-o", o.bench, "./cmd/bench")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/bench (run from the repository root): %w", err)
		}
	}
	if err := writeConfigs(work, o); err != nil {
		return err
	}
	load := loadavg()
	fmt.Printf("# %s env, %d trials of %d steps × %v (full trial %v), ASHA eta %d, optimizer %s, load average at start %s\n",
		o.env, o.trials, o.steps, o.step, o.step*time.Duration(o.steps), o.eta, o.optimizer, load)
	var res []result
	for _, n := range o.runners {
		r, err := experiment(o, work, n, true, 0)
		if err != nil {
			return err
		}
		res = append(res, r)
		printRow(r, len(res) == 1)
	}
	var full result
	for _, n := range o.noprune {
		r, err := experiment(o, work, n, false, 0)
		if err != nil {
			return err
		}
		full = r
		res = append(res, r)
		printRow(r, len(res) == 1)
	}
	var same result
	if o.sameTime && full.runners > 0 {
		budget := time.Duration(full.wall * float64(time.Second))
		if same, err = experiment(o, work, full.runners, true, budget); err != nil {
			return err
		}
		res = append(res, same)
		printRow(same, false)
	}
	fmt.Printf("# load average at end %s\n", loadavg())
	// Ratios in this run.
	byN := map[int]result{}
	for _, r := range res {
		if r.pruned && r.maxTime == 0 {
			byN[r.runners] = r
		}
	}
	fmt.Println()
	if one, ok := byN[1]; ok {
		for _, n := range o.runners {
			if r := byN[n]; n > 1 && r.wall > 0 {
				fmt.Printf("scaling, ASHA: 1 runner / %d runners wall time = %.2fx (ideal %.2fx: work %.1fs vs %.1fs)\n",
					n, one.wall/r.wall, float64(n)*one.work/r.work, one.work, r.work)
			}
		}
	}
	for _, n := range o.runners {
		r := byN[n]
		fmt.Printf("ASHA, %2d runners: wall / ideal = %.2f, utilisation %.0f%%; between the canary and the drain (%.1fs): utilisation %.0f%%; dispatch gap mean %.1f ms, max %.1f ms\n",
			n, r.wall/r.ideal(), 100*r.busy/(float64(r.runners)*r.span), r.span-r.alone-r.tail, 100*r.midUtil, 1000*r.gapMean, 1000*r.gapMax)
	}
	if full.runners > 0 {
		if a, ok := byN[full.runners]; ok {
			fmt.Printf("same %d trials, %d runners: no pruning / ASHA wall time = %.2fx, work %.2fx; best score %.4g (none) vs %.4g (ASHA)\n",
				o.trials, full.runners, full.wall/a.wall, full.work/a.work, full.best, a.best)
		}
		if same.runners > 0 {
			fmt.Printf("same wall time (%.1fs), %d runners: no pruning %d trials, best %.4g; ASHA %d trials (%d ran every step), best %.4g\n",
				full.wall, full.runners, full.trials, full.best, same.trials, same.succeeded, same.best)
		}
	}
	return nil
}

func printRow(r result, header bool) {
	if header {
		fmt.Printf("%-22s %7s %9s %6s %7s %7s %7s %7s %7s %7s %7s %9s %9s\n",
			"run", "trials", "ok/pruned", "steps", "work_s", "ideal_s", "wall_s", "span_s", "alone_s", "tail_s", "w/ideal", "utilis.", "best")
	}
	fmt.Printf("%-22s %7d %4d/%-4d %6d %7.1f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %8.0f%% %9.4g\n",
		r.label, r.trials, r.succeeded, r.cut, r.steps, r.work, r.ideal(), r.wall, r.span, r.alone, r.tail,
		r.wall/r.ideal(), 100*r.busy/(float64(r.runners)*r.span), r.best)
}

func experiment(o options, work string, runners int, pruned bool, maxTime time.Duration) (result, error) {
	label := fmt.Sprintf("%s-%d", map[bool]string{true: "asha", false: "none"}[pruned], runners)
	trials := o.trials
	if maxTime > 0 {
		label += "-maxtime"
		trials = 1 << 20 // the time is the budget
	}
	db := filepath.Join(work, label+".sqlite")
	storage := fmt.Sprintf(`{"class": "mlos_bench.storage.sql.storage.SqlStorage", "config": {"drivername": "sqlite", "database": %q}}`, db)
	if err := os.WriteFile(filepath.Join(work, label+"-storage.jsonc"), []byte(storage), 0o644); err != nil {
		return result{}, err
	}
	sched := "sched-none.jsonc"
	if pruned {
		sched = "sched-asha.jsonc"
	}
	args := []string{"run", "--config_path", work, "--environment", "env.jsonc", "--optimizer", "opt.jsonc",
		"--scheduler", sched, "--storage", label + "-storage.jsonc", "--experiment_id", label,
		"--num_trial_runners", strconv.Itoa(runners), "--max_suggestions", strconv.Itoa(trials), "--no-progress"}
	if maxTime > 0 {
		args = append(args, "--max_time", maxTime.String())
	}
	if o.noCanary {
		args = append(args, "--no-canary")
	}
	tmp := filepath.Join(work, "tmp-"+label)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return result{}, err
	}
	cmd := exec.CommandContext(context.Background(), o.bench, args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	logf, err := os.Create(filepath.Join(work, label+".log"))
	if err != nil {
		return result{}, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		out, _ := os.ReadFile(logf.Name())
		tail := string(out)
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return result{}, fmt.Errorf("%s: bench %s: %w\n%s", label, strings.Join(args, " "), err, tail)
	}
	r, err := measure(db, label, runners, o.step)
	r.label, r.runners, r.pruned, r.wall, r.maxTime = label, runners, pruned, wall, maxTime
	return r, err
}

// measure reads one experiment's trials back from its database.
func measure(path, exp string, runners int, step time.Duration) (result, error) {
	var r result
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return r, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT t.trial_id, COALESCE(t.trial_runner_id, 0), t.status, COALESCE(t.failure_reason, ''),
		(julianday(t.ts_start) - 2461000.0) * 86400.0, (julianday(t.ts_end) - 2461000.0) * 86400.0,
		COALESCE((SELECT MAX(step) FROM trial_telemetry m WHERE m.exp_id = t.exp_id AND m.trial_id = t.trial_id), 0),
		(SELECT metric_value FROM trial_result s WHERE s.exp_id = t.exp_id AND s.trial_id = t.trial_id AND s.metric_id = 'score')
		FROM trial t WHERE t.exp_id = ? AND t.ts_end IS NOT NULL ORDER BY t.ts_start`, exp)
	if err != nil {
		return r, err
	}
	defer rows.Close()
	type tr struct {
		runner     int
		start, end float64
	}
	var all []tr
	r.best = math.Inf(1)
	for rows.Next() {
		var id, runner int
		var status, reason string
		var start, end float64
		var steps int64
		var score sql.NullString
		if err := rows.Scan(&id, &runner, &status, &reason, &start, &end, &steps, &score); err != nil {
			return r, err
		}
		r.trials++
		switch {
		case status == "SUCCEEDED":
			r.succeeded++
			if v, err := strconv.ParseFloat(score.String, 64); err == nil {
				r.best = math.Min(r.best, v)
			}
		case strings.Contains(reason, "pruned:"):
			r.cut++
		}
		r.steps += steps
		r.busy += end - start
		all = append(all, tr{runner, start, end})
	}
	if err := rows.Err(); err != nil {
		return r, err
	}
	if len(all) == 0 {
		return r, fmt.Errorf("%s: no finished trials in %s", exp, path)
	}
	r.work = float64(r.steps) * step.Seconds()
	first, last, lastStart := all[0].start, all[0].end, all[0].start
	for _, t := range all {
		last = math.Max(last, t.end)
		lastStart = math.Max(lastStart, t.start)
	}
	r.span = last - first
	r.tail = last - lastStart
	if len(all) > 1 && runners > 1 {
		r.alone = all[1].start - first // the canary: the first trial alone
	}
	if w0, w1 := first+r.alone, lastStart; w1 > w0 {
		var busy float64
		for _, t := range all {
			busy += math.Max(0, math.Min(t.end, w1)-math.Max(t.start, w0))
		}
		r.midUtil = busy / (float64(runners) * (w1 - w0))
	}
	// Dispatch gaps: per runner, a trial's end to its next trial's start.
	byRunner := map[int][]tr{}
	for _, t := range all {
		byRunner[t.runner] = append(byRunner[t.runner], t)
	}
	var gaps []float64
	for _, ts := range byRunner {
		slices.SortFunc(ts, func(a, b tr) int { return int(math.Copysign(1, a.start-b.start)) })
		for i := 1; i < len(ts); i++ {
			gaps = append(gaps, math.Max(0, ts[i].start-ts[i-1].end))
		}
	}
	for _, g := range gaps {
		r.gapMean += g / float64(len(gaps))
		r.gapMax = math.Max(r.gapMax, g)
	}
	return r, nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// writeConfigs writes the environment, tunables, optimizer and scheduler
// configs of every run into the work folder.
func writeConfigs(dir string, o options) error {
	maxStep := o.steps
	files := map[string]string{
		"tunables.jsonc": `{"model": {"cost": 1, "params": {
    "x1": {"type": "int", "range": [0, 1000], "default": 500},
    "x2": {"type": "int", "range": [0, 1000], "default": 500},
    "x3": {"type": "int", "range": [0, 1000], "default": 500},
    "x4": {"type": "int", "range": [0, 1000], "default": 500}}}}`,
		"opt.jsonc": fmt.Sprintf(`{"class": "mlos_bench.optimizers.MlosCoreOptimizer", "config": {
    "optimization_targets": {"score": "min"}, "optimizer_type": %q, "max_suggestions": %d, "seed": %d}}`, o.optimizer, o.trials, o.seed),
		"sched-asha.jsonc": fmt.Sprintf(`{"class": "bench.schedulers.ParallelScheduler", "config": {
    "pruner": {"kind": "asha", "metric": "score", "mode": "min", "min_step": 1, "eta": %d, "max_step": %d}}}`, o.eta, maxStep),
		"sched-none.jsonc": `{"class": "bench.schedulers.ParallelScheduler", "config": {"trial_config_repeat_count": 1}}`,
	}
	switch o.env {
	case "mock":
		files["env.jsonc"] = fmt.Sprintf(`{"name": "curve", "class": "mlos_bench.environments.mock_env.MockEnv",
    "include_tunables": ["tunables.jsonc"],
    "config": {"tunable_params": ["model"], "mock_env_seed": -1, "mock_env_range": [0, 100],
        "mock_env_progress_steps": %d, "mock_env_progress_delay": %q}}`, o.steps, o.step.String())
	case "script":
		files["env.jsonc"] = fmt.Sprintf(`{"name": "curve", "class": "mlos_bench.environments.local.LocalEnv",
    "include_tunables": ["tunables.jsonc"],
    "config": {"tunable_params": ["model"], "shell_env_params": ["x1", "x2", "x3", "x4", "steps", "step_ms"],
        "const_args": {"steps": %d, "step_ms": %d},
        "run": ["curve.sh"],
        "progress_pattern": "^BENCH_PROGRESS\\b",
        "results_stdout_pattern": "^(score)=(\\S+)$"}}`, o.steps, o.step.Milliseconds())
		files["curve.sh"] = curveScript
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// curveScript is a benchmark that reports a learning curve: the final
// score is MockEnv's (100 × the mean of the squared normalized values,
// here in integer hundredths), reached from halfway to the worst score
// in $steps steps of $step_ms each. It sleeps with bash's read -t (no
// process per step) and computes in integer arithmetic, so its own CPU
// cost is small.
const curveScript = `#!/bin/bash
set -eu
final=$(( (x1 * x1 + x2 * x2 + x3 * x3 + x4 * x4) / 400 ))
worst=10000
exec 3<> <(:)
secs=$(printf '%d.%03d' $((step_ms / 1000)) $((step_ms % 1000)))
k=1
while [ "$k" -le "$steps" ]; do
  read -r -t "$secs" -u 3 _ || true
  v=$(( final + (worst - final) * (steps - k) / (2 * steps) ))
  printf 'BENCH_PROGRESS step=%d score=%d.%02d\n' "$k" $((v / 100)) $((v % 100))
  k=$((k + 1))
done
printf 'score=%d.%02d\n' $((final / 100)) $((final % 100))
`
