package launcher

import (
	"fmt"
	"maps"
	"slices"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/suggest"
	"github.com/benchtune/bench/schedulers"
)

// benchGlobals are the globals bench reads itself, whatever the configs
// hold (and mlos_bench's own: experiment and trial ids, targets, the
// tunable group map).
var benchGlobals = []string{
	"experiment_id", "trial_id", "config_id", "trial_runner_id", "optimization_targets",
	"tunable_params_map", "config_path", configs.SecretParamsKey, configs.MaxConfigFileSizeKey,
	"max_results_file_size", "bench_shell_lines", "bench_measurements", "bench_reuse_setup",
	"bench_azure_fixes", "ssh_strict_host_key_checking", "ssh_insecure_ignore_host_key",
	"gpu_id", "cpu_slot", "device_slot",
}

// UnreadGlobals warns about the command-line globals (--key value other
// than the launcher's options) that nothing reads: no config of the run
// has the key (mlos_bench's rule: a global overrides only a key a config
// has), no "$key" template names it, and bench does not read it itself.
// As in mlos_bench, such a global is accepted and kept; the warning names
// the closest key that something reads, for a mistyped option
// (--max_sugestions 2). Call it after Build, when every config is read.
func UnreadGlobals(l *configs.Launch) []string {
	if l.Args == nil || len(l.Args.Extra) == 0 {
		return nil
	}
	known := l.Loader.SeenKeys()
	for _, k := range slices.Concat(benchGlobals, configs.OptionKeys(), schedulers.ConfigKeys()) {
		known[k] = true
	}
	if l.Optimizer == "" {
		// The default one-shot optimizer takes these from the globals.
		for _, k := range oneShotKeys {
			known[k] = true
		}
	}
	names := slices.Sorted(maps.Keys(known))
	var out []string
	for _, kv := range l.Args.Extra {
		if known[kv.Key] {
			continue
		}
		msg := fmt.Sprintf("--%s: no config of this run has a key %q and bench does not read it, so it has no effect (it is kept as a global, as mlos_bench does)", kv.Key, kv.Key)
		if c, ok := suggest.Closest(kv.Key, names); ok {
			msg += fmt.Sprintf("; did you mean --%s?", c)
		}
		out = append(out, msg)
	}
	return out
}
