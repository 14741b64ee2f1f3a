package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/environments/local"
	"github.com/benchtune/bench/services"
)

// envJSON renders an environment config.
func envJSON(t testing.TB, class, name string, cfg map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"class": class, "name": name, "config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func localEnv(t testing.TB, f *envtest.Fixture, cfg map[string]any, globals environments.Params) environments.Environment {
	t.Helper()
	return f.Build(envJSON(t, "mlos_bench.environments.local.local_env.LocalEnv", "TestLocalEnv", cfg), globals)
}

// nanEqual compares NaN equal to NaN.
var nanEqual = cmp.Comparer(func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) })

func TestRunResults(t *testing.T) {
	tests := []struct {
		name       string
		cfg        map[string]any
		want       map[string]any
		wantStatus environments.Status
		wantReason string // substring
	}{
		{
			name: "long format",
			cfg: map[string]any{
				"run": []string{
					"echo 'metric,value' > output.csv",
					"echo 'latency,10' >> output.csv",
					"echo 'throughput,66' >> output.csv",
					"echo 'score,0.9' >> output.csv",
				},
				"read_results_file": "output.csv",
			},
			want: map[string]any{"latency": int64(10), "throughput": int64(66), "score": 0.9},
		},
		{
			name: "wide format",
			cfg: map[string]any{
				"run": []string{
					"echo 'latency,throughput,score' > output.csv",
					"echo '10,66,0.9' >> output.csv",
				},
				"read_results_file": "output.csv",
			},
			want: map[string]any{"latency": int64(10), "throughput": int64(66), "score": 0.9},
		},
		{
			name: "no header and several rows",
			cfg: map[string]any{
				"run": []string{
					"echo 'latency,10' > output.csv",
					"echo 'throughput,66' >> output.csv",
					"echo 'score,0.9' >> output.csv",
				},
				"read_results_file": "output.csv",
			},
			wantStatus: environments.FAILED,
			wantReason: `the header (latency,10) is not "metric,value"`,
		},
		{
			name:       "zero-length file",
			cfg:        map[string]any{"run": []string{"echo '' > output.csv"}, "read_results_file": "output.csv"},
			wantStatus: environments.FAILED,
			wantReason: "the file is empty",
		},
		{
			name:       "header without data",
			cfg:        map[string]any{"run": []string{"echo 'latency,throughput,score' > output.csv"}, "read_results_file": "output.csv"},
			wantStatus: environments.FAILED,
			wantReason: "no data rows",
		},
		{
			name:       "missing results file",
			cfg:        map[string]any{"run": []string{"true"}, "read_results_file": "output.csv"},
			wantStatus: environments.FAILED,
			wantReason: "the run wrote no results file",
		},
		{
			name: "stdout pattern",
			cfg: map[string]any{
				"run": []string{
					"echo 'Benchmark results:'",
					"echo 'latency,111'",
					"echo 'throughput,222'",
					"echo 'score,0.999'",
					"echo 'a,0,b,1'",
				},
				"results_stdout_pattern": `(\w+),([0-9.]+)`,
			},
			want: map[string]any{"latency": int64(111), "throughput": int64(222), "score": 0.999, "a": int64(0), "b": int64(1)},
		},
		{
			name: "anchored stdout pattern",
			cfg: map[string]any{
				"run": []string{
					"echo 'Benchmark results:'",
					"echo 'latency,111'",
					"echo 'throughput,222'",
					"echo 'score,0.999'",
					"echo 'a,0,b,1'",
				},
				"results_stdout_pattern": `^(\w+),([0-9.]+)$`,
			},
			want: map[string]any{"latency": int64(111), "throughput": int64(222), "score": 0.999},
		},
		{
			name: "stdout and file, the file wins",
			cfg: map[string]any{
				"run": []string{
					"echo 'latency,111'",
					"echo 'throughput,222'",
					"echo 'score,0.999'",
					"echo 'stdout-msg,string'",
					"echo '-------------------'",
					"echo 'metric,value' > output.csv",
					"echo 'extra1,333' >> output.csv",
					"echo 'score,0.5' >> output.csv",
					"echo 'file-msg,string' >> output.csv",
				},
				"results_stdout_pattern": `([a-zA-Z0-9_-]+),([a-z0-9.]+)`,
				"read_results_file":      "output.csv",
			},
			want: map[string]any{"latency": int64(111), "throughput": int64(222), "score": 0.5,
				"stdout-msg": "string", "extra1": int64(333), "file-msg": "string"},
		},
		{
			name: "failing run script",
			cfg: map[string]any{
				"run":               []string{"echo starting", "echo 'disk full' >&2; exit 3", "echo never"},
				"read_results_file": "output.csv",
			},
			wantStatus: environments.FAILED,
			wantReason: "line 2 (echo 'disk full' >&2; exit 3) exited with code 3; stderr: disk full",
		},
		{
			name: "no run script",
			cfg:  map[string]any{"setup": []string{"true"}},
			want: map[string]any{},
		},
		{
			name: "results file on an absolute path",
			cfg: map[string]any{
				"run":               []string{"printf \"'metric,value\\nx,True\\ny,\\n'\" > \"$OUT\""},
				"shell_env_params":  []string{"OUT"},
				"const_args":        map[string]any{"OUT": "PLACEHOLDER"},
				"read_results_file": "RESULTS",
			},
			want: map[string]any{"x": true, "y": nil},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := envtest.New(t, nil)
			cfg := tc.cfg
			if cfg["read_results_file"] == "RESULTS" {
				out := filepath.Join(t.TempDir(), "abs.csv")
				cfg["read_results_file"] = out
				cfg["const_args"] = map[string]any{"OUT": out}
			}
			env := localEnv(t, f, cfg, nil)
			res, st := envtest.Trial(t, env, f.Tunables, nil)
			want := tc.wantStatus
			if want == environments.UNKNOWN {
				want = environments.SUCCEEDED
			}
			if res.Status != want {
				t.Fatalf("status %s, want %s (reason %q)", res.Status, want, res.Reason)
			}
			if !strings.Contains(res.Reason, tc.wantReason) {
				t.Errorf("reason %q does not contain %q", res.Reason, tc.wantReason)
			}
			if diff := cmp.Diff(tc.want, envtest.WithoutMeasurements(res.Metrics), nanEqual); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
			if res.Time.Location() != time.UTC || time.Since(res.Time) > time.Minute {
				t.Errorf("result time %v is not a recent UTC time", res.Time)
			}
			if st.Status != environments.READY || st.Err != nil || len(st.Telemetry) != 0 {
				t.Errorf("status = %+v, want READY without telemetry", st)
			}
		})
	}
}

func TestTelemetry(t *testing.T) {
	base := time.Now().Truncate(time.Microsecond)
	ts1, ts2 := base, base.Add(time.Minute)
	zoned := func(ts time.Time) string {
		return ts.In(time.FixedZone("", -5*3600)).Format("2006-01-02 15:04:05.000000 -0700")
	}
	naive := func(ts time.Time) string { return ts.In(time.Local).Format("2006-01-02 15:04:05.000000") }
	iso := func(ts time.Time) string { return ts.UTC().Format(time.RFC3339Nano) }
	wantRows := []environments.Telemetry{
		{Ts: ts1.UTC(), Metric: "cpu_load", Value: 0.65},
		{Ts: ts1.UTC(), Metric: "mem_usage", Value: int64(10240)},
		{Ts: ts2.UTC(), Metric: "cpu_load", Value: 0.8},
		{Ts: ts2.UTC(), Metric: "mem_usage", Value: int64(20480)},
	}
	rows := func(header string, format func(time.Time) string) []string {
		var lines []string
		redirect := ">"
		if header != "" {
			lines = append(lines, fmt.Sprintf("echo '%s' > telemetry.csv", header))
			redirect = ">>"
		}
		for i, r := range wantRows {
			if i > 0 {
				redirect = ">>"
			}
			lines = append(lines, fmt.Sprintf("echo '%s,%s,%v' %s telemetry.csv", format(r.Ts), r.Metric, r.Value, redirect))
		}
		return lines
	}
	tests := []struct {
		name    string
		run     []string
		want    []environments.Telemetry
		wantErr string
	}{
		{name: "header, zoned", run: rows("timestamp,metric,value", zoned), want: wantRows},
		{name: "header, naive local time", run: rows("timestamp,metric,value", naive), want: wantRows},
		{name: "no header, zoned", run: rows("", zoned), want: wantRows},
		{name: "no header, naive", run: rows("", naive), want: wantRows},
		{name: "no header, ISO 8601 Z", run: rows("", iso), want: wantRows},
		{name: "wrong header", run: rows("ts,metric_name,metric_value", zoned),
			wantErr: `the header, if any, must be exactly "timestamp,metric,value"`},
		{name: "too many columns", run: []string{"echo '" + iso(ts1) + ",EXTRA,cpu_load,0.65' > telemetry.csv"},
			wantErr: "4 columns; telemetry rows must be timestamp,metric,value"},
		{name: "numbers for timestamps", run: []string{"echo 1,cpu_load,0.65 > telemetry.csv", "echo 2,mem_usage,10240 >> telemetry.csv"},
			wantErr: `cannot read "1" as a timestamp`},
		{name: "too old", run: []string{"echo 2023-12-31T23:00:00Z,cpu_load,0.65 > telemetry.csv"},
			wantErr: "is not after 2024-01-01"},
		{name: "no telemetry file", run: []string{"true"}},
		{name: "empty telemetry file", run: []string{": > telemetry.csv"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := envtest.New(t, nil)
			env := localEnv(t, f, map[string]any{"run": tc.run, "read_telemetry_file": "telemetry.csv"}, nil)
			res, st := envtest.Trial(t, env, f.Tunables, nil)
			if res.Status != environments.SUCCEEDED {
				t.Fatalf("run: %s %s", res.Status, res.Reason)
			}
			if tc.wantErr != "" {
				if st.Err == nil || !strings.Contains(st.Err.Error(), tc.wantErr) || st.Status != environments.FAILED {
					t.Fatalf("status = %s, err %v; want FAILED with %q", st.Status, st.Err, tc.wantErr)
				}
				if !strings.Contains(st.Err.Error(), "TestLocalEnv") || !strings.Contains(st.Err.Error(), "telemetry.csv") {
					t.Errorf("error %q does not name the environment and the file", st.Err)
				}
				return
			}
			if st.Err != nil || st.Status != environments.READY {
				t.Fatalf("status = %s, err %v", st.Status, st.Err)
			}
			if diff := cmp.Diff(tc.want, st.Telemetry); diff != "" {
				t.Errorf("telemetry (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShellEnvParams(t *testing.T) {
	// The schemas only accept shell names in shell_env_params; the
	// sanitizing of other names (as mlos_bench's code does) shows without.
	f := envtest.New(t, nil, envtest.NoValidation)
	env := localEnv(t, f, map[string]any{
		"const_args": map[string]any{
			"const_arg":     111,
			"other_arg":     222,
			"dotted.name-1": "x y",
			"flag":          true,
			"ratio":         json.Number("1.0"),
			"renamed_src":   "from-rename",
		},
		"tunable_params": []string{"kernel"},
		"shell_env_params": []string{
			"const_arg", "kernel_sched_latency_ns", "dotted.name-1", "flag", "ratio", "experiment_id",
		},
		"shell_env_params_rename": map[string]string{"RENAMED": "renamed_src"},
		"run": []string{
			"echo const_arg,other_arg,unknown_arg,kernel_sched_latency_ns,dotted,flag,ratio,renamed,experiment_id > output.csv",
			"echo \"$const_arg,$other_arg,$unknown_arg,$kernel_sched_latency_ns,$dotted_name_1,$flag,$ratio,$RENAMED,$experiment_id\" >> output.csv",
		},
		"read_results_file": "output.csv",
	}, environments.Params{"experiment_id": "EXP-1"})
	res, _ := envtest.Trial(t, env, f.Tunables, environments.Params{"experiment_id": "EXP-1"})
	want := map[string]any{
		"const_arg":               int64(111),
		"other_arg":               nil, // not exported
		"unknown_arg":             nil, // not a parameter
		"kernel_sched_latency_ns": int64(2000000),
		"dotted":                  "x y",
		"flag":                    true, // exported as "True"
		"ratio":                   1.0,  // exported as "1.0"
		"renamed":                 "from-rename",
		"experiment_id":           "EXP-1",
	}
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	if diff := cmp.Diff(want, envtest.WithoutMeasurements(res.Metrics)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestShellEnvParamUnknown: a shell_env_params name (or a rename's
// target) that no parameter provides would fail every trial, so building
// the environment fails, at the name's JSON path, with the closest
// parameter name.
func TestShellEnvParamUnknown(t *testing.T) {
	f := envtest.New(t, nil)
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		want []string
	}{
		{"typo of a const_arg", map[string]any{"const_args": map[string]any{"chunk_kb": 64}, "shell_env_params": []string{"chunk_kb", "chunk_kbb"}, "setup": []string{"true"}},
			[]string{`/config/shell_env_params/1`, `no parameter "chunk_kbb" (did you mean "chunk_kb"?)`}},
		{"typo of a tunable", map[string]any{"tunable_params": []string{"kernel"}, "shell_env_params": []string{"kernel_sched_latency_nss"}, "setup": []string{"true"}},
			[]string{`/config/shell_env_params/0`, `(did you mean "kernel_sched_latency_ns"?)`}},
		{"nothing close", map[string]any{"shell_env_params": []string{"nope"}, "setup": []string{"true"}},
			[]string{`/config/shell_env_params/0`, `no parameter "nope": an environment's parameters are`}},
		{"rename target", map[string]any{"const_args": map[string]any{"pw": "x"}, "shell_env_params_rename": map[string]string{"PGPASSWORD": "pww"}, "setup": []string{"true"}},
			[]string{`/config/shell_env_params_rename/PGPASSWORD`, `no parameter "pww" (did you mean "pw"?)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.TryBuild(envJSON(t, "mlos_bench.environments.local.LocalEnv", "e", tc.cfg), nil)
			if err == nil {
				t.Fatal("built")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// Provided by const_args, required_args (from the globals), the
	// tunables and the common args: built.
	if _, err := f.TryBuild(envJSON(t, "mlos_bench.environments.local.LocalEnv", "e", map[string]any{
		"const_args": map[string]any{"aa": 1}, "required_args": []string{"gg"}, "tunable_params": []string{"kernel"},
		"shell_env_params": []string{"aa", "gg", "kernel_sched_latency_ns", "experiment_id", "trial_id", "trial_runner_id"},
		"setup":            []string{"true"},
	}), environments.Params{"gg": "from-globals"}); err != nil {
		t.Fatal(err)
	}
}

func TestDumpFiles(t *testing.T) {
	f := envtest.New(t, map[string]string{"float-tunables.jsonc": `{
		"ratios": {"cost": 1, "params": {
			"ratio": {"type": "float", "default": 1.0, "range": [0, 2], "meta": {"unit": "x", "scale": [1, 2.5]}},
			"mode": {"type": "categorical", "default": "on", "values": ["on", "off"]}
		}}}`})
	tun, err := f.Builder.LoadTunables([]string{"float-tunables.jsonc"}, f.Tunables)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"tunable_params":   []string{"kernel", "ratios"},
		"const_args":       map[string]any{"not_a_tunable": 5},
		"dump_params_file": "input-params.json",
		"dump_meta_file":   "sub/input-meta.json",
		"setup":            []string{"cp input-params.json sub/input-meta.json \"$OUT\""},
		"shell_env_params": []string{"OUT"},
	}
	out := t.TempDir()
	cfg["const_args"].(map[string]any)["OUT"] = out
	env, err := f.Builder.LoadEnvironment(context.Background(),
		envJSON(t, "mlos_bench.environments.LocalEnv", "dump", cfg), tun, nil, nil, f.Services, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tun.Assign(map[string]any{"kernel_sched_migration_cost_ns": 40000, "ratio": 0.25}); err != nil {
		t.Fatal(err)
	}
	envtest.Open(t, env)
	if err := env.Setup(context.Background(), tun, nil); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"input-params.json": `{"kernel_sched_migration_cost_ns": 40000, "kernel_sched_latency_ns": 2000000, "ratio": 0.25, "mode": "on"}`,
		"input-meta.json":   `{"kernel_sched_migration_cost_ns": {"suffix": "ns", "sysctl": "kernel.sched_migration_cost_ns"}, "ratio": {"scale": [1, 2.5], "unit": "x"}}`,
	} {
		got, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Errorf("%s is not valid JSON: %v", file, err)
		}
	}
	// A float that is whole stays a float for Python readers.
	if err := tun.Assign(map[string]any{"ratio": 1.0}); err != nil {
		t.Fatal(err)
	}
	if err := env.Setup(context.Background(), tun, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, "input-params.json"))
	if !strings.Contains(string(got), `"ratio": 1.0,`) {
		t.Errorf("params file %s: want \"ratio\": 1.0", got)
	}
}

func TestSetupFailure(t *testing.T) {
	f := envtest.New(t, nil)
	env := localEnv(t, f, map[string]any{
		"setup": []string{"echo preparing", "echo 'no such package' >&2; exit 7"},
		"run":   []string{"touch ran"},
	}, nil)
	envtest.Open(t, env)
	ctx := context.Background()
	err := env.Setup(ctx, f.Tunables, nil)
	if err == nil {
		t.Fatal("setup succeeded")
	}
	for _, want := range []string{`environment "TestLocalEnv"`, "setup failed", "exited with code 7", "no such package"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	res := env.Run(ctx)
	if res.Status != environments.PENDING {
		t.Errorf("run after a failed setup: %s, want PENDING", res.Status)
	}
	if _, err := os.Stat(filepath.Join(env.(*local.Env).TempDir(), "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run script ran after a failed setup")
	}
	if st := env.Status(ctx); st.Status != environments.PENDING {
		t.Errorf("status after a failed setup: %s", st.Status)
	}
}

func TestTeardown(t *testing.T) {
	f := envtest.New(t, nil)
	marker := filepath.Join(t.TempDir(), "torn")
	env := localEnv(t, f, map[string]any{
		"const_args":       map[string]any{"marker": marker},
		"shell_env_params": []string{"marker"},
		"teardown":         []string{"touch \"$marker\"", "echo 'umount failed' >&2; exit 2"},
	}, nil)
	ctx := context.Background()
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.SUCCEEDED {
		t.Fatal(res.Reason)
	}
	err := env.Teardown(ctx)
	if err == nil || !strings.Contains(err.Error(), "umount failed") || !strings.Contains(err.Error(), "code 2") {
		t.Fatalf("teardown error = %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("teardown did not run: %v", err)
	}
	if st := env.Status(ctx); st.Status != environments.PENDING {
		t.Errorf("status after teardown: %s, want PENDING", st.Status)
	}
}

func TestTempDirLifecycle(t *testing.T) {
	ctx := context.Background()
	t.Run("fresh per open, removed on close", func(t *testing.T) {
		f := envtest.New(t, nil)
		env := localEnv(t, f, map[string]any{"run": []string{"pwd > where"}}, nil)
		if err := env.Open(ctx); err != nil {
			t.Fatal(err)
		}
		dir := env.(*local.Env).TempDir()
		if err := env.Setup(ctx, f.Tunables, nil); err != nil {
			t.Fatal(err)
		}
		if res := env.Run(ctx); res.Status != environments.SUCCEEDED {
			t.Fatal(res.Reason)
		}
		got, err := os.ReadFile(filepath.Join(dir, "where"))
		if err != nil || strings.TrimSpace(string(got)) != dir {
			t.Errorf("the run script ran in %q (%v), want %s", got, err, dir)
		}
		if err := env.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temp dir %s left behind: %v", dir, err)
		}
		if err := env.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if env.(*local.Env).TempDir() == dir {
			t.Errorf("the second Open reused %s", dir)
		}
		if err := env.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("configured temp_dir is templated and kept", func(t *testing.T) {
		f := envtest.New(t, nil)
		root := t.TempDir()
		env := localEnv(t, f, map[string]any{
			"temp_dir": filepath.Join(root, "$experiment_id", "work"),
			"run":      []string{"echo hi > out.txt"},
		}, environments.Params{"experiment_id": "exp7"})
		envtest.Trial(t, env, f.Tunables, nil)
		if err := env.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "exp7", "work", "out.txt")); err != nil {
			t.Errorf("configured temp_dir not used or not kept: %v", err)
		}
	})
	t.Run("setup before open", func(t *testing.T) {
		f := envtest.New(t, nil)
		env := localEnv(t, f, map[string]any{"run": []string{"true"}}, nil)
		if err := env.Setup(ctx, f.Tunables, nil); err == nil || !strings.Contains(err.Error(), "before Open") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestRecordedOutput(t *testing.T) {
	f := envtest.New(t, nil)
	env := localEnv(t, f, map[string]any{
		"setup":            []string{"echo set up"},
		"run":              []string{"echo running; echo warn >&2", "head -c 5000 /dev/zero | tr '\\0' x"},
		"max_output_bytes": 1024,
	}, nil)
	rec := &environments.Recorder{}
	ctx := environments.WithRecorder(context.Background(), rec)
	envtest.Open(t, env)
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	if res := env.Run(ctx); res.Status != environments.SUCCEEDED {
		t.Fatal(res.Reason)
	}
	outs := rec.Outputs()
	if len(outs) != 3 {
		t.Fatalf("recorded %d outputs, want 3: %+v", len(outs), outs)
	}
	type brief struct {
		Env, Phase, Command, Stdout, Stderr string
		Line, ExitCode                      int
	}
	var got []brief
	for _, o := range outs[:2] {
		got = append(got, brief{o.Env, o.Phase, o.Command, o.Stdout, o.Stderr, o.Line, o.ExitCode})
	}
	want := []brief{
		{"TestLocalEnv", "setup", "echo set up", "set up\n", "", 0, 0},
		{"TestLocalEnv", "run", "echo running; echo warn >&2", "running\n", "warn\n", 0, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if big := outs[2]; !big.Truncated || len(big.Stdout) > 1100 || !strings.Contains(big.Stdout, "bytes of output omitted") {
		t.Errorf("large output not bounded to max_output_bytes: truncated=%v len=%d", big.Truncated, len(big.Stdout))
	}
}

type runtimeMem struct{ totalAlloc uint64 }

func (m *runtimeMem) read() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.totalAlloc = ms.TotalAlloc
}

// pidGone waits until no process has the pid.
func pidGone(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the script did not write its pid: %v", err)
	}
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil || pid <= 0 {
		t.Fatalf("bad pid %q", data)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return // gone
		}
		// A zombie waiting for its parent (init) to reap it is gone too.
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running after the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTimeouts(t *testing.T) {
	ctx := context.Background()
	t.Run("run timeout", func(t *testing.T) {
		f := envtest.New(t, nil)
		pids := t.TempDir()
		env := localEnv(t, f, map[string]any{
			"const_args":       map[string]any{"pids": pids},
			"shell_env_params": []string{"pids"},
			"run": []string{
				// A background child and the line's own shell both hang.
				"sleep 300 & echo $! > \"$pids/child\"; echo $$ > \"$pids/shell\"; wait",
			},
			"timeouts": map[string]any{"run": 1},
		}, nil)
		start := time.Now()
		res, _ := envtest.Trial(t, env, f.Tunables, nil)
		if res.Status != environments.TIMED_OUT {
			t.Fatalf("status %s (%s), want TIMED_OUT", res.Status, res.Reason)
		}
		if !strings.Contains(res.Reason, "timed out") && !strings.Contains(res.Reason, "deadline") {
			t.Errorf("reason %q does not say it timed out", res.Reason)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("took %s", d)
		}
		pidGone(t, filepath.Join(pids, "child"))
		pidGone(t, filepath.Join(pids, "shell"))
	})
	t.Run("line timeout", func(t *testing.T) {
		f := envtest.New(t, nil)
		pids := t.TempDir()
		env := localEnv(t, f, map[string]any{
			"const_args":       map[string]any{"pids": pids},
			"shell_env_params": []string{"pids"},
			"run":              []string{"echo fast", "echo $$ > \"$pids/shell\"; exec sleep 300"},
			"timeouts":         map[string]any{"line": "500ms", "run": "1h"},
		}, nil)
		rec := &environments.Recorder{}
		rctx := environments.WithRecorder(ctx, rec)
		envtest.Open(t, env)
		if err := env.Setup(rctx, f.Tunables, nil); err != nil {
			t.Fatal(err)
		}
		if res := env.Run(rctx); res.Status != environments.TIMED_OUT {
			t.Fatalf("status %s (%s), want TIMED_OUT", res.Status, res.Reason)
		}
		pidGone(t, filepath.Join(pids, "shell"))
		outs := rec.Outputs()
		if len(outs) != 2 || !outs[1].TimedOut || outs[0].TimedOut {
			t.Errorf("recorded outputs do not mark the timed-out line: %+v", outs)
		}
	})
	t.Run("setup timeout", func(t *testing.T) {
		f := envtest.New(t, nil)
		env := localEnv(t, f, map[string]any{"setup": []string{"sleep 300"}, "timeouts": map[string]any{"setup": 0.5}}, nil)
		envtest.Open(t, env)
		err := env.Setup(ctx, f.Tunables, nil)
		if !errors.Is(err, services.ErrTimeout) {
			t.Fatalf("setup error %v does not wrap services.ErrTimeout", err)
		}
	})
	t.Run("teardown timeout", func(t *testing.T) {
		f := envtest.New(t, nil)
		env := localEnv(t, f, map[string]any{"teardown": []string{"sleep 300"}, "timeouts": map[string]any{"teardown": "300ms"}}, nil)
		envtest.Open(t, env)
		if err := env.Teardown(ctx); !errors.Is(err, services.ErrTimeout) {
			t.Fatalf("teardown error %v does not wrap services.ErrTimeout", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		f := envtest.New(t, nil)
		env := localEnv(t, f, map[string]any{"run": []string{"sleep 300"}}, nil)
		envtest.Open(t, env)
		if err := env.Setup(ctx, f.Tunables, nil); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancel)
		if res := env.Run(cctx); res.Status != environments.CANCELED {
			t.Fatalf("status %s (%s), want CANCELED", res.Status, res.Reason)
		}
	})
}

func TestLargeOutput(t *testing.T) {
	f := envtest.New(t, nil)
	env := localEnv(t, f, map[string]any{
		// 100 MB of output, with a result at the very end.
		"run":                    []string{"head -c 100000000 /dev/zero | tr '\\0' 'x'; echo; echo 'score,0.5'"},
		"results_stdout_pattern": `^(score),([0-9.]+)$`,
	}, nil)
	var before, after runtimeMem
	before.read()
	rec := &environments.Recorder{}
	ctx := environments.WithRecorder(context.Background(), rec)
	envtest.Open(t, env)
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	res := env.Run(ctx)
	after.read()
	if res.Status != environments.SUCCEEDED {
		t.Fatal(res.Reason)
	}
	if diff := cmp.Diff(map[string]any{"score": 0.5}, envtest.WithoutMeasurements(res.Metrics)); diff != "" {
		t.Errorf("the tail of the output was lost (-want +got):\n%s", diff)
	}
	if grew := after.totalAlloc - before.totalAlloc; grew > 40<<20 {
		t.Errorf("allocated %d MB while the script printed 100 MB; output must be bounded", grew>>20)
	}
	outs := rec.Outputs()
	if len(outs) != 1 || !outs[0].Truncated || len(outs[0].Stdout) > 4<<20 {
		t.Errorf("recorded output not bounded: %d outputs", len(outs))
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		globals environments.Params
		want    []string
	}{
		{
			name: "missing required arg",
			config: `{"name": "Needy", "class": "mlos_bench.environments.LocalEnv",
				"config": {"required_args": ["script_password"], "run": ["true"]}}`,
			want: []string{`environment "Needy"`, `missing required parameter "script_password"`, "env.jsonc:2:"},
		},
		{
			name: "unknown key",
			config: `{"name": "Typo", "class": "mlos_bench.environments.LocalEnv",
				"config": {"rnu": ["true"]}}`,
			want: []string{`unknown config key "rnu"`, "/config/rnu", "env.jsonc:2:"},
		},
		{
			name: "bad pattern",
			config: `{"name": "P", "class": "mlos_bench.environments.LocalEnv",
				"config": {"run": ["true"], "results_stdout_pattern": "(\\w+)"}}`,
			want: []string{"results_stdout_pattern", "has 1 group(s); it needs two"},
		},
		{
			name: "pattern Go cannot compile",
			config: `{"name": "P", "class": "mlos_bench.environments.LocalEnv",
				"config": {"run": ["true"], "results_stdout_pattern": "(?<=x)(\\w+),(\\d+)"}}`,
			want: []string{"results_stdout_pattern", "invalid regular expression"},
		},
		{
			name: "bad timeout",
			config: `{"name": "T", "class": "mlos_bench.environments.LocalEnv",
				"config": {"run": ["true"], "timeouts": {"run": "soon"}}}`,
			want: []string{"/config/timeouts", "invalid duration"},
		},
		{
			name: "unknown timeout",
			config: `{"name": "T", "class": "mlos_bench.environments.LocalEnv",
				"config": {"run": ["true"], "timeouts": {"rnu": 3}}}`,
			want: []string{"/config/timeouts", "rnu"},
		},
		{
			name: "wrong type",
			config: `{"name": "T", "class": "mlos_bench.environments.LocalEnv",
				"config": {"run": "true"}}`,
			want: []string{"/config/run", "expected"},
		},
		{
			name: "bad rename",
			config: `{"name": "T", "class": "mlos_bench.environments.LocalEnv",
				"config": {"run": ["true"], "shell_env_params_rename": {"1bad": "x"}}}`,
			want: []string{"shell_env_params_rename", "not a shell variable name"},
		},
		{
			name: "fileshare without transfers",
			config: `{"name": "FS", "class": "mlos_bench.environments.LocalFileShareEnv",
				"config": {"run": ["true"]}}`,
			want: []string{`needs "upload" or "download"`},
		},
		{
			name: "upload key on a LocalEnv",
			config: `{"name": "L", "class": "mlos_bench.environments.LocalEnv",
				"config": {"upload": [{"from": "a", "to": "b"}]}}`,
			want: []string{`unknown config key "upload"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := envtest.New(t, map[string]string{"env.jsonc": tc.config}, envtest.NoValidation)
			_, err := f.TryBuild("env.jsonc", tc.globals)
			if err == nil {
				t.Fatal("built without error")
			}
			var se *source.Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not located: %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestMissingLocalExecService(t *testing.T) {
	f := envtest.New(t, nil)
	env, err := f.Builder.LoadEnvironment(context.Background(),
		envJSON(t, "mlos_bench.environments.LocalEnv", "Lonely", map[string]any{"run": []string{"true"}}),
		f.Tunables, nil, nil, services.NewStack(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = env.Open(context.Background())
	want := `environment "Lonely" (class mlos_bench.environments.LocalEnv) needs a TempDirs service (e.g. LocalExecService or TempDirContextService); add it to include_services`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestClassNames(t *testing.T) {
	f := envtest.New(t, nil)
	for _, class := range append(append([]string(nil), local.LocalEnvClasses...), local.LocalFileShareEnvClasses...) {
		cfg := map[string]any{"run": []string{"true"}}
		if strings.Contains(class, "FileShare") {
			cfg["download"] = []map[string]string{{"from": "a", "to": "b"}}
		}
		env, err := f.TryBuild(envJSON(t, class, "n", cfg), nil)
		if err != nil {
			t.Errorf("%s: %v", class, err)
			continue
		}
		if env.Class() != class {
			t.Errorf("Class() = %q, want %q", env.Class(), class)
		}
	}
	if !contains(environments.Classes(), "bench.environments.LocalEnv") {
		t.Errorf("bench alias not registered")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// dump_params_file may not climb out of the working directory with "..";
// an absolute path is accepted (as mlos_bench's path join does); a
// symbolic link a script planted at or above the dump file (in a temp_dir
// kept between trials) is never followed outside.
func TestDumpFilePaths(t *testing.T) {
	f := envtest.New(t, nil)
	for _, name := range []string{"../x.json", "sub/../../x.json"} {
		_, err := f.TryBuild(envJSON(t, "mlos_bench.environments.LocalEnv", "dump", map[string]any{
			"dump_params_file": name, "run": []string{"true"},
		}), nil)
		if err == nil || !strings.Contains(err.Error(), "/config/dump_params_file") || !strings.Contains(err.Error(), "leaves the environment's working directory") {
			t.Errorf("dump_params_file %q: err = %v, want a config error", name, err)
		}
	}

	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.json")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(work, "params.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(work, "meta")); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(t.TempDir(), "abs", "params.json")
	for _, tc := range []struct {
		name, dump, meta string
		wantErr          bool
	}{
		{"link at the file", "params.json", "", false},
		{"link above the file", "x.json", "meta/m.json", true},
		{"absolute path", abs, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := f.Build(envJSON(t, "mlos_bench.environments.LocalEnv", "dump", map[string]any{
				"temp_dir":         work,
				"tunable_params":   []string{"kernel"},
				"dump_params_file": tc.dump,
				"dump_meta_file":   tc.meta,
				"run":              []string{"true"},
			}), nil)
			envtest.Open(t, env)
			err := env.Setup(context.Background(), f.Tunables, nil)
			if tc.wantErr != (err != nil) {
				t.Fatalf("setup: %v (want error: %v)", err, tc.wantErr)
			}
			if got, _ := os.ReadFile(victim); string(got) != "keep" {
				t.Errorf("a planted link was followed: victim = %q", got)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 1 {
				t.Errorf("written outside: %d entries", len(entries))
			}
			if !tc.wantErr {
				p := tc.dump
				if !filepath.IsAbs(p) {
					p = filepath.Join(work, p)
				}
				if got, err := os.ReadFile(p); err != nil || !strings.Contains(string(got), "kernel_sched_latency_ns") {
					t.Errorf("%s = %q, %v", p, got, err)
				}
			}
		})
	}
}
