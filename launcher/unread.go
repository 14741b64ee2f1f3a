package launcher

import (
	"fmt"
	"maps"
	"slices"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/json5"
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
// has; a globals file does not count), no "$key" template names it, and
// bench does not read it itself.
// As in mlos_bench, such a global is accepted and kept; the warning names
// the closest key that something reads, for a mistyped option
// (--max_sugestions 2). Call it after Build, when every config is read.
func UnreadGlobals(l *configs.Launch) []string {
	if l.Args == nil || len(l.Args.Extra) == 0 {
		return nil
	}
	known := readKeys(l, l.Loader.SeenKeysOutside(globalsRoots(l)...))
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

// globalsRoots are the documents of the globals files: having a key
// there does not make it read (only a "$key" template there does).
func globalsRoots(l *configs.Launch) []*json5.Node {
	roots := make([]*json5.Node, len(l.GlobalsDocs))
	for i, d := range l.GlobalsDocs {
		roots[i] = d.Root
	}
	return roots
}

// readKeys adds to seen the keys bench reads itself in this run.
func readKeys(l *configs.Launch, seen map[string]bool) map[string]bool {
	for _, k := range slices.Concat(benchGlobals, configs.OptionKeys(), schedulers.ConfigKeys()) {
		seen[k] = true
	}
	if l.Optimizer == "" {
		// The default one-shot optimizer takes these from the globals.
		for _, k := range oneShotKeys {
			seen[k] = true
		}
	}
	return seen
}

// UnreadGlobalsFileKeys warns about the keys of globals files that
// nothing reads (as UnreadGlobals: no other config of the run has the
// key, no "$key" template names it, bench does not read it) and that are
// close to a key something reads: a typo such as "sise_mb" for a
// tunable size_mb. Globals files are free-form in mlos_bench, so a key
// far from every read one (a note, a value for a later run) is left
// alone, and no key is an error. A key a --NAME VALUE overrides is left
// to UnreadGlobals. Call it after Build, when every config is read.
func UnreadGlobalsFileKeys(l *configs.Launch) []string {
	if len(l.GlobalsDocs) == 0 {
		return nil
	}
	known := readKeys(l, l.Loader.SeenKeysOutside(globalsRoots(l)...))
	overridden := map[string]bool{}
	if l.Args != nil {
		for _, kv := range slices.Concat(l.Args.Extra, l.Args.Options) {
			overridden[kv.Key] = true
		}
	}
	names := slices.Sorted(maps.Keys(known))
	var out []string
	for _, doc := range l.GlobalsDocs {
		for _, k := range doc.Root.Keys() {
			if k == "$schema" || known[k] || overridden[k] {
				continue
			}
			c, ok := suggest.Closest(k, names)
			if !ok {
				continue
			}
			e := doc.KeyErrorf([]string{k}, "globals key %q: no config of this run has a key %q and bench does not read it, so it has no effect (it is kept as a global, as mlos_bench does); did you mean %q?", k, k, c)
			e.File, e.Path = configs.ShownPath(doc.File), ""
			out = append(out, e.Error())
		}
	}
	return out
}
