package schedulers

import (
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/configs/source"
)

func TestDecodeConfig(t *testing.T) {
	ok := []struct {
		name    string
		class   string
		file    map[string]any
		globals map[string]any
		check   func(Config) bool
	}{
		{"defaults", "", nil, nil, func(c Config) bool {
			return c.Parallel && c.Class == DefaultClass && c.NumTrialRunners == 1 && c.Reuse && c.FailFast == 3 &&
				c.Lease == 30*time.Second && c.ExperimentID == "exp" && c.TrialConfigRepeatCount == 1 && c.Teardown
		}},
		{"sync scheduler", "mlos_bench.schedulers.SyncScheduler", map[string]any{"max_trials": int64(5)}, nil, func(c Config) bool {
			return !c.Parallel && c.MaxTrials == 5
		}},
		{"integers as strings from a globals file", "", nil, map[string]any{"num_trial_runners": "3", "max_retries": "2"}, func(c Config) bool {
			return c.NumTrialRunners == 3 && c.MaxRetries == 2
		}},
		{"globals override the file", "bench.schedulers.ParallelScheduler", map[string]any{"max_retries": int64(1)}, map[string]any{"max_retries": int64(4)}, func(c Config) bool {
			return c.MaxRetries == 4
		}},
		{"durations and flags", "", nil, map[string]any{"trial_idle_timeout": "10m", "trial_lease": int64(5), "reuse": false, "gpus": "0,1"}, func(c Config) bool {
			return c.IdleTimeout == 10*time.Minute && c.Lease == 5*time.Second && !c.Reuse && c.GPUs == "0,1"
		}},
		{"telemetry interval off by default", "", nil, nil, func(c Config) bool { return c.TelemetryInterval == 0 }},
		// cgroups: off, auto, on, or a boolean by decode.Bool's rule.
		{"cgroups yes", "", nil, map[string]any{"cgroups": "yes"}, func(c Config) bool { return c.Cgroups == "on" }},
		{"cgroups true", "", nil, map[string]any{"cgroups": true}, func(c Config) bool { return c.Cgroups == "on" }},
		{"cgroups 0", "", nil, map[string]any{"cgroups": int64(0)}, func(c Config) bool { return c.Cgroups == "off" }},
		{"cgroups F", "", nil, map[string]any{"cgroups": "F"}, func(c Config) bool { return c.Cgroups == "off" }},
		{"cgroups none", "", nil, map[string]any{"cgroups": "None"}, func(c Config) bool { return c.Cgroups == "off" }},
		{"cgroups auto", "", nil, map[string]any{"cgroups": " AUTO "}, func(c Config) bool { return c.Cgroups == "auto" }},
		{"max_cost as text", "", nil, map[string]any{"max_cost": " 2.5 ", "cost_metric": "cost"}, func(c Config) bool { return c.Noise.MaxCost == 2.5 }},
		{"confirm_refine", "", nil, map[string]any{"confirm_top_k": int64(2), "confirm_refine": "20"}, func(c Config) bool { return c.Noise.ConfirmRefine == 20 }},
		{"telemetry interval from a global", "", nil, map[string]any{"telemetry_interval": "250ms"}, func(c Config) bool {
			return c.TelemetryInterval == 250*time.Millisecond
		}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeConfig(tc.class, tc.file, tc.globals, source.Ref{}, "exp", true)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("%+v", c)
			}
		})
	}
	bad := []struct {
		name    string
		class   string
		globals map[string]any
		want    string
	}{
		{"unknown class", "mlos_bench.schedulers.FooScheduler", nil, "known classes"},
		{"runners not a number", "", map[string]any{"num_trial_runners": "three"}, "num_trial_runners must be an integer"},
		{"zero runners", "", map[string]any{"num_trial_runners": int64(0)}, "num_trial_runners must be >= 1"},
		{"negative retries", "", map[string]any{"max_retries": int64(-1)}, "max_retries must be >= 0"},
		{"bad duration", "", map[string]any{"trial_idle_timeout": "soon"}, "trial_idle_timeout"},
		{"bad telemetry interval", "", map[string]any{"telemetry_interval": "often"}, "telemetry_interval"},
		{"bad flag", "", map[string]any{"reuse": "maybe"}, "reuse must be true or false"},
		{"bad cgroups", "", map[string]any{"cgroups": "maybe"}, "cgroups must be off, auto or on"},
		{"max_cost with trailing text", "", map[string]any{"max_cost": "3abc"}, "max_cost must be a number"},
		{"confirm_refine without confirm_top_k", "", map[string]any{"confirm_refine": int64(10)}, "confirm_refine needs confirm_top_k"},
		{"negative confirm_refine", "", map[string]any{"confirm_top_k": int64(1), "confirm_refine": int64(-1)}, "confirm_refine must be >= 0"},
		{"bad experiment id", "", map[string]any{"experiment_id": "a b"}, "experiment_id"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeConfig(tc.class, nil, tc.globals, source.Ref{}, "exp", true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestDecodeConfigPassive: the passive runner's keys (runner,
// passive_command, passive_prompt), from the file or from globals (--passive
// sets the global runner).
func TestDecodeConfigPassive(t *testing.T) {
	c, err := DecodeConfig("", nil, nil, source.Ref{}, "exp", true)
	if err != nil || c.Runner != RunnerLocal || c.PassivePrompt != "auto" || c.PassiveCommand != "" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = DecodeConfig("", map[string]any{"runner": "passive", "passive_command": " adb shell run $x ", "passive_prompt": false}, nil, source.Ref{}, "exp", true)
	if err != nil || c.Runner != RunnerPassive || c.PassiveCommand != "adb shell run $x" || c.PassivePrompt != "false" {
		t.Fatalf("from the file: %+v %v", c, err)
	}
	c, err = DecodeConfig("mlos_bench.schedulers.SyncScheduler", nil, map[string]any{"runner": "Passive", "passive_prompt": "yes"}, source.Ref{}, "exp", true)
	if err != nil || c.Runner != RunnerPassive || c.PassivePrompt != "true" {
		t.Fatalf("from globals: %+v %v", c, err)
	}
	for _, tc := range []struct {
		globals map[string]any
		want    string
	}{
		{map[string]any{"runner": "robot"}, `runner must be "local" or "passive", got robot`},
		{map[string]any{"runner": int64(3)}, "runner must be"},
		{map[string]any{"runner": "passive", "engine": "engines/slurm.jsonc"}, "exclude each other"},
		{map[string]any{"passive_command": int64(3)}, "passive_command must be a string"},
		{map[string]any{"passive_prompt": "sometimes"}, "passive_prompt must be true, false or \"auto\""},
	} {
		if _, err := DecodeConfig("", nil, tc.globals, source.Ref{}, "exp", true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.globals, err, tc.want)
		}
	}
}
