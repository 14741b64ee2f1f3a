package local_test

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/environments/local"
)

// measurements returns the built-in measurements among the results.
func measurements(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if strings.HasPrefix(k, local.MeasurementPrefix) {
			out[k] = v
		}
	}
	return out
}

// seconds reads a measurement, failing the test when it is missing or
// not a float64.
func measured(t *testing.T, m map[string]any, name string) float64 {
	t.Helper()
	v, ok := m[name]
	if !ok {
		t.Fatalf("no %s in the results %v", name, m)
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s = %v (%T), want a float64", name, v, v)
	}
	return f
}

func succeeded(t *testing.T, res environments.Result) {
	t.Helper()
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
}

func TestMeasurementsOfKnownPrograms(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("CPU time and memory are measured on Linux only")
	}
	name := func(phase, measure string) string { return local.MeasurementName("TestLocalEnv", phase, measure) }

	t.Run("sleep", func(t *testing.T) {
		f := envtest.New(t, nil)
		env := localEnv(t, f, map[string]any{
			"setup":    []string{"sleep 0.2"},
			"run":      []string{"sleep 0.25", "sleep 0.25"},
			"teardown": []string{"true"},
		}, nil)
		res, _ := envtest.Trial(t, env, f.Tunables, nil)
		succeeded(t, res)
		m := measurements(res.Metrics)
		var want []string
		for _, phase := range []string{"setup", "run"} {
			for _, measure := range []string{local.MeasureWall, local.MeasureCPUUser, local.MeasureCPUSys, local.MeasureMaxRSSMB} {
				want = append(want, name(phase, measure))
			}
		}
		slices.Sort(want)
		if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
			t.Errorf("measurements %v, want %v", got, want)
		}
		// Generous bounds: the tests run under -race on loaded machines.
		if w := measured(t, m, name("run", local.MeasureWall)); w < 0.45 || w > 0.9 {
			t.Errorf("run of sleep 0.5 in two lines: wall %.3f s", w)
		}
		if w := measured(t, m, name("setup", local.MeasureWall)); w < 0.18 || w > 0.6 {
			t.Errorf("setup of sleep 0.2: wall %.3f s", w)
		}
		if cpu := measured(t, m, name("run", local.MeasureCPUUser)) + measured(t, m, name("run", local.MeasureCPUSys)); cpu >= 0.1 {
			t.Errorf("sleep: CPU %.3f s", cpu)
		}
		if rss := measured(t, m, name("run", local.MeasureMaxRSSMB)); rss <= 0 || rss > 100 {
			t.Errorf("sleep: max RSS %.1f MiB", rss)
		}
	})

	t.Run("busy loop", func(t *testing.T) {
		f := envtest.New(t, nil)
		env := localEnv(t, f, map[string]any{
			"run": []string{"python3 -c \"'import os\nt = os.times().user\nwhile os.times().user - t < 0.6: pass'\""},
		}, nil)
		res, _ := envtest.Trial(t, env, f.Tunables, nil)
		succeeded(t, res)
		m := measurements(res.Metrics)
		if u := measured(t, m, name("run", local.MeasureCPUUser)); u < 0.5 {
			t.Errorf("0.6 s of CPU: user CPU %.3f s", u)
		}
		if w := measured(t, m, name("run", local.MeasureWall)); w < 0.5 {
			t.Errorf("0.6 s of CPU: wall %.3f s", w)
		}
		if _, ok := m[name("setup", local.MeasureWall)]; ok {
			t.Errorf("a setup phase without lines is measured: %v", m)
		}
	})

	t.Run("200 MiB", func(t *testing.T) {
		f := envtest.New(t, nil)
		env := localEnv(t, f, map[string]any{
			"run": []string{
				"echo small",
				// A child of the shell (not exec'd): its rusage comes with
				// the shell's.
				"python3 -c \"'b = bytearray(200 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1'\"; echo done",
			},
		}, nil)
		res, _ := envtest.Trial(t, env, f.Tunables, nil)
		succeeded(t, res)
		if rss := measured(t, measurements(res.Metrics), name("run", local.MeasureMaxRSSMB)); rss < 200 {
			t.Errorf("200 MiB touched: max RSS %.1f MiB", rss)
		}
	})
}

func TestMeasurementsSwitch(t *testing.T) {
	tests := []struct {
		name      string
		cfg       any // bench_measurements in the config; nil: not given
		built     environments.Params
		trial     environments.Params
		want      bool
		wantError string
	}{
		{name: "default", want: true},
		{name: "config off", cfg: false, want: false},
		{name: "config on", cfg: true, want: true},
		{name: "global off", trial: environments.Params{"bench_measurements": false}, want: false},
		{name: "global off at build", built: environments.Params{"bench_measurements": "false"}, want: false},
		{name: "trial global wins over build global", built: environments.Params{"bench_measurements": false},
			trial: environments.Params{"bench_measurements": "true"}, want: true},
		{name: "config wins over global", cfg: true, trial: environments.Params{"bench_measurements": false}, want: true},
		{name: "bad global", trial: environments.Params{"bench_measurements": "maybe"}, wantError: `global "bench_measurements": expected true or false`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := envtest.New(t, nil)
			cfg := map[string]any{"setup": []string{"true"}, "run": []string{"printf \"'metric,value\\nscore,1\\n'\" > out.csv"}, "read_results_file": "out.csv"}
			if tc.cfg != nil {
				cfg["bench_measurements"] = tc.cfg
			}
			env := localEnv(t, f, cfg, tc.built)
			envtest.Open(t, env)
			err := env.Setup(context.Background(), f.Tunables, tc.trial)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("setup error %v, want %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := env.Run(context.Background())
			succeeded(t, res)
			m := measurements(res.Metrics)
			if got := len(m) > 0; got != tc.want {
				t.Errorf("measurements %v, want them: %v", m, tc.want)
			}
			if tc.want {
				measured(t, m, local.MeasurementName("TestLocalEnv", "setup", local.MeasureWall))
				measured(t, m, local.MeasurementName("TestLocalEnv", "run", local.MeasureWall))
			}
			if res.Metrics["score"] != int64(1) {
				t.Errorf("the scripts' results are lost: %v", res.Metrics)
			}
		})
	}
}

func TestMeasurementsDoNotReplaceUserResults(t *testing.T) {
	f := envtest.New(t, nil)
	wall := local.MeasurementName("TestLocalEnv", "run", local.MeasureWall)
	env := localEnv(t, f, map[string]any{
		"run":               []string{"printf \"'metric,value\\n" + wall + ",42.5\\n'\" > out.csv"},
		"read_results_file": "out.csv",
	}, nil)
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	succeeded(t, res)
	if got := res.Metrics[wall]; got != 42.5 {
		t.Errorf("%s = %v, want the script's 42.5", wall, got)
	}
	if runtime.GOOS == "linux" {
		measured(t, res.Metrics, local.MeasurementName("TestLocalEnv", "run", local.MeasureCPUUser))
	}
}

func TestMeasurementsNotInFailedTrials(t *testing.T) {
	f := envtest.New(t, nil)
	env := localEnv(t, f, map[string]any{"run": []string{"sleep 0.1", "exit 3"}}, nil)
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.FAILED || res.Metrics != nil {
		t.Errorf("status %s, metrics %v; want FAILED without metrics", res.Status, res.Metrics)
	}
}
