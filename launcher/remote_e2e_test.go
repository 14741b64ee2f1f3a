package launcher_test

// End-to-end tests of whole experiments on remote parts: a CompositeEnv
// generates a config locally, uploads it through a file share (SFTP to the
// real sshd, or S3 on the moto server), runs a benchmark script on the SSH
// host, brings its CSV results back and stores them as trials. The servers
// come from scripts/test.sh (BENCH_TEST_SSH_*, BENCH_TEST_MOTO_ENDPOINT).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"github.com/benchtune/bench/trial"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/schemas"
	"github.com/benchtune/bench/storage"
)

func validate(kind configs.Kind, doc *source.Doc) error {
	return schemas.Validate(schemas.Kind(kind), doc)
}

func writeJSON(t *testing.T, dir, name string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func unique(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "bench-e2e-" + hex.EncodeToString(b)
}

func sshConfig(t *testing.T) map[string]any {
	port, err := strconv.Atoi(testenv.Get(t, "BENCH_TEST_SSH_PORT"))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"ssh_port":             port,
		"ssh_username":         testenv.Get(t, "BENCH_TEST_SSH_USER"),
		"ssh_priv_key_path":    testenv.Get(t, "BENCH_TEST_SSH_KEY"),
		"ssh_known_hosts_path": testenv.Get(t, "BENCH_TEST_SSH_KNOWN_HOSTS"),
	}
}

// experimentFiles writes an experiment whose environment is:
//
//	generate (LocalFileShareEnv: write app.conf from the tunables, upload it)
//	  -> bench (RemoteEnv over SSH: fetch app.conf, run the benchmark, publish results.csv)
//	  -> collect (LocalFileShareEnv: download results.csv and read it)
//
// fetch and publish are the remote commands that move files between the
// host and the share.
func experimentFiles(t *testing.T, dir string, share map[string]any, fetch, publish string) {
	host := testenv.Get(t, "BENCH_TEST_SSH_HOST")
	writeJSON(t, dir, "tunables.jsonc", map[string]any{
		"app": map[string]any{"cost": 1, "params": map[string]any{
			"threads": map[string]any{"type": "int", "range": []int{1, 16}, "default": 4},
			"mode":    map[string]any{"type": "categorical", "values": []string{"fast", "safe"}, "default": "safe"},
		}},
	})
	writeJSON(t, dir, "share.jsonc", share)
	writeJSON(t, dir, "ssh.jsonc", map[string]any{"class": "mlos_bench.services.remote.ssh.SshHostService", "config": sshConfig(t)})
	writeJSON(t, dir, "env.jsonc", map[string]any{
		"name": "remote-e2e", "class": "mlos_bench.environments.CompositeEnv",
		"include_services": []string{"share.jsonc", "ssh.jsonc"},
		"include_tunables": []string{"tunables.jsonc"},
		"config": map[string]any{
			"tunable_params": []string{"app"},
			"const_args":     map[string]any{"ssh_hostname": host, "workdir": unique(t), "hostdir": "/tmp/" + unique(t)},
			"children": []any{
				map[string]any{
					"name": "generate", "class": "mlos_bench.environments.local.LocalFileShareEnv",
					"config": map[string]any{
						"tunable_params":   []string{"app"},
						"required_args":    []string{"workdir", "ssh_hostname"},
						"shell_env_params": []string{"threads", "mode"},
						"setup":            []string{`'printf "threads=%s\nmode=%s\n" "$threads" "$mode" > app.conf'`},
						"upload":           []any{map[string]any{"from": "app.conf", "to": "$workdir/$trial_id/app.conf"}},
					},
				},
				map[string]any{
					"name": "bench", "class": "mlos_bench.environments.remote.RemoteEnv",
					"config": map[string]any{
						"required_args":    []string{"workdir", "hostdir", "ssh_hostname"},
						"shell_env_params": []string{"workdir", "hostdir", "trial_id"},
						"setup":            []string{`mkdir -p "$hostdir/$trial_id"`},
						"run": []string{
							`cd "$hostdir/$trial_id"`,
							fetch,
							`. ./app.conf`,
							// The "benchmark": more threads is faster, "fast" mode faster still.
							`lat=$(( 1000 / threads )); [ "$mode" = fast ] && lat=$(( lat / 2 ))`,
							`printf 'metric,value\nlatency_ms,%s\nthreads_seen,%s\n' "$lat" "$threads" > results.csv`,
							publish,
						},
						"teardown": []string{`rm -rf "$hostdir"`},
						"timeouts": map[string]any{"run": "2m"},
					},
				},
				map[string]any{
					"name": "collect", "class": "mlos_bench.environments.LocalFileShareEnv",
					"config": map[string]any{
						"required_args":     []string{"workdir", "ssh_hostname"},
						"download":          []any{map[string]any{"from": "$workdir/$trial_id/results.csv", "to": "results.csv"}},
						"read_results_file": "results.csv",
					},
				},
			},
		},
	})
	writeJSON(t, dir, "opt.jsonc", map[string]any{
		"class":  "mlos_bench.optimizers.MockOptimizer",
		"config": map[string]any{"optimization_targets": map[string]any{"latency_ms": "min"}, "max_suggestions": 3, "seed": 5},
	})
}

// runExperiment runs the experiment of dir through the launcher, like
// `bench --environment env.jsonc --optimizer opt.jsonc`, and returns its
// stored trials.
func runExperiment(t *testing.T, dir string) []storage.Trial {
	t.Chdir(dir)
	args, err := configs.ParseArgs([]string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "remote"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := configs.Prepare(args, validate)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r, err := launcher.Build(ctx, l, launcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Scheduler.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sum, err := r.Summarize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	trials, err := r.Experiment.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.OK() {
		for _, tr := range trials {
			t.Logf("trial %d: %s: %s", tr.ID, tr.Status, tr.FailureReason)
			if d, err := r.Experiment.Trial(ctx, tr.ID); err == nil {
				for _, o := range d.Output {
					t.Logf("  %s/%s %q: exit %d\n    stdout: %q\n    stderr: %q", o.Env, o.Phase, o.Command, o.ExitCode, o.Stdout, o.Stderr)
				}
			}
		}
		t.Fatalf("experiment failed: %v", sum.Problems)
	}
	return trials
}

func checkTrials(t *testing.T, trials []storage.Trial) {
	t.Helper()
	if len(trials) != 3 {
		t.Fatalf("want 3 trials, got %d", len(trials))
	}
	for _, tr := range trials {
		if tr.Status != trial.SUCCEEDED {
			t.Fatalf("trial %d: %s: %s", tr.ID, tr.Status, tr.FailureReason)
		}
		threads, _ := strconv.Atoi(tr.Params["threads"])
		want := 1000 / threads
		if tr.Params["mode"] == "fast" {
			want /= 2
		}
		if got, _ := tr.Results.Float("latency_ms"); int(got) != want {
			t.Errorf("trial %d (%v): latency_ms %v, want %d", tr.ID, tr.Params, got, want)
		}
		if got, _ := tr.Results.Float("threads_seen"); int(got) != threads {
			t.Errorf("trial %d: the remote script saw threads=%v, want %d", tr.ID, got, threads)
		}
	}
}

func TestRemoteExperimentOverSFTP(t *testing.T) {
	dir := t.TempDir()
	share := map[string]any{"class": "mlos_bench.services.remote.ssh.SshFileShareService", "config": sshConfig(t)}
	// With SFTP, the share is the SSH user's home folder on the host.
	experimentFiles(t, dir, share, `cp "$HOME/$workdir/$trial_id/app.conf" .`, `cp results.csv "$HOME/$workdir/$trial_id/results.csv"`)
	checkTrials(t, runExperiment(t, dir))
}

func TestRemoteExperimentOverS3(t *testing.T) {
	endpoint := testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
	testenv.Get(t, "BENCH_TEST_SSH_HOST")
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	bucket := unique(t)
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	share := map[string]any{"class": "bench.services.S3FileShareService", "config": map[string]any{
		"bucket": bucket, "prefix": "e2e", "region": "us-east-1", "endpoint": endpoint, "use_path_style": true,
	}}
	// The host reaches the bucket with its own S3 client (curl signing its
	// requests with the emulator's test credentials).
	url := endpoint + "/" + bucket + "/e2e/$workdir/$trial_id"
	sign := `--aws-sigv4 "aws:amz:us-east-1:s3" --user testing:testing`
	experimentFiles(t, dir, share,
		`curl -fsS `+sign+` -o app.conf "`+url+`/app.conf"`,
		`curl -fsS `+sign+` -T results.csv "`+url+`/results.csv"`)
	checkTrials(t, runExperiment(t, dir))
}
