package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// ciBenchmark writes a benchmark for bench ci: testdata/ratio, a program
// that times a fixed workload against a reference workload in alternating
// chunks and prints their median time ratio (work_ratio). Load on the
// machine slows both alike, so the metric is steady on a busy 2-core CI
// machine; the factor file scales the workload: 1.2 is a real 20%
// slowdown of the code under test.
func ciBenchmark(t *testing.T) (dir, factorFile string) {
	t.Helper()
	dir = t.TempDir()
	bin := filepath.Join(dir, "ratio")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/ratio/main.go").CombinedOutput(); err != nil {
		t.Fatalf("building testdata/ratio: %v\n%s", err, out)
	}
	factorFile = filepath.Join(dir, "factor.txt")
	write(t, dir, "factor.txt", "1.0\n", 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "ratio",
		"class": "mlos_bench.environments.local.LocalEnv",
		"config": {
			"run": ["RATIO_FACTOR_FILE='`+factorFile+`' '`+bin+`'"],
			"results_stdout_pattern": "(work_ratio)=(\\d+\\.?\\d*)"
		}
	}`, 0o644)
	write(t, dir, "thresholds.jsonc", `{
		// the workload must not become more than 5% slower
		"metrics": {"work_ratio": {"max_increase": "5%"}}
	}`, 0o644)
	return dir, factorFile
}

// TestCIRegressionAndFalseAlarms is the acceptance test of bench ci: a
// real 20% slowdown of the benchmark program fails (exit 1), and the
// unchanged program passes at least 19 runs in 20 against the same
// stored baseline.
func TestCIRegressionAndFalseAlarms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bench ci 22 times")
	}
	dir, factor := ciBenchmark(t)
	ciArgs := []string{"ci", "--environment", "env.jsonc", "--thresholds", "thresholds.jsonc", "--repeat", "5", "--no-progress"}

	r := runBench(t, dir, append(ciArgs, "--save-as", "baseline")...)
	if r.code != 0 {
		t.Fatalf("recording the baseline: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, `recorded experiment "baseline"`) {
		t.Errorf("stderr: %s", r.stderr)
	}

	const runs = 20
	passed := 0
	for i := range runs {
		r := runBench(t, dir, append(ciArgs, "--baseline", "baseline")...)
		switch r.code {
		case 0:
			passed++
		case 1:
			t.Logf("false alarm in run %d:\n%s", i+1, r.stderr)
		default:
			t.Fatalf("run %d: exit %d\n%s%s", i+1, r.code, r.stdout, r.stderr)
		}
	}
	t.Logf("unchanged program: %d of %d bench ci runs passed", passed, runs)
	if passed < 19 {
		t.Errorf("unchanged program passed only %d of %d runs (want >= 19)", passed, runs)
	}

	// A real 20% slowdown: the workload does 20% more work.
	if err := os.WriteFile(factor, []byte("1.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "summary.md")
	junit := filepath.Join(dir, "junit.xml")
	jsonOut := filepath.Join(dir, "ci.json")
	r = runBench(t, dir, append(ciArgs, "--baseline", "baseline", "--markdown", md, "--junit", junit, "--json", jsonOut)...)
	if r.code != 1 {
		t.Fatalf("20%% slowdown: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "REGRESSION   work_ratio [defaults]: +") || !strings.Contains(r.stderr, "verdict: REGRESSION") {
		t.Errorf("stderr lacks the verdict:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "work_ratio") || !strings.Contains(r.stdout, "baseline") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	b, _ := os.ReadFile(md)
	if !strings.Contains(string(b), "### bench ci: ❌ REGRESSION") {
		t.Errorf("markdown:\n%s", b)
	}
	b, _ = os.ReadFile(junit)
	var ju struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b, &ju); err != nil || ju.Tests != 1 || ju.Failures != 1 {
		t.Errorf("junit (%v): %+v\n%s", err, ju, b)
	}
	b, _ = os.ReadFile(jsonOut)
	var rep struct {
		Verdict string `json:"verdict"`
		Rows    []struct {
			Change float64 `json:"change"`
			P      float64 `json:"p"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.Verdict != "regression" || len(rep.Rows) != 1 ||
		rep.Rows[0].Change < 0.1 || rep.Rows[0].P >= 0.05 {
		t.Errorf("json (%v): %+v\n%s", err, rep, b)
	}
	t.Logf("20%% slowdown measured as %+.1f%% (p=%.3g)", rep.Rows[0].Change*100, rep.Rows[0].P)
}

// TestCIInterleavesAndChecks: the set runs interleaved (A B A B ...),
// each configuration labelled; too few repeats is not a pass; usage
// errors exit 2 with file:line:col.
func TestCIInterleavesAndChecks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 100], "default": 50}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "il",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {"tunable_params": ["g"], "shell_env_params": ["xv"],
			"run": ["echo \"v=$xv\""], "results_stdout_pattern": "(v)=(\\d+)"}
	}`, 0o644)
	write(t, dir, "a.jsonc", `{"xv": 10}`, 0o644)
	write(t, dir, "b.jsonc", `{"xv": 20}`, 0o644)
	write(t, dir, "th.jsonc", `{"metrics": {"v": {"max_increase": "5%"}}}`, 0o644)
	base := []string{"ci", "--environment", "env.jsonc", "--thresholds", "th.jsonc", "--tunable_values", "a.jsonc", "b.jsonc", "--no-progress"}
	r := runBench(t, dir, append(base, "--repeat", "3", "--save-as", "il")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "results", "--experiment", "il", "--format", "csv")
	var order []string
	for _, row := range csvRows(t, r.stdout) {
		order = append(order, row["config.xv"])
	}
	if got := strings.Join(order, " "); got != "10 20 10 20 10 20" {
		t.Errorf("trial order %q, want interleaved 10 20 10 20 10 20\n%s", got, r.stdout)
	}
	// 3 against 3 repeats: p can never be below 0.05: insufficient, exit 2.
	r = runBench(t, dir, append(base, "--repeat", "3", "--baseline", "il")...)
	if r.code != 2 || !strings.Contains(r.stderr, "INSUFFICIENT") || !strings.Contains(r.stderr, "a.jsonc") {
		t.Errorf("insufficient: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, append(base, "--repeat", "3", "--baseline", "il", "--allow-insufficient")...)
	if r.code != 0 {
		t.Errorf("--allow-insufficient: exit %d\n%s", r.code, r.stderr)
	}
	// Identical values: no change, pass.
	r = runBench(t, dir, append(base, "--repeat", "5", "--baseline", "il", "--allow-insufficient")...)
	if r.code != 0 || !strings.Contains(r.stdout, "b.jsonc") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --best-of: the best configuration of a stored experiment (v is
	// minimized: xv=10), compared with that configuration's baseline trials.
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "th.jsonc", "--best-of", "il", "--repeat", "5", "--baseline", "il", "--no-progress")
	if r.code != 0 || !strings.Contains(r.stdout, "best of il (trial 1)") || !strings.Contains(r.stdout, "(p=1 n=3+5)") {
		t.Errorf("--best-of: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// bench export: a tidy CSV / JSON table, usable as a baseline.
	r = runBench(t, dir, "export", "il", "--format", "csv", "-o", "il.csv")
	if r.code != 0 {
		t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "il.csv"))
	rows := csvRows(t, string(b))
	if len(rows) != 6 || rows[0]["experiment_id"] != "il" || rows[0]["trial_id"] != "1" || rows[0]["status"] != "SUCCEEDED" ||
		rows[0]["config.xv"] != "10" || rows[0]["result.v"] != "10" || rows[1]["result.v"] != "20" || rows[0]["duration_s"] == "" || rows[0]["retry_of"] != "" {
		t.Errorf("export csv:\n%s", b)
	}
	r = runBench(t, dir, "export", "il", "--format", "json")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 6 || recs[1]["config.xv"] != 20.0 || recs[1]["result.v"] != 20.0 || recs[0]["retry_of"] != nil {
		t.Errorf("export json (%v):\n%s", err, r.stdout)
	}
	write(t, dir, "il.json", r.stdout, 0o644)
	// bench compare: experiments and files, benchstat style.
	r = runBench(t, dir, "compare", "il", "il.csv")
	if r.code != 0 || !strings.Contains(r.stdout, "~") || !strings.Contains(r.stdout, "(p=1 n=3+3)") {
		t.Errorf("compare: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, "compare", "il.json", "il", "--thresholds", "th.jsonc", "--format", "json")
	if r.code != 2 || !strings.Contains(r.stdout, `"verdict": "insufficient"`) {
		t.Errorf("compare --thresholds: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runBench(t, dir, append(base, "--repeat", "3", "--baseline", "il.json", "--allow-insufficient")...)
	if r.code != 0 {
		t.Errorf("ci against an exported baseline: exit %d\n%s", r.code, r.stderr)
	}
	// bench results: header, filters, sort.
	r = runBench(t, dir, "results", "--experiment", "il", "--where", "xv=20", "--sort", "-trial")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Experiment il: SUCCEEDED, 6 trials (3 shown), objectives v (min)\n") {
		t.Errorf("results header: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[3], "6 ") || !strings.HasPrefix(lines[5], "2 ") {
		t.Errorf("results --where --sort:\n%s", r.stdout)
	}
	r = runBench(t, dir, "results", "--experiment", "il", "--best", "2", "--format", "csv")
	rows = csvRows(t, r.stdout)
	if len(rows) != 2 || rows[0]["result.v"] != "10" || !strings.Contains(r.stderr, "Experiment il: SUCCEEDED") {
		t.Errorf("results --best 2:\n%s%s", r.stdout, r.stderr)
	}
	r = runBench(t, dir, "results", "--experiment", "il", "--status", "failed", "--format", "csv")
	if r.code != 0 || len(csvRows(t, r.stdout)) != 0 {
		t.Errorf("results --status failed:\n%s", r.stdout)
	}
	r = runBench(t, dir, "results", "--experiment", "il", "--sort", "nope")
	if r.code != 2 || !strings.Contains(r.stderr, `--sort "nope": no such column`) {
		t.Errorf("results --sort nope: exit %d %s", r.code, r.stderr)
	}
	r = runBench(t, dir, "results")
	if !strings.Contains(r.stdout, "[the most recent experiment; choose with --experiment]") {
		t.Errorf("results without --experiment does not say which it picked:\n%s", r.stdout)
	}
	write(t, dir, "bad.jsonc", "{\"metrics\": {\"v\": {\"max_increase\": 5}}}", 0o644)
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "bad.jsonc", "--baseline", "il")
	if r.code != 2 || !strings.Contains(r.stderr, "bad.jsonc:1:36: at /metrics/v/max_increase") {
		t.Errorf("bad thresholds: exit %d\n%s", r.code, r.stderr)
	}
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "th.jsonc", "--baseline", "nope")
	if r.code != 2 || !strings.Contains(r.stderr, `"nope" is neither a file nor an experiment`) {
		t.Errorf("unknown baseline: exit %d\n%s", r.code, r.stderr)
	}
}

func TestResultsQueryHelpers(t *testing.T) {
	for _, tc := range []struct {
		stored, want string
		same         bool
	}{{"6", "6", true}, {"6", "6.0", true}, {"0.5", ".5", true}, {"zlib", "zlib", true}, {"zlib", "gzip", false}, {"6", "7", false}} {
		if got := sameValue(tc.stored, tc.want); got != tc.same {
			t.Errorf("sameValue(%q, %q) = %v", tc.stored, tc.want, got)
		}
	}
	if !lessCell(textKey("9"), textKey("10")) || !lessCell(textKey("10"), textKey("a")) || !lessCell(textKey("a"), textKey("")) {
		t.Error("numbers sort as numbers, before text, before missing")
	}
	var q trialQuery
	q.where = []string{"=3"}
	if err := q.parse(); err == nil {
		t.Error("--where =3 accepted")
	}
	q = trialQuery{statuses: []string{"nope"}}
	if err := q.parse(); err == nil {
		t.Error("--status nope accepted")
	}
}

// TestSortGzipCIWorkflow runs the commands of the README's CI workflow on
// configs/examples/sort-gzip: record a baseline, export it, run bench ci
// against the file. Wall time on a shared machine may really differ
// between the two runs, so a regression verdict (exit 1) is accepted;
// anything else but a pass is not.
func TestSortGzipCIWorkflow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 sort-gzip trials")
	}
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	common := []string{"ci", "--config", filepath.Join(root, "configs/examples/sort-gzip/cli.jsonc"),
		"--config_path", filepath.Join(root, "configs/examples"),
		"--thresholds", filepath.Join(root, "configs/examples/sort-gzip/ci-thresholds.jsonc"), "--repeat", "5", "--no-progress"}
	r := runBench(t, dir, append(common, "--save-as", "sort-gzip-baseline")...)
	if r.code != 0 {
		t.Fatalf("baseline: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = runBench(t, dir, "export", "sort-gzip-baseline", "-o", "bench-baseline.csv"); r.code != 0 {
		t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
	}
	summary := filepath.Join(dir, "summary.md")
	r = runBench(t, dir, append(common, "--baseline", "bench-baseline.csv", "--markdown", summary, "--junit", "junit.xml")...)
	if r.code != 0 && r.code != 1 {
		t.Fatalf("bench ci: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(summary)
	if !strings.Contains(string(b), "`bench.sortgz.run.wall_s`") || !strings.Contains(string(b), "`bench.sortgz.run.cpu_user_s`") {
		t.Errorf("summary:\n%s", b)
	}
	if !strings.Contains(r.stderr, `experiment "sort-gzip-ci-`) {
		t.Errorf("the CI run is not stored as sort-gzip-ci-<time>:\n%s", r.stderr)
	}
}

// TestTrueStatus: an experiment stored as RUNNING whose bench process has
// exited shows as CANCELED (unfinished trials) or by its trials' outcome.
func TestTrueStatus(t *testing.T) {
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	alive := exec.Command("sleep", "30")
	if err := alive.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { alive.Process.Kill(); alive.Wait() }()
	info := func(pid int, st trial.Status) storage.ExperimentInfo {
		return storage.ExperimentInfo{ID: "e", DriverName: host, DriverPID: pid, Status: st}
	}
	for _, tc := range []struct {
		info   storage.ExperimentInfo
		counts map[trial.Status]int
		want   trial.Status
	}{
		{info(dead.Process.Pid, trial.RUNNING), map[trial.Status]int{trial.RUNNING: 1, trial.SUCCEEDED: 2}, trial.CANCELED},
		{info(dead.Process.Pid, trial.RUNNING), map[trial.Status]int{trial.SUCCEEDED: 2}, trial.SUCCEEDED},
		{info(dead.Process.Pid, trial.RUNNING), map[trial.Status]int{trial.FAILED: 2}, trial.FAILED},
		{info(alive.Process.Pid, trial.RUNNING), map[trial.Status]int{trial.RUNNING: 1}, trial.RUNNING},
		{info(dead.Process.Pid, trial.SUCCEEDED), map[trial.Status]int{trial.SUCCEEDED: 1}, trial.SUCCEEDED},
		{storage.ExperimentInfo{DriverName: "another-host", DriverPID: dead.Process.Pid, Status: trial.RUNNING}, map[trial.Status]int{trial.RUNNING: 1}, trial.RUNNING},
	} {
		if got := trueStatus(tc.info, tc.counts); got != tc.want {
			t.Errorf("%+v %v: %s, want %s", tc.info, tc.counts, got, tc.want)
		}
	}
}
