package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
)

// fidTrial is a stored trial of a multi-fidelity run.
type fidTrial struct {
	id, config      int
	status          string
	fidelity        string
	rung, bracket   int
	continueFrom    string
	epochsTrained   int
	loss            string
	hasFidelityMeta bool
}

// fidelityTrials reads an experiment's trials with their fidelity
// metadata (trial_param) and results, as stored (nil before the tables
// exist).
func fidelityTrials(t *testing.T, dbPath, exp string) map[int]*fidTrial {
	t.Helper()
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT trial_id, status, config_id FROM trial WHERE exp_id = ?`, exp)
	if err != nil {
		return nil
	}
	out := map[int]*fidTrial{}
	for rows.Next() {
		ft := &fidTrial{}
		if err := rows.Scan(&ft.id, &ft.status, &ft.config); err != nil {
			t.Fatal(err)
		}
		out[ft.id] = ft
	}
	rows.Close()
	rows, err = db.Query(`SELECT trial_id, param_id, COALESCE(param_value, '') FROM trial_param WHERE exp_id = ?`, exp)
	if err != nil {
		return nil
	}
	for rows.Next() {
		var id int
		var k, v string
		if err := rows.Scan(&id, &k, &v); err != nil {
			t.Fatal(err)
		}
		ft := out[id]
		if ft == nil {
			continue
		}
		switch k {
		case "bench_fidelity":
			ft.fidelity, ft.hasFidelityMeta = v, true
		case "bench_fidelity_rung":
			ft.rung, _ = strconv.Atoi(v)
		case "bench_fidelity_bracket":
			ft.bracket, _ = strconv.Atoi(v)
		case "bench_continue_from_trial":
			ft.continueFrom = v
		}
	}
	rows.Close()
	rows, err = db.Query(`SELECT trial_id, metric_id, COALESCE(metric_value, '') FROM trial_result WHERE exp_id = ?`, exp)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		var k, v string
		if err := rows.Scan(&id, &k, &v); err != nil {
			t.Fatal(err)
		}
		if ft := out[id]; ft != nil {
			switch k {
			case "epochs_trained":
				ft.epochsTrained, _ = strconv.Atoi(v)
			case "loss":
				ft.loss = v
			}
		}
	}
	return out
}

// checkFidelityRun checks a finished multi-fidelity experiment: every
// trial SUCCEEDED with its fidelity recorded, each (configuration,
// fidelity) ran once, each promotion follows its configuration's success
// at the rung below, wantConfigs configurations were started, and some
// were promoted. It returns the number of promotions.
func checkFidelityRun(t *testing.T, trs map[int]*fidTrial, wantConfigs int) int {
	t.Helper()
	seen := map[string]int{}
	starts := map[int]bool{}
	promotions := 0
	for id := 1; id <= len(trs)+1000 && len(seen) < len(trs); id++ {
		ft := trs[id]
		if ft == nil {
			continue
		}
		if ft.status != "SUCCEEDED" || !ft.hasFidelityMeta {
			t.Errorf("trial %d: %s, fidelity %q", id, ft.status, ft.fidelity)
		}
		key := fmt.Sprintf("%d@%s", ft.config, ft.fidelity)
		if other, dup := seen[key]; dup {
			t.Errorf("configuration %d ran twice at fidelity %s: trials %d and %d", ft.config, ft.fidelity, other, id)
		}
		seen[key] = id
		if ft.rung == ft.bracket {
			if starts[ft.config] {
				t.Errorf("configuration %d started twice (trial %d)", ft.config, id)
			}
			starts[ft.config] = true
			continue
		}
		promotions++
		found := false
		for _, o := range trs {
			if o.config == ft.config && o.rung == ft.rung-1 && o.id < id && o.status == "SUCCEEDED" {
				found = true
			}
		}
		if !found {
			t.Errorf("trial %d: configuration %d promoted to rung %d without a success at rung %d", id, ft.config, ft.rung, ft.rung-1)
		}
	}
	if len(starts) != wantConfigs {
		t.Errorf("%d configurations started, want %d", len(starts), wantConfigs)
	}
	if promotions == 0 {
		t.Error("no configuration was promoted")
	}
	return promotions
}

// fidelityArgs runs the multi-fidelity example.
func fidelityArgs(root string, extra ...string) []string {
	return append([]string{"--config", filepath.Join(root, "configs/examples/multi-fidelity/cli.jsonc"),
		"--config_path", filepath.Join(root, "configs/examples"), "--no-progress"}, extra...)
}

// TestMultiFidelityExample runs configs/examples/multi-fidelity from the
// CLI: configurations start at their bracket's first rung, the best are
// promoted and continue from their checkpoint (a promotion trains only the
// epochs it adds), bench results shows each trial's fidelity, and the best
// trial is a full-fidelity one.
func TestMultiFidelityExample(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	r := runBench(t, dir, fidelityArgs(root, "--max_suggestions", "14")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "multi-fidelity")
	checkFidelityRun(t, trs, 14)
	continued := 0
	for _, ft := range trs {
		epochs, _ := strconv.Atoi(ft.fidelity)
		switch {
		case ft.rung > ft.bracket:
			if ft.continueFrom == "" || ft.epochsTrained >= epochs {
				t.Errorf("promoted trial %d at %d epochs: continues %q, trained %d epochs", ft.id, epochs, ft.continueFrom, ft.epochsTrained)
			}
			continued++
		case ft.epochsTrained != epochs || ft.continueFrom != "":
			t.Errorf("first run %d at %d epochs trained %d, continues %q", ft.id, epochs, ft.epochsTrained, ft.continueFrom)
		}
	}
	if continued == 0 {
		t.Error("no trial continued")
	}
	// The best trial is the best 27-epoch one.
	best, bestLoss := 0, 1e300
	for _, ft := range trs {
		if v, err := strconv.ParseFloat(ft.loss, 64); err == nil && ft.fidelity == "27" && v < bestLoss {
			best, bestLoss = ft.id, v
		}
	}
	if best == 0 || !strings.Contains(r.stdout, fmt.Sprintf("Best trial %d:", best)) {
		t.Errorf("want best trial %d (27 epochs):\n%s", best, r.stdout)
	}
	res := runBench(t, dir, "results", "--experiment", "multi-fidelity")
	if res.code != 0 || !strings.Contains(res.stdout, "fidelity") || !strings.Contains(res.stdout, "1 of 27") || !strings.Contains(res.stdout, "27 of 27") {
		t.Errorf("bench results: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	top := runBench(t, dir, "results", "--experiment", "multi-fidelity", "--best", "1", "--format", "csv")
	if top.code != 0 || !strings.Contains(top.stdout, "\n"+strconv.Itoa(best)+",") {
		t.Errorf("bench results --best 1: want trial %d\n%s%s", best, top.stdout, top.stderr)
	}
	// A bad fidelity is refused before anything runs, with its place.
	bad := runBench(t, t.TempDir(), fidelityArgs(root, "--fidelity", "epoch:1:27")...)
	if bad.code == 0 || !strings.Contains(bad.stderr, `fidelity.param "epoch" is neither a tunable nor a parameter`) || !strings.Contains(bad.stderr, `did you mean "epochs"?`) {
		t.Errorf("--fidelity epoch:1:27: exit %d\n%s", bad.code, bad.stderr)
	}
	bad = runBench(t, t.TempDir(), fidelityArgs(root, "--fidelity", "epochs:27:1")...)
	if bad.code == 0 || !strings.Contains(bad.stderr, "fidelity.max (1, full fidelity) must be greater than fidelity.min (27)") {
		t.Errorf("--fidelity epochs:27:1: exit %d\n%s", bad.code, bad.stderr)
	}
}

// TestPromotedTrialSurvivesKill: bench is SIGKILLed once a promoted trial
// is stored; the same command then resumes: the plan is rebuilt from the
// stored trials, so no (configuration, fidelity) runs twice, the finished
// promotions stay as they were, promotions go on, and the experiment
// completes its budget.
func TestPromotedTrialSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	root, _ := filepath.Abs("../..")
	args := fidelityArgs(root, "--max_suggestions", "16", "--epoch_s", "0.05", "--log_level", "INFO")
	db := filepath.Join(dir, "bench.sqlite")
	cmd := startBench(t, dir, tmp, "bench", args...)
	deadline := time.Now().Add(90 * time.Second)
	var before map[int]*fidTrial
	for {
		if _, err := os.Stat(db); err == nil {
			before = fidelityTrials(t, db, "multi-fidelity")
		}
		promotedDone := 0
		for _, ft := range before {
			if ft.rung > ft.bracket && ft.status == "SUCCEEDED" {
				promotedDone++
			}
		}
		if promotedDone >= 1 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no promoted trial finished:\n%s", readLog(tmp, "bench"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before = fidelityTrials(t, db, "multi-fidelity")
	maxBefore, unfinished := 0, 0
	for id, ft := range before {
		maxBefore = max(maxBefore, id)
		if ft.status != "SUCCEEDED" {
			unfinished++
		}
	}
	r := runBench(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s%s\nfirst run:\n%s", r.code, r.stdout, r.stderr, readLog(tmp, "bench"))
	}
	if !strings.Contains(r.stderr, "fidelity: plan rebuilt from the experiment's stored trials") {
		t.Errorf("the resume did not rebuild the plan:\n%s", r.stderr)
	}
	after := fidelityTrials(t, db, "multi-fidelity")
	checkFidelityRun(t, after, 16)
	for id, ft := range before {
		a := after[id]
		if a == nil || a.config != ft.config || a.fidelity != ft.fidelity || (ft.status == "SUCCEEDED" && (a.status != ft.status || a.loss != ft.loss)) {
			t.Errorf("trial %d before the kill %+v, after %+v", id, *ft, a)
		}
	}
	promotedLater := 0
	for id, ft := range after {
		if id > maxBefore && ft.rung > ft.bracket {
			promotedLater++
		}
	}
	if promotedLater == 0 {
		t.Errorf("no promotion after the resume (%d trials before the kill, %d unfinished then, %d after)", len(before), unfinished, len(after))
	}
}

// TestFidelityNetworkWorkers: the driver serves a multi-fidelity
// experiment and runs no trial itself; two network workers (bench worker
// --connect, no database) run every rung, each trial getting its fidelity
// (and, promoted, the trial it continues) from the driver.
func TestFidelityNetworkWorkers(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	root, _ := filepath.Abs("../..")
	addr := freePort(t)
	write(t, dir, "token", "tok-fidelity-secret\n", 0o600)
	driver := startBench(t, dir, tmp, "driver", append([]string{"run"}, fidelityArgs(root, "--max_suggestions", "14",
		"--serve", addr, "--token-file", "token", "--no-local-trials", "--log_level", "INFO")...)...)
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment multi-fidelity") })
	wargs := append([]string{"worker", "--connect", "http://" + addr, "--token-file", "token"}, fidelityArgs(root, "--log_level", "INFO")...)
	w1 := startBench(t, dir, tmp, "w1", wargs...)
	w2 := startBench(t, dir, tmp, "w2", wargs...)
	waitOK(t, driver, tmp, "driver")
	waitOK(t, w1, tmp, "w1")
	waitOK(t, w2, tmp, "w2")
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "multi-fidelity")
	checkFidelityRun(t, trs, 14)
	for _, ft := range trs {
		epochs, _ := strconv.Atoi(ft.fidelity)
		if ft.rung == ft.bracket && ft.epochsTrained != epochs {
			t.Errorf("trial %d at %d epochs trained %d: the worker did not get the fidelity", ft.id, epochs, ft.epochsTrained)
		}
		if ft.rung > ft.bracket && (ft.continueFrom == "" || ft.epochsTrained >= epochs) {
			t.Errorf("promoted trial %d at %d epochs trained %d (continues %q): the worker did not continue", ft.id, epochs, ft.epochsTrained, ft.continueFrom)
		}
	}
	for _, w := range []string{"w1", "w2"} {
		if !strings.Contains(readLog(tmp, w), "trial finished") {
			t.Errorf("%s ran no trial:\n%s", w, readLog(tmp, w))
		}
	}
}

// TestFidelityStorageWorkers: a driver that runs no trial itself queues
// the rungs for bench worker processes sharing its SQLite database:
// promotions are queued for them too.
func TestFidelityStorageWorkers(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	root, _ := filepath.Abs("../..")
	driver := startBench(t, dir, tmp, "driver", append([]string{"run"}, fidelityArgs(root, "--max_suggestions", "14",
		"--no-local-trials", "--log_level", "INFO")...)...)
	waitFor(t, "the experiment", func() bool {
		_, err := os.Stat(filepath.Join(dir, "bench.sqlite"))
		return err == nil
	})
	w := startBench(t, dir, tmp, "w", append([]string{"worker", "--experiment", "multi-fidelity"}, fidelityArgs(root, "--log_level", "INFO")...)...)
	waitOK(t, driver, tmp, "driver")
	waitOK(t, w, tmp, "w")
	checkFidelityRun(t, fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "multi-fidelity"), 14)
}

// TestFidelityLocalEngine: the rungs run as jobs of the local engine (the
// far side is bench exec-trial): each job gets its trial's fidelity.
func TestFidelityLocalEngine(t *testing.T) {
	dir := t.TempDir()
	root, _ := filepath.Abs("../..")
	write(t, dir, "engine.jsonc", `{"class": "bench.engines.LocalEngine", "config": {"max_jobs": 4, "poll_interval": "50ms"}}`, 0o644)
	r := runBench(t, dir, fidelityArgs(root, "--max_suggestions", "14", "--engine", "engine.jsonc")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "multi-fidelity")
	checkFidelityRun(t, trs, 14)
	for _, ft := range trs {
		epochs, _ := strconv.Atoi(ft.fidelity)
		if (ft.rung == ft.bracket && ft.epochsTrained != epochs) || (ft.rung > ft.bracket && ft.epochsTrained >= epochs) {
			t.Errorf("trial %d at %d epochs (rung %d of bracket %d) trained %d", ft.id, epochs, ft.rung, ft.bracket, ft.epochsTrained)
		}
	}
	if jobs := engineJobs(t, dir, "multi-fidelity"); len(jobs) != len(trs) {
		t.Errorf("%d engine jobs for %d trials", len(jobs), len(trs))
	}
}

// TestFidelitySlurm: the rungs run as Slurm jobs (the real bench binary
// on the far side, bench exec-trial): each job gets its trial's fidelity,
// promotions continue from the configuration's checkpoint.
func TestFidelitySlurm(t *testing.T) {
	testenv.Get(t, "BENCH_TEST_SLURM")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../..")
	partition := ""
	if p := os.Getenv("BENCH_TEST_SLURM_PARTITION"); p != "" {
		partition = fmt.Sprintf(`"partition": %q,`, p)
	}
	write(t, dir, "engine.jsonc", fmt.Sprintf(`{"class": "bench.engines.SlurmEngine",
		"config": {%s "max_jobs": 4, "time_limit": "10", "poll_interval": "200ms"}}`, partition), 0o644)
	r := runBench(t, dir, fidelityArgs(root, "--max_suggestions", "14", "--engine", "engine.jsonc", "--experiment_id", "MFS")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), "MFS")
	checkFidelityRun(t, trs, 14)
	for _, ft := range trs {
		epochs, _ := strconv.Atoi(ft.fidelity)
		if (ft.rung == ft.bracket && ft.epochsTrained != epochs) || (ft.rung > ft.bracket && ft.epochsTrained >= epochs) {
			t.Errorf("trial %d at %d epochs (rung %d of bracket %d) trained %d", ft.id, epochs, ft.rung, ft.bracket, ft.epochsTrained)
		}
	}
	for id, job := range engineJobs(t, dir, "MFS") {
		if job != "slurm/1" {
			t.Errorf("trial %d: engine job %s, want slurm/1", id, job)
		}
	}
}
