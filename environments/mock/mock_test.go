package mock_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/environments/mock"
)

func mockJSON(extra string) string {
	return `{"name": "Test Env", "class": "mlos_bench.environments.mock_env.MockEnv",
		"config": {"tunable_params": ["provision", "boot", "kernel"], "mock_env_range": [60, 120]` + extra + `}}`
}

func TestNoNoise(t *testing.T) {
	tests := []struct {
		name   string
		assign map[string]any
		want   float64
	}{
		// The expected scores are mlos_bench's (mock_env_test.py).
		{name: "defaults", want: 75.0},
		{name: "B2ms", assign: map[string]any{"vmSize": "Standard_B2ms", "idle": "halt", "kernel_sched_migration_cost_ns": 250000}, want: 67.5},
		{name: "B4ms", assign: map[string]any{"vmSize": "Standard_B4ms", "idle": "halt", "kernel_sched_migration_cost_ns": 40000}, want: 75.1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := envtest.New(t, nil)
			env := f.Build(mockJSON(`, "mock_env_seed": -1, "mock_env_metrics": ["score", "other_score"]`), nil)
			if tc.assign != nil {
				if err := f.Tunables.Assign(tc.assign); err != nil {
					t.Fatal(err)
				}
			}
			envtest.Open(t, env)
			if err := env.Setup(context.Background(), f.Tunables, nil); err != nil {
				t.Fatal(err)
			}
			for range 10 {
				res := env.Run(context.Background())
				if res.Status != environments.SUCCEEDED {
					t.Fatal(res.Status)
				}
				score := res.Metrics["score"].(float64)
				if math.Abs(score-tc.want) > 0.01*tc.want {
					t.Errorf("score %v, want about %v", score, tc.want)
				}
				if res.Metrics["other_score"] != score {
					t.Errorf("metrics differ: %v", res.Metrics)
				}
			}
		})
	}
}

func runScores(t *testing.T, f *envtest.Fixture, cfg string, n int) []float64 {
	t.Helper()
	env := f.Build(cfg, nil)
	envtest.Open(t, env)
	if err := env.Setup(context.Background(), f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	var out []float64
	for range n {
		res := env.Run(context.Background())
		s := res.Metrics["score"].(float64)
		if s < 60 || s > 120 {
			t.Errorf("score %v outside mock_env_range", s)
		}
		out = append(out, s)
	}
	return out
}

func TestSeededNoise(t *testing.T) {
	f := envtest.New(t, nil)
	a := runScores(t, f, mockJSON(`, "mock_env_seed": 42`), 5)
	b := runScores(t, f, mockJSON(`, "mock_env_seed": 42`), 5)
	c := runScores(t, f, mockJSON(`, "mock_env_seed": 7`), 5)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different scores:\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Errorf("different seeds gave the same scores %v", a)
	}
	if a[0] == a[1] {
		t.Errorf("consecutive runs gave the same noisy score %v", a[0])
	}
	// The noise is mlos_bench's: Python's random.Random(42).gauss(0, 0.2)
	// (the draws below printed by CPython; equal up to the last bit of
	// log/sin/cos), so the scores are those mlos_bench's MockEnv gives.
	base := (runScores(t, f, mockJSON(""), 1)[0] - 60) / 60
	for i, g := range []float64{-0.028818065915585674, -0.03458072006630386, -0.022263172313532493, 0.14039674501977262, -0.02551765675657742} {
		if want := 60 + (base+g)*60; math.Abs(a[i]-want) > 1e-12 {
			t.Errorf("run %d with seed 42: score %v, mlos_bench's %v", i+1, a[i], want)
		}
	}
	noiseFree := runScores(t, f, mockJSON(""), 1)[0]
	// Seed 0: noise from an unseeded generator.
	u := runScores(t, f, mockJSON(`, "mock_env_seed": 0`), 5)
	same := true
	for _, s := range u {
		same = same && s == noiseFree
	}
	if same {
		t.Errorf("seed 0 added no noise: %v", u)
	}
}

func TestStatusAndLifecycle(t *testing.T) {
	f := envtest.New(t, nil)
	env := f.Build(mockJSON(`, "mock_env_metrics": ["a", "b"]`), nil)
	ctx := context.Background()
	// Like mlos_bench, a MockEnv is ready before setup.
	if res := env.Run(ctx); res.Status != environments.SUCCEEDED {
		t.Errorf("run before setup: %s", res.Status)
	}
	st := env.Status(ctx)
	if st.Status != environments.READY || len(st.Telemetry) != 2 || st.Telemetry[0].Metric != "a" || st.Telemetry[1].Metric != "b" {
		t.Errorf("status = %+v", st)
	}
	if err := env.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	if res := env.Run(ctx); res.Status != environments.PENDING {
		t.Errorf("run after teardown: %s", res.Status)
	}
	if st := env.Status(ctx); st.Status != environments.PENDING {
		t.Errorf("status after teardown: %s", st.Status)
	}
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	if res := env.Run(ctx); res.Status != environments.SUCCEEDED {
		t.Errorf("run after setup: %s", res.Status)
	}
}

func TestNormalized(t *testing.T) {
	f := envtest.New(t, nil)
	if err := f.Tunables.Assign(map[string]any{"vmSize": "Standard_B2ms", "kernel_sched_migration_cost_ns": -1, "kernel_sched_latency_ns": 1000000000}); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, tu := range f.Tunables.Tunables() {
		got[tu.Name()] = mock.Normalized(tu)
	}
	want := map[string]float64{"vmSize": 0.5, "idle": 0, "kernel_sched_migration_cost_ns": 0, "kernel_sched_latency_ns": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestBuiltinMockEnv(t *testing.T) {
	f := envtest.New(t, nil)
	env, err := f.Builder.LoadEnvironment(context.Background(), "environments/mock/mock_env.jsonc", nil, nil, nil, f.Services, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, st := envtest.Trial(t, env, env.Tunables(), nil)
	if res.Status != environments.SUCCEEDED || st.Status != environments.READY {
		t.Fatalf("%s %s", res.Status, st.Status)
	}
	if _, ok := res.Metrics["score"].(float64); !ok {
		t.Errorf("metrics %v", res.Metrics)
	}
}

// TestBuiltinMockEnvScoresAsMlosBench: mlos_bench's own launcher tests
// run its mock_env.jsonc without noise (--mock_env_seed -1) and expect a
// score of 67.40… for the defaults and 67.11… for the values of its
// tunable-values example; bench's built-in of the same path must give the
// same numbers.
func TestBuiltinMockEnvScoresAsMlosBench(t *testing.T) {
	f := envtest.New(t, nil)
	globals := environments.Params{"mock_env_seed": int64(-1)}
	env, err := f.Builder.LoadEnvironment(context.Background(), "environments/mock/mock_env.jsonc", nil, globals, nil, f.Services, nil)
	if err != nil {
		t.Fatal(err)
	}
	if env.Name() != "Mock environment" || env.Tunables().Len() != 19 {
		t.Fatalf("name %q, %d tunables", env.Name(), env.Tunables().Len())
	}
	for _, tc := range []struct {
		values   map[string]any
		min, max float64
	}{
		{nil, 67.40, 67.41},
		{map[string]any{"sched_migration_cost_ns": int64(400000), "sched_latency_ns": int64(10000000),
			"sched_child_runs_first": "0", "sched_tunable_scaling": "1"}, 67.11, 67.12},
	} {
		tun := env.Tunables().Copy()
		if err := tun.Assign(tc.values); err != nil {
			t.Fatal(err)
		}
		res, _ := envtest.Trial(t, env, tun, nil)
		score, _ := res.Metrics["score"].(float64)
		if res.Status != environments.SUCCEEDED || score < tc.min || score >= tc.max {
			t.Errorf("values %v: %s score %v, want [%v, %v)", tc.values, res.Status, res.Metrics["score"], tc.min, tc.max)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct{ extra, want string }{
		"bad range":   {`, "mock_env_range": [1, 2, 3]`, "mock_env_range"},
		"bad seed":    {`, "mock_env_seed": "x"`, "mock_env_seed"},
		"no metrics":  {`, "mock_env_metrics": []`, "mock_env_metrics"},
		"unknown key": {`, "mock_env_sed": 1`, `unknown config key "mock_env_sed"`},
	} {
		t.Run(name, func(t *testing.T) {
			f := envtest.New(t, nil, envtest.NoValidation)
			cfg := mockJSON(tc.extra)
			if name == "bad range" {
				cfg = strings.Replace(cfg, `, "mock_env_range": [60, 120]`, "", 1)
			}
			_, err := f.TryBuild(cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
