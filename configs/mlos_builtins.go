package configs

import (
	"io/fs"
	"path"
	"path/filepath"
	"slices"
)

// MlosBuiltinPaths lists the files of mlos_bench's own config folder
// (mlos_bench/mlos_bench/config at the mlos_bench version bench follows,
// without its schemas and READMEs), relative to that folder. mlos_bench
// searches that folder last, as bench searches its built-in configs last:
// bench ships some of these paths with the same settings and tunables
// (see UnshippedMlosBuiltins for the others).
var MlosBuiltinPaths = []string{
	"cli/azure-redis-bench.jsonc",
	"cli/azure-redis-opt.jsonc",
	"cli/cli-create-network-test.jsonc",
	"environments/apps/fio/fio-post.jsonc",
	"environments/apps/fio/fio-pre.jsonc",
	"environments/apps/fio/fio.jsonc",
	"environments/apps/fio/scripts/local/process_fio_results.py",
	"environments/apps/fio/scripts/remote/readwrite.fio.ini",
	"environments/apps/mysql/mysql-tunables.jsonc",
	"environments/apps/redis/redis-tunables.jsonc",
	"environments/apps/redis/redis.jsonc",
	"environments/apps/redis/scripts/local/generate_redis_config.py",
	"environments/apps/redis/scripts/local/process_redis_results.py",
	"environments/apps/redis/scripts/remote/cleanup-app.sh",
	"environments/apps/redis/scripts/remote/cleanup-workload.sh",
	"environments/apps/redis/scripts/remote/common.sh",
	"environments/apps/redis/scripts/remote/run-workload.sh",
	"environments/apps/redis/scripts/remote/setup-app.sh",
	"environments/apps/redis/scripts/remote/setup-workload.sh",
	"environments/mock/mock_env.jsonc",
	"environments/network/virtual-network-environment.jsonc",
	"environments/os/linux/boot/boot-ubuntu.jsonc",
	"environments/os/linux/boot/linux-boot-tunables.jsonc",
	"environments/os/linux/boot/scripts/local/create_new_grub_cfg.py",
	"environments/os/linux/boot/scripts/local/generate_grub_config.py",
	"environments/os/linux/boot/scripts/remote/cleanup-os-boot-time.sh",
	"environments/os/linux/boot/scripts/remote/common-boot-time.sh",
	"environments/os/linux/boot/scripts/remote/prepare-os-boot-time.sh",
	"environments/os/linux/runtime/linux-runtime-tunables.jsonc",
	"environments/os/linux/runtime/scripts/local/generate_kernel_config_script.py",
	"environments/os/linux/runtime/setup-ubuntu.jsonc",
	"environments/root/root-azure-redis.jsonc",
	"environments/saas/azure-flex-db.jsonc",
	"environments/vm/azure/azure-vm-tunables.jsonc",
	"environments/vm/azure/provision-ubuntu-vm.jsonc",
	"experiments/experiment_RedisBench.jsonc",
	"experiments/experiment_create-network-test.jsonc",
	"optimizers/manual_opt.jsonc",
	"optimizers/mlos_core_default_opt.jsonc",
	"optimizers/mlos_core_flaml.jsonc",
	"optimizers/mlos_core_smac.jsonc",
	"optimizers/mock_opt.jsonc",
	"schedulers/sync_scheduler.jsonc",
	"services/local/local_exec_service.jsonc",
	"services/remote/azure/arm-templates/ARM-virtual-network.jsonc",
	"services/remote/azure/arm-templates/azuredeploy-ubuntu-vm.jsonc",
	"services/remote/azure/cloud-init/alt-ssh.yml",
	"services/remote/azure/scripts/setup-rg/results-db/mysql-template.json",
	"services/remote/azure/scripts/setup-rg/results-db/mysql-template.parameters.example.json",
	"services/remote/azure/scripts/setup-rg/rg-template.example.parameters.json",
	"services/remote/azure/scripts/setup-rg/rg-template.json",
	"services/remote/azure/scripts/setup-rg/setup-rg.ps1",
	"services/remote/azure/scripts/setup-rg/setup-rg.sh",
	"services/remote/azure/service-auth.jsonc",
	"services/remote/azure/service-fileshare.jsonc",
	"services/remote/azure/service-flex-mariadb.jsonc",
	"services/remote/azure/service-flex-mysql.jsonc",
	"services/remote/azure/service-flex-postgresql.jsonc",
	"services/remote/azure/service-linux-vm-ops.jsonc",
	"services/remote/azure/service-virtual-network.jsonc",
	"services/remote/ssh/ssh_fileshare_service.jsonc",
	"services/remote/ssh/ssh_host_service.jsonc",
	"storage/duckdb.jsonc",
	"storage/in-memory.jsonc",
	"storage/mysql.jsonc",
	"storage/postgresql.jsonc",
	"storage/sqlite.jsonc",
	"tunables/dummy-tunables.jsonc",
}

// MlosConfigFolderHint tells where mlos_bench's config folder is in a
// checkout of mlos_bench's repository.
const MlosConfigFolderHint = "<mlos_bench checkout>/mlos_bench/mlos_bench/config"

// IsMlosBuiltin reports whether p (relative, slash- or OS-separated) is
// one of mlos_bench's built-in config paths.
func IsMlosBuiltin(p string) bool {
	if p == "" || filepath.IsAbs(p) {
		return false
	}
	_, ok := slices.BinarySearch(MlosBuiltinPaths, path.Clean(filepath.ToSlash(p)))
	return ok
}

// IsUnshippedMlosBuiltin reports whether p is one of mlos_bench's built-in
// config paths that bench does not ship among its own built-in configs.
func IsUnshippedMlosBuiltin(p string) bool {
	if !IsMlosBuiltin(p) {
		return false
	}
	_, err := fs.Stat(Builtin(), path.Clean(filepath.ToSlash(p)))
	return err != nil
}

// UnshippedMlosBuiltins returns mlos_bench's built-in config paths that
// bench does not ship (Azure, Redis, Linux boot, fio…), sorted.
func UnshippedMlosBuiltins() []string {
	var out []string
	for _, p := range MlosBuiltinPaths {
		if IsUnshippedMlosBuiltin(p) {
			out = append(out, p)
		}
	}
	return out
}

// UnshippedHint is the advice added to a "not found" error about p when p
// is one of mlos_bench's built-in configs that bench does not ship; it is
// "" otherwise.
func UnshippedHint(p string) string {
	if !IsUnshippedMlosBuiltin(p) {
		return ""
	}
	return "it is one of mlos_bench's built-in configs, which bench does not ship: add an mlos_bench config folder to the search path, e.g. --config_path " + MlosConfigFolderHint
}

// withHint appends UnshippedHint(p) to msg when there is one.
func withHint(msg, p string) string {
	if h := UnshippedHint(p); h != "" {
		return msg + "; " + h
	}
	return msg
}
