package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/benchtune/bench/engines/awsbatch/awsbatchtest"
	"github.com/benchtune/bench/internal/testenv"
)

// The multi-fidelity example run through the engines whose jobs run away
// from the driver: the SSH pool, AWS Batch and Kubernetes. With promotion
// "rerun"; with "continue" without a checkpoint store (these engines'
// jobs do not see the driver's checkpoint directory: refused, or warned
// about on the SSH pool); and with "continue" through a checkpoint store
// (fidelity_store_e2e_test.go).

// fidelityRerun overrides the example's fidelity: promotion "rerun".
const fidelityRerun = `{"param": "epochs", "min": 1, "max": 27, "eta": 3, "promotion": "rerun"}`

// runFidelityEngine runs configs/examples/multi-fidelity in dir with the
// engine.jsonc written there and checks the stored experiment: each
// (configuration, fidelity) ran once, some were promoted, every trial's
// script got its fidelity (it trained exactly that many epochs: it echoes
// them into its results), each trial ran as an engine job, and the best
// trial is the best full-fidelity (27 epochs) one.
func runFidelityEngine(t *testing.T, dir, exp string, configs int, extra ...string) map[int]*fidTrial {
	t.Helper()
	root, _ := filepath.Abs("../..")
	args := fidelityArgs(root, append([]string{"--max_suggestions", strconv.Itoa(configs), "--engine", "engine.jsonc",
		"--experiment_id", exp, "--fidelity", fidelityRerun}, extra...)...)
	r := runBench(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), exp)
	checkFidelityRun(t, trs, configs)
	best, bestLoss := 0, 1e300
	for _, ft := range trs {
		epochs, _ := strconv.Atoi(ft.fidelity)
		if ft.epochsTrained != epochs || ft.continueFrom != "" {
			t.Errorf("trial %d at %d epochs (rung %d of bracket %d) trained %d (continues %q): the job did not get its fidelity",
				ft.id, epochs, ft.rung, ft.bracket, ft.epochsTrained, ft.continueFrom)
		}
		if v, err := strconv.ParseFloat(ft.loss, 64); err == nil && epochs == 27 && v < bestLoss {
			best, bestLoss = ft.id, v
		}
	}
	if best == 0 || !strings.Contains(r.stdout, fmt.Sprintf("Best trial %d:", best)) {
		t.Errorf("want best trial %d (27 epochs):\n%s", best, r.stdout)
	}
	if jobs := engineJobs(t, dir, exp); len(jobs) != len(trs) {
		t.Errorf("%d engine jobs for %d trials", len(jobs), len(trs))
	}
	return trs
}

// continueOnEngine runs the example with its own promotion "continue"
// (scheduler.jsonc), then with it given as --fidelity, on dir's engine.
// When refused, each must fail before any trial with a clear error at
// the place the promotion was given; otherwise the run goes on.
func continueOnEngine(t *testing.T, dir string, refused bool) []result {
	t.Helper()
	root, _ := filepath.Abs("../..")
	var out []result
	var exp string
	for i, extra := range [][]string{nil, {"--fidelity", `{"param": "epochs", "min": 1, "max": 27, "promotion": "continue"}`}} {
		exp = fmt.Sprintf("MFC%d", i)
		r := runBench(t, dir, fidelityArgs(root, append([]string{"--max_suggestions", "4", "--engine", "engine.jsonc",
			"--experiment_id", exp}, extra...)...)...)
		out = append(out, r)
		if !refused {
			continue
		}
		where := "multi-fidelity/scheduler.jsonc:"
		if extra != nil {
			where = "fidelity.promotion" // a command-line global has no file position
		}
		if r.code != 2 || !strings.Contains(r.stderr, `fidelity.promotion "continue" cannot work with the`) ||
			!strings.Contains(r.stderr, `give fidelity.checkpoint_store`) ||
			!strings.Contains(r.stderr, `use "promotion": "rerun"`) || !strings.Contains(r.stderr, where) {
			t.Errorf("promotion continue (%s): exit %d, want 2 with an error at %s\n%s%s", where, r.code, where, r.stdout, r.stderr)
		}
		if trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), exp); len(trs) != 0 {
			t.Errorf("promotion continue (%s) refused, yet %d trials stored", where, len(trs))
		}
	}
	return out
}

// fidelityEngineDir is a run folder the engine's far side (another login
// for the SSH pool) can read and write.
func fidelityEngineDir(t *testing.T) string {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFidelitySSHPool: the rungs run as SSH pool jobs on two sshd hosts on
// loopback (the real bench binary, uploaded, on the far side).
func TestFidelitySSHPool(t *testing.T) {
	e := getSSHPoolEnv(t)
	dir := fidelityEngineDir(t)
	var hs []map[string]any
	for i, port := range []int{e.port, e.port2} {
		hs = append(hs, map[string]any{"host": fmt.Sprintf("%s@%s:%d", e.user, e.host, port), "key_file": e.key,
			"slots": 2, "workdir": fmt.Sprintf("%s/h%d", e.workdir, i+1)})
	}
	cfg, _ := json.Marshal(map[string]any{"class": "bench.engines.SSHPoolEngine", "config": map[string]any{
		"hosts": hs, "known_hosts_file": e.knownHosts, "upload_bench": true, "poll_interval": "100ms"}})
	write(t, dir, "engine.jsonc", string(cfg), 0o644)
	runFidelityEngine(t, dir, "MFSSH", 12)
	// Promotion "continue" is not refused, but warns that the hosts must
	// see the checkpoint directory at the driver's path. (Here the hosts'
	// login is another user, who cannot write the directories the driver
	// makes, so the run's own outcome is not checked.)
	for _, r := range continueOnEngine(t, dir, false) {
		if !strings.Contains(r.stderr, "every host must see the driver's checkpoint directory at the same path") {
			t.Errorf("promotion continue on the SSH pool: exit %d, no warning\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	// With a checkpoint store (moto's S3), promotions continue on hosts
	// that see nothing of the driver's folders: the hosts' bench gets its
	// AWS settings from the pool's "env" (the credentials from a file on
	// the host, named by AWS_CONFIG_FILE).
	t.Run("checkpoint store", func(t *testing.T) {
		endpoint := testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
		dir := fidelityEngineDir(t)
		bucket := "bench-mf-ssh-" + strings.ToLower(filepath.Base(e.workdir)[len("e2e-"):])
		makeBucket(t, endpoint, bucket)
		awsConfig := filepath.Join(dir, "aws-config")
		write(t, dir, "aws-config", "[default]\naws_access_key_id = test\naws_secret_access_key = test\n", 0o644)
		cfg, _ := json.Marshal(map[string]any{"class": "bench.engines.SSHPoolEngine", "config": map[string]any{
			"hosts": hs, "known_hosts_file": e.knownHosts, "upload_bench": true, "poll_interval": "100ms",
			"env": map[string]string{"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
				"AWS_CONFIG_FILE": awsConfig, "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}}})
		write(t, dir, "engine.jsonc", string(cfg), 0o644)
		runContinueThroughStore(t, dir, "MFSSHS", endpoint, bucket, 12)
	})
}

// TestFidelityAWSBatch: the rungs run as AWS Batch jobs on moto, each
// job's container the real bench exec-trial.
func TestFidelityAWSBatch(t *testing.T) {
	f := awsbatchtest.Start(t, benchContainer(t.TempDir()))
	dir := t.TempDir()
	awsBatchEngine(t, dir, f, "")
	runFidelityEngine(t, dir, "MFAWS", 12)
	continueOnEngine(t, dir, true)
	// With a checkpoint store (the fixture's bucket on moto, which the
	// containers reach with their AWS settings), promotions continue.
	runContinueThroughStore(t, dir, "MFAWSS", f.Endpoint, f.Bucket, 12)
}

// TestFidelityKubernetes: the rungs run as Kubernetes Jobs (real
// kube-apiserver and etcd; kubetest plays the kubelet).
func TestFidelityKubernetes(t *testing.T) {
	f := kubeFixture(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeEngineFile(t, dir, f, 4, "")
	runFidelityEngine(t, dir, "MFK8S", 12)
	continueOnEngine(t, dir, true)
	// With a checkpoint store (moto's S3), promotions continue: the pods
	// get the AWS settings from the engine's "env" and the credentials
	// from a Secret, by reference.
	t.Run("checkpoint store", func(t *testing.T) {
		endpoint := testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
		bucket := "bench-mf-k8s-" + strings.ToLower(f.Namespace[len(f.Namespace)-8:])
		makeBucket(t, endpoint, bucket)
		if err := f.Admin.Do(t.Context(), "POST", "/api/v1/namespaces/"+f.Namespace+"/secrets", nil,
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "aws-mf"},
				"stringData": map[string]any{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}}, nil); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		kubeEngineFile(t, dir, f, 4, fmt.Sprintf(`, "env": {"AWS_ENDPOINT_URL": %q, "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"},
			"env_from_secrets": ["aws-mf"]`, endpoint))
		runContinueThroughStore(t, dir, "MFK8SS", endpoint, bucket, 12)
	})
}
