package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/schemas"
)

func schemaValidate(kind configs.Kind, doc *source.Doc) error {
	return schemas.Validate(schemas.Kind(kind), doc)
}

// writeFiles writes files (relative names) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	tunablesFile = `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 10], "default": 5}}}}`
	// localEnv is a valid local environment; cases replace its parts.
	localEnv = `{
  "name": "local",
  "class": "mlos_bench.environments.local.LocalEnv",
  "include_tunables": ["tunables.jsonc"],
  "config": {
    "tunable_params": ["g"],
    "run": ["echo score 1"],
    "results_stdout_pattern": "(score) (\\d+)"
  }
}`
)

// runError is what bench run --config cli says before its first trial
// (nil when it would start).
func runError(t *testing.T, cli string) error {
	t.Helper()
	l, err := configs.Prepare(&configs.Args{Config: cli}, schemaValidate)
	if err != nil {
		return err
	}
	r, err := launcher.Build(context.Background(), l, launcher.Options{})
	if err == nil {
		r.Close()
	}
	return err
}

// TestValidateMatchesRun: each error bench run raises before its first
// trial (the builders' checks, from the CLI config to the storage) is
// also bench validate's, at the same file:line:col, with the same words.
func TestValidateMatchesRun(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string // cli.jsonc and what it names; env.jsonc defaults to localEnv
		want  string            // in both messages
	}{
		{name: "missing environment file", files: map[string]string{"cli.jsonc": `{"environment": "nope-env.jsonc"}`}, want: `included file "nope-env.jsonc": config file not found`},
		{name: "missing globals file", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "globals": ["nope-globals.jsonc"]}`}, want: `included file "nope-globals.jsonc": config file not found`},
		{name: "missing service file", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "services": ["nope-svc.jsonc"]}`}, want: `included file "nope-svc.jsonc": config file not found`},
		{name: "missing tunable values file", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "tunable_values": ["nope-values.jsonc"]}`}, want: `included file "nope-values.jsonc": config file not found`},
		{name: "missing optimizer file", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "optimizer": "nope-opt.jsonc"}`}, want: `included file "nope-opt.jsonc": config file not found`},
		{name: "missing scheduler file", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "scheduler": "nope-sched.jsonc"}`}, want: `included file "nope-sched.jsonc": config file not found`},
		{name: "missing storage file", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "storage": "nope-storage.jsonc"}`}, want: `included file "nope-storage.jsonc": config file not found`},
		{name: "no environment", files: map[string]string{"cli.jsonc": `{"log_level": "INFO"}`}, want: "no environment config"},
		{name: "num_trial_runners a CLI config's schema rejects", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "num_trial_runners": "many"}`}, want: "expected integer, got string"},
		{name: "invalid num_trial_runners from globals", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "globals": ["g.jsonc"]}`, "g.jsonc": `{"num_trial_runners": 0}`}, want: "invalid num_trial_runners 0"},
		{name: "schema error in the environment", files: map[string]string{"env.jsonc": `{"name": "e", "class": "mlos_bench.environments.local.LocalEnv", "config": {"run": "not a list"}}`}, want: "/config/run"},
		{name: "missing included tunables", files: map[string]string{"env.jsonc": strings.Replace(localEnv, `["tunables.jsonc"]`, `["nope-tunables.jsonc"]`, 1)}, want: `included file "nope-tunables.jsonc": config file not found`},
		{name: "missing included service", files: map[string]string{"env.jsonc": strings.Replace(localEnv, `"include_tunables"`, `"include_services": ["nope-service.jsonc"], "include_tunables"`, 1)}, want: `included file "nope-service.jsonc": config file not found`},
		{name: "missing included child", files: map[string]string{"env.jsonc": `{"name": "c", "class": "mlos_bench.environments.CompositeEnv", "config": {"include_children": ["nope-child.jsonc"]}}`}, want: `included file "nope-child.jsonc": config file not found`},
		{name: "cyclic include", files: map[string]string{"env.jsonc": `{"name": "c", "class": "mlos_bench.environments.CompositeEnv", "config": {"include_children": ["env.jsonc"]}}`}, want: "cyclic include of environment configs"},
		{name: "composite without children", files: map[string]string{"env.jsonc": `{"name": "c", "class": "mlos_bench.environments.CompositeEnv", "config": {"children": []}}`}, want: "/config/children"},
		{name: "required arg without a value", files: map[string]string{"env.jsonc": strings.Replace(localEnv, `"tunable_params"`, `"required_args": ["needed"], "tunable_params"`, 1)}, want: `missing required parameter "needed"`},
		{name: "shell_env_params name no parameter provides", files: map[string]string{"env.jsonc": strings.Replace(localEnv, `"tunable_params"`, `"const_args": {"chunk_kb": 64}, "shell_env_params": ["chunk_kbb"], "tunable_params"`, 1)}, want: `no parameter "chunk_kbb" (did you mean "chunk_kb"?)`},
		{name: "results pattern with one group", files: map[string]string{"env.jsonc": strings.Replace(localEnv, `(score) (\\d+)`, `score (\\d+)`, 1)}, want: "has 1 group(s); it needs two"},
		{name: "tunable group not defined", files: map[string]string{"env.jsonc": strings.Replace(localEnv, `["g"]`, `["nogroup"]`, 1)}, want: `"nogroup"`},
		{name: "bad tunables file", files: map[string]string{"tunables.jsonc": `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 10], "default": 11}}}}`}, want: "outside the range"},
		{name: "unknown service class", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "services": ["svc.jsonc"]}`, "svc.jsonc": `{"class": "bench.services.NoSuchService"}`}, want: `unknown class "bench.services.NoSuchService"`},
		{name: "service config a run rejects", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "services": ["svc.jsonc"]}`, "svc.jsonc": `{"class": "bench.services.LocalDirFileShareService", "config": {"root": "/nonexistent/share"}}`}, want: "does not exist (create it, or set create_root)"},
		{name: "unknown tunable in tunable values", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "tunable_values": ["values.jsonc"]}`, "values.jsonc": `{"nope": 1}`}, want: `"nope"`},
		{name: "tunable value out of range", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "tunable_values": ["values.jsonc"]}`, "values.jsonc": `{"x": 99}`}, want: "99"},
		{name: "LLAMATUNE refused", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "optimizer": "opt.jsonc"}`, "opt.jsonc": `{"class": "mlos_bench.optimizers.MlosCoreOptimizer", "config": {"space_adapter_type": "LLAMATUNE"}}`}, want: "space_adapter_type LLAMATUNE is not supported by bench (only IDENTITY): LlamaTune's"},
		{name: "optimizer config a run rejects", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "optimizer": "opt.jsonc"}`, "opt.jsonc": `{"class": "mlos_bench.optimizers.ManualOptimizer", "config": {"tunable_values_cycle": [{"x": 42}]}}`}, want: "/config/tunable_values_cycle/0"},
		{name: "DuckDB refused", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "storage": "st.jsonc"}`, "st.jsonc": `{"class": "mlos_bench.storage.sql.storage.SqlStorage", "config": {"drivername": "duckdb", "database": "x.duckdb"}}`}, want: "DuckDB's Go drivers need cgo"},
		{name: "scheduler config a run rejects", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "scheduler": "sched.jsonc"}`, "sched.jsonc": `{"class": "mlos_bench.schedulers.SyncScheduler", "config": {"trial_config_repeat_count": 0}}`}, want: "trial_config_repeat_count"},
		{name: "engine config a run rejects", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "globals": ["g.jsonc"]}`, "g.jsonc": `{"engine": "engine.jsonc"}`, "engine.jsonc": `{"class": "bench.engines.LocalEngine", "config": {"max_jobs": -1}}`}, want: "max_jobs must be 1 or more"},
		{name: "bad GPU list", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "globals": ["g.jsonc"]}`, "g.jsonc": `{"gpus": "0,x"}`}, want: "gpus"},
		{name: "unknown engine class", files: map[string]string{"cli.jsonc": `{"environment": "env.jsonc", "globals": ["g.jsonc"]}`, "g.jsonc": `{"engine": "engine.jsonc"}`, "engine.jsonc": `{"class": "bench.engines.NoSuchEngine"}`}, want: "NoSuchEngine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"env.jsonc": localEnv, "tunables.jsonc": tunablesFile}
			for k, v := range tc.files {
				files[k] = v
			}
			if !strings.Contains(files["cli.jsonc"], `"storage"`) {
				// Nothing is written if a case would start.
				files["cli.jsonc"] = strings.Replace(files["cli.jsonc"], "{", `{"storage": "storage/in-memory.jsonc", `, 1)
			}
			if _, ok := tc.files["cli.jsonc"]; !ok {
				files["cli.jsonc"] = `{"storage": "storage/in-memory.jsonc", "environment": "env.jsonc"}`
			}
			writeFiles(t, dir, files)
			cli := filepath.Join(dir, "cli.jsonc")

			runErr := runError(t, cli)
			if runErr == nil {
				t.Fatalf("bench run would start")
			}
			rep, err := (&Checker{}).Run([]string{cli})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() {
				t.Fatalf("validate passes what run rejects with: %v", runErr)
			}
			if !strings.Contains(runErr.Error(), tc.want) {
				t.Errorf("run's error %q lacks %q", runErr, tc.want)
			}
			var found *Problem
			for i, p := range rep.Problems {
				if strings.Contains(p.Message, tc.want) || strings.Contains(p.Path, tc.want) {
					found = &rep.Problems[i]
				}
			}
			if found == nil {
				t.Fatalf("validate's problems lack %q: %v\nrun: %v", tc.want, rep.Problems, runErr)
			}
			if !strings.Contains(runErr.Error(), found.Message) {
				t.Errorf("different words:\nvalidate: %s\nrun:      %v", found.Message, runErr)
			}
			if found.Line == 0 {
				t.Errorf("no line and column: %s", found)
			}
			if at := fmt.Sprintf("%s:%d:%d", found.File, found.Line, found.Col); !strings.Contains(runErr.Error(), at) {
				t.Errorf("run's error %q is not at %s", runErr, at)
			}
			if len(rep.Problems) != 1 {
				t.Errorf("want one problem, got %d: %v", len(rep.Problems), rep.Problems)
			}
		})
	}
}

// TestRequiredArgs: a CLI config's globals are known, so a required arg
// without a value is an error; an environment file alone gets a warning
// naming every missing arg; --globals gives values as in a run.
func TestRequiredArgs(t *testing.T) {
	dir := t.TempDir()
	env := strings.Replace(localEnv, `"tunable_params"`, `"required_args": ["b_arg", "a_arg"], "tunable_params"`, 1)
	writeFiles(t, dir, map[string]string{
		"env.jsonc":      env,
		"tunables.jsonc": tunablesFile,
		"cli.jsonc":      `{"$schema": "https://raw.githubusercontent.com/microsoft/MLOS/main/mlos_bench/mlos_bench/config/schemas/cli/cli-schema.json", "environment": "env.jsonc"}`,
		"g.jsonc":        `{"a_arg": 1, "b_arg": 2}`,
	})
	rep, err := (&Checker{}).Run([]string{filepath.Join(dir, "cli.jsonc")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !strings.Contains(rep.Problems[0].Message, `missing required parameter "a_arg"`) || rep.Problems[0].File != filepath.Join(dir, "env.jsonc") || rep.Problems[0].Line != 6 {
		t.Errorf("CLI config: want an error at env.jsonc:6, got %v", rep.Problems)
	}

	rep, err = (&Checker{}).Run([]string{filepath.Join(dir, "env.jsonc")})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Warnings) != 1 {
		t.Fatalf("environment alone: want one warning and no problem, got %v %v", rep.Problems, rep.Warnings)
	}
	if w := rep.Warnings[0]; !strings.Contains(w.Message, "required args without a value: a_arg, b_arg") || w.Line != 6 || w.Path != "/config/required_args" {
		t.Errorf("warning: %s", w)
	}

	rep, err = (&Checker{Globals: []string{filepath.Join(dir, "g.jsonc")}}).Run([]string{filepath.Join(dir, "env.jsonc"), filepath.Join(dir, "cli.jsonc")})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Warnings) != 0 {
		t.Errorf("with --globals: %v %v", rep.Problems, rep.Warnings)
	}
}

// TestFolder: files that are not bench configs are skipped and counted;
// the tunables file that an environment includes is reported once, and
// no "group not defined" follows; a CLI config without "$schema" is
// checked as one.
func TestFolder(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"schemas/thing-schema.json": `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://x/thing", "type": "object", "properties": {"a": {"type": "string"}}}`,
		"schemas/defs.json":         `{"$defs": {"a": {"type": "string"}}, "properties": {}}`,
		"arm/vm.jsonc":              `{"$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#", "contentVersion": "1.0.0.0", "resources": []}`,
		"arm/vm.parameters.json":    `{"$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#", "contentVersion": "1.0.0.0", "parameters": {}}`,
		"env.jsonc":                 localEnv,
		"tunables.jsonc":            `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 10], "default": 11}}}}`,
		"run.jsonc":                 `{"environment": "env.jsonc", "teardown": false}`,
	})
	rep, err := (&Checker{}).Run([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 4 {
		t.Errorf("skipped %d files, want 4: %v", len(rep.Skipped), rep.Skipped)
	}
	if len(rep.Files) != 3 {
		t.Errorf("checked %v", rep.Files)
	}
	for _, f := range rep.Files {
		if strings.HasSuffix(f.File, "run.jsonc") && f.Kind != "cli" {
			t.Errorf("run.jsonc checked as %s", f.Kind)
		}
		if f.Valid {
			t.Errorf("%s is valid, but its tunables are not", f.File)
		}
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "outside the range") {
		t.Errorf("want the one problem of tunables.jsonc, got %v", rep.Problems)
	}
}

// TestSchemaOnly checks against the schema alone: includes are not
// followed, schema errors are still errors.
func TestSchemaOnly(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"env.jsonc": strings.Replace(localEnv, `["tunables.jsonc"]`, `["resolved-at-run-time.jsonc"]`, 1),
		"bad.jsonc": `{"name": "e", "class": "mlos_bench.environments.local.LocalEnv", "config": {"run": 1}}`,
	})
	rep, err := (&Checker{SchemaOnly: true}).Run([]string{filepath.Join(dir, "env.jsonc")})
	if err != nil || !rep.OK() {
		t.Errorf("schema-only: %v %v", err, rep.Problems)
	}
	rep, err = (&Checker{}).Run([]string{filepath.Join(dir, "env.jsonc")})
	if err != nil || rep.OK() {
		t.Errorf("full check passes a missing include: %v", err)
	}
	rep, err = (&Checker{SchemaOnly: true}).Run([]string{filepath.Join(dir, "bad.jsonc")})
	if err != nil || rep.OK() || rep.Problems[0].Path != "/config/run" {
		t.Errorf("schema-only passes a schema error: %v %v", err, rep)
	}
}

// TestNothingCreated: validate builds the classes without side effects
// (a file share asked to create its root does not create it).
func TestNothingCreated(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "share-root")
	writeFiles(t, dir, map[string]string{
		"svc.jsonc": fmt.Sprintf(`{"class": "bench.services.LocalDirFileShareService", "config": {"root": %q, "create_root": true}}`, root),
	})
	rep, err := (&Checker{}).Run([]string{filepath.Join(dir, "svc.jsonc")})
	if err != nil || !rep.OK() {
		t.Fatalf("%v %v", err, rep.Problems)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("validate created %s", root)
	}
}

// TestStandaloneRefusals: a file alone that a run would refuse only in
// use (a storage driver bench lacks, a service value a run's globals may
// give) is a warning that says so; in a CLI config it is an error.
func TestStandaloneRefusals(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"storage/duck.jsonc": `{"class": "mlos_bench.storage.sql.storage.SqlStorage", "config": {"drivername": "duckdb", "database": "x.duckdb"}}`,
		"share.jsonc":        `{"class": "bench.services.LocalDirFileShareService", "config": {"root": "/nonexistent/placeholder"}}`,
	})
	rep, err := (&Checker{}).Run([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Warnings) != 2 {
		t.Fatalf("want 2 warnings: %v %v", rep.Problems, rep.Warnings)
	}
	for _, w := range rep.Warnings {
		if w.Line == 0 || !strings.HasPrefix(w.Message, "warning: ") {
			t.Errorf("warning: %s", w)
		}
	}
}

// TestBuiltinConfigs: every config bench ships validates.
func TestBuiltinConfigs(t *testing.T) {
	for _, dir := range []string{"../builtin", "../examples"} {
		rep, err := (&Checker{}).Run([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || len(rep.Files) == 0 {
			t.Errorf("%s: %v", dir, rep.Problems)
		}
	}
}

// TestConformanceSchemaOnly: mlos_bench's schema test cases, checked as
// bench validate --schema-only --kind KIND would: every good case passes,
// every bad one fails.
func TestConformanceSchemaOnly(t *testing.T) {
	root := testenv.ConformanceDir(t)
	kinds := map[string]schemas.Kind{
		"cli": schemas.CLI, "environments": schemas.Environment, "globals": schemas.Globals,
		"optimizers": schemas.Optimizer, "schedulers": schemas.Scheduler, "services": schemas.Service,
		"storage": schemas.Storage, "tunable-params": schemas.TunableParams, "tunable-values": schemas.TunableValues,
	}
	n := 0
	for folder, kind := range kinds {
		for _, verdict := range []string{"good", "bad"} {
			files, _ := filepath.Glob(filepath.Join(root, folder, verdict, "*", "*.json*"))
			for _, f := range files {
				n++
				rep, err := (&Checker{Kind: kind, SchemaOnly: true}).Run([]string{f})
				if err != nil {
					t.Fatal(err)
				}
				if rep.OK() != (verdict == "good") {
					t.Errorf("%s: valid=%v, problems %v", f, rep.OK(), rep.Problems)
				}
			}
		}
	}
	if n < 200 {
		t.Errorf("only %d cases", n)
	}
}

// TestOnce: a folder with a CLI config and the environment it runs
// reports the environment's missing include once (it is looked for in
// other folders from each), and the CLI config's required-arg error
// replaces the environment's warning at the same place.
func TestOnce(t *testing.T) {
	dir := t.TempDir()
	env := strings.Replace(localEnv, `"tunable_params"`, `"required_args": ["needed"], "tunable_params"`, 1)
	writeFiles(t, dir, map[string]string{
		"configs/env.jsonc":      strings.Replace(env, `["tunables.jsonc"]`, `["nope.jsonc"]`, 1),
		"configs/cli.jsonc":      `{"environment": "env.jsonc", "storage": "storage/in-memory.jsonc"}`,
		"other/env.jsonc":        env,
		"other/tunables.jsonc":   tunablesFile,
		"other/cli-other.jsonc":  `{"environment": "env.jsonc"}`,
		"other/experiment.jsonc": `{"experiment_id": "x"}`,
	})
	rep, err := (&Checker{}).Run([]string{filepath.Join(dir, "configs")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, `"nope.jsonc": config file not found`) {
		t.Errorf("want one problem: %v", rep.Problems)
	}
	rep, err = (&Checker{}).Run([]string{filepath.Join(dir, "other")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, `missing required parameter "needed"`) || len(rep.Warnings) != 0 {
		t.Errorf("want one problem and no warning: %v %v", rep.Problems, rep.Warnings)
	}
}

// TestScriptsNotFound: a script file that the search path does not have
// is a warning (a run accepts it: an earlier command may create it), at
// its line; scripts found and commands on PATH are not.
func TestScriptsNotFound(t *testing.T) {
	dir := t.TempDir()
	env := strings.Replace(localEnv, `"run": ["echo score 1"]`, `"setup": ["scripts/found.sh --x 1", "echo hi | scripts/missing.py"], "run": ["echo score 1", "sh ./found-too.sh"]`, 1)
	writeFiles(t, dir, map[string]string{
		"env.jsonc":         env,
		"tunables.jsonc":    tunablesFile,
		"scripts/found.sh":  "echo found\n",
		"found-too.sh":      "echo found\n",
		"cli.jsonc":         fmt.Sprintf(`{"config_path": [%q], "environment": "env.jsonc", "storage": "storage/in-memory.jsonc"}`, dir),
		"unrelated.jsonc":   `{"$schema": "https://json-schema.org/draft-07/schema#"}`,
		"scripts/other.txt": "",
	})
	rep, err := (&Checker{}).Run([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Warnings) != 1 {
		t.Fatalf("want one warning: %v %v", rep.Problems, rep.Warnings)
	}
	if w := rep.Warnings[0]; w.Path != "/config/setup/1" || w.Line == 0 || !strings.Contains(w.Message, `script "scripts/missing.py" not found on the search path`) {
		t.Errorf("warning: %s", w)
	}
}

// TestSecretsRedacted: a secret value in a problem is not printed.
func TestSecretsRedacted(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"cli.jsonc":      `{"environment": "env.jsonc", "storage": "storage/in-memory.jsonc", "globals": ["secret.jsonc"], "services": ["svc.jsonc"]}`,
		"secret.jsonc":   `{"secret_params": ["root"], "root": "/nonexistent/hunter2-very-secret"}`,
		"svc.jsonc":      `{"class": "bench.services.LocalDirFileShareService", "config": {"root": "placeholder"}}`,
		"env.jsonc":      localEnv,
		"tunables.jsonc": tunablesFile,
	})
	if err := runError(t, filepath.Join(dir, "cli.jsonc")); err == nil || !strings.Contains(err.Error(), "hunter2-very-secret") {
		t.Fatalf("the test needs an error carrying the secret (bench run redacts it when printing): %v", err)
	}
	rep, err := (&Checker{}).Run([]string{filepath.Join(dir, "cli.jsonc")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatal("want a problem")
	}
	for _, p := range rep.Problems {
		if strings.Contains(p.String(), "hunter2-very-secret") || !strings.Contains(p.String(), "does not exist") {
			t.Errorf("secret printed: %s", p)
		}
	}
}

// TestOnceRelative: a problem of a file given by a relative path and
// reached again (by its absolute path) through an include is reported
// once, named as it was given.
func TestOnceRelative(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"env.jsonc":      localEnv,
		"tunables.jsonc": `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 10], "default": 11}}}}`,
		"cli.jsonc":      `{"environment": "env.jsonc", "storage": "storage/in-memory.jsonc"}`,
	})
	t.Chdir(dir)
	rep, err := (&Checker{}).Run([]string{"."})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].File != "tunables.jsonc" {
		t.Errorf("want one problem in tunables.jsonc: %v", rep.Problems)
	}
}

// TestNeedsService: a service that needs another below it (an Azure
// service without an authentication service) is a warning when its file
// is checked alone, and an error in a CLI config that lists nothing
// before it, as bench run says.
func TestNeedsService(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"svc/saas.jsonc": `{"class": "mlos_bench.services.remote.azure.AzureSaaSConfigService", "config": {"subscription": "sub", "resourceGroup": "rg", "provider": "Microsoft.DBforMySQL"}}`,
		"env.jsonc":      localEnv,
		"tunables.jsonc": tunablesFile,
		"cli.jsonc":      `{"environment": "env.jsonc", "storage": "storage/in-memory.jsonc", "services": ["svc/saas.jsonc"]}`,
	})
	rep, err := (&Checker{}).Run([]string{filepath.Join(dir, "svc")})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0].Message, "needs an authentication service") {
		t.Errorf("alone: %v %v", rep.Problems, rep.Warnings)
	}
	cli := filepath.Join(dir, "cli.jsonc")
	rep, err = (&Checker{}).Run([]string{cli})
	if err != nil {
		t.Fatal(err)
	}
	runErr := runError(t, cli)
	if rep.OK() || runErr == nil || !strings.Contains(runErr.Error(), rep.Problems[0].Message) {
		t.Errorf("in a CLI config: %v, run: %v", rep.Problems, runErr)
	}
}
