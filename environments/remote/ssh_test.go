package remote_test

// Integration tests against the real sshd that scripts/testenv/sshd.sh
// starts (scripts/test.sh sets BENCH_TEST_SSH_*).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/internal/testenv"
	_ "github.com/benchtune/bench/services/ssh"
)

type sshServer struct{ host, user, key, knownHosts string }

func sshFixture(t *testing.T) (*envtest.Fixture, sshServer) {
	t.Helper()
	s := sshServer{
		host:       testenv.Get(t, "BENCH_TEST_SSH_HOST"),
		user:       testenv.Get(t, "BENCH_TEST_SSH_USER"),
		key:        testenv.Get(t, "BENCH_TEST_SSH_KEY"),
		knownHosts: testenv.Get(t, "BENCH_TEST_SSH_KNOWN_HOSTS"),
	}
	port, err := strconv.Atoi(testenv.Get(t, "BENCH_TEST_SSH_PORT"))
	if err != nil {
		t.Fatalf("BENCH_TEST_SSH_PORT: %v", err)
	}
	cfg := map[string]any{
		"ssh_port": port, "ssh_username": s.user,
		"ssh_priv_key_path": s.key, "ssh_known_hosts_path": s.knownHosts,
	}
	svcs, err := json.Marshal(map[string]any{"services": []any{
		map[string]any{"class": "mlos_bench.services.remote.ssh.SshHostService", "config": cfg},
		map[string]any{"class": "mlos_bench.services.remote.ssh.SshFileShareService", "config": cfg},
	}})
	if err != nil {
		t.Fatal(err)
	}
	f := envtest.New(t, nil)
	f.Services = f.LoadServices(f.Services, string(svcs))
	return f, s
}

func uniqueName(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "bench-envtest-" + hex.EncodeToString(b)
}

// TestSSHCompositeRoundTrip generates a config locally, uploads it over
// SFTP, runs a benchmark on the SSH host with it, downloads the results
// and reads them, all from one CompositeEnv config.
func TestSSHCompositeRoundTrip(t *testing.T) {
	f, srv := sshFixture(t)
	out := t.TempDir()
	workdir := uniqueName(t)
	greeting := `it's a "quoted" $HOME value; rm -rf / ` + "`id`"
	root := map[string]any{
		"name": "ssh round trip", "class": "mlos_bench.environments.CompositeEnv",
		"config": map[string]any{
			"const_args": map[string]any{"workdir": workdir, "ssh_hostname": srv.host, "out": out},
			"children": []any{
				map[string]any{
					"name": "generate", "class": "mlos_bench.environments.local.LocalFileShareEnv",
					"config": map[string]any{
						"tunable_params":   []string{"kernel"},
						"required_args":    []string{"workdir", "ssh_hostname"},
						"dump_params_file": "params.json",
						"shell_env_params": []string{"kernel_sched_latency_ns"},
						"setup":            []string{`'printf "latency_ns=%s\n" "$kernel_sched_latency_ns" > app.conf'`},
						"upload": []any{
							map[string]any{"from": "app.conf", "to": "$workdir/$trial_id/app.conf"},
							map[string]any{"from": "$PWD/params.json", "to": "$workdir/$trial_id/"},
						},
					},
				},
				map[string]any{
					"name": "bench", "class": "mlos_bench.environments.remote.remote_env.RemoteEnv",
					"config": map[string]any{
						"required_args":    []string{"workdir", "ssh_hostname", "greeting"},
						"shell_env_params": []string{"workdir", "trial_id", "greeting"},
						"setup":            []string{`test -f "$workdir/$trial_id/app.conf" && test -f "$workdir/$trial_id/params.json"`},
						"run": []string{
							`cd "$workdir/$trial_id"`,
							`. ./app.conf`,
							`printf 'metric,value\nlatency_ns,%s\ngreeting_len,%s\n' "$latency_ns" "${#greeting}" > results.csv`,
							`printf '%s' "$greeting" > greeting.txt`,
							`echo "remote_user=$(id -un)"`,
						},
						"results_stdout_pattern": `^(remote_user)=(\S+)$`,
						"teardown":               []string{`rm -rf "$workdir"`},
						"timeouts":               map[string]any{"run": "2m"},
					},
				},
				map[string]any{
					"name": "collect", "class": "mlos_bench.environments.LocalFileShareEnv",
					"config": map[string]any{
						"required_args":    []string{"workdir", "ssh_hostname", "out"},
						"shell_env_params": []string{"out"},
						"download": []any{
							map[string]any{"from": "$workdir/$trial_id/results.csv", "to": "results.csv"},
							map[string]any{"from": "$workdir/$trial_id/greeting.txt", "to": "$PWD/greeting.txt"},
						},
						"run":               []string{`cp greeting.txt "$out/"`},
						"read_results_file": "results.csv",
					},
				},
			},
		},
	}
	data, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	globals := environments.Params{"experiment_id": "envtest", "trial_id": int64(3), "greeting": greeting}
	env := f.Build(string(data), globals)
	if err := f.Tunables.Assign(map[string]any{"kernel_sched_latency_ns": 300000000}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := &environments.Recorder{}
	ctx = environments.WithRecorder(ctx, rec)
	envtest.Open(t, env)
	t.Cleanup(func() {
		if err := env.Teardown(context.Background()); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	if err := env.Setup(ctx, f.Tunables, globals); err != nil {
		t.Fatal(err)
	}
	res := env.Run(ctx)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	want := map[string]any{
		"remote_user":  srv.user,
		"latency_ns":   int64(300000000),
		"greeting_len": int64(len(greeting)),
	}
	if diff := cmp.Diff(want, envtest.WithoutMeasurements(res.Metrics)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	// Built-in wall times: the remote phases as seen from bench, and the
	// file shares' upload and download steps.
	for _, k := range []string{"bench.bench.setup.wall_s", "bench.bench.run.wall_s", "bench.generate.upload.wall_s",
		"bench.collect.download.wall_s", "bench.generate.setup.wall_s", "bench.collect.run.wall_s"} {
		if v, ok := res.Metrics[k].(float64); !ok || v <= 0 || v > 60 {
			t.Errorf("%s = %v, want a wall time in seconds", k, res.Metrics[k])
		}
	}
	got, err := os.ReadFile(filepath.Join(out, "greeting.txt"))
	if err != nil || string(got) != greeting {
		t.Errorf("the parameter reached the host as %q (%v), want %q", got, err, greeting)
	}
	var phases []string
	for _, o := range rec.Outputs() {
		phases = append(phases, o.Env+"/"+o.Phase)
	}
	wantPhases := []string{"generate/setup", "generate/upload", "generate/upload", "bench/setup", "bench/run",
		"collect/download", "collect/download", "collect/run"}
	if diff := cmp.Diff(wantPhases, phases); diff != "" {
		t.Errorf("recorded phases (-want +got):\n%s", diff)
	}
}

// TestSSHRunTimeout: a remote run that hangs past its timeout ends as
// TIMED_OUT and leaves no process on the host.
func TestSSHRunTimeout(t *testing.T) {
	f, srv := sshFixture(t)
	pidFile := uniqueName(t) + ".pid"
	globals := environments.Params{"ssh_hostname": srv.host, "pidfile": pidFile}
	hang := f.Build(`{"name": "hang", "class": "mlos_bench.environments.RemoteEnv", "config": {
		"required_args": ["ssh_hostname", "pidfile"], "shell_env_params": ["pidfile"],
		"run": ["echo $$ > \"$HOME/$pidfile\"; exec sleep 300"],
		"timeouts": {"run": 2}}}`, globals)
	check := f.Build(`{"name": "check", "class": "mlos_bench.environments.RemoteEnv", "config": {
		"required_args": ["ssh_hostname", "pidfile"], "shell_env_params": ["pidfile"],
		"run": ["pid=$(cat \"$HOME/$pidfile\")", "echo \"pid=$pid\"; if kill -0 \"$pid\" 2>/dev/null; then echo alive=1; else echo alive=0; fi"],
		"results_stdout_pattern": "^(\\w+)=(\\d+)$",
		"teardown": ["rm -f \"$HOME/$pidfile\""]}}`, globals)
	ctx := context.Background()
	t.Cleanup(func() { _ = check.Teardown(context.Background()) })
	start := time.Now()
	res, _ := envtest.Trial(t, hang, f.Tunables, nil)
	if res.Status != environments.TIMED_OUT {
		t.Fatalf("status %s (%s), want TIMED_OUT", res.Status, res.Reason)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the timeout took %s", d)
	}
	if err := check.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := check.Run(ctx)
		if r.Status != environments.SUCCEEDED {
			t.Fatalf("check: %s %s", r.Status, r.Reason)
		}
		if pid, _ := r.Metrics["pid"].(int64); pid <= 0 {
			t.Fatalf("the hanging script did not record its pid: %v", r.Metrics)
		}
		if r.Metrics["alive"] == int64(0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %v still runs on the host after the timeout", r.Metrics["pid"])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(res.Reason, "hang") {
		t.Errorf("reason %q does not name the environment", res.Reason)
	}
}
