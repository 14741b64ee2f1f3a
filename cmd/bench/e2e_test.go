package main

import (
	"bytes"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// benchBin is the bench binary built once for the end-to-end tests.
var benchBin string

func TestMain(m *testing.M) {
	if os.Getenv(teardownHelperEnv) != "" {
		os.Exit(teardownHelper()) // a re-exec'd helper, not the tests
	}
	dir, err := os.MkdirTemp("", "bench-e2e-bin")
	if err != nil {
		panic(err)
	}
	benchBin = filepath.Join(dir, "bench")
	out, err := exec.Command("go", "build", "-o", benchBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building bench: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// benchEnv is the environment of a bench process under test: its temp
// dirs go to a folder the test removes.
func benchEnv(t *testing.T) []string {
	return append(os.Environ(), "TMPDIR="+t.TempDir())
}

func runBench(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(benchBin, args...)
	cmd.Dir = dir
	cmd.Env = benchEnv(t)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, o.String(), e.String()}
}

func write(t *testing.T, dir, name, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// experiment writes a small benchmark: a LocalEnv whose run script scores
// x (optionally sleeping, optionally failing) and writes a results CSV.
func experiment(t *testing.T, runScript string) string {
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {
		"xv": {"type": "int", "range": [0, 100], "default": 50},
		"mode": {"type": "categorical", "values": ["a", "b"], "default": "a"}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "e2e",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {
			"tunable_params": ["g"],
			"const_args": {"marker_dir": "`+dir+`"},
			"shell_env_params": ["xv", "mode", "trial_id", "marker_dir"],
			"run": ["run.sh"],
			"teardown": ["touch \"$marker_dir/teardown-ran\""],
			"read_results_file": "results.csv"
		}
	}`, 0o644)
	write(t, dir, "run.sh", "#!/bin/sh\nset -e\n"+runScript+"\nprintf 'metric,value\\nscore,%s\\n' \"$(( (xv - 30) * (xv - 30) ))\" > results.csv\n", 0o755)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": 12, "seed": 1}}`, 0o644)
	return dir
}

func trialRows(t *testing.T, dbPath, exp string) map[int]string {
	t.Helper()
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT trial_id, status FROM trial WHERE exp_id = ? ORDER BY trial_id`, exp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var id int
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[id]; dup {
			t.Fatalf("trial %d stored twice", id)
		}
		out[id] = st
	}
	return out
}

func TestRunEndToEnd(t *testing.T) {
	dir := experiment(t, "")
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "E1", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var sum struct {
		Trials, Succeeded, BestTrial int
		BestScores                   map[string]any `json:"best_scores"`
		Storage                      string
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, r.stdout)
	}
	if sum.Trials != 12 || sum.Succeeded != 12 || !strings.Contains(sum.Storage, filepath.Join(dir, "bench.sqlite")) {
		t.Errorf("summary %+v", sum)
	}
	if best, _ := sum.BestScores["score"].(float64); best >= 400 {
		t.Errorf("the optimizer should beat the default (score 400), best %v", sum.BestScores)
	}
	if _, err := os.Stat(filepath.Join(dir, "teardown-ran")); err != nil {
		t.Error("teardown did not run at the end")
	}
	// Every output format of bench results.
	for _, format := range []string{"table", "csv", "json", "markdown"} {
		r := runBench(t, dir, "results", "--format", format)
		if r.code != 0 || !strings.Contains(r.stdout, "config.xv") && format != "json" || !strings.Contains(r.stdout, "score") {
			t.Errorf("results --format %s: exit %d\n%s%s", format, r.code, r.stdout, r.stderr)
		}
	}
	r = runBench(t, dir, "show", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "xv = 50") || !strings.Contains(r.stdout, "Captured output") || !strings.Contains(r.stdout, "run.sh") {
		t.Errorf("show 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A rerun resumes: nothing left to do, the stored result is reported.
	r = runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "E1")
	if r.code != 0 || !strings.Contains(r.stderr, "resuming") || !strings.Contains(r.stdout, "12 trials") || !strings.Contains(r.stdout, "0 run now") {
		t.Errorf("rerun: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := len(trialRows(t, filepath.Join(dir, "bench.sqlite"), "E1")); n != 12 {
		t.Errorf("%d trials stored, want 12", n)
	}
}

// TestKillAndResume kills bench with SIGKILL in the middle of an experiment,
// reruns it, and checks that every planned trial is stored exactly once.
func TestKillAndResume(t *testing.T) {
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"; sleep 0.3`)
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "K", "--no-progress"}
	cmd := exec.Command(benchBin, args...)
	cmd.Dir = dir
	cmd.Env = benchEnv(t) // the killed process leaves its temp dir behind
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the fifth trial has started, then kill bench outright.
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, _ := os.ReadFile(filepath.Join(dir, "started"))
		if strings.Count(string(data), "\n") >= 5 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("trials did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before := trialRows(t, filepath.Join(dir, "bench.sqlite"), "K")
	if len(before) == 0 || len(before) >= 12 {
		t.Fatalf("after the kill: %v", before)
	}
	r := runBench(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	after := trialRows(t, filepath.Join(dir, "bench.sqlite"), "K")
	if len(after) != 12 {
		t.Fatalf("want the 12 planned trials, got %d: %v", len(after), after)
	}
	for id := 1; id <= 12; id++ {
		if after[id] != "SUCCEEDED" {
			t.Errorf("trial %d: %q", id, after[id])
		}
	}
	for id, st := range before {
		if st == "SUCCEEDED" && after[id] != "SUCCEEDED" {
			t.Errorf("trial %d finished before the kill but changed", id)
		}
	}
}

func TestInterruptExits130(t *testing.T) {
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"; sleep 30`)
	cmd := exec.Command(benchBin, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "I", "--no-progress")
	cmd.Dir = dir
	cmd.Env = benchEnv(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("want exit 130, got %v\n%s", err, stderr.String())
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the running trial was not stopped promptly: %v", took)
	}
	if _, err := os.Stat(filepath.Join(dir, "teardown-ran")); err != nil {
		t.Error("teardown must run after an interruption")
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "I")
	if len(rows) != 1 || rows[1] == "SUCCEEDED" {
		t.Errorf("the interrupted trial stays unfinished for the resume: %v", rows)
	}
	// No process of the trial survives.
	out, _ := exec.Command("pgrep", "-f", "sleep 30").Output()
	for _, pid := range strings.Fields(string(out)) {
		if cwd, err := os.Readlink("/proc/" + pid + "/cwd"); err == nil && strings.HasPrefix(cwd, os.TempDir()) && strings.Contains(cwd, "bench-e2e") {
			t.Errorf("process %s of the trial survived", pid)
		}
	}
}

func TestExitCodes(t *testing.T) {
	dir := experiment(t, "")
	write(t, dir, "broken.jsonc", "{\n  \"name\": \"b\",\n  \"class\": \"mlos_bench.environments.local.LocalEnv\",\n  \"config\": {\"run\": \"not-a-list\"}\n}", 0o644)
	failing := experiment(t, "exit 3")
	cases := []struct {
		name string
		dir  string
		args []string
		code int
		msg  string
	}{
		{"no environment", dir, []string{"run"}, 2, "no environment config"},
		{"dangling global", dir, []string{"--environment", "env.jsonc", "--max_suggestions"}, 2, "has no value"},
		{"invalid config", dir, []string{"--environment", "broken.jsonc"}, 2, "broken.jsonc:4:"},
		{"missing file", dir, []string{"--environment", "nope.jsonc"}, 2, "nope.jsonc"},
		{"every trial fails", failing, []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--max_suggestions", "3"}, 1, "no trial succeeded"},
		{"unknown subcommand", dir, []string{"frobnicate"}, 2, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runBench(t, tc.dir, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("exit %d (want %d), stderr:\n%s", r.code, tc.code, r.stderr)
			}
		})
	}
	// The failed trials keep their reason.
	r := runBench(t, failing, "results", "--format", "csv")
	if !strings.Contains(r.stdout, "FAILED") || !strings.Contains(r.stdout, "exit") {
		t.Errorf("failure reasons: %s", r.stdout)
	}
}

func TestValidateCommand(t *testing.T) {
	dir := experiment(t, "")
	r := runBench(t, dir, "validate", ".")
	if r.code != 0 {
		t.Fatalf("valid folder: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	write(t, dir, "bad/env.jsonc", "{\n  \"name\": \"x\",\n  \"class\": \"mlos_bench.environments.local.LocalEnv\",\n  \"include_tunables\": [\"missing-tunables.jsonc\"],\n  \"config\": {\"tunable_params\": [\"nogroup\"], \"run\": [\"true\"]}\n}", 0o644)
	write(t, dir, "bad/tunables.jsonc", `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 10], "default": 11}}}}`, 0o644)
	write(t, dir, "bad/syntax.jsonc", "{\"a\": 1,, }", 0o644)
	r = runBench(t, dir, "validate", "bad")
	if r.code != 1 {
		t.Fatalf("invalid folder: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`bad/env.jsonc:4:24: /include_tunables/0: included file "missing-tunables.jsonc": config file not found`,
		`bad/tunables.jsonc:1:`, `/g/params/x/default`,
		`bad/syntax.jsonc:1:9: syntax error`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("missing %q in:\n%s", want, r.stdout)
		}
	}
	// The missing tunables file is the problem: no "group not defined"
	// follows it.
	if strings.Contains(r.stdout, "nogroup") {
		t.Errorf("a misleading follow-up problem:\n%s", r.stdout)
	}
	r = runBench(t, dir, "validate", "--format", "json", "bad")
	var rep struct{ Problems []map[string]any }
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Problems) != 3 {
		t.Errorf("json report: %v %s", err, r.stdout)
	}
	// --schema-only follows no includes; files that are not bench
	// configs are skipped and counted; --globals gives required args.
	if r := runBench(t, dir, "validate", "--schema-only", "bad/env.jsonc"); r.code != 0 {
		t.Errorf("--schema-only: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	write(t, dir, "req/env.jsonc", `{"name": "r", "class": "mlos_bench.environments.local.LocalEnv", "config": {"required_args": ["host"], "run": ["true"]}}`, 0o644)
	write(t, dir, "req/g.jsonc", `{"host": "h"}`, 0o644)
	write(t, dir, "req/schema.json", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}`, 0o644)
	r = runBench(t, dir, "validate", "req/env.jsonc", "req/schema.json")
	if r.code != 0 || !strings.Contains(r.stdout, `warning: environment "r": required args without a value: host`) ||
		!strings.Contains(r.stderr, "1 of 1 file valid, 0 problems, 1 warning, 1 file skipped (not bench configs") {
		t.Errorf("environment alone: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "validate", "--globals", "req/g.jsonc", "req/env.jsonc")
	if r.code != 0 || strings.Contains(r.stdout, "warning") {
		t.Errorf("--globals: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --config_path (bench run's and mlos_bench's spelling) adds a folder
	// to the search path: an include found only there resolves.
	write(t, dir, "inc/env.jsonc", `{"name": "i", "class": "mlos_bench.environments.local.LocalEnv", "include_tunables": ["only-here-tunables.jsonc"], "config": {"run": ["true"]}}`, 0o644)
	write(t, dir, "elsewhere/only-here-tunables.jsonc", `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 10], "default": 1}}}}`, 0o644)
	if r := runBench(t, dir, "validate", "inc/env.jsonc"); r.code != 1 {
		t.Errorf("include outside the search path: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, flag := range []string{"--config_path", "--config-path"} {
		if r := runBench(t, dir, "validate", flag, "elsewhere", "inc/env.jsonc"); r.code != 0 {
			t.Errorf("%s: exit %d\n%s%s", flag, r.code, r.stdout, r.stderr)
		}
	}
	if r := runBench(t, dir, "validate", "--kind", "nonsense", "."); r.code != 2 {
		t.Errorf("bad --kind: exit %d", r.code)
	}
	if r := runBench(t, dir, "validate"); r.code != 2 {
		t.Errorf("no path: exit %d", r.code)
	}
}

func TestSchemaExportAndHelp(t *testing.T) {
	dir := t.TempDir()
	r := runBench(t, dir, "schema", "export", "schemas")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "schemas", "mlos-bench-config-schema.json")); err != nil {
		t.Error(err)
	}
	r = runBench(t, dir, "run", "--help")
	for _, opt := range []string{"--config", "--environment", "--trial_config_repeat_count, --trial-config-repeat-count", "--no_teardown", "Exit codes"} {
		if !strings.Contains(r.stdout, opt) {
			t.Errorf("run --help lacks %q", opt)
		}
	}
	if r := runBench(t, dir, "--help"); r.code != 0 || !strings.Contains(r.stdout, "validate") {
		t.Errorf("--help: %d %s", r.code, r.stdout)
	}
}

// TestMultiObjectivePareto: bench results --pareto lists exactly the
// trials no other trial dominates, for a min/min and a min/max pair of
// objectives (a max objective is better when larger).
func TestMultiObjectivePareto(t *testing.T) {
	for _, dir2 := range []string{"min", "max"} {
		t.Run("cost_"+dir2, func(t *testing.T) { testPareto(t, dir2) })
	}
}

func testPareto(t *testing.T, costDir string) {
	dir := experiment(t, `echo "metric,value" > extra.csv`)
	// Two objectives: score wants xv near 30, cost is xv (min: in conflict
	// below 30; max: in conflict above 30).
	write(t, dir, "run.sh", "#!/bin/sh\nset -e\nprintf 'metric,value\\nscore,%s\\ncost,%s\\n' \"$(( (xv - 30) * (xv - 30) ))\" \"$xv\" > results.csv\n", 0o755)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "SMAC", "max_suggestions": 15, "seed": 2,
		           "optimization_targets": {"score": "min", "cost": "`+costDir+`"}}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "MO")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	all := csvRows(t, runBench(t, dir, "results", "--format", "csv").stdout)
	front := csvRows(t, runBench(t, dir, "results", "--format", "csv", "--pareto").stdout)
	if len(front) == 0 || len(front) >= len(all) {
		t.Fatalf("front of %d trials out of %d", len(front), len(all))
	}
	inFront := map[string]bool{}
	for _, f := range front {
		inFront[f["trial"]] = true
	}
	sign := 1.0
	if costDir == "max" {
		sign = -1
	}
	for _, a := range all {
		dominated := false
		for _, b := range all {
			as, ac := atof(t, a["result.score"]), sign*atof(t, a["result.cost"])
			bs, bc := atof(t, b["result.score"]), sign*atof(t, b["result.cost"])
			if bs <= as && bc <= ac && (bs < as || bc < ac) {
				dominated = true
			}
		}
		if dominated == inFront[a["trial"]] {
			t.Errorf("trial %s (score %s, cost %s): dominated=%v but in front=%v", a["trial"], a["result.score"], a["result.cost"], dominated, inFront[a["trial"]])
		}
	}
}

func csvRows(t *testing.T, text string) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(recs) < 1 {
		t.Fatalf("bad CSV %v:\n%s", err, text)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func atof(t *testing.T, s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}

// TestInitialValues checks --tunable_values (the one-shot default run uses
// them) and --random_init with --random_seed (repeatable random start).
func TestInitialValues(t *testing.T) {
	dir := experiment(t, "")
	write(t, dir, "values.jsonc", `{"xv": 31, "mode": "b"}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--tunable_values", "values.jsonc", "--experiment_id", "TV", "--format", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"xv": "31"`) || !strings.Contains(r.stdout, `"mode": "b"`) {
		t.Fatalf("one-shot with --tunable_values: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var first []string
	for i := 0; i < 2; i++ {
		r := runBench(t, dir, "--environment", "env.jsonc", "--random-init", "--random-seed", "9", "--experiment_id", "RI"+strconv.Itoa(i), "--format", "json")
		if r.code != 0 {
			t.Fatalf("exit %d %s", r.code, r.stderr)
		}
		var sum struct {
			BestConfig map[string]string `json:"best_config"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
			t.Fatal(err)
		}
		first = append(first, sum.BestConfig["xv"]+"/"+sum.BestConfig["mode"])
	}
	if first[0] != first[1] || first[0] == "50/a" {
		t.Errorf("--random_init with a seed must give the same random start twice, not the defaults: %v", first)
	}
	write(t, dir, "bad-values.jsonc", "{\n  \"xv\": 500\n}", 0o644)
	r = runBench(t, dir, "--environment", "env.jsonc", "--tunable_values", "bad-values.jsonc")
	if r.code != 2 || !strings.Contains(r.stderr, "bad-values.jsonc:2:") {
		t.Errorf("out-of-range value: exit %d\n%s", r.code, r.stderr)
	}
}

// TestBuiltInMeasurementAsTarget optimizes the built-in wall time of the
// run phase (bench.<env>.run.wall_s) of a script that sleeps longer for a
// larger xv, and checks bench results shows it for every trial.
func TestBuiltInMeasurementAsTarget(t *testing.T) {
	dir := experiment(t, `sleep "$(awk "BEGIN { print $xv / 400 }")"`)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": 8, "seed": 1,
		           "optimization_targets": {"bench.e2e.run.wall_s": "min"}}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "WALL", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var sum struct {
		Trials, Succeeded int
		BestScores        map[string]any `json:"best_scores"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, r.stdout)
	}
	if sum.Trials != 8 || sum.Succeeded != 8 {
		t.Errorf("summary %+v", sum)
	}
	if _, ok := sum.BestScores["bench.e2e.run.wall_s"]; !ok {
		t.Errorf("best scores %v lack the built-in wall time", sum.BestScores)
	}
	if tab := runBench(t, dir, "results"); tab.code != 0 || !strings.Contains(tab.stdout, "bench.e2e.run.wall_s") {
		t.Errorf("results: exit %d\n%s%s", tab.code, tab.stdout, tab.stderr)
	}
	rows := csvRows(t, runBench(t, dir, "results", "--format", "csv").stdout)
	if len(rows) != 8 {
		t.Fatalf("%d rows", len(rows))
	}
	minX, wallMinX := 101.0, 0.0
	fastest := math.Inf(1)
	for _, row := range rows {
		x, wall := atof(t, row["config.xv"]), atof(t, row["result.bench.e2e.run.wall_s"])
		fastest = math.Min(fastest, wall)
		// The script sleeps xv/400 s; it also starts a shell and awk.
		if wall < x/400 || wall > x/400+0.5 {
			t.Errorf("trial %s: xv %v, wall %v s", row["trial"], x, wall)
		}
		if _, ok := row["result.bench.e2e.run.cpu_user_s"]; !ok {
			t.Errorf("trial %s: no CPU time column in %v", row["trial"], row)
		}
		if x < minX {
			minX, wallMinX = x, wall
		}
	}
	// Each wall time is checked against its own sleep above; which trial
	// was fastest is up to the machine's load, but the best reported is
	// the fastest measured.
	if best := atof(t, fmt.Sprint(sum.BestScores["bench.e2e.run.wall_s"])); best > fastest+1e-9 || best < fastest-1e-9 {
		t.Errorf("best wall %v, but the fastest trial took %v s (xv %v took %v s)", best, fastest, minX, wallMinX)
	}
}

// TestResumeWithRepeats: with trial_config_repeat_count 2 the budget is
// max_suggestions configurations, each run twice; bench killed in the
// middle and resumed still runs every configuration twice: 2×4 trials,
// 4 distinct configurations, none more than twice.
func TestResumeWithRepeats(t *testing.T) {
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"; sleep 0.3`)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "RANDOM", "max_suggestions": 4, "seed": 5}}`, 0o644)
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "RR",
		"--trial_config_repeat_count", "2", "--no-progress"}
	cmd := startBench(t, dir, tmp, "first", args...)
	waitFor(t, "three trials", func() bool { return len(startedCounts(t, dir)) >= 3 })
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if r := runBench(t, dir, args...); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var trials, configs, maxPer int
	err = db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT config_id), MAX(n) FROM trial
		JOIN (SELECT config_id AS c, COUNT(*) AS n FROM trial WHERE exp_id = 'RR' GROUP BY config_id) ON c = config_id
		WHERE exp_id = 'RR' AND status = 'SUCCEEDED'`).Scan(&trials, &configs, &maxPer)
	if err != nil {
		t.Fatal(err)
	}
	if trials != 8 || configs != 4 || maxPer != 2 {
		t.Errorf("%d trials of %d configurations (at most %d runs each); want 8 of 4, 2 each", trials, configs, maxPer)
	}
}

// TestSortGzipExample: the sort-gzip example tunes for bench's built-in
// wall time with no results file of its own.
func TestSortGzipExample(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	r := runBench(t, dir, "--config", filepath.Join(root, "configs/examples/sort-gzip/cli.jsonc"),
		"--config_path", filepath.Join(root, "configs/examples"), "--max_suggestions", "3", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "bench.sortgz.run.wall_s=") || !strings.Contains(r.stdout, "3 succeeded") {
		t.Errorf("summary:\n%s", r.stdout)
	}
}

// TestConfigIDRerun: --config_id N on a resumed experiment runs that
// stored configuration again, as mlos_bench does (its stored result is
// not reused: re-running it is the point).
func TestConfigIDRerun(t *testing.T) {
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"`)
	args := []string{"--environment", "env.jsonc", "--experiment_id", "CI", "--no-progress"}
	if r := runBench(t, dir, args...); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	r := runBench(t, dir, append(args, "--config_id", "1")...)
	if r.code != 0 {
		t.Fatalf("config_id run: exit %d\n%s", r.code, r.stderr)
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "CI")
	if len(rows) != 2 || rows[2] != "SUCCEEDED" {
		t.Fatalf("trials %v, want 2 SUCCEEDED", rows)
	}
	if c := startedCounts(t, dir); c["1"] != 1 || c["2"] != 1 {
		t.Errorf("runs per trial %v: want trial 2 to run the configuration again", c)
	}
	if strings.Contains(r.stdout, "reused") {
		t.Errorf("the re-run reused the stored result:\n%s", r.stdout)
	}
}

// TestCLIConfigFromAnotherFolder: a CLI config whose relative config_path
// names a folder next to it (not in the working folder) works from any
// folder: bench also looks for the folder above the CLI config.
func TestCLIConfigFromAnotherFolder(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	r := runBench(t, dir, "--config", filepath.Join(root, "configs/examples/sort-gzip/cli.jsonc"), "--max_suggestions", "1", "--no-progress")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "1 succeeded") {
		t.Errorf("summary:\n%s", r.stdout)
	}
}

// TestResumeWarnsOnNewTunables: resuming an experiment after a tunable was
// added says so (the earlier trials warm-start the optimizer as if it had
// its default); after a range change that old values no longer fit, the
// resume is refused with the reason.
func TestResumeWarnsOnNewTunables(t *testing.T) {
	dir := experiment(t, "")
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "TW", "--no-progress", "--max_suggestions", "2"}
	if r := runBench(t, dir, args...); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
	}
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {
		"xv": {"type": "int", "range": [0, 100], "default": 50},
		"mode": {"type": "categorical", "values": ["a", "b"], "default": "a"},
		"extra": {"type": "int", "range": [0, 3], "default": 1}}}}`, 0o644)
	args[len(args)-1] = "3"
	r := runBench(t, dir, args...)
	if r.code != 0 || !strings.Contains(r.stderr, "tunables changed") || !strings.Contains(r.stderr, "new_tunables=extra") {
		t.Errorf("resume with a new tunable: exit %d\n%s", r.code, r.stderr)
	}
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {
		"xv": {"type": "int", "range": [200, 300], "default": 250},
		"mode": {"type": "categorical", "values": ["a", "b"], "default": "a"},
		"extra": {"type": "int", "range": [0, 3], "default": 1}}}}`, 0o644)
	args[len(args)-1] = "4"
	if r := runBench(t, dir, args...); r.code == 0 || !strings.Contains(r.stderr, "no longer fits") {
		t.Errorf("resume after a range change: exit %d\n%s", r.code, r.stderr)
	}
}
