package local_test

import (
	"strings"
	"testing"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
)

// The example through a LocalEnv: $latency in single quotes
// expands by default, as in mlos_bench; bench_shell_lines "verbatim" (the
// config key, or a global) keeps it literal.
func TestShellLines(t *testing.T) {
	tests := []struct {
		name    string
		key     any // bench_shell_lines in the config; nil: absent
		globals environments.Params
		want    string
	}{
		{name: "default", want: "12.5"},
		{name: "mlos_bench", key: "mlos_bench", want: "12.5"},
		{name: "verbatim", key: "verbatim", want: "$latency"},
		{name: "global verbatim", globals: environments.Params{"bench_shell_lines": "verbatim"}, want: "$latency"},
		{name: "global overrides the key", key: "mlos_bench", globals: environments.Params{"bench_shell_lines": "verbatim"}, want: "$latency"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := envtest.New(t, nil)
			cfg := map[string]any{
				"run": []string{
					"echo 'metric,value' > out.csv",
					"echo 'latency,$latency' >> out.csv",
				},
				"shell_env_params":  []string{"latency"},
				"const_args":        map[string]any{"latency": 12.5},
				"read_results_file": "out.csv",
			}
			if tc.key != nil {
				cfg["bench_shell_lines"] = tc.key
			}
			env := localEnv(t, f, cfg, tc.globals)
			res, _ := envtest.Trial(t, env, f.Tunables, nil)
			if res.Status != environments.SUCCEEDED {
				t.Fatalf("status %s: %s", res.Status, res.Reason)
			}
			got := envtest.WithoutMeasurements(res.Metrics)["latency"]
			if s, ok := got.(string); tc.want == "$latency" && (!ok || s != tc.want) || tc.want != "$latency" && got != 12.5 {
				t.Errorf("latency = %#v, want %s", got, tc.want)
			}
		})
	}
}

func TestShellLinesBadValue(t *testing.T) {
	f := envtest.New(t, nil, envtest.NoValidation)
	_, err := f.TryBuild(envJSON(t, "mlos_bench.environments.LocalEnv", "e", map[string]any{"run": []string{"true"}, "bench_shell_lines": "raw"}), nil)
	if err == nil || !strings.Contains(err.Error(), "/config/bench_shell_lines") || !strings.Contains(err.Error(), `"verbatim"`) {
		t.Errorf("error %v", err)
	}
	_, err = f.TryBuild(envJSON(t, "mlos_bench.environments.LocalEnv", "e", map[string]any{"run": []string{"true"}}), environments.Params{"bench_shell_lines": true})
	if err == nil || !strings.Contains(err.Error(), "global bench_shell_lines") {
		t.Errorf("bad global: error %v", err)
	}
}

// A line that Python's shlex cannot split is a config error at its place,
// before anything runs; verbatim lines are the shell's business.
func TestShellLinesSplitErrorAtLoad(t *testing.T) {
	f := envtest.New(t, nil)
	cfg := map[string]any{"setup": []string{"true"}, "run": []string{"true", `echo 'unterminated`}}
	_, err := f.TryBuild(envJSON(t, "mlos_bench.environments.LocalEnv", "e", cfg), nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"/config/run/1", "No closing quotation", `"bench_shell_lines": "verbatim"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	cfg["bench_shell_lines"] = "verbatim"
	env := localEnv(t, f, cfg, nil)
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.FAILED || !strings.Contains(res.Reason, "exited with code 2") {
		t.Errorf("verbatim: status %s, reason %q", res.Status, res.Reason)
	}
}
