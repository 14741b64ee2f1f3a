package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPgbenchFidelityExampleValidates: every config of the
// postgres-pgbench-fidelity example passes bench validate (no PostgreSQL
// needed).
func TestPgbenchFidelityExampleValidates(t *testing.T) {
	root, _ := filepath.Abs("../..")
	dir := filepath.Join(root, "configs/examples/postgres-pgbench-fidelity")
	r := runBench(t, t.TempDir(), "validate", dir)
	if r.code != 0 || !strings.Contains(r.stderr+r.stdout, " 0 problems") {
		t.Fatalf("bench validate %s: exit %d\n%s%s", dir, r.code, r.stdout, r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "cli*.jsonc"))
	if len(files) < 2 {
		t.Fatalf("want the example's CLI configs, found %v", files)
	}
	for _, f := range files {
		if r := runBench(t, t.TempDir(), "validate", f); r.code != 0 {
			t.Errorf("bench validate %s: exit %d\n%s%s", f, r.code, r.stdout, r.stderr)
		}
	}
}

// postgresBinaries reports whether the example's PostgreSQL server and
// pgbench are installed (where the example's common.sh looks).
func postgresBinaries() bool {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "pgbench")); err == nil {
				return true
			}
		}
	}
	return false
}

// TestPgbenchFidelityExampleSmoke runs the example for real on a
// throwaway PostgreSQL, shortened (3 configurations, pgbench scale 1):
// the multi-fidelity search with runs of 2 and 6 seconds
// (--fidelity pgbench_seconds:2:6:3), and the pruning variant with 4-second
// runs and no confirmation. pgbench's per-second progress reaches storage
// as telemetry with a step, every trial either succeeds with a tps result
// or is pruned, each multi-fidelity trial records its fidelity, and the
// server is gone afterwards. Skipped where PostgreSQL is not installed.
func TestPgbenchFidelityExampleSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a PostgreSQL server and pgbench")
	}
	if !postgresBinaries() {
		t.Skip("PostgreSQL (pg_ctl and pgbench under /usr/lib/postgresql/*/bin) is not installed")
	}
	if os.Getuid() == 0 {
		if err := exec.Command("id", "postgres").Run(); err != nil {
			t.Skip("running as root and there is no postgres user to run the server as")
		}
	}
	root, _ := filepath.Abs("../..")
	for _, tc := range []struct {
		name, cli string
		args      []string
		fidelity  bool
	}{
		{"fidelity", "cli.jsonc", []string{"--fidelity", "pgbench_seconds:2:6:3"}, true},
		{"asha", "cli-asha.jsonc", []string{"--pgbench_seconds", "4", "--confirm_top_k", "0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// The server's files live under TMPDIR; as root the server runs
			// as postgres, which must be able to reach them (t.TempDir is 0700).
			tmp, err := os.MkdirTemp("", "bench-pgfid-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			if err := os.Chmod(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			exp := fmt.Sprintf("pgfid-%s-%d", tc.name, os.Getpid())
			args := append([]string{"--config", filepath.Join(root, "configs/examples/postgres-pgbench-fidelity", tc.cli),
				"--config_path", filepath.Join(root, "configs/examples"), "--experiment_id", exp,
				"--max_suggestions", "3", "--pgbench_scale", "1", "--no-progress"}, tc.args...)
			cmd := exec.Command(benchBin, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bench: %v\n%s", err, out)
			}
			checkPgbenchTrials(t, filepath.Join(dir, "bench.sqlite"), exp, tc.fidelity, string(out))
			if _, err := os.Stat(filepath.Join(tmp, "bench-pgbench-"+exp)); !os.IsNotExist(err) {
				t.Errorf("the server's folder is still there after teardown (%v)", err)
			}
		})
	}
}

// checkPgbenchTrials checks the stored trials of a smoke run.
func checkPgbenchTrials(t *testing.T, path, exp string, fidelity bool, out string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT t.trial_id, t.status, COALESCE(t.failure_reason, ''),
		COALESCE((SELECT metric_value FROM trial_result r WHERE r.exp_id = t.exp_id AND r.trial_id = t.trial_id AND r.metric_id = 'tps'), ''),
		(SELECT COUNT(*) FROM trial_telemetry m WHERE m.exp_id = t.exp_id AND m.trial_id = t.trial_id AND m.metric_id = 'tps' AND m.step IS NOT NULL),
		(SELECT COUNT(*) FROM trial_param p WHERE p.exp_id = t.exp_id AND p.trial_id = t.trial_id AND p.param_id = 'bench_fidelity')
		FROM trial t WHERE t.exp_id = ? ORDER BY t.trial_id`, exp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, steps, fid int
		var status, reason, tps string
		if err := rows.Scan(&id, &status, &reason, &tps, &steps, &fid); err != nil {
			t.Fatal(err)
		}
		n++
		if steps == 0 {
			t.Errorf("trial %d: no tps progress with a step stored", id)
		}
		if fidelity && fid != 1 {
			t.Errorf("trial %d: no bench_fidelity recorded", id)
		}
		switch {
		case status == "SUCCEEDED":
			if v, err := strconv.ParseFloat(tps, 64); err != nil || v <= 0 {
				t.Errorf("trial %d: tps result %q", id, tps)
			}
		case !fidelity && status == "CANCELED" && strings.Contains(reason, "pruned: tps value"):
		default:
			t.Errorf("trial %d: %s %q, want SUCCEEDED or pruned", id, status, reason)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 3 || (!fidelity && n != 3) {
		t.Errorf("%d trials, want 3 (more with promotions)\n%s", n, out)
	}
}
