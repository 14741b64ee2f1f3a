package main

import (
	"strings"
	"testing"
)

// abConfigEnv writes an environment whose metric v is its tunable xv (or
// a constant), two tunable values files and a thresholds file.
func abConfigEnv(t *testing.T, dir string) {
	t.Helper()
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {
		"xv": {"type": "int", "range": [0, 100], "default": 50},
		"yv": {"type": "int", "range": [0, 100], "default": 50}}}}`, 0o644)
	for name, run := range map[string]string{"env.jsonc": `echo \"v=$xv\"`, "flat.jsonc": `echo v=42`} {
		write(t, dir, name, `{
		"name": "ab",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {"tunable_params": ["g"], "shell_env_params": ["xv", "yv"],
			"run": ["`+run+`"], "results_stdout_pattern": "(v)=(\\d+)"}
	}`, 0o644)
	}
	write(t, dir, "a.jsonc", `{"xv": 10, "yv": 1}`, 0o644)
	write(t, dir, "b.jsonc", `{"xv": 20, "yv": 2}`, 0o644)
	write(t, dir, "thv.jsonc", `{"metrics": {"v": {"max_increase": "5%"}}}`, 0o644)
}

// trialValues lists the values of tunable xv of an experiment's trials,
// in trial order.
func trialValues(t *testing.T, dir, exp string) []string {
	t.Helper()
	r := runBench(t, dir, "results", "--experiment", exp, "--format", "csv")
	var out []string
	for _, row := range csvRows(t, r.stdout) {
		out = append(out, row["config.xv"])
	}
	return out
}

// A/B of configurations with --repeat auto: random blocks (the default
// order), the paired test, the group-sequential looks, and the stop at
// the first look where every row is settled.
func TestCIConfigABRepeatAuto(t *testing.T) {
	dir := t.TempDir()
	abConfigEnv(t, dir)
	// v doubles: the ratios are all 2, and the exact signed-rank p of n
	// equal ratios is 2/2^n: 0.031 at n=6 is above look 1's alpha
	// (0.05·0.3² = 0.0045), 0.002 at n=10 below look 2's (0.008).
	r := runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "thv.jsonc", "--baseline-config", "a.jsonc", "--candidate-config", "b.jsonc",
		"--repeat", "auto", "--max-repeat", "20", "--save-as", "abauto", "--no-progress")
	for _, want := range []string{
		"A/B of configurations in one job, order random, --repeat auto: group-sequential",
		"noise: v [b.jsonc]: CV of the per-block ratios 0.0%",
		"look 1 of 4 at n=6 per configuration (alpha 0.0045): not settled yet",
		"look 2 of 4 at n=10 per configuration (alpha 0.008): every row settled, stopping",
		"--repeat auto ran 10 runs per configuration",
		"REGRESSION   v [b.jsonc]: +100.00%",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("missing %q", want)
		}
	}
	if r.code != 1 || !strings.Contains(r.stdout, "signed-rank") {
		t.Fatalf("exit %d, want 1 (regression), paired test\n%s%s", r.code, r.stdout, r.stderr)
	}
	vals := trialValues(t, dir, "abauto")
	if len(vals) != 20 {
		t.Fatalf("ran %d trials, want 20 (10 blocks): %v", len(vals), vals)
	}
	for i := 0; i < len(vals); i += 2 {
		if b := vals[i] + " " + vals[i+1]; b != "10 20" && b != "20 10" {
			t.Errorf("block %d is %q, want one run of each configuration", i/2+1, b)
		}
	}

	// No change (v does not depend on the configuration): the 95%
	// interval of the change [0, 0] lies within the threshold from n=10.
	r = runBench(t, dir, "ci", "--environment", "flat.jsonc", "--thresholds", "thv.jsonc", "--baseline-config", "a.jsonc", "--candidate-config", "b.jsonc",
		"--repeat", "auto", "--max-repeat", "20", "--ab-order", "alternate", "--save-as", "abflat", "--no-progress")
	if r.code != 0 || !strings.Contains(r.stderr, "look 2 of 4 at n=10 per configuration (alpha 0.008): every row settled, stopping") ||
		!strings.Contains(r.stderr, "interval of the change lies within the threshold") {
		t.Errorf("no change: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.Join(trialValues(t, dir, "abflat"), " "); got != strings.Repeat("10 20 ", 9)+"10 20" {
		t.Errorf("--ab-order alternate ran %q", got)
	}

	// Fixed repeats: the paired test by default, in random blocks.
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "thv.jsonc", "--baseline-config", "a.jsonc", "--candidate-config", "b.jsonc",
		"--repeat", "6", "--save-as", "ab6", "--no-progress")
	if r.code != 1 || !strings.Contains(r.stdout, "signed-rank") || !strings.Contains(r.stderr, "REGRESSION   v [b.jsonc]: +100.00%") {
		t.Errorf("--repeat 6: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if vals := trialValues(t, dir, "ab6"); len(vals) != 12 {
		t.Errorf("--repeat 6 ran %v", vals)
	}
}

// bench ci --config with --repeat auto against a stored baseline: the
// two-sample test at each look's alpha, and the futility stop.
func TestCIStoredBaselineRepeatAuto(t *testing.T) {
	dir := t.TempDir()
	abConfigEnv(t, dir)
	r := runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "thv.jsonc", "--tunable_values", "a.jsonc",
		"--repeat", "10", "--save-as", "base", "--no-progress")
	if r.code != 0 {
		t.Fatalf("baseline: exit %d\n%s", r.code, r.stderr)
	}
	// Doubled: all 6 new values above all 10 old ones, exact p = 2/C(16,6)
	// = 0.00025 < 0.0045: settled at look 1.
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "thv.jsonc", "--tunable_values", "b.jsonc",
		"--baseline", "base", "--repeat", "auto", "--max-repeat", "20", "--save-as", "up", "--no-progress")
	if r.code != 1 || !strings.Contains(r.stderr, "--repeat auto against the baseline: group-sequential") ||
		!strings.Contains(r.stderr, "noise: v [config 1]: CV 0.0%; with 20 runs per side") ||
		!strings.Contains(r.stderr, "look 1 of 4 at n=6 per configuration (alpha 0.0045): every row settled, stopping") ||
		!strings.Contains(r.stderr, "REGRESSION   v [b.jsonc]") {
		t.Errorf("regression: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if vals := trialValues(t, dir, "up"); len(vals) != 6 {
		t.Errorf("ran %v, want 6 trials", vals)
	}
	// Unchanged: settled by the interval at look 2 (n=10 on both sides).
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "thv.jsonc", "--tunable_values", "a.jsonc",
		"--baseline", "base", "--repeat", "auto", "--max-repeat", "20", "--save-as", "same", "--no-progress")
	if r.code != 0 || !strings.Contains(r.stderr, "look 2 of 4 at n=10 per configuration (alpha 0.008): every row settled, stopping") {
		t.Errorf("unchanged: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if vals := trialValues(t, dir, "same"); len(vals) != 10 {
		t.Errorf("ran %v, want 10 trials", vals)
	}
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "thv.jsonc", "--baseline", "base", "--ab-order", "alternate", "--no-progress")
	if r.code != 2 || !strings.Contains(r.stderr, "--ab-order and --ab-test tune an A/B job") {
		t.Errorf("--ab-order without A/B: exit %d %s", r.code, r.stderr)
	}
	r = runBench(t, dir, "ci", "--environment", "env.jsonc", "--thresholds", "thv.jsonc", "--repeat", "auto", "--no-progress")
	if r.code != 2 || !strings.Contains(r.stderr, "--repeat auto needs something to compare with") {
		t.Errorf("auto without a baseline: exit %d %s", r.code, r.stderr)
	}
}
