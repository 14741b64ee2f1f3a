package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/stats"
)

// ciFlagNames are bench ci's own option names (without "--"); an unknown
// option close to one of them is a typo, not a global.
var ciFlagNames = []string{
	"repeat", "baseline", "thresholds", "best-of", "markdown", "junit", "json", "alpha",
	"allow-insufficient", "save-as", "u-test", "current",
	"baseline-command", "candidate-command", "baseline-config", "candidate-config", "ab-order", "ab-test", "max-repeat", "run-timeout",
	"history", "testbed", "commit", "branch", "history-window",
	"github-annotations", "pr-comment",
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// ciTypo returns the bench ci option an unknown option arg (e.g.
// "--repeats") was probably meant to be, or "" when it is not close to
// one (then it is bench run's, or a global --NAME VALUE). Close: an edit
// distance of at most 2 (1 for names of up to 4 letters), after folding
// case and "_" to "-".
func ciTypo(arg string) string {
	name, _, _ := strings.Cut(arg, "=")
	if !strings.HasPrefix(name, "--") || configs.IsOption(name) {
		return ""
	}
	key := strings.ReplaceAll(strings.ToLower(strings.TrimLeft(name, "-")), "_", "-")
	best, bestD := "", 3
	for _, f := range ciFlagNames {
		limit := 2
		if len(f) <= 4 {
			limit = 1
		}
		if d := editDistance(key, f); d <= limit && d < bestD && d > 0 || key == f && name != "--"+f {
			best, bestD = f, d
		}
	}
	return best
}

// checkOutputPath makes sure path can be written before any trial runs:
// its folder exists and takes a new file, and an existing file is a
// writable regular file. Nothing is left behind.
func checkOutputPath(flag, path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("--%s %s: is a folder, not a file", flag, path)
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("--%s %s: cannot be written: %w", flag, path, err)
		}
		return f.Close()
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--%s %s: %w", flag, path, err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".bench-ci-check-*")
	if err != nil {
		return fmt.Errorf("--%s %s: the file cannot be created in %s: %w", flag, path, dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// checkOutputs checks every output path before the first trial.
func (f *ciFlags) checkOutputs() error {
	return errors.Join(checkOutputPath("markdown", f.markdown), checkOutputPath("junit", f.junit), checkOutputPath("json", f.json))
}

// compareOptions are the options of ci.Compare that the flags set.
func (f *ciFlags) compareOptions(alpha float64) ci.Options {
	m, _ := stats.ParseUTestMethod(f.uTest)
	return ci.Options{Alpha: alpha, Seed: 1, UTest: m}
}
