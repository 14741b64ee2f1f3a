package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/schemas"
)

// TestUnreadGlobals: a command-line global that no config has (a typo of
// an option) is kept, as mlos_bench keeps it, and warned about with the
// closest key; globals a config has, a template names or bench reads are
// not.
func TestUnreadGlobals(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"tunables.jsonc": `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 10], "default": 5}}}}`,
		"env.jsonc": `{"name": "e", "class": "mlos_bench.environments.LocalEnv", "include_tunables": ["tunables.jsonc"],
			"config": {"tunable_params": ["g"], "const_args": {"chunk_kb": 64, "host": "$db_host"}, "run": ["echo score 1"], "results_stdout_pattern": "(score) (\\d+)"}}`,
		"opt.jsonc": `{"class": "mlos_bench.optimizers.MlosCoreOptimizer", "config": {"max_suggestions": 10}}`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	args, err := configs.ParseArgs([]string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--storage", "storage/in-memory.jsonc",
		"--max_sugestions", "2", "--chunk_kb", "8", "--db_host", "h", "--fail_fast", "0", "--max_failed_trials", "2", "--bench_shell_lines", "verbatim", "--frobnicate", "1"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := configs.Prepare(args, func(k configs.Kind, d *source.Doc) error { return schemas.Validate(schemas.Kind(k), d) })
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(context.Background(), l, ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := l.Globals["max_sugestions"]; v != int64(2) {
		t.Errorf("the global is not kept: %v", v)
	}
	got := UnreadGlobals(l)
	if len(got) != 2 {
		t.Fatalf("want warnings for --max_sugestions and --frobnicate only, got %q", got)
	}
	if !strings.HasPrefix(got[0], "--max_sugestions: no config of this run has a key") || !strings.HasSuffix(got[0], "did you mean --max_suggestions?") {
		t.Errorf("got %q", got[0])
	}
	if !strings.HasPrefix(got[1], "--frobnicate: ") || strings.Contains(got[1], "did you mean") {
		t.Errorf("got %q", got[1])
	}
}

// TestUnreadGlobalsOneShot: without --optimizer, the default one-shot
// optimizer reads max_suggestions and seed from the globals.
func TestUnreadGlobalsOneShot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "env.jsonc"), []byte(`{"name": "e", "class": "mlos_bench.environments.LocalEnv",
		"config": {"run": ["echo score 1"], "results_stdout_pattern": "(score) (\\d+)"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	args, err := configs.ParseArgs([]string{"--environment", "env.jsonc", "--storage", "storage/in-memory.jsonc", "--max_suggestions", "2", "--seed", "3"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := configs.Prepare(args, func(k configs.Kind, d *source.Doc) error { return schemas.Validate(schemas.Kind(k), d) })
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(context.Background(), l, ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := UnreadGlobals(l); len(got) != 0 {
		t.Errorf("warnings %q", got)
	}
}
