package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Two and four identical `bench run` processes on one experiment (RANDOM,
// seed 3, 8 suggestions): each configuration and repeat runs once in all,
// whichever process gets it first; the others wait for it and reuse its
// result. On SQLite, PostgreSQL and MySQL (MariaDB).
func TestDriversShareOneExperiment(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres", "mysql"} {
		for _, drivers := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/%d", backend, drivers), func(t *testing.T) {
				dir := experiment(t, `echo "$xv $mode" >> "$marker_dir/runs"; sleep 0.3`)
				write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
					"config": {"optimizer_type": "RANDOM", "max_suggestions": 8, "seed": 3}}`, 0o644)
				args := []string{"run", "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "D", "--no-progress"}
				switch backend {
				case "postgres":
					st, _ := freshPostgresStorage(t, dir)
					args = append(args, "--storage", st)
				case "mysql":
					st, _ := freshMySQLStorage(t, dir)
					args = append(args, "--storage", st, "--globals", "mysql-globals.jsonc")
				}
				outs := runDrivers(t, dir, drivers, func(int) []string { return args }, nil)
				wantEachRunOnce(t, dir, 8, outs)
			})
		}
	}
}

// Two and four `bench run` processes with different seeds (so they
// suggest different configurations) on one experiment with
// max_suggestions 8: the experiment holds exactly 8 configurations, each
// run once, every process exits 0 and ends because the budget is spent
// (storage refuses a ninth configuration: storage.TrialSpec.MaxConfigs).
// On SQLite, PostgreSQL and MySQL (MariaDB).
func TestDriversShareOneBudget(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres", "mysql"} {
		for _, drivers := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/%d", backend, drivers), func(t *testing.T) {
				dir := experiment(t, `echo "$xv $mode" >> "$marker_dir/runs"; sleep 0.3`)
				var extra []string
				switch backend {
				case "postgres":
					st, _ := freshPostgresStorage(t, dir)
					extra = []string{"--storage", st}
				case "mysql":
					st, _ := freshMySQLStorage(t, dir)
					extra = []string{"--storage", st, "--globals", "mysql-globals.jsonc"}
				}
				outs := runDrivers(t, dir, drivers, func(i int) []string {
					opt := fmt.Sprintf("opt%d.jsonc", i)
					write(t, dir, opt, fmt.Sprintf(`{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
						"config": {"optimizer_type": "RANDOM", "max_suggestions": 8, "seed": %d}}`, 3+i), 0o644)
					return append([]string{"run", "--environment", "env.jsonc", "--optimizer", opt, "--experiment_id", "D", "--no-progress"}, extra...)
				}, func(i int, out string) {
					if want := "End reason: budget spent: max_suggestions 8"; !strings.Contains(out, want) {
						t.Errorf("driver %d does not say %q:\n%s", i+1, want, out)
					}
				})
				wantEachRunOnce(t, dir, 8, outs)
			})
		}
	}
}

// runDrivers starts drivers `bench run` processes in dir at once (driver
// i with the arguments args(i)), waits for each (3 minutes at most) and
// fails the test for one that exits non-zero; check, if given, looks at
// each driver's output. It returns the outputs.
func runDrivers(t *testing.T, dir string, drivers int, args func(i int) []string, check func(i int, out string)) []*bytes.Buffer {
	t.Helper()
	tmp := t.TempDir()
	cmds := make([]*exec.Cmd, drivers)
	outs := make([]*bytes.Buffer, drivers)
	for i := range cmds {
		outs[i] = &bytes.Buffer{}
		cmds[i] = exec.Command(benchBin, args(i)...)
		cmds[i].Dir = dir
		cmds[i].Env = append(os.Environ(), "TMPDIR="+tmp)
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill() })
	}
	for i, c := range cmds {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(3 * time.Minute):
			_ = c.Process.Kill()
			t.Fatalf("driver %d still runs after 3 minutes\n%s", i+1, outs[i])
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if err != nil {
			t.Errorf("driver %d: %v\n%s", i+1, err, outs[i])
		}
		if check != nil {
			check(i, outs[i].String())
		}
	}
	return outs
}

// wantEachRunOnce checks the runs file the drivers' trials appended to:
// n executions of n distinct configurations (each run once in all); on
// failure it logs every driver's output.
func wantEachRunOnce(t *testing.T, dir string, n int, outs []*bytes.Buffer) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	runs := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Strings(runs)
	distinct := map[string]bool{}
	for _, r := range runs {
		distinct[r] = true
	}
	t.Logf("%d executions of %d configurations", len(runs), len(distinct))
	if len(runs) != n || len(distinct) != n {
		t.Errorf("%d executions of %d configurations, want %d of %d: %v", len(runs), len(distinct), n, n, runs)
		for i := range outs {
			t.Logf("driver %d:\n%s", i+1, outs[i])
		}
	}
}
