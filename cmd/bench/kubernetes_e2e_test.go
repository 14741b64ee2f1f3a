package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/enginetest"
	"github.com/benchtune/bench/engines/kubernetes/kubetest"
	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/trial"
)

// The Kubernetes engine against a real kube-apiserver and etcd
// (scripts/testenv/kube.sh), with the Job controller, the kubelet and the
// garbage collector played by kubetest: each pod's command is the real
// `bench exec-trial`, run as a local process.

// kubeEngineConfig is an engine config for a fixture's namespace.
func kubeEngineConfig(f *kubetest.Fixture) map[string]any {
	return map[string]any{"kubeconfig": f.EngineKubeconfig, "namespace": f.Namespace, "image": "bench:test",
		"service_account": kubetest.TrialServiceAccount, "bench": "bench",
		// Progress is read at each 1 s poll here (default 10 s), so the
		// suite's Progress case, which waits for each report, stays short.
		"progress_interval": "1s"}
}

func kubeFixture(t *testing.T) *kubetest.Fixture {
	return kubetest.Start(t, kubetest.Options{Bench: benchBin, LogDir: t.TempDir()})
}

func jobOf(t *testing.T, r engines.Ref) string {
	t.Helper()
	var x struct {
		Job string `json:"job"`
	}
	if err := json.Unmarshal(r, &x); err != nil || x.Job == "" {
		t.Fatalf("job reference %s: %v", r, err)
	}
	return x.Job
}

func TestEngineSuiteKubernetes(t *testing.T) {
	f := kubeFixture(t)
	base := kubeEngineConfig(f)
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T, dir string, config map[string]any) engines.Engine {
			return newSuiteEngine(t, "bench.engines.KubernetesEngine", dir, merged(base, config))
		},
		// kubectl delete job: the pod is deleted (SIGTERM), the Job is
		// gone: FAILED, so that max_retries runs the trial again.
		CancelOutside: func(t *testing.T, ref engines.Ref) {
			if err := f.DeleteJob(t.Context(), jobOf(t, ref)); err != nil {
				t.Fatal(err)
			}
		},
		OutsideCancel:       trial.FAILED,
		OutsideCancelReason: "deleted",
		TimeLimit:           map[string]any{"active_deadline_seconds": 3},
		TimeLimitWait:       2 * time.Minute,
	})
}

// kubeTrial is a one-trial experiment whose script is run.sh (the
// enginetest layout: env.jsonc in dir, marker files there).
func kubeTrial(t *testing.T, script string) string {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "env.jsonc", `{"name": "k", "class": "mlos_bench.environments.local.LocalEnv",
		"config": {"const_args": {"marker_dir": "`+dir+`"}, "shell_env_params": ["trial_id", "marker_dir"],
			"run": ["run.sh"], "read_results_file": "results.csv"}}`, 0o644)
	write(t, dir, "run.sh", "#!/bin/sh\nset -e\necho \"$trial_id\" >> \"$marker_dir/started\"\n"+script+
		"\nprintf 'metric,value\\nscore,%s\\n' \"$trial_id\" > results.csv\n", 0o755)
	return dir
}

// runKubeTrial runs trial 1 of dir through an engine runner; started is
// called (in a goroutine) once the trial's script has started; progress,
// if given, is the trial's Spec.Progress.
func runKubeTrial(t *testing.T, f *kubetest.Fixture, dir string, extra map[string]any, started func(job string), progress ...func(trial.Progress)) (trial.Outcome, *[]string) {
	t.Helper()
	eng := newSuiteEngine(t, "bench.engines.KubernetesEngine", dir, merged(kubeEngineConfig(f), extra))
	base := engines.Base{Args: []string{"--environment", "env.jsonc"}, Dir: dir, Owner: "k"}
	r := engines.NewRunners(eng, engines.Common{}, base, nil)[0]
	var mu sync.Mutex
	var jobs []string
	spec := schedulers.Spec{ExperimentID: "k", TrialID: 1, Params: map[string]string{}, Attach: func(_ context.Context, h schedulers.Handle) error {
		mu.Lock()
		defer mu.Unlock()
		jobs = append(jobs, jobOf(t, engines.Ref(h.Ref)))
		return nil
	}}
	if len(progress) > 0 {
		spec.Progress = progress[0]
	}
	if started != nil {
		go func() {
			deadline := time.Now().Add(2 * time.Minute)
			for time.Now().Before(deadline) {
				mu.Lock()
				var last string
				if len(jobs) > 0 {
					last = jobs[len(jobs)-1]
				}
				mu.Unlock()
				if b, _ := os.ReadFile(filepath.Join(dir, "started")); len(b) > 0 && last != "" {
					started(last)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	return r.Run(t.Context(), spec), &jobs
}

// TestKubernetesEvictionRetried: a running trial's pod is evicted through
// the Eviction API (the API server gives it the DisruptionTarget
// condition and deletes it; the played kubelet stops bench exec-trial
// with SIGTERM, which writes an outcome that says so and exits 0, so the
// pod Succeeded): the engine sees an interrupted outcome of a disrupted
// pod and has the trial submitted again with the same request: SUCCEEDED,
// two Jobs of one pod each, the script started twice.
func TestKubernetesEvictionRetried(t *testing.T) {
	f := kubeFixture(t)
	dir := kubeTrial(t, `[ -e "$marker_dir/evicted" ] || { touch "$marker_dir/evicted"; sleep 60; }`)
	out, jobs := runKubeTrial(t, f, dir, nil, func(job string) {
		for i := 0; i < 200; i++ {
			if pods := f.Cluster.Pods(job); len(pods) > 0 {
				if err := f.Evict(context.Background(), pods[0]); err != nil {
					t.Errorf("evicting %s: %v", pods[0], err)
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("no running pod of %s to evict", job)
	})
	if out.Status != trial.SUCCEEDED || out.Results["score"] != 1.0 {
		t.Fatalf("outcome %s %v (%s), want SUCCEEDED after the eviction", out.Status, out.Results, out.FailureReason)
	}
	if len(*jobs) != 2 || (*jobs)[0] == (*jobs)[1] {
		t.Fatalf("Jobs submitted: %v, want 2 (the evicted one, then the relaunch)", *jobs)
	}
	for _, j := range *jobs {
		if n := f.Cluster.PodsCreated(j); n != 1 {
			t.Errorf("Job %s: %d pods created, want 1", j, n)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "started")); strings.Count(string(b), "1\n") != 2 {
		t.Errorf("the script started %q, want twice", b)
	}
}

// TestKubernetesFailures: OOMKilled is FAILED with the reason; an image
// that cannot be pulled is FAILED at once with the kubelet's message, and
// its Job is deleted.
func TestKubernetesFailures(t *testing.T) {
	f := kubeFixture(t)
	t.Run("OOMKilled", func(t *testing.T) {
		dir := kubeTrial(t, `head -c 400000000 /dev/zero | tail > /dev/null`)
		out, _ := runKubeTrial(t, f, dir, map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "200Mi"}}}, nil)
		if out.Status != trial.FAILED || !strings.Contains(out.FailureReason, "OOMKilled") {
			t.Errorf("outcome %s %q, want FAILED with OOMKilled", out.Status, out.FailureReason)
		}
	})
	t.Run("ImagePull", func(t *testing.T) {
		dir := kubeTrial(t, ``)
		start := time.Now()
		out, jobs := runKubeTrial(t, f, dir, map[string]any{"image": "bench-test.invalid/missing:1"}, nil)
		if out.Status != trial.FAILED || !strings.Contains(out.FailureReason, "ErrImagePull") || !strings.Contains(out.FailureReason, "not found") {
			t.Errorf("outcome %s %q, want FAILED with the image pull error", out.Status, out.FailureReason)
		}
		if d := time.Since(start); d > time.Minute {
			t.Errorf("the image pull error took %s to fail the trial", d)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			names, err := f.Jobs(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !contains(names, (*jobs)[0]) {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the Job %s that cannot pull its image is still there", (*jobs)[0])
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// kubeEngineFile writes engine.jsonc for a fixture.
func kubeEngineFile(t *testing.T, dir string, f *kubetest.Fixture, maxJobs int, extra string) {
	write(t, dir, "engine.jsonc", fmt.Sprintf(`{"class": "bench.engines.KubernetesEngine",
		"config": {"kubeconfig": %q, "namespace": %q, "image": "bench:test", "service_account": %q, "bench": "bench",
			"max_jobs": %d, "poll_interval": "100ms"%s}}`, f.EngineKubeconfig, f.Namespace, kubetest.TrialServiceAccount, maxJobs, extra), 0o644)
}

// TestKubernetesKillAndReattach: bench run's trials are Kubernetes Jobs;
// bench is SIGKILLed while three Jobs run and started again with the same
// command: it re-attaches to the running Jobs, no Job is created twice,
// every trial's script ran once and every trial is stored once,
// SUCCEEDED. At the end bench deletes its Jobs (cleanup "end").
func TestKubernetesKillAndReattach(t *testing.T) {
	const n = 7
	f := kubeFixture(t)
	dir := chaosExperiment(t, n, "2")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeEngineFile(t, dir, f, 3, "")
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "KR", "--no-progress", "--no-canary"}
	cmd := startBench(t, dir, tmp, "bench", args...)
	deadline := time.Now().Add(2 * time.Minute)
	for len(startedCounts(t, dir)) < 3 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
			t.Fatalf("trials did not start\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	before, err := f.Jobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 3 {
		t.Errorf("%d Jobs before the kill, want 3 (max_jobs): %v", len(before), before)
	}
	r := runBench(t, dir, append(args, "--log_level", "INFO")...)
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Fatalf("restarted bench: exit %d\n%s%s\nfirst run:\n%s", r.code, r.stdout, r.stderr, log)
	}
	if got := strings.Count(r.stderr, "re-attaching"); got != 3 {
		t.Errorf("the restarted bench re-attached to %d jobs, want 3:\n%s", got, r.stderr)
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "KR")
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
	jobs := engineJobs(t, dir, "KR")
	for id, job := range jobs {
		if job != "kubernetes/1" {
			t.Errorf("trial %d: engine job %s, want kubernetes/1 (submitted once)", id, job)
		}
	}
	// One Job per trial that ran, each with one pod; the restarted
	// bench deleted the Jobs it read outcomes of (the first bench was
	// killed before it could).
	for _, j := range before {
		if c := f.Cluster.PodsCreated(j); c != 1 {
			t.Errorf("Job %s: %d pods, want 1", j, c)
		}
	}
	if seen := f.Cluster.JobsSeen(); len(seen) != len(jobs) {
		t.Errorf("%d Jobs created in all, want %d (one per trial that ran): %v", len(seen), len(jobs), seen)
	}
	left, _ := f.Jobs(t.Context())
	if len(left) != 0 {
		t.Errorf("Jobs left after the experiment: %v", left)
	}
}

// TestKubernetesLogTail: a trial whose container fails without an
// outcome (bench exec-trial cannot read its request) is FAILED with the
// tail of the pod's log, read through the API server's pods/log (proxied
// to the played kubelet).
func TestKubernetesLogTail(t *testing.T) {
	f := kubeFixture(t)
	dir := kubeTrial(t, ``)
	// A bench that is not there: the container's command fails.
	out, _ := runKubeTrial(t, f, dir, map[string]any{"bench": "/nonexistent/bench"}, nil)
	if out.Status != trial.FAILED || !strings.Contains(out.FailureReason, "log (last") {
		t.Errorf("outcome %s %q, want FAILED with the pod's log", out.Status, out.FailureReason)
	}
	if len(out.Output) == 0 || !strings.Contains(out.Output[len(out.Output)-1].Stdout, "/nonexistent/bench") {
		t.Errorf("the job's output does not show the pod's log: %+v", out.Output)
	}
}

// TestKubernetesThroughput measures (BENCH_MEASURE_KUBE=1; skipped
// otherwise: it takes about a minute) 64 trials of 2 s through the
// Kubernetes engine with kubetest's played kubelet against the local
// engine, in the same run, 8 at once each, and the driver's API requests
// per trial (from the engine's "API use" log line at the end).
func TestKubernetesThroughput(t *testing.T) {
	if os.Getenv("BENCH_MEASURE_KUBE") != "1" {
		t.Skip("set BENCH_MEASURE_KUBE=1 to measure")
	}
	const n, slots = 64, 8
	f := kubeFixture(t)
	run := func(name, engine string) (time.Duration, string, int) {
		dir := chaosExperiment(t, n, "2")
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if engine == "" {
			kubeEngineFile(t, dir, f, slots, "")
		} else {
			write(t, dir, "engine.jsonc", engine, 0o644)
		}
		start := time.Now()
		r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
			"--experiment_id", "TP", "--no-progress", "--no-canary", "--log_level", "INFO")
		d := time.Since(start)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", name, r.code, r.stderr)
		}
		ran := len(engineJobs(t, dir, "TP"))
		return d, r.stderr, ran
	}
	local, _, ranL := run("local", fmt.Sprintf(`{"class": "bench.engines.LocalEngine", "config": {"max_jobs": %d, "poll_interval": "100ms"}}`, slots))
	kube, log, ranK := run("kubernetes", "")
	var req, watches, created int
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "kubernetes engine: API use") {
			for _, kv := range strings.Fields(l) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "requests":
					fmt.Sscan(v, &req)
				case "watches":
					fmt.Sscan(v, &watches)
				case "jobs_created":
					fmt.Sscan(v, &created)
				}
			}
		}
	}
	t.Logf("%d trials of 2 s, %d at once: local engine %s (%d ran), kubernetes engine with kubetest's kubelet %s (%d ran): ratio %.2f",
		n, slots, local.Round(10*time.Millisecond), ranL, kube.Round(10*time.Millisecond), ranK, kube.Seconds()/local.Seconds())
	if created > 0 {
		t.Logf("driver API requests: %d for %d Jobs (%.2f per trial, cleanup included), %d watches opened", req, created, float64(req)/float64(created), watches)
	} else {
		t.Errorf("no API use line in bench's log:\n%s", log)
	}
}

// TestKubernetesPilots: SubmitPilots (bench pilots) makes one Indexed Job
// whose pods each run the command (one per completion index); every
// index ends Done.
func TestKubernetesPilots(t *testing.T) {
	f := kubeFixture(t)
	dir := t.TempDir()
	eng := newSuiteEngine(t, "bench.engines.KubernetesEngine", dir, kubeEngineConfig(f))
	ps := eng.(engines.PilotSubmitter)
	refs, err := ps.SubmitPilots(t.Context(), "bench-pilot-exp", []string{"bench", "--help"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 3 {
		t.Fatalf("%d refs, want 3", len(refs))
	}
	job := jobOf(t, refs[0])
	for i, r := range refs {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			st, err := eng.Poll(t.Context(), r)
			if err == nil && st.Phase.Final() {
				if st.Phase != engines.Done {
					t.Errorf("pilot %d: %s %s", i, st.Phase, st.Reason)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pilot %d not done: %+v %v", i, st, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if n := f.Cluster.PodsCreated(job); n != 3 {
		t.Errorf("%d pods for the Indexed Job, want 3", n)
	}
	var j struct {
		Spec struct {
			CompletionMode string `json:"completionMode"`
			Completions    int    `json:"completions"`
		} `json:"spec"`
		Status struct {
			Conditions []struct{ Type string } `json:"conditions"`
		} `json:"status"`
	}
	if err := f.Object(t.Context(), "/apis/batch/v1/namespaces/"+f.Namespace+"/jobs/"+job, &j); err != nil {
		t.Fatal(err)
	}
	if j.Spec.CompletionMode != "Indexed" || j.Spec.Completions != 3 {
		t.Errorf("pilots' Job spec: %+v", j.Spec)
	}
}

// TestKubernetesRealCluster runs one trial on a real cluster, opt-in:
// BENCH_TEST_REAL_KUBECONFIG names the kubeconfig (its current context),
// BENCH_TEST_REAL_KUBE_IMAGE an image with bench on its PATH; optional
// BENCH_TEST_REAL_KUBE_NAMESPACE (default: the context's) and
// BENCH_TEST_REAL_KUBE_SERVICE_ACCOUNT (one that may create ConfigMaps:
// docs/engines-kubernetes.md). The trial is the built-in mock environment
// (environments/mock/mock_env.jsonc, embedded in bench), so the image
// needs nothing but bench. Skipped otherwise (never run by make test).
func TestKubernetesRealCluster(t *testing.T) {
	kc, image := os.Getenv("BENCH_TEST_REAL_KUBECONFIG"), os.Getenv("BENCH_TEST_REAL_KUBE_IMAGE")
	if kc == "" || image == "" {
		t.Skip("set BENCH_TEST_REAL_KUBECONFIG and BENCH_TEST_REAL_KUBE_IMAGE to run a trial on a real cluster")
	}
	cfg := map[string]any{"kubeconfig": kc, "image": image, "bench": "bench", "active_deadline_seconds": 600}
	if ns := os.Getenv("BENCH_TEST_REAL_KUBE_NAMESPACE"); ns != "" {
		cfg["namespace"] = ns
	}
	if sa := os.Getenv("BENCH_TEST_REAL_KUBE_SERVICE_ACCOUNT"); sa != "" {
		cfg["service_account"] = sa
	}
	dir := t.TempDir()
	eng := newSuiteEngine(t, "bench.engines.KubernetesEngine", dir, cfg)
	base := engines.Base{Args: []string{"--environment", "environments/mock/mock_env.jsonc"}, Dir: dir, Owner: "real"}
	r := engines.NewRunners(eng, engines.Common{}, base, nil)[0]
	spec := schedulers.Spec{ExperimentID: "bench-real-" + fmt.Sprint(time.Now().Unix()), TrialID: 1, Params: map[string]string{}}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	out := r.Run(ctx, spec)
	if out.Status != trial.SUCCEEDED || out.Results["score"] == nil {
		t.Fatalf("outcome %s %v: %s", out.Status, out.Results, out.FailureReason)
	}
}

// TestKubernetesKueueQueue: with queue_name the Job is created suspended
// with Kueue's queue label; the trial waits (queued: no pod) until the
// queue admits the Job (the test unsuspends it, as Kueue does), then runs
// to SUCCEEDED.
func TestKubernetesKueueQueue(t *testing.T) {
	f := kubeFixture(t)
	dir := kubeTrial(t, ``)
	admitted := make(chan struct{})
	var out trial.Outcome
	var jobs *[]string
	go func() {
		defer close(admitted)
		out, jobs = runKubeTrial(t, f, dir, map[string]any{"queue_name": "team-queue"}, nil)
	}()
	// Wait for the suspended Job.
	deadline := time.Now().Add(time.Minute)
	var name string
	for name == "" {
		names, err := f.Jobs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 1 {
			name = names[0]
		} else if time.Now().After(deadline) {
			t.Fatal("no Job was created")
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	var j struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Suspend *bool `json:"suspend"`
		} `json:"spec"`
	}
	path := "/apis/batch/v1/namespaces/" + f.Namespace + "/jobs/" + name
	if err := f.Object(t.Context(), path, &j); err != nil {
		t.Fatal(err)
	}
	if j.Spec.Suspend == nil || !*j.Spec.Suspend || j.Metadata.Labels["kueue.x-k8s.io/queue-name"] != "team-queue" {
		t.Fatalf("Job %s: suspend %v, labels %v; want suspended for queue team-queue", name, j.Spec.Suspend, j.Metadata.Labels)
	}
	if n := f.Cluster.PodsCreated(name); n != 0 {
		t.Errorf("a suspended Job got %d pods", n)
	}
	// Admit it, as Kueue does.
	if err := f.Admin.DoType(t.Context(), "PATCH", path, nil, map[string]any{"spec": map[string]any{"suspend": false}}, "application/merge-patch+json", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-admitted:
	case <-time.After(2 * time.Minute):
		t.Fatal("no outcome within 2 minutes of the admission")
	}
	if out.Status != trial.SUCCEEDED || len(*jobs) != 1 || (*jobs)[0] != name {
		t.Errorf("outcome %s %q, jobs %v", out.Status, out.FailureReason, *jobs)
	}
}

// TestKubernetesSecretsAndTTL: a Secret reaches the trial's script by
// reference (the Job holds its name and key, never its value), and with
// cleanup "ttl" bench leaves the finished Job to ttlSecondsAfterFinished
// (played by kubetest's TTL controller), which removes it and, through
// the garbage collector, its request ConfigMap.
func TestKubernetesSecretsAndTTL(t *testing.T) {
	f := kubeFixture(t)
	const secret = "s3cr3t-value-7781"
	if err := f.Admin.Do(t.Context(), "POST", "/api/v1/namespaces/"+f.Namespace+"/secrets", nil,
		map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"}, "stringData": map[string]any{"password": secret}}, nil); err != nil {
		t.Fatal(err)
	}
	dir := kubeTrial(t, `[ "$DB_PASSWORD" = "`+secret+`" ] && touch "$marker_dir/secret-seen"`)
	out, jobs := runKubeTrial(t, f, dir, map[string]any{"cleanup": "ttl", "ttl_seconds_after_finished": 1,
		"secret_env": []any{map[string]any{"name": "DB_PASSWORD", "secret": "db", "key": "password"}}}, nil)
	if out.Status != trial.SUCCEEDED {
		t.Fatalf("outcome %s %q", out.Status, out.FailureReason)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret-seen")); err != nil {
		t.Errorf("the trial's script did not see the Secret's value in DB_PASSWORD")
	}
	var raw json.RawMessage
	name := (*jobs)[0]
	if err := f.Object(t.Context(), "/apis/batch/v1/namespaces/"+f.Namespace+"/jobs/"+name, &raw); err == nil && strings.Contains(string(raw), secret) {
		t.Errorf("the Job holds the Secret's value")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		names, err := f.Jobs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var cm json.RawMessage
		cmErr := f.Object(t.Context(), "/api/v1/namespaces/"+f.Namespace+"/configmaps/"+name, &cm)
		if !contains(names, name) && cmErr != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Job %s or its request ConfigMap still there a minute after its TTL of 1 s (jobs %v, configmap err %v)", name, names, cmErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKubernetesEvictionPodFailurePolicy: with no grace period the evicted
// pod's bench exec-trial is killed (SIGKILL) before it can write an
// outcome, so the pod fails with the DisruptionTarget condition: the
// Job's podFailurePolicy ignores that failure and the (played) Job
// controller starts a new pod in the same Job, which the engine follows
// to SUCCEEDED: one Job, two pods.
func TestKubernetesEvictionPodFailurePolicy(t *testing.T) {
	f := kubeFixture(t)
	dir := kubeTrial(t, `[ -e "$marker_dir/evicted" ] || { touch "$marker_dir/evicted"; sleep 60; }`)
	out, jobs := runKubeTrial(t, f, dir, map[string]any{"termination_grace_period_seconds": 0}, func(job string) {
		for i := 0; i < 200; i++ {
			if pods := f.Cluster.Pods(job); len(pods) > 0 {
				if err := f.Evict(context.Background(), pods[0]); err != nil {
					t.Errorf("evicting %s: %v", pods[0], err)
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("no running pod of %s to evict", job)
	})
	if out.Status != trial.SUCCEEDED || out.Results["score"] != 1.0 {
		t.Fatalf("outcome %s %v (%s), want SUCCEEDED after the eviction", out.Status, out.Results, out.FailureReason)
	}
	if len(*jobs) != 1 {
		t.Fatalf("Jobs submitted: %v, want 1 (the Job replaced its evicted pod)", *jobs)
	}
	if n := f.Cluster.PodsCreated((*jobs)[0]); n != 2 {
		t.Errorf("%d pods created, want 2", n)
	}
}

// TestKubernetesS3: with "bucket" the request and outcome travel through
// S3 (the moto server of scripts/testenv/moto.sh): the driver uploads the
// request, the pod (its AWS credentials from a Secret, by reference; the
// played kubelet gives it none of the test's) reads it and writes the
// outcome there; no ConfigMap is used.
func TestKubernetesS3(t *testing.T) {
	endpoint := testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
	f := kubeFixture(t)
	bucket := "bench-kube-" + strings.ToLower(f.Namespace[len(f.Namespace)-8:])
	req, _ := http.NewRequest(http.MethodPut, endpoint+"/"+bucket, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("creating bucket %s: %v %v", bucket, resp, err)
	}
	// The driver's AWS configuration (this process: the s3:// scheme).
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"} {
		t.Setenv(k, v)
	}
	if err := f.Admin.Do(t.Context(), "POST", "/api/v1/namespaces/"+f.Namespace+"/secrets", nil,
		map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "aws"},
			"stringData": map[string]any{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}}, nil); err != nil {
		t.Fatal(err)
	}
	// The trial reports progress (step 0, then step 1 once the driver has
	// seen step 0): it comes back through the pod's log, as with a
	// ConfigMap outcome.
	dir := kubeTrial(t, `echo "BENCH_PROGRESS step=0 loss=0.9"
i=0; while [ ! -e "$marker_dir/gate" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done
[ -e "$marker_dir/gate" ] || { echo "no progress seen while running" >&2; exit 9; }
echo "BENCH_PROGRESS step=1 loss=0.5"`)
	write(t, dir, "env.jsonc", `{"name": "k", "class": "mlos_bench.environments.local.LocalEnv",
		"config": {"const_args": {"marker_dir": "`+dir+`"}, "shell_env_params": ["trial_id", "marker_dir"],
			"run": ["run.sh"], "read_results_file": "results.csv", "progress_pattern": "^BENCH_PROGRESS\\b"}}`, 0o644)
	var (
		mu    sync.Mutex
		steps []int64
	)
	out, jobs := runKubeTrial(t, f, dir, map[string]any{"bucket": bucket, "prefix": "k8s/runs",
		"env":              map[string]any{"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"},
		"env_from_secrets": []any{"aws"}}, nil, func(p trial.Progress) {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, p.Step)
		if p.Step == 0 {
			_ = os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644)
		}
	})
	if out.Status != trial.SUCCEEDED || out.Results["score"] != 1.0 {
		t.Fatalf("outcome %s %v (%s), want SUCCEEDED through S3", out.Status, out.Results, out.FailureReason)
	}
	mu.Lock()
	if len(steps) != 2 || steps[0] != 0 || steps[1] != 1 {
		t.Errorf("progress steps %v through S3, want [0 1]", steps)
	}
	mu.Unlock()
	var cms struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := f.Object(t.Context(), "/api/v1/namespaces/"+f.Namespace+"/configmaps", &cms); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Metadata.Name, (*jobs)[0]) {
			t.Errorf("ConfigMap %s used with S3 transport", cm.Metadata.Name)
		}
	}
	resp, err := http.Get(endpoint + "/" + bucket + "?prefix=k8s/runs/" + (*jobs)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), ".request.json") || !strings.Contains(string(body), ".outcome.json") {
		t.Errorf("objects under k8s/runs/%s: %s", (*jobs)[0], body)
	}
}
