package check

import (
	"path/filepath"
	"strings"
	"testing"
)

// Configs of the shape of mlos_bench's Azure Redis setup
// (environments/root/root-azure-redis.jsonc and its children): a
// composite that includes Azure services with placeholder values a run's
// globals replace, and children whose tunable_params are "$ref"s that a
// run's globals map (tunable_params_map).
var azureShape = map[string]string{
	"tunables.jsonc": `{"app": {"cost": 1, "params": {"xx": {"type": "int", "range": [0, 10], "default": 5}}}}`,
	"auth.jsonc":     `{"class": "mlos_bench.services.remote.azure.AzureAuthService", "config": {"tokenRequestInterval": 300}}`,
	"fileshare.jsonc": `{"class": "mlos_bench.services.remote.azure.AzureFileShareService", "config": {
		"storageAccountName": "PLACEHOLDER; e.g.: mystorage", "storageFileShareName": "PLACEHOLDER", "storageAccountKey": "PLACEHOLDER"}}`,
	"child.jsonc": `{"name": "app", "class": "mlos_bench.environments.LocalEnv", "include_tunables": ["tunables.jsonc"],
		"config": {"tunable_params": ["$app"], "required_args": ["vmName"], "shell_env_params": ["xx", "vmName"],
		           "run": ["echo score 1"], "results_stdout_pattern": "(score) (\\d+)"}}`,
	"root.jsonc": `{"name": "root", "class": "mlos_bench.environments.CompositeEnv",
		"include_services": ["auth.jsonc", "fileshare.jsonc"],
		"config": {"const_args": {"mountPoint": "/mnt/fs"}, "include_children": ["child.jsonc"]}}`,
	"cli.jsonc":   `{"environment": "root.jsonc", "storage": "storage/in-memory.jsonc"}`,
	"cli-g.jsonc": `{"environment": "child.jsonc", "storage": "storage/in-memory.jsonc", "globals": ["g.jsonc"]}`,
	"g.jsonc":     `{"vmName": "vm1"}`,
}

// TestTunableRefsAlone: a "$ref" tunable group that a run's globals give
// is a warning when a file is checked alone, as a required arg without a
// value is; a composite whose included service has a placeholder a run's
// globals replace is still checked through (its children's "$ref"s warned
// about, not 0 problems and nothing said); in a run (a CLI config), the
// same reference is an error in validate and in bench run alike.
func TestTunableRefsAlone(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, azureShape)
	check := func(file string) *Report {
		t.Helper()
		rep, err := (&Checker{}).Run([]string{filepath.Join(dir, file)})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	hasWarning := func(rep *Report, want string) bool {
		for _, w := range rep.Warnings {
			if strings.Contains(w.Message, want) {
				return true
			}
		}
		return false
	}
	ref := `tunable group reference "$app": no tunable_params_map in the globals defines it`
	rep := check("child.jsonc")
	if !rep.OK() || !hasWarning(rep, ref) || !hasWarning(rep, "required args without a value: vmName") {
		t.Errorf("child alone: problems %v, warnings %v", rep.Problems, rep.Warnings)
	}
	rep = check("root.jsonc")
	if !rep.OK() || !hasWarning(rep, ref) || !hasWarning(rep, `unless a run's globals give "storageAccountName"`) {
		t.Errorf("root alone: problems %v, warnings %v", rep.Problems, rep.Warnings)
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w.Message, "shell_env_params") {
			t.Errorf("a tunable of a group left out is reported: %v", w)
		}
	}
	// In a run, validate and run agree: both reject the reference.
	cli := filepath.Join(dir, "cli-g.jsonc")
	runErr := runError(t, cli)
	if runErr == nil || !strings.Contains(runErr.Error(), `"$app"`) {
		t.Fatalf("bench run: %v", runErr)
	}
	rep = check("cli-g.jsonc")
	if rep.OK() || !strings.Contains(rep.Problems[0].Message, `tunable group reference "$app"`) {
		t.Errorf("validate of the run: problems %v (run: %v)", rep.Problems, runErr)
	}
	if runErr := runError(t, filepath.Join(dir, "cli.jsonc")); runErr == nil {
		t.Error("bench run of the root starts")
	} else if rep := check("cli.jsonc"); rep.OK() {
		t.Errorf("validate of the root's run passes while bench run fails: %v", runErr)
	}
}
