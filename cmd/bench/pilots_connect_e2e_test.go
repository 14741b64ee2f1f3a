package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/kubernetes/kubetest"
)

// bench pilots --connect URL: pilots that run network workers (bench
// worker --connect URL), which pull trials from a driver's server and need
// no database.

// TestPilotsConnectErrors: the combinations that cannot work are refused
// with a usage error before any engine is asked.
func TestPilotsConnectErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--connect", "http://127.0.0.1:1", "--token-file", "t", "--experiment", "E"}, "exclude each other"},
		{[]string{"--connect", "http://127.0.0.1:1"}, "needs --token-file"},
		{[]string{"--connect", "ftp://127.0.0.1:1", "--token-file", "t"}, "http:// or https://"},
		{[]string{"--connect", "127.0.0.1:1", "--token-file", "t"}, "http:// or https://"},
		{[]string{"--connect", "http://u:hunter2@127.0.0.1:1", "--token-file", "t"}, "carries credentials"},
		{[]string{"--connect", "http://127.0.0.1:1", "--token-file", "env:1BAD"}, "environment variable name"},
		{[]string{"--experiment", "E", "--token-file", "t"}, "go with --connect"},
		{[]string{"--experiment", "E", "--tls-ca", "ca.pem"}, "go with --connect"},
		{[]string{"--connect"}, "--connect wants a value"},
		{nil, "--experiment ID (the experiment the workers join) or --connect URL"},
	} {
		r := runBench(t, dir, append([]string{"pilots", "--count", "2"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("bench pilots %v: exit %d, want 2 and %q:\n%s", c.args, r.code, c.want, r.stderr)
		}
		if strings.Contains(r.stderr, "hunter2") {
			t.Errorf("bench pilots %v: the URL's password reached the error:\n%s", c.args, r.stderr)
		}
	}
	help := runBench(t, dir, "pilots", "--help")
	if help.code != 0 || !strings.Contains(help.stdout, "--connect URL --token-file FILE") || !strings.Contains(help.stdout, "env:NAME") {
		t.Errorf("bench pilots --help: exit %d\n%s", help.code, help.stdout)
	}
}

// connectDriver starts a driver (bench run --serve) of an experiment of n
// trials that runs none itself, and returns it, its log folder and its
// URL.
func connectDriver(t *testing.T, dir, exp string) (*os.Process, func(), string, string) {
	tmp := t.TempDir()
	addr := freePort(t)
	dargs, _ := netSetup(t, dir, addr, exp)
	driver := startBench(t, dir, tmp, "driver", dargs...)
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment "+exp) })
	return driver.Process, func() { waitOK(t, driver, tmp, "driver") }, tmp, "http://" + addr
}

// checkConnectTrials: every trial of exp is stored SUCCEEDED, each run
// once.
func checkConnectTrials(t *testing.T, dir, exp string, n int) {
	t.Helper()
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), exp)
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d", len(rows), n)
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	for id, c := range startedCounts(t, dir) {
		if c != 1 {
			t.Errorf("trial %s ran %d times", id, c)
		}
	}
}

// storedBy sums the "Worker: N trials run, M stored" lines of worker logs.
func storedBy(logs []string) int {
	total := 0
	for _, l := range logs {
		for _, line := range strings.Split(l, "\n") {
			var run, stored, rejected int
			if _, err := fmt.Sscanf(strings.TrimSpace(line), "Worker: %d trials run, %d stored, %d rejected", &run, &stored, &rejected); err == nil {
				total += stored
			}
		}
	}
	return total
}

// TestPilotsConnectLocal: bench pilots --connect on the local engine: two
// detached processes run bench worker --connect with the token file's
// path, run every trial of the served experiment and exit 0 when it is
// over.
func TestPilotsConnectLocal(t *testing.T) {
	const n = 6
	dir := chaosExperiment(t, n, "0.2")
	write(t, dir, "engine.jsonc", `{"class": "bench.engines.LocalEngine", "config": {"max_jobs": 2, "poll_interval": "100ms"}}`, 0o644)
	proc, wait, tmp, url := connectDriver(t, dir, "PL")
	p := runBench(t, dir, "pilots", "--engine", "engine.jsonc", "--count", "2", "--connect", url, "--token-file", "token",
		"--environment", "env.jsonc", "--log_level", "INFO")
	if p.code != 0 || strings.Count(p.stdout, "pid") != 2 {
		_ = proc.Kill()
		t.Fatalf("bench pilots: exit %d\n%s%s\n%s", p.code, p.stdout, p.stderr, readLog(tmp, "driver"))
	}
	if strings.Contains(p.stderr, "loopback") {
		t.Errorf("a loopback warning for the local engine:\n%s", p.stderr)
	}
	wait()
	checkConnectTrials(t, dir, "PL", n)
	logs, _ := filepath.Glob(filepath.Join(dir, ".bench", "jobs", "*", "bench-pilot-connect-*.pilot*.log"))
	if len(logs) != 2 {
		t.Fatalf("pilot logs: %v", logs)
	}
	var texts []string
	for _, l := range logs {
		base := strings.TrimSuffix(l, ".log")
		waitFor(t, "the pilot "+filepath.Base(base)+" to exit", func() bool { _, err := os.Stat(base + ".exit"); return err == nil })
		b, _ := os.ReadFile(l)
		texts = append(texts, string(b))
		if code, _ := os.ReadFile(base + ".exit"); strings.TrimSpace(string(code)) != "0" {
			t.Errorf("pilot %s exited with %s:\n%s", base, code, b)
		}
		if strings.Contains(string(b), "tok-PL-secret") {
			t.Errorf("the token reached %s", l)
		}
	}
	if got := storedBy(texts); got != n {
		t.Errorf("the pilots stored %d trials, want %d:\n%s", got, n, strings.Join(texts, "\n---\n"))
	}
}

// TestKubernetesPilotsConnect: bench pilots --connect on the Kubernetes
// engine, against the real kube-apiserver with kubetest playing the Job
// controller and kubelet: one Indexed Job of two pods, each running bench
// worker --connect URL --token-file env:BENCH_WORKER_TOKEN, the token
// coming from a Secret through the engine's secret_env (never in the Job
// spec). The pods run every trial of the driver's served experiment,
// exit 0 once it is over, and the Job completes.
func TestKubernetesPilotsConnect(t *testing.T) {
	const n = 6
	logDir := t.TempDir()
	f := kubetest.Start(t, kubetest.Options{Bench: benchBin, LogDir: logDir})
	dir := chaosExperiment(t, n, "0.2")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const token = "tok-KP-secret" // netSetup's token for experiment KP
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "bench-worker-token"},
		"stringData": map[string]any{"token": token}}
	if err := f.Admin.Do(t.Context(), "POST", "/api/v1/namespaces/"+f.Namespace+"/secrets", nil, secret, nil); err != nil {
		t.Fatal(err)
	}
	kubeEngineFile(t, dir, f, 2, fmt.Sprintf(`, "workdir": %q,
		"secret_env": [{"name": "BENCH_WORKER_TOKEN", "secret": "bench-worker-token", "key": "token"}]`, dir))
	proc, wait, tmp, url := connectDriver(t, dir, "KP")
	p := runBench(t, dir, "pilots", "--engine", "engine.jsonc", "--count", "2", "--connect", url,
		"--token-file", "env:BENCH_WORKER_TOKEN", "--environment", "env.jsonc", "--log_level", "INFO")
	refs := strings.Fields(p.stdout)
	if p.code != 0 || len(refs) != 2 {
		_ = proc.Kill()
		t.Fatalf("bench pilots: exit %d\n%s%s\n%s", p.code, p.stdout, p.stderr, readLog(tmp, "driver"))
	}
	// (The played kubelet runs the pods here; a real cluster's would not
	// reach a loopback URL, which bench pilots warns about.)
	if !strings.Contains(p.stderr, "is a loopback address") || !strings.Contains(p.stderr, "started 2 pilot workers of "+url) {
		t.Errorf("bench pilots' messages:\n%s", p.stderr)
	}
	job := jobOf(t, engines.Ref(refs[0]))
	if job2 := jobOf(t, engines.Ref(refs[1])); job2 != job {
		t.Errorf("two Jobs (%s, %s), want one Indexed Job", job, job2)
	}
	var raw json.RawMessage
	if err := f.Object(t.Context(), "/apis/batch/v1/namespaces/"+f.Namespace+"/jobs/"+job, &raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), token) {
		t.Errorf("the token is in the Job's spec:\n%s", raw)
	}
	var j struct {
		Spec struct {
			CompletionMode string `json:"completionMode"`
			Completions    int    `json:"completions"`
			Template       struct {
				Spec struct {
					Containers []struct {
						Command []string `json:"command"`
						Env     []struct {
							Name      string `json:"name"`
							ValueFrom struct {
								SecretKeyRef struct{ Name, Key string } `json:"secretKeyRef"`
							} `json:"valueFrom"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	if j.Spec.CompletionMode != "Indexed" || j.Spec.Completions != 2 || len(j.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("pilots' Job spec: %s", raw)
	}
	c := j.Spec.Template.Spec.Containers[0]
	cmdline := strings.Join(c.Command, " ")
	if !strings.HasPrefix(cmdline, "bench worker --connect "+url+" --token-file env:BENCH_WORKER_TOKEN ") || strings.Contains(cmdline, "--experiment") {
		t.Errorf("pilot command: %q", cmdline)
	}
	fromSecret := false
	for _, e := range c.Env {
		if e.Name == "BENCH_WORKER_TOKEN" && e.ValueFrom.SecretKeyRef.Name == "bench-worker-token" && e.ValueFrom.SecretKeyRef.Key == "token" {
			fromSecret = true
		}
	}
	if !fromSecret {
		t.Errorf("BENCH_WORKER_TOKEN does not come from the Secret: %s", raw)
	}

	wait()
	checkConnectTrials(t, dir, "KP", n)
	// The pilots exit 0 once the experiment is over: the Indexed Job
	// completes (both indexes succeeded).
	var st struct {
		Status struct {
			Succeeded  int `json:"succeeded"`
			Conditions []struct {
				Type, Status string
			} `json:"conditions"`
		} `json:"status"`
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := f.Object(t.Context(), "/apis/batch/v1/namespaces/"+f.Namespace+"/jobs/"+job, &st); err != nil {
			t.Fatal(err)
		}
		complete := false
		for _, c := range st.Status.Conditions {
			if c.Type == "Failed" && c.Status == "True" {
				t.Fatalf("the pilots' Job failed: %+v", st.Status)
			}
			complete = complete || (c.Type == "Complete" && c.Status == "True")
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pilots' Job did not complete after the experiment ended: %+v", st.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.Status.Succeeded != 2 || f.Cluster.PodsCreated(job) != 2 {
		t.Errorf("succeeded %d, pods created %d: want 2 and 2", st.Status.Succeeded, f.Cluster.PodsCreated(job))
	}
	logs, _ := filepath.Glob(filepath.Join(logDir, job+"-*.log"))
	var texts []string
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		texts = append(texts, string(b))
		if strings.Contains(string(b), token) {
			t.Errorf("the token reached the pod log %s", l)
		}
	}
	if got := storedBy(texts); got != n {
		t.Errorf("the pilot pods stored %d trials, want %d (%d pod logs):\n%s", got, n, len(logs), strings.Join(texts, "\n---\n"))
	}
	for _, name := range []string{"driver"} {
		if strings.Contains(readLog(tmp, name), token) {
			t.Errorf("the token reached %s's log", name)
		}
	}
}

// TestReadAccessToken: --token-file is a file or env:NAME; an unset or
// empty variable and a bad name are clear errors that hold no token.
func TestReadAccessToken(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tok", "  from-file\n", 0o600)
	if tok, err := readAccessToken(filepath.Join(dir, "tok")); err != nil || tok != "from-file" {
		t.Errorf("file: %q %v", tok, err)
	}
	t.Setenv("BENCH_TEST_WORKER_TOKEN", " from-env\n")
	if tok, err := readAccessToken("env:BENCH_TEST_WORKER_TOKEN"); err != nil || tok != "from-env" {
		t.Errorf("env: %q %v", tok, err)
	}
	t.Setenv("BENCH_TEST_WORKER_TOKEN", "")
	if _, err := readAccessToken("env:BENCH_TEST_WORKER_TOKEN"); err == nil || !strings.Contains(err.Error(), "unset or empty") {
		t.Errorf("empty variable: %v", err)
	}
	if _, err := readAccessToken("env:A-B"); err == nil || !strings.Contains(err.Error(), "environment variable name") {
		t.Errorf("bad name: %v", err)
	}
}
