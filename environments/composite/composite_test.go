package composite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/composite"
	"github.com/benchtune/bench/environments/envtest"
	_ "github.com/benchtune/bench/environments/local"
	_ "github.com/benchtune/bench/environments/mock"
	"github.com/benchtune/bench/tunables"
)

// builtIn are the parameters every environment has.
var builtIn = environments.Params{"experiment_id": nil, "trial_id": nil, "trial_runner_id": nil}

func with(p environments.Params) environments.Params {
	out := environments.Params{}
	for k, v := range builtIn {
		out[k] = v
	}
	for k, v := range p {
		out[k] = v
	}
	return out
}

func children(t *testing.T, env environments.Environment) []environments.Environment {
	t.Helper()
	c, ok := env.(*composite.Env)
	if !ok {
		t.Fatalf("%T is not a CompositeEnv", env)
	}
	return c.Children()
}

// compositeJSON is mlos_bench's composite_env_test fixture.
const compositeJSON = `{
	"name": "Composite Test Environment",
	"class": "mlos_bench.environments.composite_env.CompositeEnv",
	"config": {
		"tunable_params": ["provision", "boot"],
		"const_args": {
			"vm_server_name": "Mock Server VM",
			"vm_client_name": "Mock Client VM",
			"someConst": "root",
			"global_param": "default"
		},
		"children": [
			{
				"name": "Mock Client Environment 1",
				"class": "mlos_bench.environments.mock_env.MockEnv",
				"config": {
					"tunable_params": ["provision"],
					"const_args": {"vmName": "$vm_client_name", "EnvId": 1},
					"required_args": ["vmName", "someConst", "global_param"],
					"mock_env_range": [60, 120],
					"mock_env_metrics": ["score"]
				}
			},
			{
				"name": "Mock Server Environment 2",
				"class": "mlos_bench.environments.mock_env.MockEnv",
				"config": {
					"tunable_params": ["boot"],
					"const_args": {"vmName": "$vm_server_name", "EnvId": 2, "global_param": "local"},
					"required_args": ["vmName"],
					"mock_env_range": [60, 120],
					"mock_env_metrics": ["score"]
				}
			},
			{
				"name": "Mock Control Environment 3",
				"class": "mlos_bench.environments.mock_env.MockEnv",
				"config": {
					"tunable_params": ["boot"],
					"const_args": {"vmName": "Mock Control VM", "EnvId": 3},
					"required_args": ["vmName", "vm_server_name", "vm_client_name"],
					"mock_env_range": [60, 120],
					"mock_env_metrics": ["score"]
				}
			}
		]
	}
}`

func TestCompositeParams(t *testing.T) {
	f := envtest.New(t, nil)
	env := f.Build(compositeJSON, environments.Params{"global_param": "global_value"})
	want := func(vmSize, idle string) []environments.Params {
		return []environments.Params{
			with(environments.Params{
				"vmName": "Mock Client VM", "EnvId": int64(1), "vmSize": vmSize,
				"someConst": "root", "global_param": "global_value",
			}),
			with(environments.Params{
				"vmName": "Mock Server VM", "EnvId": int64(2), "idle": idle, "global_param": "global_value",
			}),
			with(environments.Params{
				"vmName": "Mock Control VM", "EnvId": int64(3), "idle": idle,
				"vm_client_name": "Mock Client VM", "vm_server_name": "Mock Server VM",
			}),
		}
	}
	got := func() []environments.Params {
		var out []environments.Params
		for _, c := range children(t, env) {
			out = append(out, c.Parameters())
		}
		return out
	}
	if diff := cmp.Diff(want("Standard_B4ms", "halt"), got()); diff != "" {
		t.Errorf("after build (-want +got):\n%s", diff)
	}
	if err := f.Tunables.Assign(map[string]any{"vmSize": "Standard_B2s", "idle": "mwait", "kernel_sched_migration_cost_ns": 100000}); err != nil {
		t.Fatal(err)
	}
	envtest.Open(t, env)
	if err := env.Setup(context.Background(), f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want("Standard_B2s", "mwait"), got()); diff != "" {
		t.Errorf("after setup (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"provision", "boot"}, env.Tunables().GroupNames()); diff != "" {
		t.Errorf("composite tunables (-want +got):\n%s", diff)
	}
	res := env.Run(context.Background())
	if res.Status != environments.SUCCEEDED || len(res.Metrics) != 1 {
		t.Errorf("run = %+v", res)
	}
}

func TestNestedCompositeParams(t *testing.T) {
	f := envtest.New(t, nil)
	env := f.Build(`{
		"name": "Composite Test Environment",
		"class": "mlos_bench.environments.CompositeEnv",
		"config": {
			"tunable_params": ["provision", "boot"],
			"const_args": {"vm_server_name": "Mock Server VM", "vm_client_name": "Mock Client VM", "someConst": "root"},
			"children": [
				{
					"name": "Nested Composite Client Environment 1",
					"class": "mlos_bench.environments.composite_env.CompositeEnv",
					"config": {
						"tunable_params": ["provision"],
						"const_args": {"vmName": "$vm_client_name", "EnvId": 1},
						"required_args": ["vmName", "EnvId", "someConst", "vm_server_name"],
						"children": [{
							"name": "Mock Client Environment 1",
							"class": "mlos_bench.environments.mock_env.MockEnv",
							"config": {
								"tunable_params": ["provision"],
								"required_args": ["vmName", "EnvId", "someConst", "vm_server_name", "global_param"],
								"mock_env_range": [60, 120]
							}
						}]
					}
				},
				{
					"name": "Nested Composite Server Environment 2",
					"class": "bench.environments.CompositeEnv",
					"config": {
						"tunable_params": ["boot"],
						"const_args": {"vmName": "$vm_server_name", "EnvId": 2},
						"required_args": ["vmName", "EnvId", "vm_client_name"],
						"children": [{
							"name": "Mock Server Environment 2",
							"class": "mlos_bench.environments.MockEnv",
							"config": {"tunable_params": ["boot"], "required_args": ["vmName", "EnvId", "vm_client_name"]}
						}]
					}
				}
			]
		}
	}`, environments.Params{"global_param": "global_value"})
	if err := f.Tunables.Assign(map[string]any{"vmSize": "Standard_B2s", "idle": "mwait"}); err != nil {
		t.Fatal(err)
	}
	envtest.Open(t, env)
	if err := env.Setup(context.Background(), f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	kids := children(t, env)
	got := []environments.Params{children(t, kids[0])[0].Parameters(), children(t, kids[1])[0].Parameters()}
	want := []environments.Params{
		with(environments.Params{"vmName": "Mock Client VM", "EnvId": int64(1), "vmSize": "Standard_B2s",
			"someConst": "root", "vm_server_name": "Mock Server VM", "global_param": "global_value"}),
		with(environments.Params{"vmName": "Mock Server VM", "EnvId": int64(2), "idle": "mwait", "vm_client_name": "Mock Client VM"}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPrecedence: child const_args < parent const_args < globals (the
// command line's values are globals by then); "$name" takes the parent's
// value with its type.
func TestPrecedence(t *testing.T) {
	f := envtest.New(t, nil)
	env := f.Build(`{
		"name": "root", "class": "mlos_bench.environments.CompositeEnv",
		"config": {
			"const_args": {"a": "parent", "b": "parent", "n": 5, "flag": true, "ratio": 0.5, "list": [1, "x"], "tmpl": "p-$b"},
			"children": [{
				"name": "leaf", "class": "mlos_bench.environments.MockEnv",
				"config": {
					"const_args": {"a": "child", "b": "child", "c": "child", "n2": "$n", "flag2": "$flag",
					               "ratio2": "$ratio", "list2": "$list", "missing": "$nope", "templ": "c-$c-$b"},
					"required_args": ["tmpl"]
				}
			}]
		}
	}`, environments.Params{"b": "global", "c": "cli"})
	got := children(t, env)[0].Parameters()
	want := with(environments.Params{
		"a":       "parent", // parent const_args override the child's
		"b":       "global", // globals override both
		"c":       "cli",
		"n2":      int64(5), // "$name" keeps the parent value's type
		"flag2":   true,
		"ratio2":  0.5,
		"list2":   []any{int64(1), "x"},
		"missing": "$nope", // not a parent const_arg: left as it is
		"templ":   "c-cli-global",
		"tmpl":    "p-global",
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRequiredArgMissing(t *testing.T) {
	f := envtest.New(t, map[string]string{"root.jsonc": `{
		"name": "root", "class": "mlos_bench.environments.CompositeEnv",
		"config": {"children": [{
			"name": "needy child", "class": "mlos_bench.environments.MockEnv",
			"config": {"required_args": ["db_password"]}
		}]}
	}`})
	_, err := f.TryBuild("root.jsonc", nil)
	if err == nil {
		t.Fatal("built without the required parameter")
	}
	for _, want := range []string{`environment "needy child"`, `missing required parameter "db_password"`, "root.jsonc:5:", "/config/children/0/config/required_args"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestCompositeLocal ports mlos_bench's composite_local_env_test: two
// LocalEnvs whose results are merged and telemetry concatenated, with
// variables coming from the child, the parent and the globals.
func TestCompositeLocal(t *testing.T) {
	ts1 := time.Now().Truncate(time.Microsecond)
	ts2 := ts1.Add(2 * time.Minute)
	format := func(ts time.Time) string { return ts.Format("2006-01-02 15:04:05.000000 -0700") }
	cfg := map[string]any{
		"name":  "TestCompositeEnv",
		"class": "mlos_bench.environments.composite_env.CompositeEnv",
		"config": map[string]any{
			"const_args": map[string]any{"latency": 4.2, "throughput": 768, "errors": 0},
			"children": []any{
				map[string]any{
					"name": "TestLocalEnv0", "class": "mlos_bench.environments.local.local_env.LocalEnv",
					"config": map[string]any{
						"const_args":       map[string]any{"latency": 3.3, "reads": 0},
						"required_args":    []string{"errors", "reads"},
						"shell_env_params": []string{"latency", "errors", "reads"},
						"run": []string{
							"echo 'metric,value' > output.csv",
							"echo \"latency,$latency\" >> output.csv",
							"echo \"errors,$errors\" >> output.csv",
							"echo \"reads,$reads\" >> output.csv",
							"echo 'timestamp,metric,value' > telemetry.csv",
							"echo '" + format(ts1) + ",cpu_load,0.64' >> telemetry.csv",
							"echo '" + format(ts1) + ",mem_usage,5120' >> telemetry.csv",
						},
						"read_results_file":   "output.csv",
						"read_telemetry_file": "telemetry.csv",
					},
				},
				map[string]any{
					"name": "TestLocalEnv1", "class": "mlos_bench.environments.local.local_env.LocalEnv",
					"config": map[string]any{
						"const_args":       map[string]any{"throughput": 999, "score": 0.97},
						"required_args":    []string{"writes"},
						"shell_env_params": []string{"throughput", "score", "writes"},
						"run": []string{
							"echo 'metric,value' > output.csv",
							"echo \"throughput,$throughput\" >> output.csv",
							"echo \"score,$score\" >> output.csv",
							"echo \"writes,$writes\" >> output.csv",
							"echo 'timestamp,metric,value' > telemetry.csv",
							"echo '" + format(ts2) + ",cpu_load,0.79' >> telemetry.csv",
							"echo '" + format(ts2) + ",mem_usage,40960' >> telemetry.csv",
						},
						"read_results_file":   "output.csv",
						"read_telemetry_file": "telemetry.csv",
					},
				},
			},
		},
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := envtest.New(t, nil)
	globals := environments.Params{"reads": int64(2222), "writes": int64(1111)}
	env := f.Build(string(data), globals)
	res, st := envtest.Trial(t, env, f.Tunables, globals)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	wantResults := map[string]any{
		"latency":    4.2,         // the child's const_args overridden by the composite's
		"errors":     int64(0),    // from the composite's const_args
		"reads":      int64(2222), // the child's const_args overridden by the globals
		"throughput": int64(768),
		"score":      0.97, // the child's own const_args
		"writes":     int64(1111),
	}
	if diff := cmp.Diff(wantResults, envtest.WithoutMeasurements(res.Metrics)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	wantTel := []environments.Telemetry{
		{Ts: ts1.UTC(), Metric: "cpu_load", Value: 0.64},
		{Ts: ts1.UTC(), Metric: "mem_usage", Value: int64(5120)},
		{Ts: ts2.UTC(), Metric: "cpu_load", Value: 0.79},
		{Ts: ts2.UTC(), Metric: "mem_usage", Value: int64(40960)},
	}
	if st.Status != environments.READY || st.Err != nil {
		t.Errorf("status %s, err %v", st.Status, st.Err)
	}
	if diff := cmp.Diff(wantTel, st.Telemetry); diff != "" {
		t.Errorf("telemetry (-want +got):\n%s", diff)
	}
}

// logEnv is a LocalEnv child that appends "<phase> <name>" to a log file
// in each phase, failing the phases listed in fail.
func logEnv(name, log string, fail ...string) map[string]any {
	cfg := map[string]any{
		"const_args":       map[string]any{"log": log},
		"shell_env_params": []string{"log"},
	}
	for _, phase := range []string{"setup", "run", "teardown"} {
		line := fmt.Sprintf("echo '%s %s' >> \"$log\"", phase, name)
		for _, f := range fail {
			if f == phase {
				line += fmt.Sprintf("; echo '%s of %s broke' >&2; exit 1", phase, name)
			}
		}
		cfg[phase] = []string{line}
	}
	return map[string]any{"name": name, "class": "mlos_bench.environments.LocalEnv", "config": cfg}
}

func buildLogComposite(t *testing.T, f *envtest.Fixture, kids ...map[string]any) environments.Environment {
	t.Helper()
	data, err := json.Marshal(map[string]any{"name": "root", "class": "mlos_bench.environments.CompositeEnv",
		"config": map[string]any{"children": kids}})
	if err != nil {
		t.Fatal(err)
	}
	return f.Build(string(data), nil)
}

func readLog(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

func TestLifecycleOrder(t *testing.T) {
	ctx := context.Background()
	t.Run("setup stops at the first failure", func(t *testing.T) {
		f := envtest.New(t, nil)
		log := filepath.Join(t.TempDir(), "log")
		env := buildLogComposite(t, f, logEnv("a", log), logEnv("b", log, "setup"), logEnv("c", log))
		envtest.Open(t, env)
		err := env.Setup(ctx, f.Tunables, nil)
		if err == nil || !strings.Contains(err.Error(), "setup of b broke") {
			t.Fatalf("setup error = %v", err)
		}
		if diff := cmp.Diff([]string{"setup_a", "setup_b"}, readLog(t, log)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if res := env.Run(ctx); res.Status != environments.PENDING {
			t.Errorf("run after a failed setup: %s", res.Status)
		}
	})
	t.Run("run stops at the first bad status", func(t *testing.T) {
		f := envtest.New(t, nil)
		log := filepath.Join(t.TempDir(), "log")
		env := buildLogComposite(t, f, logEnv("a", log), logEnv("b", log, "run"), logEnv("c", log))
		res, st := envtest.Trial(t, env, f.Tunables, nil)
		if res.Status != environments.FAILED || !strings.Contains(res.Reason, "run of b broke") || res.Metrics != nil {
			t.Errorf("run = %+v", res)
		}
		if diff := cmp.Diff([]string{"setup_a", "setup_b", "setup_c", "run_a", "run_b"}, readLog(t, log)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if st.Status != environments.READY {
			t.Errorf("status = %s", st.Status)
		}
	})
	t.Run("teardown runs every child in reverse order", func(t *testing.T) {
		f := envtest.New(t, nil)
		log := filepath.Join(t.TempDir(), "log")
		env := buildLogComposite(t, f, logEnv("a", log, "teardown"), logEnv("b", log), logEnv("c", log, "teardown"))
		envtest.Trial(t, env, f.Tunables, nil)
		err := env.Teardown(ctx)
		if err == nil {
			t.Fatal("teardown reported no error")
		}
		for _, want := range []string{"teardown of a broke", "teardown of c broke", "2 errors occurred"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		want := []string{"setup_a", "setup_b", "setup_c", "run_a", "run_b", "run_c", "teardown_c", "teardown_b", "teardown_a"}
		if diff := cmp.Diff(want, readLog(t, log)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if st := env.Status(ctx); st.Status != environments.PENDING {
			t.Errorf("status after teardown = %s", st.Status)
		}
	})
}

func TestStatusAggregation(t *testing.T) {
	f := envtest.New(t, nil)
	env := f.Build(`{"name": "root", "class": "mlos_bench.environments.CompositeEnv", "config": {"children": [
		{"name": "ok", "class": "mlos_bench.environments.MockEnv", "config": {"mock_env_metrics": ["m"]}},
		{"name": "bad telemetry", "class": "mlos_bench.environments.LocalEnv", "config": {
			"run": ["echo 'ts,m,v' > t.csv"], "read_telemetry_file": "t.csv"}},
		{"name": "mock2", "class": "mlos_bench.environments.MockEnv", "config": {"mock_env_metrics": ["n"]}}
	]}}`, nil)
	res, st := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.SUCCEEDED {
		t.Fatal(res.Reason)
	}
	if st.Status != environments.FAILED || st.Err == nil || !strings.Contains(st.Err.Error(), `"bad telemetry"`) {
		t.Errorf("status %s, err %v", st.Status, st.Err)
	}
	var metrics []string
	for _, tel := range st.Telemetry {
		metrics = append(metrics, tel.Metric)
	}
	if diff := cmp.Diff([]string{"m", "n"}, metrics); diff != "" {
		t.Errorf("telemetry of the other children (-want +got):\n%s", diff)
	}
}

func TestIncludeChildren(t *testing.T) {
	files := map[string]string{
		"root.jsonc": `{
			"name": "root", "class": "mlos_bench.environments.CompositeEnv",
			"config": {
				"const_args": {"depth": "root"},
				"include_children": ["envs/mid.jsonc"],
				"children": [{"name": "inline", "class": "mlos_bench.environments.MockEnv", "config": {"tunable_params": ["kernel"]}}]
			}
		}`,
		"envs/mid.jsonc": `{
			"name": "mid", "class": "mlos_bench.environments.CompositeEnv",
			"include_tunables": ["envs/extra-tunables.jsonc"],
			"config": {
				"required_args": ["depth"],
				"const_args": {"mid_arg": "$depth"},
				"include_children": ["envs/leaf.jsonc"]
			}
		}`,
		"envs/leaf.jsonc": `{
			"name": "leaf", "class": "mlos_bench.environments.MockEnv",
			"config": {"tunable_params": ["extra"], "const_args": {"from_mid": "$mid_arg"}, "required_args": ["depth"]}
		}`,
		"envs/extra-tunables.jsonc": `{"extra": {"cost": 1, "params": {"knob": {"type": "int", "default": 3, "range": [0, 10]}}}}`,
	}
	f := envtest.New(t, files)
	env := f.Build("root.jsonc", nil)
	if diff := cmp.Diff([]string{"extra", "kernel"}, env.Tunables().GroupNames()); diff != "" {
		t.Errorf("tunables merged upward (-want +got):\n%s", diff)
	}
	mid := children(t, env)[0]
	leaf := children(t, mid)[0]
	if diff := cmp.Diff(with(environments.Params{"from_mid": "root", "depth": "root", "knob": int64(3)}), leaf.Parameters()); diff != "" {
		t.Errorf("leaf parameters (-want +got):\n%s", diff)
	}
	// The trial's tunables reach the included leaf.
	tun := env.Tunables().Copy()
	if err := tun.Assign(map[string]any{"knob": 7}); err != nil {
		t.Fatal(err)
	}
	envtest.Open(t, env)
	if err := env.Setup(context.Background(), tun, nil); err != nil {
		t.Fatal(err)
	}
	if got := leaf.Parameters()["knob"]; got != int64(7) {
		t.Errorf("knob = %v after setup", got)
	}
}

func TestCyclicInclude(t *testing.T) {
	f := envtest.New(t, map[string]string{
		"a.jsonc": `{"name": "a", "class": "mlos_bench.environments.CompositeEnv", "config": {"include_children": ["b.jsonc"]}}`,
		"b.jsonc": `{"name": "b", "class": "mlos_bench.environments.CompositeEnv", "config": {"include_children": ["a.jsonc"]}}`,
	})
	_, err := f.TryBuild("a.jsonc", nil)
	if err == nil || !strings.Contains(err.Error(), "cyclic include") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct{ cfg, want string }{
		"no children":  {`{}`, "needs at least one child"},
		"unknown key":  {`{"childs": []}`, `unknown config key "childs"`},
		"bad children": {`{"children": {"name": "x"}}`, `"children" must be a list`},
		"bad include":  {`{"include_children": [1]}`, "expected a config file path"},
		"bad child": {`{"children": [{"name": "x", "class": "mlos_bench.environments.NoSuchEnv", "config": {}}]}`,
			`unknown environment class "mlos_bench.environments.NoSuchEnv"`},
		"conflicting tunables": {`{"children": [
			{"name": "x", "class": "mlos_bench.environments.MockEnv", "include_tunables": ["t1.jsonc"], "config": {"tunable_params": ["g"]}},
			{"name": "y", "class": "mlos_bench.environments.MockEnv", "include_tunables": ["t2.jsonc"], "config": {"tunable_params": ["g"]}}]}`,
			"defined twice with different definitions"},
	} {
		t.Run(name, func(t *testing.T) {
			f := envtest.New(t, map[string]string{
				"t1.jsonc": `{"g": {"cost": 1, "params": {"p": {"type": "int", "default": 1, "range": [0, 5]}}}}`,
				"t2.jsonc": `{"g": {"cost": 1, "params": {"p": {"type": "int", "default": 2, "range": [0, 5]}}}}`,
			}, envtest.NoValidation)
			_, err := f.TryBuild(`{"name": "root", "class": "mlos_bench.environments.CompositeEnv", "config": `+tc.cfg+`}`, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestOpenFailureClosesOpened(t *testing.T) {
	f := envtest.New(t, nil)
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := f.Build(fmt.Sprintf(`{"name": "root", "class": "mlos_bench.environments.CompositeEnv", "config": {"children": [
		{"name": "first", "class": "mlos_bench.environments.LocalEnv", "config": {"run": ["true"]}},
		{"name": "second", "class": "mlos_bench.environments.LocalEnv", "config": {"run": ["true"], "temp_dir": %q}}
	]}}`, filepath.Join(blocker, "sub")), nil)
	err := env.Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), `environment "second"`) {
		t.Fatalf("open error = %v", err)
	}
	first := children(t, env)[0].(interface{ TempDir() string })
	if first.TempDir() != "" {
		t.Errorf("the first child was left open at %s", first.TempDir())
	}
}

// exportEnv is a test class standing for a provisioning environment: its
// Setup produces an address for the later environments.
type exportEnv struct {
	*environments.Base
	addr string
}

func (e *exportEnv) Open(context.Context) error     { return nil }
func (e *exportEnv) Close() error                   { return nil }
func (e *exportEnv) Teardown(context.Context) error { return nil }
func (e *exportEnv) Setup(_ context.Context, tun *tunables.Groups, g environments.Params) error {
	e.addr = fmt.Sprintf("10.0.0.%v", e.Parameters()["host_index"])
	return e.SetupParams(tun, g)
}
func (e *exportEnv) Run(context.Context) environments.Result {
	return environments.Result{Status: environments.READY, Time: time.Now().UTC()}
}
func (e *exportEnv) Status(context.Context) environments.StatusReport {
	return environments.StatusReport{Status: environments.READY, Time: time.Now().UTC()}
}
func (e *exportEnv) ExportedParams() environments.Params {
	return environments.Params{"ssh_hostname": e.addr}
}

func init() {
	environments.Register(func(_ context.Context, spec environments.Spec) (environments.Environment, error) {
		b, err := environments.NewBase(spec)
		if err != nil {
			return nil, err
		}
		return &exportEnv{Base: b}, nil
	}, "bench.environments.test.ExportEnv")
}

func TestExportedParamsReachLaterSiblings(t *testing.T) {
	// The test class is not in the schemas.
	f := envtest.New(t, nil, envtest.NoValidation)
	env := f.Build(`{"name": "root", "class": "mlos_bench.environments.CompositeEnv", "config": {
		"const_args": {"ssh_hostname": "", "host_index": 7},
		"children": [
			{"name": "before", "class": "mlos_bench.environments.LocalEnv", "config": {
				"required_args": ["ssh_hostname"], "shell_env_params": ["ssh_hostname"],
				"setup": ["test -z \"$ssh_hostname\""]}},
			{"name": "vm", "class": "bench.environments.test.ExportEnv", "config": {"required_args": ["host_index"]}},
			{"name": "nested", "class": "mlos_bench.environments.CompositeEnv", "config": {"children": [
				{"name": "app", "class": "mlos_bench.environments.LocalEnv", "config": {
					"required_args": ["ssh_hostname"], "shell_env_params": ["ssh_hostname"],
					"run": ["echo \"host,$ssh_hostname\""], "results_stdout_pattern": "(host),(\\S+)"}}
			]}}
		]}}`, nil)
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	if diff := cmp.Diff(map[string]any{"host": "10.0.0.7"}, envtest.WithoutMeasurements(res.Metrics)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := env.(composite.Exporter).ExportedParams(); got["ssh_hostname"] != "10.0.0.7" {
		t.Errorf("composite exports %v", got)
	}
}

// TestLaterChildMetricWins: when two children report the same metric, the
// composite's result is the later child's value (mlos_bench merges the
// children's results in order).
func TestLaterChildMetricWins(t *testing.T) {
	child := func(name, score string) map[string]any {
		return map[string]any{
			"name": name, "class": "mlos_bench.environments.local.local_env.LocalEnv",
			"config": map[string]any{
				"run":               []string{"printf \"'metric,value\\nscore," + score + "\\nonly_" + name + ",1\\n'\" > out.csv"},
				"read_results_file": "out.csv",
				// Built-in measurements aside: only the user's metrics here.
				"bench_measurements": false,
			},
		}
	}
	cfg := map[string]any{
		"name": "c", "class": "mlos_bench.environments.composite_env.CompositeEnv",
		"config": map[string]any{"children": []any{child("first", "1.5"), child("second", "7.25")}},
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := envtest.New(t, nil)
	env := f.Build(string(data), nil)
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	want := map[string]any{"score": 7.25, "only_first": int64(1), "only_second": int64(1)}
	if diff := cmp.Diff(want, res.Metrics); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// TestConfigPersistenceServiceSearchPath: mlos_bench's
// ConfigPersistenceService on a service stack puts its config_path on the
// search path of the services built on top of it (LocalExecService finds
// scripts there) and of the environments built on that stack (a
// composite's children are found there), while an environment's own
// includes are looked up by its parent's loader.
func TestConfigPersistenceServiceSearchPath(t *testing.T) {
	extra := t.TempDir() // on no search path but the service's
	envtest.WriteFiles(t, extra, map[string]string{
		"child.jsonc": `{
			"name": "child",
			"class": "mlos_bench.environments.local.LocalEnv",
			"config": {"run": ["hello.sh"], "results_stdout_pattern": "(\\w+)=(\\S+)"}
		}`,
		"hello.sh": "#!/bin/sh\necho score=42\n",
	})
	f := envtest.New(t, map[string]string{
		"svc.jsonc": `{"services": [
			{"class": "mlos_bench.services.config_persistence.ConfigPersistenceService", "config": {"config_path": ["` + extra + `"]}},
			{"class": "mlos_bench.services.local.local_exec.LocalExecService"}
		]}`,
		"root.jsonc": `{
			"name": "root",
			"class": "mlos_bench.environments.composite_env.CompositeEnv",
			"config": {"include_children": ["child.jsonc"]}
		}`,
	})
	ctx := context.Background()
	// Without the service, the child is not found.
	_, err := f.Builder.LoadEnvironment(ctx, "root.jsonc", f.Tunables, nil, nil, f.Services, nil)
	if err == nil || !strings.Contains(err.Error(), `root.jsonc:4:`) || !strings.Contains(err.Error(), `included file "child.jsonc": config file not found`) {
		t.Fatalf("got %v", err)
	}
	stack := f.LoadServices(f.Services, "svc.jsonc")
	env, err := f.Builder.LoadEnvironment(ctx, "root.jsonc", f.Tunables, nil, nil, stack, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.SUCCEEDED || fmt.Sprint(res.Metrics["score"]) != "42" {
		t.Errorf("%s %v %s", res.Status, envtest.WithoutMeasurements(res.Metrics), res.Reason)
	}
}
