package launcher_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/schemas"
	"github.com/google/go-cmp/cmp"
)

// TestBuiltinConfigsLoad checks every built-in config as the docs
// examples are checked: valid against its schema, and bench builds what
// it describes.
func TestBuiltinConfigsLoad(t *testing.T) {
	n := 0
	err := fs.WalkDir(configs.Builtin(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonc") {
			return err
		}
		n++
		t.Run(p, func(t *testing.T) {
			data, err := fs.ReadFile(configs.Builtin(), p)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := source.Parse(configs.BuiltinPrefix+p, data)
			if err != nil {
				t.Fatal(err)
			}
			kind, err := schemas.DetectKind(doc)
			if err != nil {
				t.Fatalf("kind: %v", err)
			}
			if err := schemas.Validate(kind, doc); err != nil {
				t.Fatalf("invalid %s config: %v", kind, err)
			}
			if err := loadExample(t, t.TempDir(), p, kind, doc); err != nil {
				t.Fatalf("%s config does not load: %v", kind, err)
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d built-in configs", n)
	}
}

// TestBuiltinsMatchMlosBench pins the settings of the built-ins that bench
// ships at mlos_bench's paths to mlos_bench's values (mlos_bench searches
// its own config folder last, as bench searches its built-ins last, so a
// config written for mlos_bench must find the same settings here).
func TestBuiltinsMatchMlosBench(t *testing.T) {
	type setting struct {
		path string
		ptr  []string
		want any
	}
	cfg := func(keys ...string) []string { return append([]string{"config"}, keys...) }
	tests := []setting{
		{"schedulers/sync_scheduler.jsonc", []string{"class"}, "mlos_bench.schedulers.SyncScheduler"},
		{"schedulers/sync_scheduler.jsonc", nil, map[string]any{"class": "mlos_bench.schedulers.SyncScheduler", "config": map[string]any{
			"trial_config_repeat_count": int64(3), "max_trials": int64(-1), "teardown": false}}},
		{"optimizers/manual_opt.jsonc", cfg(), map[string]any{"max_cycles": int64(30), "tunable_values_cycle": []any{map[string]any{}}}},
		{"optimizers/mlos_core_default_opt.jsonc", cfg(), map[string]any{"optimization_targets": map[string]any{"score": "min"}, "max_suggestions": int64(100)}},
		{"optimizers/mlos_core_flaml.jsonc", cfg(), map[string]any{"optimization_targets": map[string]any{"score": "min"}, "max_suggestions": int64(100), "optimizer_type": "FLAML"}},
		{"optimizers/mlos_core_smac.jsonc", cfg(), map[string]any{"optimization_targets": map[string]any{"score": "min"}, "max_suggestions": int64(100), "optimizer_type": "SMAC", "output_directory": nil}},
		{"optimizers/mock_opt.jsonc", cfg(), map[string]any{"optimization_targets": map[string]any{"score": "min"}, "max_suggestions": int64(5), "seed": int64(42)}},
		{"storage/postgresql.jsonc", cfg(), map[string]any{"log_sql": false, "drivername": "postgresql+psycopg2", "database": "mlos_bench",
			"username": "postgres", "password": "PLACERHOLDER PASSWORD", "host": "localhost", "port": int64(5432)}},
		{"storage/sqlite.jsonc", nil, map[string]any{"class": "mlos_bench.storage.sql.storage.SqlStorage", "resolve_config_property_paths": []any{"database"},
			"config": map[string]any{"log_sql": false, "drivername": "sqlite", "database": "mlos_bench.sqlite"}}},
		{"storage/in-memory.jsonc", cfg(), map[string]any{"lazy_schema_create": true, "drivername": "sqlite", "database": ":memory:"}},
		{"services/local/local_exec_service.jsonc", nil, map[string]any{"class": "mlos_bench.services.local.local_exec.LocalExecService"}},
		{"services/remote/ssh/ssh_host_service.jsonc", nil, map[string]any{"class": "mlos_bench.services.remote.ssh.ssh_host_service.SshHostService", "config": map[string]any{"ssh_known_hosts_path": nil}}},
		{"services/remote/ssh/ssh_fileshare_service.jsonc", nil, map[string]any{"class": "mlos_bench.services.remote.ssh.ssh_fileshare.SshFileShareService", "config": map[string]any{"ssh_known_hosts_path": nil}}},
		{"environments/mock/mock_env.jsonc", nil, map[string]any{
			"name":  "Mock environment",
			"class": "mlos_bench.environments.mock_env.MockEnv",
			"include_tunables": []any{
				"environments/apps/redis/redis-tunables.jsonc",
				"environments/os/linux/runtime/linux-runtime-tunables.jsonc",
				"environments/os/linux/boot/linux-boot-tunables.jsonc",
				"environments/vm/azure/azure-vm-tunables.jsonc",
			},
			"config": map[string]any{
				"tunable_params":   []any{"azure-vm", "linux-kernel-boot", "linux-scheduler", "linux-swap", "linux-hugepages-2048kB", "redis"},
				"mock_env_seed":    int64(42),
				"mock_env_range":   []any{int64(60), int64(120)},
				"mock_env_metrics": []any{"score"},
			},
		}},
		{"tunables/dummy-tunables.jsonc", nil, map[string]any{
			"dummy_params_group1": map[string]any{"cost": int64(0), "params": map[string]any{
				"dummy_param": map[string]any{"type": "categorical", "values": []any{"dummy"}, "default": "dummy"}}},
			"dummy_params_group2": map[string]any{"cost": int64(1), "params": map[string]any{
				"dummy_param_int":   map[string]any{"type": "int", "range": []any{int64(0), int64(100)}, "default": int64(0)},
				"dummy_param_float": map[string]any{"type": "float", "range": []any{int64(0), int64(1)}, "default": 0.5}}},
			"dummy_params_group3": map[string]any{"cost": int64(1), "params": map[string]any{
				"dummy_param3": map[string]any{"type": "float", "range": []any{int64(-1), int64(1)}, "default": 0.0}}},
		}},
		{"environments/apps/redis/redis-tunables.jsonc", nil, map[string]any{"redis": map[string]any{"cost": int64(1), "params": map[string]any{
			"hz":         map[string]any{"type": "int", "range": []any{int64(1), int64(500)}, "default": int64(10)},
			"dynamic_hz": map[string]any{"type": "categorical", "values": []any{"yes", "no"}, "default": "yes"}}}}},
		{"environments/vm/azure/azure-vm-tunables.jsonc", nil, map[string]any{"azure-vm": map[string]any{"cost": int64(1000), "params": map[string]any{
			"vmSize": map[string]any{"type": "categorical", "values": []any{"Standard_B2s", "Standard_B2ms", "Standard_B4ms"}, "default": "Standard_B4ms"}}}}},
		{"environments/os/linux/runtime/linux-runtime-tunables.jsonc", []string{"linux-scheduler", "params", "sched_migration_cost_ns"}, map[string]any{
			"type": "int", "range": []any{int64(0), int64(1000000)}, "default": int64(500000), "special": []any{int64(-1)}, "meta": map[string]any{"name_prefix": "/proc/sys/kernel/"}}},
		{"environments/os/linux/runtime/linux-runtime-tunables.jsonc", []string{"linux-scheduler", "params", "sched_latency_ns"}, map[string]any{
			"type": "int", "range": []any{int64(0), int64(1000000000)}, "default": int64(12000000), "meta": map[string]any{"name_prefix": "/proc/sys/kernel/"}}},
		{"environments/os/linux/runtime/linux-runtime-tunables.jsonc", []string{"linux-scheduler", "params", "sched_child_runs_first"}, map[string]any{
			"type": "categorical", "values": []any{"0", "1"}, "default": "0", "meta": map[string]any{"name_prefix": "/proc/sys/kernel/"}}},
		{"environments/os/linux/runtime/linux-runtime-tunables.jsonc", []string{"linux-scheduler", "params", "sched_tunable_scaling"}, map[string]any{
			"type": "categorical", "values": []any{"0", "1"}, "default": "1", "meta": map[string]any{"name_prefix": "/proc/sys/kernel/"}}},
		{"environments/os/linux/runtime/linux-runtime-tunables.jsonc", []string{"linux-swap"}, map[string]any{"cost": int64(1), "params": map[string]any{
			"swappiness": map[string]any{"type": "int", "range": []any{int64(0), int64(200)}, "default": int64(60), "meta": map[string]any{"name_prefix": "/proc/sys/vm/"}}}}},
		{"environments/os/linux/runtime/linux-runtime-tunables.jsonc", []string{"linux-hugepages-2048kB"}, map[string]any{"cost": int64(1), "params": map[string]any{
			"nr_hugepages":            map[string]any{"type": "int", "range": []any{int64(0), int64(65536)}, "default": int64(0), "meta": map[string]any{"name_prefix": "/sys/kernel/mm/hugepages/hugepages-2048kB/"}},
			"nr_overcommit_hugepages": map[string]any{"type": "int", "range": []any{int64(0), int64(2048)}, "default": int64(0), "meta": map[string]any{"name_prefix": "/sys/kernel/mm/hugepages/hugepages-2048kB/"}}}}},
		{"environments/os/linux/boot/linux-boot-tunables.jsonc", []string{"linux-kernel-boot", "cost"}, int64(300)},
		{"environments/os/linux/boot/linux-boot-tunables.jsonc", []string{"linux-kernel-boot", "params", "idle"}, map[string]any{
			"type": "categorical", "values": []any{"halt", "poll", "nomwait"}, "default": "halt"}},
		{"environments/os/linux/boot/linux-boot-tunables.jsonc", []string{"linux-kernel-boot", "params", "ima.ahash_bufsize"}, map[string]any{
			"type": "int", "range": []any{int64(0), int64(65536)}, "default": int64(4096)}},
	}
	for _, flag := range []string{"align_va_addr"} {
		tests = append(tests, setting{"environments/os/linux/boot/linux-boot-tunables.jsonc", []string{"linux-kernel-boot", "params", flag},
			map[string]any{"type": "categorical", "values": []any{"on", "off"}, "default": "on"}})
	}
	for _, flag := range []string{"noautogroup", "nohugevmalloc", "nohalt", "nohz", "no-kvmapf", "nopvspin"} {
		tests = append(tests, setting{"environments/os/linux/boot/linux-boot-tunables.jsonc", []string{"linux-kernel-boot", "params", flag},
			map[string]any{"type": "categorical", "values": []any{"", flag}, "default": ""}})
	}
	for _, tc := range tests {
		data, err := fs.ReadFile(configs.Builtin(), tc.path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := source.Parse(tc.path, data)
		if err != nil {
			t.Fatal(err)
		}
		m, err := configs.Object(doc) // without "$schema"
		if err != nil {
			t.Fatal(err)
		}
		var got any = m
		for _, k := range tc.ptr {
			got = got.(map[string]any)[k]
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s (-mlos_bench +bench):\n%s", tc.path, source.Pointer(tc.ptr), diff)
		}
	}
	// The Linux boot group has exactly these 9 parameters.
	data, _ := fs.ReadFile(configs.Builtin(), "environments/os/linux/boot/linux-boot-tunables.jsonc")
	doc, _ := source.Parse("boot", data)
	if n := len(doc.Root.Get("linux-kernel-boot").Get("params").Keys()); n != 9 {
		t.Errorf("linux-kernel-boot has %d params, want 9", n)
	}
}
