package sshpool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/internal/testutil"
)

// The test binary doubles as a fake bench for upload_bench: run as
// `exec-trial --request R --outcome O` it acts as fakeBench does.
func TestMain(m *testing.M) {
	if len(os.Args) == 6 && os.Args[1] == "exec-trial" {
		req, err := os.ReadFile(os.Args[3])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("test binary ran request %s\n", req)
		if err := os.WriteFile(os.Args[5], []byte(`{"status":"SUCCEEDED","results":{"score":2}}`), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeBench stands in for `bench exec-trial` on the hosts: it logs its
// run to runs.log next to the request, sleeps for the request's "sleep"
// seconds and writes a SUCCEEDED outcome. As `worker`, it logs and exits.
const fakeBench = `#!/bin/sh
case "$1" in
worker) echo "pilot $*" >>"$(dirname "$0")/pilots.log"; echo "pilot running"; exit 0;;
exec-trial) ;;
*) echo "fake bench: unexpected $*" >&2; exit 2;;
esac
req=$3 out=$5
id=$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$req")
s=$(sed -n 's/.*"sleep": *\([0-9.]*\).*/\1/p' "$req")
echo "$id $(hostname) $$" >>"$(dirname "$req")/runs.log"
echo "fake bench: running $id"
echo "to stderr" >&2
[ -n "$s" ] && sleep "$s"
printf '{"status":"SUCCEEDED","results":{"score":1}}' >"$out.tmp" && mv "$out.tmp" "$out"
echo "fake bench: done $id"
`

const wantOutcome = `{"status":"SUCCEEDED","results":{"score":1}}`

type sshEnv struct {
	host, user, key, knownHosts string
	port, port2                 int
}

func getEnv(t *testing.T) sshEnv {
	t.Helper()
	e := sshEnv{
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
	return e
}

func (e sshEnv) hostAt(port, slots int, workdir string) HostConfig {
	return HostConfig{User: e.user, Host: e.host, Port: port, KeyFile: e.key, Slots: slots, WorkDir: workdir}
}

// pool is an engine on the test hosts with a fake bench in a fresh work
// folder per host (both sshd share one login, hence one home).
type pool struct {
	*Engine
	t    *testing.T
	root string // work folder root, relative to the login directory
}

func uniq() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newPool builds an engine on hosts; mod edits the config first. Each
// host's workdir is <root>/h<i>, with a fake bench at <root>/bench.
func newPool(t *testing.T, e sshEnv, hosts []HostConfig, mod ...func(*Config)) *pool {
	t.Helper()
	root := ".bench/sshpool-test-" + uniq()
	for i := range hosts {
		hosts[i].WorkDir = fmt.Sprintf("%s/h%d", root, i+1)
	}
	cfg := Config{Hosts: hosts, KnownHostsFile: e.knownHosts, StrictHostKeyChecking: true, MaxHostFailures: 3,
		HostCooldown: time.Minute, ConnectTimeout: 5 * time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	// A helper engine on the first real host writes the fake bench.
	helper := helperHost(t, e)
	home, err := helper.h.Home(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bench := path.Join(home, root, "bench")
	if err := helper.h.WriteFile(context.Background(), bench, []byte(fakeBench), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Stop the jobs a test left running, then remove their files.
		ctx := context.Background()
		for i := range hosts {
			wd := path.Join(home, root, fmt.Sprintf("h%d", i+1))
			infos, _ := helper.h.ReadDir(ctx, wd)
			for _, fi := range infos {
				if strings.HasSuffix(fi.Name(), ".run") {
					_ = helper.h.KillDetached(ctx, path.Join(wd, fi.Name()))
				}
			}
		}
		_ = helper.h.RemoveAll(ctx, path.Join(home, root))
	})
	common := engines.Common{Bench: bench, PollInterval: 0}
	eng, err := New(cfg, common)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return &pool{Engine: eng, t: t, root: path.Join(home, root)}
}

// helperHost is an engine's host handle on the first test sshd, for
// reading and writing files behind the engine's back.
func helperHost(t *testing.T, e sshEnv) *host {
	t.Helper()
	eng, err := New(Config{Hosts: []HostConfig{e.hostAt(e.port, 1, "")}, KnownHostsFile: e.knownHosts,
		StrictHostKeyChecking: true, MaxHostFailures: 3, ConnectTimeout: 5 * time.Second}, engines.Common{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng.hosts[0]
}

func (p *pool) read(name string) string {
	p.t.Helper()
	h := p.hosts[0]
	b, err := h.h.ReadFile(context.Background(), path.Join(p.root, name), 1<<20)
	if err != nil {
		return ""
	}
	return string(b)
}

func request(id string, sleep float64) []byte {
	return []byte(fmt.Sprintf(`{"id": "%s", "sleep": %g}`, id, sleep))
}

func (p *pool) submit(name string, sleep float64) (engines.Ref, ref) {
	p.t.Helper()
	b, err := p.Submit(context.Background(), engines.Job{Name: name, Request: request(name, sleep), Slot: 1})
	if err != nil {
		p.t.Fatalf("Submit %s: %v", name, err)
	}
	r, err := decodeRef(b)
	if err != nil {
		p.t.Fatal(err)
	}
	return b, r
}

// waitPhase polls until the job's phase satisfies ok.
func (p *pool) waitPhase(b engines.Ref, ok func(engines.Phase) bool, d time.Duration) engines.State {
	p.t.Helper()
	deadline := time.Now().Add(d)
	var last engines.State
	var lastErr error
	for time.Now().Before(deadline) {
		st, err := p.Poll(context.Background(), b)
		if err == nil && ok(st.Phase) {
			return st
		}
		last, lastErr = st, err
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("job %s: timed out; last state %v %q, err %v", b, last.Phase, last.Reason, lastErr)
	return last
}

func isFinal(ph engines.Phase) bool { return ph.Final() }

func TestSubmitPollFetch(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, ""), e.hostAt(e.port2, 1, "")})
	if p.Slots() != 2 {
		t.Errorf("Slots() = %d, want 2", p.Slots())
	}
	b1, r1 := p.submit("bench-x-1", 0.5)
	b2, r2 := p.submit("bench-x-2", 0.5)
	if r1.Host == r2.Host {
		t.Errorf("both jobs went to %s; want one per host", r1.Host)
	}
	for _, r := range []ref{r1, r2} {
		if !strings.HasSuffix(r.Request, ".0.request.json") || !strings.HasSuffix(r.Outcome, ".0.outcome.json") || r.Exit != r.Run+"/exit" {
			t.Errorf("ref %+v: unexpected paths", r)
		}
	}
	for _, b := range []engines.Ref{b1, b2} {
		st := p.waitPhase(b, isFinal, 30*time.Second)
		if st.Phase != engines.Done || st.Progress == "0" {
			t.Errorf("final state %+v, want Done with a non-empty log", st)
		}
		res, err := p.Fetch(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Outcome) != wantOutcome {
			t.Errorf("outcome %q", res.Outcome)
		}
		if !strings.Contains(res.Log, "fake bench: done") || !strings.Contains(res.Log, "to stderr") {
			t.Errorf("log %q", res.Log)
		}
	}
	// The request file is private.
	info, err := p.hosts[0].h.Stat(context.Background(), r1.Request)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("request file: %v, mode %v; want 0600", err, info)
	}
	for _, h := range p.Hosts() {
		if h.Busy != 0 {
			t.Errorf("host %s: %d slots busy after the jobs ended", h.Addr, h.Busy)
		}
	}
}

// TestSlotsPerHost: a host never gets more jobs than its slots; a Submit
// with every slot busy waits for one to free.
func TestSlotsPerHost(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 2, ""), e.hostAt(e.port2, 1, "")})
	perHost := map[string]int{}
	var refs []engines.Ref
	for i := 1; i <= 3; i++ {
		b, r := p.submit(fmt.Sprintf("bench-slots-%d", i), 2)
		perHost[r.Host]++
		refs = append(refs, b)
	}
	h1 := fmt.Sprintf("%s@%s", e.user, net.JoinHostPort(e.host, strconv.Itoa(e.port)))
	h2 := fmt.Sprintf("%s@%s", e.user, net.JoinHostPort(e.host, strconv.Itoa(e.port2)))
	if perHost[h1] != 2 || perHost[h2] != 1 {
		t.Errorf("jobs per host %v, want 2 on %s and 1 on %s", perHost, h1, h2)
	}
	// A fourth Submit waits.
	got := make(chan ref, 1)
	go func() {
		b, err := p.Submit(context.Background(), engines.Job{Name: "bench-slots-4", Request: request("4", 0)})
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		r, _ := decodeRef(b)
		got <- r
	}()
	select {
	case <-got:
		t.Fatal("a fourth job was submitted while all 3 slots were busy")
	case <-time.After(500 * time.Millisecond):
	}
	start := time.Now()
	p.waitPhase(refs[0], isFinal, 30*time.Second) // frees its slot
	select {
	case r := <-got:
		if r.Host == "" {
			t.Fatal("fourth Submit failed")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the fourth job was not submitted %s after a slot freed", time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := p.Submit(ctx, engines.Job{Name: "bench-slots-5", Request: request("5", 0)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Submit with all slots busy: %v, want it to wait until the context ends", err)
	}
}

// TestDroppedConnection closes the pool's connections while a job runs:
// the job goes on, Poll reconnects, the job ran once and is fetched.
func TestDroppedConnection(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, "")})
	b, _ := p.submit("bench-drop-1", 2)
	p.waitPhase(b, func(ph engines.Phase) bool { return ph == engines.Running }, 20*time.Second)
	p.CloseConnections()
	time.Sleep(300 * time.Millisecond)
	p.CloseConnections()
	st := p.waitPhase(b, isFinal, 30*time.Second)
	if st.Phase != engines.Done {
		t.Fatalf("state %+v, want Done", st)
	}
	res, err := p.Fetch(context.Background(), b)
	if err != nil || string(res.Outcome) != wantOutcome {
		t.Fatalf("Fetch: %q, %v", res.Outcome, err)
	}
	if runs := p.read("h1/runs.log"); strings.Count(runs, "bench-drop-1 ") != 1 {
		t.Errorf("runs.log %q: want the job run exactly once", runs)
	}
}

// TestHostAway: a host with nothing listening fails; Submit goes on to
// the other host at once. After max_host_failures in a row the host is set
// aside (logged once). Every usable host failing gives ErrRetryElsewhere;
// no usable host left, a clear error.
func TestHostAway(t *testing.T) {
	e := getEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	logs := captureLogs(t)
	p := newPool(t, e, []HostConfig{e.hostAt(dead, 4, ""), e.hostAt(e.port, 1, "")}, func(c *Config) { c.MaxHostFailures = 2 })
	live := fmt.Sprintf("%s@127.0.0.1:%d", e.user, e.port)
	// The dead host has more free slots: it is tried first, fails, and
	// the job goes to the live host in the same call.
	b1, r1 := p.submit("bench-away-1", 1)
	if r1.Host != live {
		t.Fatalf("job on %s, want %s", r1.Host, live)
	}
	if hs := p.Hosts(); hs[0].Failures != 1 || !hs[0].AsideUntil.IsZero() {
		t.Fatalf("dead host %+v: want 1 failure, not set aside yet", hs[0])
	}
	// With the live host busy, the next job tries the dead host again
	// (now set aside), then waits for the live host's slot.
	got := make(chan ref, 1)
	go func() {
		b, err := p.Submit(context.Background(), engines.Job{Name: "bench-away-2", Request: request("away2", 0)})
		if err != nil {
			t.Errorf("Submit: %v", err)
			close(got)
			return
		}
		r, _ := decodeRef(b)
		got <- r
	}()
	p.waitPhase(b1, isFinal, 30*time.Second)
	select {
	case r := <-got:
		if r.Host != live {
			t.Errorf("second job on %q, want %s", r.Host, live)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the second job was not submitted after the live host's slot freed")
	}
	if n := logs.count("setting a host aside"); n != 1 {
		t.Errorf("%d 'set aside' logs, want 1:\n%s", n, logs.String())
	}
	hs := p.Hosts()
	if hs[0].AsideUntil.IsZero() || !hs[1].AsideUntil.IsZero() {
		t.Errorf("host states %+v: want the dead host set aside, the live one not", hs)
	}

	// Two dead hosts: both fail in one call, the error wraps
	// ErrRetryElsewhere (they are not set aside yet).
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead2 := ln2.Addr().(*net.TCPAddr).Port
	_ = ln2.Close()
	q := newPool(t, e, []HostConfig{e.hostAt(dead, 1, ""), e.hostAt(dead2, 1, "")})
	_, err = q.Submit(context.Background(), engines.Job{Name: "bench-away-3", Request: request("x", 0)})
	if !errors.Is(err, engines.ErrRetryElsewhere) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Submit to two dead hosts: %v, want ErrRetryElsewhere naming the refused connection", err)
	}
	// Only dead hosts, set aside after one failure: a clear error.
	q = newPool(t, e, []HostConfig{e.hostAt(dead, 1, "")}, func(c *Config) { c.MaxHostFailures = 1 })
	for range 2 {
		_, err = q.Submit(context.Background(), engines.Job{Name: "bench-away-4", Request: request("x", 0)})
		if err == nil || errors.Is(err, engines.ErrRetryElsewhere) || !strings.Contains(err.Error(), "no usable host in the SSH pool") ||
			!strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("Submit with every host set aside: %v", err)
		}
	}
}

// TestCancel kills a running job's processes and frees its slot.
func TestCancel(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, "")})
	b, _ := p.submit("bench-cancel-1", 60)
	p.waitPhase(b, func(ph engines.Phase) bool { return ph == engines.Running }, 20*time.Second)
	if err := p.Cancel(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if p.Hosts()[0].Busy != 0 {
		t.Error("the cancelled job still holds its slot")
	}
	st, err := p.Poll(context.Background(), b)
	if err != nil || st.Phase != engines.Lost {
		t.Errorf("after Cancel: %+v, %v; want Lost (the processes are gone, no exit status)", st, err)
	}
	if res, err := p.Fetch(context.Background(), b); err != nil || res.Outcome != nil {
		t.Errorf("Fetch after Cancel: %q, %v; want no outcome", res.Outcome, err)
	}
	// Cancelling again, or a finished job, is not an error.
	if err := p.Cancel(context.Background(), b); err != nil {
		t.Errorf("second Cancel: %v", err)
	}
}

// TestLostJob: a job whose processes are killed behind bench's back
// (OOM killer, host restart) is Lost within the liveness interval, with a
// reason, and its slot is freed.
func TestLostJob(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, "")})
	b, r := p.submit("bench-lost-1", 60)
	p.waitPhase(b, func(ph engines.Phase) bool { return ph == engines.Running }, 20*time.Second)
	res, err := p.hosts[0].h.Command(context.Background(), "kill -KILL -- -$(cat "+engines.ShellQuote(r.Run+"/pgid")+")")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("killing the job: %v %+v", err, res)
	}
	start := time.Now()
	st := p.waitPhase(b, isFinal, 3*livenessEvery)
	if st.Phase != engines.Lost || !strings.Contains(st.Reason, "ended without an exit status") {
		t.Errorf("state %+v, want Lost with its reason", st)
	}
	if d := time.Since(start); d > livenessEvery+3*time.Second {
		t.Errorf("noticed after %s", d)
	}
	if p.Hosts()[0].Busy != 0 {
		t.Error("the lost job still holds its slot")
	}
}

// TestWrongHostKey: a host whose key does not match known_hosts is
// refused with a clear error and set aside at once.
func TestWrongHostKey(t *testing.T) {
	e := getEnv(t)
	data, err := os.ReadFile(e.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	// Give the first host the second host's key.
	var key1, key2 string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		switch f[0] {
		case fmt.Sprintf("[127.0.0.1]:%d", e.port):
			key1 = strings.Join(f[1:], " ")
		case fmt.Sprintf("[127.0.0.1]:%d", e.port2):
			key2 = strings.Join(f[1:], " ")
		}
	}
	if key1 == "" || key2 == "" {
		t.Fatalf("known_hosts %s lacks the two test hosts", e.knownHosts)
	}
	kh := path.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(fmt.Sprintf("[127.0.0.1]:%d %s\n[127.0.0.1]:%d %s\n", e.port, key2, e.port2, key2)), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := captureLogs(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, ""), e.hostAt(e.port2, 1, "")}, func(c *Config) { c.KnownHostsFile = kh })
	_, r := p.submit("bench-key-1", 0)
	if r.Host != fmt.Sprintf("%s@127.0.0.1:%d", e.user, e.port2) {
		t.Errorf("job on %s, want the host whose key verifies", r.Host)
	}
	if hs := p.Hosts(); hs[0].AsideUntil.IsZero() {
		t.Error("the host with the wrong key was not set aside at once")
	}
	if !strings.Contains(logs.String(), "HOST KEY MISMATCH") {
		t.Errorf("the refused host key was not logged:\n%s", logs.String())
	}
	// A pool of that host alone: a clear error.
	q := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, "")}, func(c *Config) { c.KnownHostsFile = kh })
	_, err = q.Submit(context.Background(), engines.Job{Name: "bench-key-2", Request: request("k", 0)})
	if err == nil || !strings.Contains(err.Error(), "HOST KEY MISMATCH") || !strings.Contains(err.Error(), "no usable host") {
		t.Fatalf("Submit: %v, want a host key mismatch and no usable host", err)
	}
}

// TestUploadBench: with upload_bench, a host that lacks the configured
// bench gets this binary (the test binary here, which acts as a fake
// bench), once.
func TestUploadBench(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, "")}, func(c *Config) { c.UploadBench = true })
	p.common.Bench = "/nonexistent/bench"
	for i := 1; i <= 2; i++ {
		b, _ := p.submit(fmt.Sprintf("bench-upload-%d", i), 0)
		if st := p.waitPhase(b, isFinal, 60*time.Second); st.Phase != engines.Done {
			t.Fatalf("state %+v", st)
		}
		res, err := p.Fetch(context.Background(), b)
		if err != nil || string(res.Outcome) != `{"status":"SUCCEEDED","results":{"score":2}}` || !strings.Contains(res.Log, "test binary ran request") {
			t.Fatalf("Fetch: %q %q %v", res.Outcome, res.Log, err)
		}
	}
	if h := p.hosts[0]; !strings.HasPrefix(h.bench, path.Join(p.root, "h1", "bench-")) {
		t.Errorf("far side bench %q, want the uploaded copy in the workdir", h.bench)
	}
}

// TestPilots starts pilots on free slots across hosts.
func TestPilots(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 2, ""), e.hostAt(e.port2, 1, "")})
	if _, err := p.SubmitPilots(context.Background(), "exp", []string{"bench", "worker"}, 4); err == nil {
		t.Error("4 pilots on 3 slots: no error")
	}
	refs, err := p.SubmitPilots(context.Background(), "exp", []string{"/local/bench", "worker", "--storage", "x y"}, 3)
	if err != nil || len(refs) != 3 {
		t.Fatalf("SubmitPilots: %d refs, %v", len(refs), err)
	}
	hosts := map[string]int{}
	for _, b := range refs {
		r, _ := decodeRef(b)
		hosts[r.Host]++
		if st := p.waitPhase(b, isFinal, 30*time.Second); st.Phase != engines.Done {
			t.Errorf("pilot %+v", st)
		}
		res, err := p.Fetch(context.Background(), b)
		if err != nil || !strings.Contains(res.Log, "pilot running") {
			t.Errorf("pilot log %q, %v", res.Log, err)
		}
	}
	if len(hosts) != 2 {
		t.Errorf("pilots per host %v, want both hosts used", hosts)
	}
	if got := p.read("pilots.log"); strings.Count(got, "pilot worker --storage x y\n") != 3 {
		t.Errorf("pilots.log %q", got)
	}
}

// TestReattach: a second engine (a restarted bench) polls and fetches a
// job the first one submitted, and counts its slot.
func TestReattach(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, "")})
	b, _ := p.submit("bench-reattach-1", 1)
	_ = p.Engine.Close()
	cfg := Config{Hosts: []HostConfig{e.hostAt(e.port, 1, path.Join(p.root, "h1"))}, KnownHostsFile: e.knownHosts,
		StrictHostKeyChecking: true, MaxHostFailures: 3, HostCooldown: time.Minute, ConnectTimeout: 5 * time.Second}
	q, err := New(cfg, p.common)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	st, err := q.Poll(context.Background(), b)
	if err != nil || st.Phase.Final() {
		t.Fatalf("Poll after restart: %+v %v", st, err)
	}
	if q.Hosts()[0].Busy != 1 {
		t.Error("the re-attached job does not hold its slot")
	}
	qp := &pool{Engine: q, t: t, root: p.root}
	if st := qp.waitPhase(b, isFinal, 30*time.Second); st.Phase != engines.Done {
		t.Fatalf("%+v", st)
	}
	if res, err := q.Fetch(context.Background(), b); err != nil || string(res.Outcome) != wantOutcome {
		t.Fatalf("Fetch: %q %v", res.Outcome, err)
	}
}

// TestResubmitAfterRestart: a bench killed after starting a job but
// before recording it submits the job again after its restart. A fresh
// engine finds the run on whichever host holds it and re-attaches to it
// when the request runs the same trial (engines.SameTrial; the driver's
// claim may differ): it runs once. A request of another trial (other
// values) under the same job name replaces the run.
func TestResubmitAfterRestart(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, ""), e.hostAt(e.port2, 1, "")})
	req := func(owner string, sleep int, x string) []byte {
		return []byte(fmt.Sprintf(`{"id": "bench-again-1", "sleep": %d, "owner": "%s", "params": {"x": "%s"}}`, sleep, owner, x))
	}
	// Occupy the first host so that the job lands on the second.
	p.submit("bench-again-0", 3)
	b1, err := p.Submit(context.Background(), engines.Job{Name: "bench-again-1", Request: req("driver-1", 1, "1")})
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := decodeRef(b1)
	p.waitPhase(b1, func(ph engines.Phase) bool { return ph >= engines.Running }, 20*time.Second)
	_ = p.Engine.Close()

	hosts := []HostConfig{e.hostAt(e.port, 1, path.Join(p.root, "h1")), e.hostAt(e.port2, 1, path.Join(p.root, "h2"))}
	cfg := Config{Hosts: hosts, KnownHostsFile: e.knownHosts, StrictHostKeyChecking: true, MaxHostFailures: 3,
		HostCooldown: time.Minute, ConnectTimeout: 5 * time.Second}
	q, err := New(cfg, p.common)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	qp := &pool{Engine: q, t: t, root: p.root}
	b2, err := q.Submit(context.Background(), engines.Job{Name: "bench-again-1", Request: req("driver-2", 1, "1")})
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := decodeRef(b2)
	if r2.Host != r1.Host || r2.Run != r1.Run {
		t.Errorf("resubmitted job at %s %s, want the earlier run %s %s", r2.Host, r2.Run, r1.Host, r1.Run)
	}
	if st := qp.waitPhase(b2, isFinal, 30*time.Second); st.Phase != engines.Done {
		t.Fatalf("%+v", st)
	}
	runs := func() int { return strings.Count(qp.read("h2/runs.log")+qp.read("h1/runs.log"), "bench-again-1 ") }
	if n := runs(); n != 1 {
		t.Errorf("the job ran %d times, want once", n)
	}
	// Another request under the same job name (the experiment was
	// recreated with other values): a new run, not the old outcome.
	b3, err := q.Submit(context.Background(), engines.Job{Name: "bench-again-1", Request: req("driver-3", 0, "2")})
	if err != nil {
		t.Fatal(err)
	}
	if st := qp.waitPhase(b3, isFinal, 30*time.Second); st.Phase != engines.Done {
		t.Fatalf("%+v", st)
	}
	if n := runs(); n != 2 {
		t.Errorf("the job ran %d times, want twice (the changed request ran again)", n)
	}
}

// logBuffer captures slog output for a test.
type logBuffer struct{ testutil.SyncBuffer }

func (l *logBuffer) count(sub string) int { return strings.Count(l.String(), sub) }

func captureLogs(t *testing.T) *logBuffer {
	lb := &logBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return lb
}
