package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/ssh"
)

// End-to-end tests of the SSH pool engine: the real bench binary drives
// trials on two real sshd (scripts/testenv/sshd.sh) on loopback, logging
// in as the fixture's unprivileged user. The hosts get the driver's bench
// binary with upload_bench; they share the driver's files (same machine),
// as hosts prepared with the same tree would.

type sshPoolEnv struct {
	host, user, key, knownHosts string
	port, port2                 int
	home                        string // the login's home on the hosts
	workdir                     string // relative to home, fresh per test
	svc                         *ssh.HostService
}

func getSSHPoolEnv(t *testing.T) *sshPoolEnv {
	t.Helper()
	e := &sshPoolEnv{
		host:       testenv.Get(t, "BENCH_TEST_SSH_HOST"),
		user:       testenv.Get(t, "BENCH_TEST_SSH_USER"),
		key:        testenv.Get(t, "BENCH_TEST_SSH_KEY"),
		knownHosts: testenv.Get(t, "BENCH_TEST_SSH_KNOWN_HOSTS"),
	}
	var err error
	if e.port, err = strconv.Atoi(testenv.Get(t, "BENCH_TEST_SSH_PORT")); err != nil {
		t.Fatal(err)
	}
	if e.port2, err = strconv.Atoi(testenv.Get(t, "BENCH_TEST_SSH_PORT2")); err != nil {
		t.Fatal(err)
	}
	cfg := ssh.DefaultConfig()
	cfg.KnownHostsPath, cfg.PrivKeyPath, cfg.Username, cfg.Port = e.knownHosts, e.key, e.user, e.port
	if e.svc, err = ssh.NewHostService(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.svc.Close() })
	h, err := e.svc.Host(services.Params{"ssh_hostname": e.host})
	if err != nil {
		t.Fatal(err)
	}
	if e.home, err = h.Home(context.Background()); err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	e.workdir = ".bench/e2e-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { _ = h.RemoveAll(context.Background(), path.Join(e.home, e.workdir)) })
	return e
}

// sshPoolExperiment is chaosExperiment readable and writable by the hosts'
// login, with an engine config for the given hosts (port and slots).
func sshPoolExperiment(t *testing.T, e *sshPoolEnv, trials int, sleep string, knownHosts string, hosts ...[2]int) string {
	dir := chaosExperiment(t, trials, sleep)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var hs []map[string]any
	for i, h := range hosts {
		hs = append(hs, map[string]any{"host": fmt.Sprintf("%s@%s:%d", e.user, e.host, h[0]), "key_file": e.key,
			"slots": h[1], "workdir": fmt.Sprintf("%s/h%d", e.workdir, i+1)})
	}
	cfg, _ := json.Marshal(map[string]any{"class": "bench.engines.SSHPoolEngine", "config": map[string]any{
		"hosts": hs, "known_hosts_file": knownHosts, "upload_bench": true,
		"poll_interval": "100ms", "lost_after": "3s", "max_host_failures": 2, "host_cooldown": "10m",
	}})
	write(t, dir, "engine.jsonc", string(cfg), 0o644)
	return dir
}

// engineJobHosts returns each trial's engine, number of submissions and
// job host (trials that reused another's result left out).
func engineJobHosts(t *testing.T, dir, exp string) map[int]string {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT trial_id, COALESCE(engine, ''), COALESCE(engine_job, '{}'), COALESCE(engine_submits, 0) FROM trial
		WHERE exp_id = ? AND reused_trial_id IS NULL`, exp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var id, n int
		var eng, job string
		if err := rows.Scan(&id, &eng, &job, &n); err != nil {
			t.Fatal(err)
		}
		var ref struct{ Host string }
		_ = json.Unmarshal([]byte(job), &ref)
		out[id] = fmt.Sprintf("%s/%d@%s", eng, n, ref.Host)
	}
	return out
}

// TestSSHPoolKillAndReattach: trials run on two SSH hosts (2 slots each);
// bench is SIGKILLed while jobs run and started again. The new bench
// re-attaches to the running jobs: every trial's script ran once, every
// trial was submitted once and is stored once, SUCCEEDED, on both hosts.
func TestSSHPoolKillAndReattach(t *testing.T) {
	e := getSSHPoolEnv(t)
	const n = 8
	dir := sshPoolExperiment(t, e, n, "1.5", e.knownHosts, [2]int{e.port, 2}, [2]int{e.port2, 2})
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "SP", "--no-progress"}
	killOnceStarted(t, dir, tmp, 3, args...)
	r := runBench(t, dir, append(args, "--log_level", "INFO")...)
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Fatalf("restarted bench: exit %d\n%s%s\nfirst run:\n%s", r.code, r.stdout, r.stderr, log)
	}
	if !strings.Contains(r.stderr, "re-attaching") {
		t.Errorf("the restarted bench did not say it re-attached:\n%s", r.stderr)
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "SP")
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d", len(rows), n)
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	for id, runs := range startedCounts(t, dir) {
		if runs != 1 {
			t.Errorf("trial %s ran %d times", id, runs)
		}
	}
	hosts := map[string]int{}
	for id, job := range engineJobHosts(t, dir, "SP") {
		eng, host, _ := strings.Cut(job, "@")
		if eng != "ssh/1" {
			t.Errorf("trial %d: engine job %s, want ssh/1 (submitted once)", id, job)
		}
		hosts[host]++
	}
	if len(hosts) != 2 {
		t.Errorf("trials per host %v, want both hosts used", hosts)
	}
}

// TestSSHPoolKillBeforeRecord: bench is SIGKILLed after starting jobs on
// the hosts but before recording them with their trials (the window
// between Submit and the trial's engine job being stored; the test
// clears the recorded jobs, as a kill inside that window leaves them).
// The restarted bench, with other launcher arguments (a log level),
// submits those trials again: the SSH pool finds each run on its host
// and re-attaches to it, and every trial's script runs once.
func TestSSHPoolKillBeforeRecord(t *testing.T) {
	e := getSSHPoolEnv(t)
	const n = 6
	dir := sshPoolExperiment(t, e, n, "2", e.knownHosts, [2]int{e.port, 2}, [2]int{e.port2, 2})
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "SR", "--no-progress"}
	killOnceStarted(t, dir, tmp, 4, args...)
	first := startedCounts(t, dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	// The unfinished trials with a recorded job, and of them those whose
	// script had started: each must be re-attached to.
	rows, err := db.Query(`SELECT trial_id FROM trial WHERE exp_id = 'SR' AND ts_end IS NULL AND engine_job IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	var cleared, startedCleared int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		cleared++
		if first[strconv.Itoa(id)] > 0 {
			startedCleared++
		}
	}
	_ = rows.Close()
	if _, err := db.Exec(`UPDATE trial SET engine = NULL, engine_job = NULL, engine_request = NULL, engine_submits = NULL
		WHERE exp_id = 'SR' AND ts_end IS NULL AND engine_job IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if startedCleared < 3 {
		t.Fatalf("%d unfinished trials with a recorded job had started at the kill (of %d), want at least 3", startedCleared, cleared)
	}
	r := runBench(t, dir, append(args, "--log_level", "INFO")...)
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Fatalf("restarted bench: exit %d\n%s%s\nfirst run:\n%s", r.code, r.stdout, r.stderr, log)
	}
	stored := trialRows(t, filepath.Join(dir, "bench.sqlite"), "SR")
	if len(stored) != n {
		t.Fatalf("%d trials stored, want %d", len(stored), n)
	}
	for id, st := range stored {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	for id, runs := range startedCounts(t, dir) {
		if runs != 1 {
			t.Errorf("trial %s ran %d times (started before the kill: %v)\n%s", id, runs, first, r.stderr)
		}
	}
	if got := strings.Count(r.stderr, "re-attaching to it"); got < startedCleared {
		t.Errorf("the SSH pool re-attached to %d runs, want at least %d (the unfinished trials started before the kill)\n%s", got, startedCleared, r.stderr)
	}
	for id, job := range engineJobHosts(t, dir, "SR") {
		if eng, _, _ := strings.Cut(job, "@"); eng != "ssh/1" {
			t.Errorf("trial %d: engine job %s, want ssh/1 (submitted once)", id, job)
		}
	}
}

// TestSSHPoolHostGoesAway: one of the two hosts goes away in the middle
// of the experiment (its sshd and the trials running there are killed).
// Its trials are found lost, relaunched with the same request on the
// other host, and every trial is stored once, SUCCEEDED.
func TestSSHPoolHostGoesAway(t *testing.T) {
	e := getSSHPoolEnv(t)
	own := startPrivateSshd(t, e)
	const n = 8
	dir := sshPoolExperiment(t, e, n, "2", own.knownHosts, [2]int{own.port, 2}, [2]int{e.port2, 2})
	tmp := t.TempDir()
	cmd := startBench(t, dir, tmp, "bench", "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "GA", "--no-progress", "--log_level", "INFO")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	benchLog := func() string { b, _ := os.ReadFile(filepath.Join(tmp, "bench.log")); return string(b) }

	// Wait for two trials running on the host that goes away.
	h1 := filepath.Join(e.home, e.workdir, "h1")
	running := func() []string {
		var out []string
		runs, _ := filepath.Glob(filepath.Join(h1, "*.run"))
		for _, r := range runs {
			if _, err := os.Stat(filepath.Join(r, "exit")); err == nil {
				continue
			}
			if p, err := os.ReadFile(filepath.Join(r, "pgid")); err == nil && len(p) > 0 {
				out = append(out, r)
			}
		}
		return out
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(running()) < 2 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no two trials ran on the first host:\n%s", benchLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The host goes away: its sshd (and every connection) and the
	// trials' processes.
	own.kill()
	killed := map[string]bool{}
	for _, r := range running() {
		p, _ := os.ReadFile(filepath.Join(r, "pgid"))
		pgid, err := strconv.Atoi(strings.TrimSpace(string(p)))
		if err != nil || pgid <= 1 {
			continue
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		killed[strings.TrimSuffix(filepath.Base(r), ".0.run")] = true
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bench: %v\n%s", err, benchLog())
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("bench did not finish after a host went away:\n%s", benchLog())
	}
	log := benchLog()
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "GA")
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d\n%s", len(rows), n, log)
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s\n%s", id, st, log)
		}
	}
	live := fmt.Sprintf("%s@%s:%d", e.user, e.host, e.port2)
	relaunched := 0
	for id, job := range engineJobHosts(t, dir, "GA") {
		name := fmt.Sprintf("bench-GA-%d", id)
		if killed[name] {
			relaunched++
			if job != "ssh/2@"+live {
				t.Errorf("trial %d was killed on the host that went away; its job is %s, want ssh/2@%s", id, job, live)
			}
		}
	}
	if relaunched < 2 {
		t.Errorf("%d killed trials found in storage, want at least 2 (killed: %v)", relaunched, killed)
	}
	if !strings.Contains(log, "setting a host aside") {
		t.Errorf("bench did not log that it set the host aside:\n%s", log)
	}
}

// privateSshd is an sshd of the test's own, to be killed with its
// connections, standing in for a host that goes away.
type privateSshd struct {
	t          *testing.T
	dir        string
	port       int
	knownHosts string
	cmd        *exec.Cmd
}

func startPrivateSshd(t *testing.T, e *sshPoolEnv) *privateSshd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("starting an sshd of the test's own needs root")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "hostkey")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	pubKey, err := os.ReadFile(e.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "authorized_keys", string(pubKey), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	write(t, dir, "sshd_config", fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %[2]s/hostkey
PidFile none
AuthorizedKeysFile %[2]s/authorized_keys
AllowUsers %[3]s
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
`, port, dir, e.user), 0o644)
	pub, err := os.ReadFile(filepath.Join(dir, "hostkey.pub"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	kh := filepath.Join(dir, "known_hosts")
	// The pool's known_hosts: this host and the fixture's second host.
	fixture, err := os.ReadFile(e.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s %s\n%s", port, f[0], f[1], fixture), 0o644)
	s := &privateSshd{t: t, dir: dir, port: port, knownHosts: kh}
	s.cmd = exec.Command("/usr/sbin/sshd", "-D", "-f", filepath.Join(dir, "sshd_config"), "-E", filepath.Join(dir, "sshd.log"))
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = c.Close()
			break
		}
		if i > 200 {
			t.Fatalf("sshd on port %d did not come up", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// kill ends the sshd and every process it started (the connections'
// processes), as a host going away ends them.
func (s *privateSshd) kill() {
	if s.cmd == nil {
		return
	}
	pid := s.cmd.Process.Pid
	for _, p := range descendants(pid) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// descendants lists the processes below pid (from /proc).
func descendants(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		p, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// killOnceStarted starts bench with args in dir (its log in tmp), waits
// until the scripts of k trials have started (startedCounts), and
// SIGKILLs it.
func killOnceStarted(t *testing.T, dir, tmp string, k int, args ...string) {
	t.Helper()
	cmd := startBench(t, dir, tmp, "bench", args...)
	deadline := time.Now().Add(90 * time.Second)
	for len(startedCounts(t, dir)) < k {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
			t.Fatalf("trials did not start:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
}
