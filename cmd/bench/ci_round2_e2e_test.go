package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A typo of a bench ci option is an error (not a global), and an output
// path that cannot be written fails before the first trial runs.
func TestCIOptionTyposAndOutputPaths(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	write(t, dir, "env.jsonc", `{
		"name": "m",
		"class": "mlos_bench.environments.local.LocalEnv",
		"config": {"run": ["touch '`+marker+`'; echo v=1"], "results_stdout_pattern": "(v)=(\\d+)"}
	}`, 0o644)
	write(t, dir, "th.jsonc", `{"metrics": {"v": {"max_increase": "5%"}}}`, 0o644)
	base := []string{"ci", "--environment", "env.jsonc", "--thresholds", "th.jsonc", "--no-progress"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--repeats", "8"}, "unknown option --repeats: did you mean --repeat?"},
		{[]string{"--Repeat=8"}, "did you mean --repeat?"},
		{[]string{"--thresholdz", "th.jsonc"}, "did you mean --thresholds?"},
		{[]string{"--junit-xml", "x.xml"}, ""}, // far from every option: a global
		{[]string{"--junit", filepath.Join(dir, "no", "such", "dir", "j.xml")}, "--junit " + filepath.Join(dir, "no", "such", "dir", "j.xml") + ": the file cannot be created"},
		{[]string{"--json", dir}, "is a folder, not a file"},
		{[]string{"--u-test", "exact"}, `unknown Mann–Whitney method "exact"`},
	} {
		os.Remove(marker)
		r := runBench(t, dir, append(append([]string(nil), base...), tc.args...)...)
		if tc.want == "" {
			if r.code != 0 {
				t.Errorf("%v: exit %d\n%s", tc.args, r.code, r.stderr)
			}
			continue
		}
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", tc.args, r.code, tc.want, r.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%v: a trial ran before the error", tc.args)
		}
	}
}
