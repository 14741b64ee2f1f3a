package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// mlosTestConfig writes a config folder shaped like mlos_bench's own
// tests/config: CLI configs that use the built-in mock environment and
// scheduler, a globals file, a tunable-values file, and the mock services'
// configs, at mlos_bench's paths.
func mlosTestConfig(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"cli/mock-bench.jsonc": `{
			"config_path": ["` + dir + `"],
			"environment": "environments/mock/mock_env.jsonc",
			"globals": ["globals/global_test_config.jsonc"],
			"teardown": true,
			"log_level": "INFO"
		}`,
		"cli/test-cli-config.jsonc": `{
			"environment": "environments/mock/mock_env.jsonc",
			"config_path": ["foo", "bar"],
			"scheduler": "schedulers/sync_scheduler.jsonc",
			"optimizer": "optimizers/mlos_core_default_opt.jsonc",
			"services": ["services/remote/mock/mock_fileshare_service.jsonc"],
			"trial_config_repeat_count": 2,
			"num_trial_runners": 3,
			"random_seed": 42,
			"random_init": true
		}`,
		"globals/global_test_config.jsonc": `{
			"experiment_id": "MockExperiment",
			"trial_id": 1,
			"testVmName": "$experiment_id-vm",
			"testVnetName": "$testVmName-vnet",
			"max_suggestions": 5
		}`,
		"tunable-values/tunable-values-example.jsonc": `{
			"sched_migration_cost_ns": 400000,
			"sched_latency_ns": 10000000,
			"sched_child_runs_first": "0",
			"sched_tunable_scaling": "1"
		}`,
		"services/local/mock/mock_local_exec_service.jsonc": `{
			"class": "mlos_bench.tests.services.local.mock.mock_local_exec_service.MockLocalExecService",
			"config": {"temp_dir": "` + filepath.Join(dir, "mock-tmp") + `"}
		}`,
		"services/remote/mock/mock_auth_service.jsonc":        `{"class": "mlos_bench.tests.services.remote.mock.mock_auth_service.MockAuthService"}`,
		"services/remote/mock/mock_fileshare_service.jsonc":   `{"class": "mlos_bench.tests.services.remote.mock.mock_fileshare_service.MockFileShareService", "config": {"fileShareName": "test-share"}}`,
		"services/remote/mock/mock_network_service.jsonc":     `{"class": "mlos_bench.tests.services.remote.mock.mock_network_service.MockNetworkService"}`,
		"services/remote/mock/mock_remote_exec_service.jsonc": `{"class": "mlos_bench.tests.services.remote.mock.mock_remote_exec_service.MockRemoteExecService", "config": {"vmName": "test-vm"}}`,
		"services/remote/mock/mock_vm_service.jsonc":          `{"class": "mlos_bench.tests.services.remote.mock.mock_vm_service.MockVMService", "config": {"vmName": "test-vm"}}`,
	}
	for name, content := range files {
		write(t, dir, name, content, 0o644)
	}
	return dir
}

type runSummary struct {
	Experiment                   string `json:"experiment_id"`
	Trials, Succeeded, BestTrial int
	BestScores                   map[string]any `json:"best_scores"`
}

func summaryOf(t *testing.T, r result) runSummary {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var sum runSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, r.stdout)
	}
	return sum
}

// TestMlosBenchLauncherTests runs what mlos_bench's launcher_run_test.py
// runs — its mock-bench CLI config over the built-in mock environment,
// without noise, each configuration 5 times — and expects mlos_bench's
// final scores: 67.40… for the defaults and 67.11… for the tunable-values
// example.
func TestMlosBenchLauncherTests(t *testing.T) {
	dir := mlosTestConfig(t)
	for _, tc := range []struct {
		name     string
		extra    []string
		min, max float64
	}{
		{"defaults", nil, 67.40, 67.41},
		{"values", []string{"--tunable_values", "tunable-values/tunable-values-example.jsonc"}, 67.11, 67.12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			args := append([]string{"--config_path", dir, "--config", "cli/mock-bench.jsonc",
				"--trial_config_repeat_count", "5", "--mock_env_seed", "-1", "--format", "json"}, tc.extra...)
			sum := summaryOf(t, runBench(t, work, args...))
			best, _ := sum.BestScores["score"].(float64)
			if sum.Experiment != "MockExperiment" || sum.Trials != 5 || sum.Succeeded != 5 || best < tc.min || best >= tc.max {
				t.Errorf("summary %+v, want 5 trials scoring in [%v, %v)", sum, tc.min, tc.max)
			}
			if rows := trialRows(t, filepath.Join(work, "bench.sqlite"), "MockExperiment"); len(rows) != 5 {
				t.Errorf("stored trials %v", rows)
			}
		})
	}
}

// TestMlosBenchTestCLIConfig runs a CLI config like mlos_bench's
// test-cli-config.jsonc: built-in mock environment, optimizer and
// SyncScheduler, a mock file share service, each configuration twice on 3
// trial runners.
func TestMlosBenchTestCLIConfig(t *testing.T) {
	dir := mlosTestConfig(t)
	work := t.TempDir()
	sum := summaryOf(t, runBench(t, work, "--config_path", dir, "--config", "cli/test-cli-config.jsonc",
		"--max_suggestions", "3", "--experiment_id", "CLI", "--format", "json"))
	if sum.Trials != 6 || sum.Succeeded != 6 {
		t.Errorf("summary %+v, want 3 configurations x 2 repeats, all succeeded", sum)
	}
	if best, _ := sum.BestScores["score"].(float64); best < 60 || best > 120 {
		t.Errorf("best score %v outside mock_env_range [60, 120]", sum.BestScores)
	}
}

// TestMockServicesRun runs an environment tree that needs every mock
// service: a VM (MockVMService), its OS (OSOps of MockVMService), a
// network (MockNetworkService), a remote script (MockRemoteExecService),
// a local file share environment (MockFileShareService and
// MockLocalExecService), and the mock environment for the score; a
// ConfigPersistenceService among the services. Every trial succeeds.
func TestMockServicesRun(t *testing.T) {
	dir := mlosTestConfig(t)
	write(t, dir, "environments/mock-services.jsonc", `{
		"name": "mock services",
		"class": "mlos_bench.environments.composite_env.CompositeEnv",
		"include_services": [
			"services/remote/mock/mock_auth_service.jsonc",
			"services/remote/mock/mock_vm_service.jsonc",
			"services/remote/mock/mock_network_service.jsonc",
			"services/remote/mock/mock_remote_exec_service.jsonc",
			"services/remote/mock/mock_fileshare_service.jsonc",
			"services/local/mock/mock_local_exec_service.jsonc"
		],
		"config": {
			"tunable_params": ["linux-swap"],
			"const_args": {"vmName": "test-vm", "vnetName": "test-vnet"},
			"children": [
				{"name": "network", "class": "mlos_bench.environments.remote.NetworkEnv",
				 "config": {"deprovision_on_teardown": true}},
				{"name": "vm", "class": "mlos_bench.environments.remote.VMEnv", "config": {"required_args": ["vmName"]}},
				{"name": "os", "class": "mlos_bench.environments.remote.OSEnv", "config": {"required_args": ["vmName"]}},
				{"name": "remote", "class": "mlos_bench.environments.remote.RemoteEnv",
				 "config": {"setup": ["exit 1"], "run": ["exit 1"], "teardown": ["exit 1"]}},
				{"name": "share", "class": "mlos_bench.environments.local.LocalFileShareEnv",
				 "config": {"upload": [{"from": "input.txt", "to": "input.txt"}],
				            "setup": ["exit 1"], "run": ["exit 1"]}},
				{"name": "score", "class": "mlos_bench.environments.mock_env.MockEnv",
				 "config": {"tunable_params": ["linux-swap"], "mock_env_seed": -1, "mock_env_range": [0, 100]}}
			]
		},
		"include_tunables": ["environments/os/linux/runtime/linux-runtime-tunables.jsonc"]
	}`, 0o644)
	write(t, dir, "services/config_persistence.jsonc",
		`{"class": "mlos_bench.services.ConfigPersistenceService", "config": {"config_path": ["`+dir+`"]}}`, 0o644)
	write(t, dir, "cli/mock-services.jsonc", `{
		"config_path": ["`+dir+`"],
		"services": ["services/config_persistence.jsonc"],
		"environment": "environments/mock-services.jsonc",
		"optimizer": "optimizers/mlos_core_flaml.jsonc",
		"scheduler": "schedulers/sync_scheduler.jsonc",
		"experiment_id": "MOCKSVC"
	}`, 0o644)
	work := t.TempDir()
	sum := summaryOf(t, runBench(t, work, "--config", filepath.Join(dir, "cli/mock-services.jsonc"), "--max_suggestions", "3", "--format", "json"))
	// The built-in SyncScheduler runs each configuration 3 times.
	if sum.Trials != 9 || sum.Succeeded != 9 {
		t.Errorf("summary %+v, want 9 trials, all succeeded", sum)
	}
	// swappiness 60 of [0, 200] is 0.3: the default scores 0.3² of 100.
	if best, _ := sum.BestScores["score"].(float64); best > 9.0001 {
		t.Errorf("best %v, want at most the default's 9", sum.BestScores)
	}
}

// TestUnshippedMlosBuiltin: a config naming one of mlos_bench's built-in
// configs that bench does not ship says so, where it is named.
func TestUnshippedMlosBuiltin(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "env.jsonc", `{
	"name": "azure",
	"class": "mlos_bench.environments.mock_env.MockEnv",
	"include_services": ["services/remote/azure/service-linux-vm-ops.jsonc"]
}`, 0o644)
	for _, args := range [][]string{{"--environment", "env.jsonc"}, {"validate", "env.jsonc"}} {
		r := runBench(t, dir, args...)
		if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "env.jsonc:4:23") ||
			!strings.Contains(r.stderr+r.stdout, "one of mlos_bench's built-in configs, which bench does not ship") ||
			!strings.Contains(r.stderr+r.stdout, "--config_path <mlos_bench checkout>/mlos_bench/mlos_bench/config") {
			t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	// With an mlos_bench config folder on the search path, the file is found.
	mlos := t.TempDir()
	write(t, mlos, "services/remote/azure/service-linux-vm-ops.jsonc",
		`{"class": "mlos_bench.tests.services.remote.mock.mock_vm_service.MockVMService", "config": {"vmName": "x"}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--config_path", mlos, "--storage", "storage/in-memory.jsonc")
	if r.code != 0 {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
