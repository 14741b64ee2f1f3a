package remote_test

// These are unit tests of the environments' logic against small in-test
// implementations of the service interfaces (the real SSH service is
// exercised in ssh_test.go, and by the services' own tests).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/environments"
	_ "github.com/benchtune/bench/environments/composite"
	"github.com/benchtune/bench/environments/envtest"
	_ "github.com/benchtune/bench/environments/local"
	"github.com/benchtune/bench/environments/remote"
	"github.com/benchtune/bench/services"
)

// journal records the calls the fakes get, in order.
type journal struct {
	mu    sync.Mutex
	calls []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	j.calls = append(j.calls, fmt.Sprintf(format, args...))
	j.mu.Unlock()
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.calls...)
}

// fakeExec is a RemoteExec that answers with canned results per command.
type fakeExec struct {
	j        *journal
	mu       sync.Mutex
	requests []services.RemoteExecRequest
	answer   func(req services.RemoteExecRequest) (services.ExecResult, error)
}

func (f *fakeExec) RemoteExec(ctx context.Context, req services.RemoteExecRequest) (services.ExecResult, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	f.j.add("exec %s on %v", req.CommandName, req.Params["ssh_hostname"])
	if f.answer != nil {
		return f.answer(req)
	}
	return services.ExecResult{}, nil
}

type fakeHostOps struct {
	j   *journal
	err error
}

func (f *fakeHostOps) StartHost(_ context.Context, p services.Params) error {
	f.j.add("start %v", p["vmName"])
	return f.err
}

func (f *fakeHostOps) StopHost(_ context.Context, p services.Params, force bool) error {
	f.j.add("stop %v", p["vmName"])
	return f.err
}

func (f *fakeHostOps) RestartHost(_ context.Context, p services.Params, force bool) error {
	f.j.add("restart %v", p["vmName"])
	return f.err
}

type fakeProv struct{ j *journal }

func (f *fakeProv) ProvisionHost(_ context.Context, p services.Params) (services.Params, error) {
	f.j.add("provision %v (%v)", p["vmName"], p["vmSize"])
	return services.Params{"ssh_hostname": "10.1.2.3", "instance_id": "i-0abc"}, nil
}

func (f *fakeProv) DeprovisionHost(_ context.Context, p services.Params) error {
	f.j.add("deprovision %v", p["instance_id"])
	return nil
}

func (f *fakeProv) DeallocateHost(_ context.Context, p services.Params) error {
	f.j.add("deallocate %v", p["instance_id"])
	return nil
}

type fakeOS struct{ j *journal }

func (f *fakeOS) Shutdown(_ context.Context, p services.Params, force bool) error {
	f.j.add("shutdown %v", p["ssh_hostname"])
	return nil
}

func (f *fakeOS) Reboot(_ context.Context, p services.Params, force bool) error {
	f.j.add("reboot %v", p["ssh_hostname"])
	return nil
}

type fakeNet struct{ j *journal }

func (f *fakeNet) ProvisionNetwork(_ context.Context, p services.Params) (services.Params, error) {
	f.j.add("provision network %v", p["vnetName"])
	return services.Params{"vnet_id": "vnet-9"}, nil
}

func (f *fakeNet) DeprovisionNetwork(_ context.Context, p services.Params, ignore bool) error {
	f.j.add("deprovision network %v ignore=%v", p["vnet_id"], ignore)
	return nil
}

type fakeConfig struct {
	j       *journal
	pending bool
}

func (f *fakeConfig) Configure(_ context.Context, p services.Params, settings map[string]any) error {
	keys := make([]string, 0, len(settings))
	for k, v := range settings {
		keys = append(keys, fmt.Sprintf("%s=%v", k, v))
	}
	sortStrings(keys)
	f.j.add("configure %v %s", p["serverName"], strings.Join(keys, ","))
	return nil
}

func (f *fakeConfig) IsConfigPending(_ context.Context, p services.Params) (bool, error) {
	return f.pending, nil
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func build(t *testing.T, f *envtest.Fixture, cfg string, globals environments.Params, svcs ...any) environments.Environment {
	t.Helper()
	env, err := f.Builder.LoadEnvironment(context.Background(), cfg, f.Tunables, globals, nil, f.Services.Push(svcs...), nil)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

const remoteJSON = `{
	"name": "Remote App", "class": "mlos_bench.environments.remote.remote_env.RemoteEnv",
	"config": {
		"tunable_params": ["kernel"],
		"const_args": {"ssh_hostname": "host-1", "app-port": 6379},
		"required_args": ["vmName"],
		"shell_env_params": ["kernel_sched_latency_ns"],
		"shell_env_params_rename": {"PORT": "app-port"},
		"setup": ["./install.sh"],
		"run": ["./bench.sh"],
		"teardown": ["./cleanup.sh"],
		"results_stdout_pattern": "^(\\w+)=(\\S+)$",
		"timeouts": {"setup": "1m", "run": 90}
	}
}`

func TestRemoteEnv(t *testing.T) {
	f := envtest.New(t, nil)
	j := &journal{}
	rx := &fakeExec{j: j, answer: func(req services.RemoteExecRequest) (services.ExecResult, error) {
		if strings.HasSuffix(req.CommandName, "-run") {
			return services.ExecResult{Stdout: "warming up\nlatency=1.5\nops=1200\n"}, nil
		}
		return services.ExecResult{}, nil
	}}
	env := build(t, f, remoteJSON, environments.Params{"vmName": "vm-7"}, rx)
	rec := &environments.Recorder{}
	ctx := environments.WithRecorder(context.Background(), rec)
	envtest.Open(t, env)
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	res := env.Run(ctx)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	if diff := cmp.Diff(map[string]any{"latency": 1.5, "ops": int64(1200)}, envtest.WithoutMeasurements(res.Metrics)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	for _, k := range []string{"bench.Remote App.setup.wall_s", "bench.Remote App.run.wall_s"} {
		if _, ok := res.Metrics[k].(float64); !ok {
			t.Errorf("no built-in measurement %s: %v", k, res.Metrics)
		}
	}
	if st := env.Status(ctx); st.Status != environments.READY {
		t.Errorf("status %s", st.Status)
	}
	if err := env.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	type req struct {
		Script  []string
		Env     map[string]string
		Name    string
		Timeout time.Duration
		Host    any
		VM      any
	}
	var got []req
	for _, r := range rx.requests {
		got = append(got, req{r.Script, r.Env, r.CommandName, r.Timeout, r.Params["ssh_hostname"], r.Params["vmName"]})
	}
	env1 := map[string]string{"kernel_sched_latency_ns": "2000000", "PORT": "6379"}
	want := []req{
		{[]string{"./install.sh"}, env1, "bench-remote-app-setup", time.Minute, "host-1", "vm-7"},
		{[]string{"./bench.sh"}, env1, "bench-remote-app-run", 90 * time.Second, "host-1", "vm-7"},
		{[]string{"./cleanup.sh"}, env1, "bench-remote-app-teardown", 0, "host-1", "vm-7"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if outs := rec.Outputs(); len(outs) != 1 || outs[0].Phase != "run" || !strings.Contains(outs[0].Stdout, "ops=1200") {
		t.Errorf("recorded %+v", outs)
	}
}

func TestRemoteEnvFailures(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		answer     func(services.RemoteExecRequest) (services.ExecResult, error)
		setupErr   string
		wantStatus environments.Status
		reason     string
	}{
		{
			name: "setup exits non-zero",
			answer: func(r services.RemoteExecRequest) (services.ExecResult, error) {
				if strings.HasSuffix(r.CommandName, "-setup") {
					return services.ExecResult{ExitCode: 100, Stderr: "E: Unable to locate package\n"}, nil
				}
				return services.ExecResult{}, nil
			},
			setupErr: "the script exited with code 100; stderr: E: Unable to locate package",
		},
		{
			name: "run exits non-zero",
			answer: func(r services.RemoteExecRequest) (services.ExecResult, error) {
				if strings.HasSuffix(r.CommandName, "-run") {
					return services.ExecResult{ExitCode: 2, Stderr: "segfault"}, nil
				}
				return services.ExecResult{}, nil
			},
			wantStatus: environments.FAILED, reason: "run failed: the script exited with code 2; stderr: segfault",
		},
		{
			name: "run times out",
			answer: func(r services.RemoteExecRequest) (services.ExecResult, error) {
				if strings.HasSuffix(r.CommandName, "-run") {
					return services.ExecResult{ExitCode: -1}, fmt.Errorf("bench-remote-app-run ran past its time limit: %w", services.ErrTimeout)
				}
				return services.ExecResult{}, nil
			},
			wantStatus: environments.TIMED_OUT, reason: "ran past its time limit",
		},
		{
			name: "connection lost",
			answer: func(r services.RemoteExecRequest) (services.ExecResult, error) {
				if strings.HasSuffix(r.CommandName, "-run") {
					return services.ExecResult{}, errors.New("ssh: handshake failed")
				}
				return services.ExecResult{}, nil
			},
			wantStatus: environments.FAILED, reason: "ssh: handshake failed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := envtest.New(t, nil)
			env := build(t, f, remoteJSON, environments.Params{"vmName": "vm-7"}, &fakeExec{j: &journal{}, answer: tc.answer})
			envtest.Open(t, env)
			err := env.Setup(ctx, f.Tunables, nil)
			if tc.setupErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.setupErr) {
					t.Fatalf("setup error %v, want %q", err, tc.setupErr)
				}
				if res := env.Run(ctx); res.Status != environments.PENDING {
					t.Errorf("run after failed setup: %s", res.Status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := env.Run(ctx)
			if res.Status != tc.wantStatus || !strings.Contains(res.Reason, tc.reason) || res.Metrics != nil {
				t.Errorf("run = %+v, want %s with %q", res, tc.wantStatus, tc.reason)
			}
		})
	}
}

func TestRemoteEnvWaitBoot(t *testing.T) {
	ctx := context.Background()
	cfg := `{"name": "booted", "class": "mlos_bench.environments.RemoteEnv",
		"config": {"wait_boot": true, "required_args": ["vmName", "ssh_hostname"], "setup": ["uptime"]}}`
	globals := environments.Params{"vmName": "vm-1", "ssh_hostname": "h"}

	f := envtest.New(t, nil)
	j := &journal{}
	env := build(t, f, cfg, globals, &fakeExec{j: j}, &fakeHostOps{j: j})
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"start vm-1", "exec bench-booted-setup on h"}, j.get()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// No run script: READY, as in mlos_bench.
	if res := env.Run(ctx); res.Status != environments.READY {
		t.Errorf("run = %s", res.Status)
	}

	j2 := &journal{}
	env = build(t, f, cfg, globals, &fakeExec{j: j2}, &fakeHostOps{j: j2, err: errors.New("quota exceeded")})
	if err := env.Setup(ctx, f.Tunables, nil); err == nil || !strings.Contains(err.Error(), "wait_boot: start the host: quota exceeded") {
		t.Errorf("err = %v", err)
	}
	if len(j2.get()) != 1 {
		t.Errorf("the setup script ran after the host failed to start: %v", j2.get())
	}

	env = build(t, f, cfg, globals, &fakeExec{j: &journal{}})
	err := env.Setup(ctx, f.Tunables, nil)
	want := `environment "booted" (class mlos_bench.environments.RemoteEnv) needs a HostOps service (e.g. AwsEc2Service); add it to include_services`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestMissingServices: every remote class builds from its config and
// fails at setup with a clear message when the stack lacks its service.
func TestMissingServices(t *testing.T) {
	tests := []struct{ class, config, capability string }{
		{"mlos_bench.environments.remote.RemoteEnv", `{"run": ["true"]}`, "RemoteExec service (e.g. SshHostService)"},
		{"mlos_bench.environments.remote.RemoteEnv", `{"setup": ["true"]}`, "RemoteExec service (e.g. SshHostService)"},
		{"mlos_bench.environments.remote.HostEnv", `{"required_args": ["vmName"]}`, "HostProvisioning service"},
		{"mlos_bench.environments.remote.vm_env.VMEnv", `{"const_args": {"vmName": "x"}}`, "HostProvisioning service"},
		{"mlos_bench.environments.remote.OSEnv", `{"const_args": {"x": 1}}`, "HostOps service"},
		{"mlos_bench.environments.remote.NetworkEnv", `{"deprovision_on_teardown": true}`, "NetworkProvisioning service"},
		{"mlos_bench.environments.remote.SaaSEnv", `{"tunable_params": ["kernel"]}`, "RemoteConfig service"},
	}
	for _, tc := range tests {
		t.Run(tc.class, func(t *testing.T) {
			f := envtest.New(t, nil)
			env := f.Build(`{"name": "e", "class": "`+tc.class+`", "config": `+tc.config+`}`, environments.Params{"vmName": "v"})
			envtest.Open(t, env)
			ctx := context.Background()
			err := env.Setup(ctx, f.Tunables, nil)
			if strings.Contains(tc.config, "run") {
				// Nothing to set up: the run needs the service.
				if err != nil {
					t.Fatal(err)
				}
				res := env.Run(ctx)
				if res.Status != environments.FAILED {
					t.Fatalf("run = %s", res.Status)
				}
				err = errors.New(res.Reason)
			}
			want := `environment "e" (class ` + tc.class + `) needs a ` + tc.capability
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "add it to include_services") {
				t.Errorf("err = %v, want %q", err, want)
			}
		})
	}
}

func TestHostEnvProvisioningFlow(t *testing.T) {
	f := envtest.New(t, nil)
	j := &journal{}
	rx := &fakeExec{j: j, answer: func(req services.RemoteExecRequest) (services.ExecResult, error) {
		return services.ExecResult{Stdout: "score=0.5\n"}, nil
	}}
	env := build(t, f, `{
		"name": "root", "class": "mlos_bench.environments.CompositeEnv",
		"config": {
			"const_args": {"vmName": "bench-vm", "ssh_hostname": ""},
			"children": [
				{"name": "vm", "class": "mlos_bench.environments.remote.VMEnv",
				 "config": {"tunable_params": ["provision"], "required_args": ["vmName"]}},
				{"name": "app", "class": "mlos_bench.environments.RemoteEnv",
				 "config": {"required_args": ["ssh_hostname"], "run": ["./bench.sh"], "results_stdout_pattern": "(\\w+)=(\\S+)"}}
			]
		}
	}`, nil, rx, &fakeProv{j: j})
	ctx := context.Background()
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	if err := env.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"provision bench-vm (Standard_B4ms)",
		"exec bench-app-run on 10.1.2.3", // the address the provisioning returned
		"deprovision i-0abc",
	}
	if diff := cmp.Diff(want, j.get()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestHostEnvParameters(t *testing.T) {
	f := envtest.New(t, nil)
	env := build(t, f, `{"name": "vm", "class": "mlos_bench.environments.remote.HostEnv", "config": {"const_args": {"vmName": "v"}}}`,
		nil, &fakeProv{j: &journal{}})
	if err := env.Setup(context.Background(), f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	got := env.Parameters()
	for k, v := range map[string]any{"vmName": "v", "ssh_hostname": "10.1.2.3", "instance_id": "i-0abc"} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	x, ok := env.(interface{ ExportedParams() environments.Params })
	if !ok {
		t.Fatal("HostEnv does not export parameters")
	}
	if diff := cmp.Diff(environments.Params{"ssh_hostname": "10.1.2.3", "instance_id": "i-0abc"}, x.ExportedParams()); diff != "" {
		t.Error(diff)
	}
	if res := env.Run(context.Background()); res.Status != environments.READY {
		t.Errorf("run = %s", res.Status)
	}
}

func TestOSEnv(t *testing.T) {
	ctx := context.Background()
	cfg := `{"name": "os", "class": "mlos_bench.environments.remote.OSEnv",
		"config": {"tunable_params": ["boot"], "const_args": {"vmName": "vm-2", "ssh_hostname": "h2"}}}`
	t.Run("with HostOps", func(t *testing.T) {
		f := envtest.New(t, nil)
		j := &journal{}
		env := build(t, f, cfg, nil, &fakeHostOps{j: j}, &fakeOS{j: j})
		tun := f.Tunables
		for _, idle := range []string{"halt", "halt", "mwait", "mwait"} {
			if err := tun.Assign(map[string]any{"idle": idle}); err != nil {
				t.Fatal(err)
			}
			if err := env.Setup(ctx, tun, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.Teardown(ctx); err != nil {
			t.Fatal(err)
		}
		want := []string{"start vm-2", "start vm-2", "start vm-2", "reboot h2", "start vm-2", "shutdown h2"}
		if diff := cmp.Diff(want, j.get()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("probe through RemoteExec", func(t *testing.T) {
		f := envtest.New(t, nil)
		j := &journal{}
		env := build(t, f, cfg, nil, &fakeExec{j: j}, &fakeOS{j: j})
		if err := env.Setup(ctx, f.Tunables, nil); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"exec bench-os-probe on h2"}, j.get()); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		down := build(t, f, cfg, nil, &fakeExec{j: j, answer: func(services.RemoteExecRequest) (services.ExecResult, error) {
			return services.ExecResult{}, errors.New("dial tcp: connection refused")
		}})
		if err := down.Setup(ctx, f.Tunables, nil); err == nil || !strings.Contains(err.Error(), "the host does not answer: dial tcp") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestNetworkEnv(t *testing.T) {
	ctx := context.Background()
	for _, deprovision := range []bool{false, true} {
		t.Run(fmt.Sprint(deprovision), func(t *testing.T) {
			f := envtest.New(t, nil)
			j := &journal{}
			env := build(t, f, fmt.Sprintf(`{"name": "net", "class": "mlos_bench.environments.remote.NetworkEnv",
				"config": {"const_args": {"vnetName": "vn"}, "deprovision_on_teardown": %v}}`, deprovision), nil, &fakeNet{j: j})
			if err := env.Setup(ctx, f.Tunables, nil); err != nil {
				t.Fatal(err)
			}
			if env.Parameters()["vnet_id"] != "vnet-9" {
				t.Errorf("params %v", env.Parameters())
			}
			if err := env.Teardown(ctx); err != nil {
				t.Fatal(err)
			}
			want := []string{"provision network vn"}
			if deprovision {
				want = append(want, "deprovision network vnet-9 ignore=true")
			}
			if diff := cmp.Diff(want, j.get()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSaaSEnv(t *testing.T) {
	ctx := context.Background()
	cfg := `{"name": "db", "class": "mlos_bench.environments.remote.SaaSEnv",
		"config": {"tunable_params": ["kernel"], "const_args": {"serverName": "pg-1", "vmName": "pg-1"}}}`
	for _, pending := range []bool{false, true} {
		t.Run(fmt.Sprint(pending), func(t *testing.T) {
			f := envtest.New(t, nil)
			j := &journal{}
			env := build(t, f, cfg, nil, &fakeConfig{j: j, pending: pending}, &fakeHostOps{j: j})
			if err := f.Tunables.Assign(map[string]any{"kernel_sched_migration_cost_ns": 5000}); err != nil {
				t.Fatal(err)
			}
			if err := env.Setup(ctx, f.Tunables, nil); err != nil {
				t.Fatal(err)
			}
			want := []string{"configure pg-1 kernel_sched_latency_ns=2000000,kernel_sched_migration_cost_ns=5000"}
			if pending {
				// Restarted, then started, as mlos_bench's SaaSEnv does.
				want = append(want, "restart pg-1", "start pg-1")
			}
			if diff := cmp.Diff(want, j.get()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	f := envtest.New(t, nil)
	env := build(t, f, cfg, nil, &fakeConfig{j: &journal{}, pending: true})
	if err := env.Setup(ctx, f.Tunables, nil); err == nil || !strings.Contains(err.Error(), "needs a HostOps service") {
		t.Errorf("err = %v", err)
	}
}

func TestClassNames(t *testing.T) {
	f := envtest.New(t, nil)
	all := [][]string{remote.RemoteEnvClasses, remote.HostEnvClasses, remote.VMEnvClasses, remote.OSEnvClasses,
		remote.NetworkEnvClasses, remote.SaaSEnvClasses}
	for _, classes := range all {
		for _, c := range classes {
			cfg := `{"const_args": {"a": 1}}`
			if strings.Contains(c, "RemoteEnv") {
				cfg = `{"run": ["true"]}`
			}
			env, err := f.TryBuild(`{"name": "n", "class": "`+c+`", "config": `+cfg+`}`, nil)
			if err != nil {
				t.Errorf("%s: %v", c, err)
				continue
			}
			if env.Class() != c {
				t.Errorf("Class() = %s, want %s", env.Class(), c)
			}
		}
	}
}

// TestRemoteEnvSetupReuse: with bench_reuse_setup a RemoteEnv starts the
// host (wait_boot) and runs its setup script only when its tunables,
// const_args or required_args changed, reports
// bench.<env>.setup.reused, and sets up again after a teardown.
func TestRemoteEnvSetupReuse(t *testing.T) {
	ctx := context.Background()
	cfg := `{"name": "remote build", "class": "mlos_bench.environments.RemoteEnv",
		"config": {"tunable_params": ["boot"], "wait_boot": true, "required_args": ["vmName", "ssh_hostname"],
		           "bench_reuse_setup": true, "setup": ["make"], "run": ["./bench"], "teardown": ["make clean"],
		           "results_stdout_pattern": "^(\\w+)=(\\S+)$"}}`
	f := envtest.New(t, nil)
	j := &journal{}
	rx := &fakeExec{j: j, answer: func(req services.RemoteExecRequest) (services.ExecResult, error) {
		return services.ExecResult{Stdout: "score=1\n"}, nil
	}}
	env := build(t, f, cfg, environments.Params{"vmName": "vm-1", "ssh_hostname": "h"}, rx, &fakeHostOps{j: j})
	reused := environments.SetupReusedMetric("remote build")
	trialWith := func(idle, host string) any {
		t.Helper()
		tun := f.Tunables.Copy()
		if err := tun.Assign(map[string]any{"idle": idle}); err != nil {
			t.Fatal(err)
		}
		if err := env.Setup(ctx, tun, environments.Params{"ssh_hostname": host, "trial_id": int64(len(j.get()))}); err != nil {
			t.Fatal(err)
		}
		res := env.Run(ctx)
		if res.Status != environments.SUCCEEDED {
			t.Fatalf("%s: %s", res.Status, res.Reason)
		}
		return res.Metrics[reused]
	}
	got := []any{
		trialWith("halt", "h"),   // sets up
		trialWith("halt", "h"),   // skipped
		trialWith("mwait", "h"),  // tunable changed
		trialWith("mwait", "h2"), // required_arg changed
		trialWith("mwait", "h2"), // skipped
	}
	if err := env.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	got = append(got, trialWith("mwait", "h2")) // torn down: sets up
	if diff := cmp.Diff([]any{int64(0), int64(1), int64(0), int64(0), int64(1), int64(0)}, got); diff != "" {
		t.Errorf("reused (-want +got):\n%s", diff)
	}
	var setups []string
	for _, c := range j.get() {
		if strings.HasPrefix(c, "start") || strings.Contains(c, "-setup") {
			setups = append(setups, c)
		}
	}
	want := []string{
		"start vm-1", "exec bench-remote-build-setup on h",
		"start vm-1", "exec bench-remote-build-setup on h",
		"start vm-1", "exec bench-remote-build-setup on h2",
		"start vm-1", "exec bench-remote-build-setup on h2",
	}
	if diff := cmp.Diff(want, setups); diff != "" {
		t.Errorf("setups (-want +got):\n%s", diff)
	}
}
