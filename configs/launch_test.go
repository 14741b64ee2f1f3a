package configs

import (
	"github.com/benchtune/bench/configs/source"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		argv string
		want *Args
	}{
		{"underscore and dash spellings", "--config c.jsonc --log-level DEBUG --num_trial_runners 3 --trial-config-repeat-count 2 --experiment-id E1 --no-teardown",
			&Args{Config: "c.jsonc", LogLevel: "DEBUG", NumTrialRunners: ptr(int64(3)), TrialConfigRepeatCount: ptr(int64(2)), ExperimentID: "E1", Teardown: ptr(false)}},
		{"lists extend and take several values", "--config-paths a b --config_path c --globals g1.jsonc g2.jsonc --service s1 --services s2",
			&Args{ConfigPaths: []string{"a", "b", "c"}, Globals: []string{"g1.jsonc", "g2.jsonc"}, Services: []string{"s1", "s2"}}},
		{"inline values", "--environment=env.jsonc --random_seed=-5 --random-init",
			&Args{Environment: "env.jsonc", RandomSeed: ptr(int64(-5)), RandomInit: true}},
		{"extra globals", "--max_suggestions 10 --max-trials=200 --name foo --ratio 0.5 --neg -3",
			&Args{Extra: []KeyValue{{"max_suggestions", int64(10)}, {"max_trials", int64(200)}, {"name", "foo"}, {"ratio", 0.5}, {"neg", int64(-3)}}}},
		{"list stops at the next option", "--tunable_values a.jsonc --max_suggestions 3",
			&Args{TunableValues: []string{"a.jsonc"}, Extra: []KeyValue{{"max_suggestions", int64(3)}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseArgs(strings.Fields(tc.argv))
			if err != nil {
				t.Fatal(err)
			}
			if got != nil {
				got.Argv = nil // the raw command line, kept as given
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	tests := []struct{ argv, msg string }{
		{"--max_suggestions", "--max_suggestions has no value"},
		{"stray", `"stray" has no key`},
		{"--environment", "needs a value"},
		{"--num_trial_runners two", "needs an integer"},
		{"--globals", "at least one value"},
		{"--random-init=yes", "takes no value"},
		{"--a --b 1", "--a has no value"},
		{"--format xml", "text or json"},
		{"-x", "unknown option -x"},
	}
	for _, tc := range tests {
		_, err := ParseArgs(strings.Fields(tc.argv))
		if err == nil || !strings.Contains(err.Error(), tc.msg) || !IsUsage(err) {
			t.Errorf("ParseArgs(%q) = %v, want a usage error containing %q", tc.argv, err, tc.msg)
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPreparePrecedence follows mlos_bench's launcher order: CLI config <
// globals files (in order) < extra --key value < explicit options.
func TestPreparePrecedence(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("BENCH_TEST_CUSTOM_PATH", "/custom")
	writeFile(t, dir, "confs/cli/test-cli.jsonc", `{
		// a CLI config
		"config_path": ["confs"],
		"environment": "env.jsonc",
		"globals": ["globals/g1.jsonc"],
		"experiment_id": "FromCli",
		"num_trial_runners": 3,
		"trial_id": 7,
		"log_level": "WARNING",
		"teardown": false,
		"tunable_params_map": {"linux": ["kernel"]},
	}`)
	writeFile(t, dir, "confs/globals/g1.jsonc", `{"experiment_id": "FromG1", "vm": "$experiment_id-vm", "vnet": "$vm-vnet", "value": "g1", "value2": "g1", "path": "$BENCH_TEST_CUSTOM_PATH/foo"}`)
	writeFile(t, dir, "confs/globals/g2.jsonc", `{"value": "g2", "max_suggestions": 20}`)
	args, err := ParseArgs(strings.Fields("--config confs/cli/test-cli.jsonc --globals globals/g2.jsonc --value2 from-args --experiment-id FromArgs --log_level INFO"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Prepare(args, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"experiment_id":      "FromArgs",
		"num_trial_runners":  int64(3),
		"trial_id":           int64(7),
		"tunable_params_map": map[string]any{"linux": []any{"kernel"}},
		"vm":                 "FromArgs-vm", // expansion happens after the explicit override
		"vnet":               "FromArgs-vm-vnet",
		"value":              "g2",
		"value2":             "from-args",
		"path":               "/custom/foo",
		"max_suggestions":    int64(20),
		"config_path":        []any{"confs"},
	}
	if diff := cmp.Diff(want, l.Globals); diff != "" {
		t.Errorf("globals (-want +got):\n%s", diff)
	}
	if l.Teardown {
		t.Error("teardown from the CLI config should be false")
	}
	if l.LogLevel != "INFO" || l.Environment != "env.jsonc" {
		t.Errorf("log level %q environment %q", l.LogLevel, l.Environment)
	}
	if got := l.Loader.Paths(); len(got) != 2 || got[1] != filepath.Join(dir, "confs") {
		t.Errorf("search path %v", got)
	}
}

func TestPrepareDefaultsAndErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	l, err := Prepare(&Args{Environment: "e.jsonc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"num_trial_runners": int64(1), "trial_id": int64(1)}, l.Globals); diff != "" {
		t.Error(diff)
	}
	if !l.Teardown {
		t.Error("teardown defaults to true")
	}
	_, err = Prepare(&Args{NumTrialRunners: ptr(int64(0))}, nil)
	if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), "num_trial_runners") {
		t.Errorf("got %v", err)
	}
	_, err = Prepare(&Args{Config: "missing.jsonc"}, nil)
	if err == nil || !strings.Contains(err.Error(), "missing.jsonc: config file not found") {
		t.Errorf("got %v", err)
	}
	writeFile(t, dir, "bad.jsonc", "{\n  \"environment\": \"x\",\n  oops\n}")
	_, err = Prepare(&Args{Config: "bad.jsonc"}, nil)
	if err == nil || !strings.Contains(err.Error(), "bad.jsonc:4:1: syntax error") {
		t.Errorf("got %v", err)
	}
}

func TestLoaderResolve(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	other := t.TempDir()
	writeFile(t, other, "storage/sqlite.jsonc", `{}`)
	writeFile(t, other, "only-here.jsonc", `{}`)
	writeFile(t, dir, "in-cwd.jsonc", `{}`)
	l, err := NewLoader(nil, other)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"in-cwd.jsonc":                            filepath.Join(dir, "in-cwd.jsonc"),
		"only-here.jsonc":                         filepath.Join(other, "only-here.jsonc"),
		"storage/sqlite.jsonc":                    filepath.Join(other, "storage/sqlite.jsonc"), // user paths shadow built-ins
		"schedulers/sync_scheduler.jsonc":         "builtin:schedulers/sync_scheduler.jsonc",
		"services/local/local_exec_service.jsonc": "builtin:services/local/local_exec_service.jsonc",
		"nowhere.jsonc":                           "nowhere.jsonc",
		"../../etc/passwd":                        "../../etc/passwd",
		"/abs/path.jsonc":                         "/abs/path.jsonc",
	}
	for in, want := range tests {
		if got := l.Resolve(in); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", in, got, want)
		}
	}
	doc, err := l.ReadDoc("schedulers/sync_scheduler.jsonc")
	if err != nil || doc.Root.Get("class").Str != "mlos_bench.schedulers.SyncScheduler" {
		t.Errorf("built-in read: %v", err)
	}
	doc, err = l.ReadDoc(`{"class": "x", /* inline */}`)
	if err != nil || doc.Root.Get("class").Str != "x" {
		t.Errorf("inline read: %v", err)
	}
}

func TestSkipValidationEnv(t *testing.T) {
	called := false
	v := func(Kind, *source.Doc) error { called = true; return nil }
	t.Setenv("MLOS_BENCH_SKIP_SCHEMA_VALIDATION", "yes")
	l, err := NewLoader(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(`{"a": 1}`, KindGlobals); err != nil || called {
		t.Errorf("validation should be skipped: called=%v err=%v", called, err)
	}
}
