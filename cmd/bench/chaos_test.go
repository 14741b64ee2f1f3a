package main

import (
	"bytes"
	"context"
	"crypto/rand"
	dbsql "database/sql"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/benchtune/bench/internal/testenv"
)

// chaosExperiment writes a benchmark of many short trials with a
// random-search optimizer (max_suggestions trials).
func chaosExperiment(t *testing.T, trials int, sleep string) string {
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"; sleep `+sleep)
	write(t, dir, "opt.jsonc", fmt.Sprintf(`{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "RANDOM", "max_suggestions": %d, "seed": 7}}`, trials), 0o644)
	return dir
}

// startBench starts a bench process in dir, its output going to
// tmp/<logName>.log.
func startBench(t *testing.T, dir, tmp, logName string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(benchBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	logf, err := os.OpenFile(filepath.Join(tmp, logName+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// checkChaos checks that exactly n trials are stored, every one SUCCEEDED
// with its one score and nothing left running or owned.
func checkChaos(t *testing.T, db *dbsql.DB, rebind func(string) string, exp string, n int) {
	t.Helper()
	var count, succeeded, unfinished, owned int
	q := rebind(`SELECT COUNT(*), COALESCE(SUM(CASE WHEN status = 'SUCCEEDED' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN ts_end IS NULL THEN 1 ELSE 0 END), 0), COALESCE(SUM(CASE WHEN owner IS NOT NULL THEN 1 ELSE 0 END), 0)
		FROM trial WHERE exp_id = ?`)
	if err := db.QueryRow(q, exp).Scan(&count, &succeeded, &unfinished, &owned); err != nil {
		t.Fatal(err)
	}
	if count != n || succeeded != n || unfinished != 0 || owned != 0 {
		t.Errorf("%d trials stored (want %d), %d succeeded, %d unfinished, %d still owned", count, n, succeeded, unfinished, owned)
	}
	var ids, lo, hi int
	if err := db.QueryRow(rebind(`SELECT COUNT(DISTINCT trial_id), MIN(trial_id), MAX(trial_id) FROM trial WHERE exp_id = ?`), exp).Scan(&ids, &lo, &hi); err != nil {
		t.Fatal(err)
	}
	if ids != n || lo != 1 || hi != n {
		t.Errorf("trial ids: %d distinct in [%d, %d], want 1..%d", ids, lo, hi, n)
	}
	rows, err := db.Query(rebind(`SELECT t.trial_id, COUNT(r.metric_id) FROM trial t LEFT JOIN trial_result r
		ON r.exp_id = t.exp_id AND r.trial_id = t.trial_id AND r.metric_id = 'score' WHERE t.exp_id = ? GROUP BY t.trial_id`), exp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, results int
		if err := rows.Scan(&id, &results); err != nil {
			t.Fatal(err)
		}
		if results != 1 {
			t.Errorf("trial %d has %d score results, want exactly 1", id, results)
		}
	}
}

// TestChaosSQLite: 100 trials on 4 runners; bench is killed with SIGKILL
// at random moments 10 times and restarted each time. In the end exactly
// 100 trials are stored, each with its result once, none left running.
func TestChaosSQLite(t *testing.T) {
	const n = 100
	dir := chaosExperiment(t, n, "0.0$(( (xv % 9) + 1 ))")
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "C",
		"--num_trial_runners", "4", "--no-progress", "--no-teardown"}
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 1))
	starts := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "started"))
		return strings.Count(string(b), "\n")
	}
	for kill := 0; kill < 10; kill++ {
		before := starts()
		cmd := startBench(t, dir, tmp, "killed", args...)
		// Kill it at a random moment once it runs trials (a loaded machine
		// may take a while to start bench; a kill before that tests
		// nothing).
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		deadline := time.Now().Add(60 * time.Second)
		for starts() == before && time.Now().Before(deadline) {
			select {
			case <-exited:
			case <-time.After(10 * time.Millisecond):
				continue
			}
			break
		}
		select {
		case <-exited: // finished every trial before it was killed
		case <-time.After(time.Duration(rng.IntN(400)) * time.Millisecond):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
	}
	// The final run shares the killed runs' TMPDIR: it removes the temp
	// folders they left.
	var out bytes.Buffer
	final := startBenchIn(t, dir, tmp, &out, args...)
	code := waitExitOrStop(t, final, 5*time.Minute, "the final run", &out)
	r := result{code: code, stderr: out.String()}
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "killed.log"))
		t.Fatalf("final run: exit %d\n%s%s\nlog of the killed runs:\n%s", r.code, r.stdout, r.stderr, log)
	}
	// The kills hit running trials: some started more than once.
	started, _ := os.ReadFile(filepath.Join(dir, "started"))
	if lines := strings.Count(string(started), "\n"); lines <= n {
		t.Errorf("%d trial starts for %d trials: no kill interrupted a trial", lines, n)
	}
	if !strings.Contains(r.stderr, "resuming") {
		t.Errorf("the final run did not resume: %s", r.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "bench-*")); len(left) > 0 {
		t.Errorf("%d temp folders of killed runs left behind: %v", len(left), left)
	}
	db, err := dbsql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkChaos(t, db, func(q string) string { return q }, "C", n)
}

// freshPostgresURL creates a database of its own on the test server and
// returns a storage config file for it.
func freshPostgresStorage(t *testing.T, dir string) (string, *dbsql.DB) {
	t.Helper()
	admin := testenv.Get(t, "BENCH_TEST_PG_URL")
	db, err := dbsql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bench_chaos_" + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	db.Close()
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	t.Cleanup(func() {
		db, err := dbsql.Open("pgx", admin)
		if err == nil {
			_, _ = db.ExecContext(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
			db.Close()
		}
	})
	write(t, dir, "storage.jsonc", fmt.Sprintf(`{"class": "mlos_bench.storage.sql.storage.SqlStorage",
		"config": {"drivername": "postgresql", "host": %q, "port": %s, "database": %q, "username": %q}}`,
		u.Hostname(), u.Port(), name, u.User.Username()), 0o644)
	edb, err := dbsql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edb.Close() })
	return "storage.jsonc", edb
}

// TestChaosPostgres: a driver and two workers share an experiment in
// PostgreSQL; one worker is killed with SIGKILL again and again (and
// restarted). In the end exactly the planned trials are stored, each with
// its result once, none left running.
func TestChaosPostgres(t *testing.T) {
	const n = 80
	dir := chaosExperiment(t, n, "0.$(( (xv % 5) + 2 ))")
	st, db := freshPostgresStorage(t, dir)
	chaosShared(t, dir, st, db, func(q string) string {
		for i := 1; strings.Contains(q, "?"); i++ {
			q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
		}
		return q
	}, "P", n)
}

// TestChaosMySQL: the same as TestChaosPostgres on MySQL (MariaDB), with
// the password coming from the environment through a globals file.
func TestChaosMySQL(t *testing.T) {
	const n = 80
	dir := chaosExperiment(t, n, "0.$(( (xv % 5) + 2 ))")
	st, db := freshMySQLStorage(t, dir)
	chaosShared(t, dir, st, db, func(q string) string { return q }, "M", n, "--globals", "mysql-globals.jsonc")
}

// freshMySQLStorage creates a database of its own on the MySQL test server
// and returns a storage config file for it. Its password is a placeholder:
// the "password" global of mysql-globals.jsonc overrides it with the
// environment's BENCH_TEST_MYSQL_PASSWORD, set for the bench processes the
// test starts.
func freshMySQLStorage(t *testing.T, dir string) (string, *dbsql.DB) {
	t.Helper()
	u, err := url.Parse(testenv.Get(t, "BENCH_TEST_MYSQL_URL"))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.ParseTime = u.User.Username(), pw, "tcp", u.Host, true
	admin := mc.FormatDSN()
	db, err := dbsql.Open("mysql", admin)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bench_chaos_" + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Cleanup(func() {
		db, err := dbsql.Open("mysql", admin)
		if err == nil {
			_, _ = db.ExecContext(context.Background(), "DROP DATABASE "+name)
			db.Close()
		}
	})
	t.Setenv("BENCH_TEST_MYSQL_PASSWORD", pw)
	write(t, dir, "storage.jsonc", fmt.Sprintf(`{"class": "mlos_bench.storage.sql.storage.SqlStorage",
		"config": {"drivername": "mysql+mysqlconnector", "host": %q, "port": %s, "database": %q, "username": %q,
			"password": "set-in-globals"}}`,
		u.Hostname(), u.Port(), name, u.User.Username()), 0o644)
	write(t, dir, "mysql-globals.jsonc", `{"password": "$BENCH_TEST_MYSQL_PASSWORD"}`, 0o644)
	mc.DBName = name
	edb, err := dbsql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { edb.Close() })
	return "storage.jsonc", edb
}

// chaosShared runs a driver and two workers on experiment exp (n trials)
// in the shared storage config st of dir, killing one worker with SIGKILL
// again and again (and restarting it), and checks the stored trials with
// db (rebind adapts the placeholders); extra are more options for every
// process. No process may log the password of BENCH_TEST_MYSQL_PASSWORD.
func chaosShared(t *testing.T, dir, st string, db *dbsql.DB, rebind func(string) string, exp string, n int, extra ...string) {
	tmp := t.TempDir()
	common := append([]string{"--environment", "env.jsonc", "--storage", st, "--experiment_id", exp,
		"--num_trial_runners", "2", "--no-progress", "--no-teardown", "--trial_lease", "2s"}, extra...)
	driver := startBench(t, dir, tmp, "driver", append([]string{"run", "--optimizer", "opt.jsonc"}, common...)...)
	// Workers join once the driver has created the experiment (on a new
	// database it first creates the tables, which takes MySQL a while).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var found int
		err := db.QueryRow(rebind(`SELECT COUNT(*) FROM experiment WHERE exp_id = ?`), exp).Scan(&found)
		if err == nil && found == 1 {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(tmp, "driver.log"))
			t.Fatalf("the driver did not create experiment %s in a minute (%v):\n%s", exp, err, log)
		}
	}
	steady := startBench(t, dir, tmp, "steady", append([]string{"worker"}, common...)...)
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 2))
	done := make(chan error, 1)
	go func() { done <- driver.Wait() }()
	kills, finished := 0, false
	for kills < 8 && !finished {
		w := startBench(t, dir, tmp, "killed", append([]string{"worker"}, common...)...)
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		_ = w.Process.Signal(syscall.SIGKILL)
		_ = w.Wait()
		kills++
		select {
		case err := <-done:
			done <- err
			finished = true
		default:
		}
	}
	if kills < 5 {
		t.Errorf("the driver finished after %d kills of a worker; the test wants at least 5", kills)
	}
	select {
	case err := <-done:
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(tmp, "driver.log"))
			t.Fatalf("driver: %v\n%s", err, log)
		}
	case <-time.After(3 * time.Minute):
		driver.Process.Kill()
		t.Fatal("driver did not finish")
	}
	if err := steady.Wait(); err != nil {
		log, _ := os.ReadFile(filepath.Join(tmp, "steady.log"))
		t.Fatalf("worker: %v\n%s", err, log)
	}
	checkChaos(t, db, rebind, exp, n)
	if pw := os.Getenv("BENCH_TEST_MYSQL_PASSWORD"); pw != "" {
		for _, name := range []string{"driver", "steady", "killed"} {
			if log, _ := os.ReadFile(filepath.Join(tmp, name+".log")); bytes.Contains(log, []byte(pw)) {
				t.Errorf("the %s log shows the storage password", name)
			}
		}
	}
	// Both the driver and the steady worker ran trials.
	for _, name := range []string{"driver", "steady"} {
		log, _ := os.ReadFile(filepath.Join(tmp, name+".log"))
		m := regexp.MustCompile(`(\d+) run now`).FindSubmatch(log)
		if m == nil || string(m[1]) == "0" {
			t.Errorf("%s ran no trial:\n%s", name, log)
		}
	}
}
