package script

import (
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/suggest"
)

var invalidShellChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// SanitizeName turns a parameter name into an environment variable name
// as mlos_bench does: every character outside [A-Za-z0-9_] becomes '_'.
func SanitizeName(name string) string { return invalidShellChars.ReplaceAllString(name, "_") }

// EnvVars returns the shell variables exported to an environment's
// scripts: each parameter of names under its sanitized name, then the
// renames ({variable: parameter}) on top. Values are rendered as Python's
// str() does (True, None, 1.0). A parameter without a value is an error.
func EnvVars(params map[string]any, names []string, rename map[string]string) (map[string]string, error) {
	src := make(map[string]string, len(names)+len(rename))
	for _, n := range names {
		src[SanitizeName(n)] = n
	}
	maps.Copy(src, rename)
	out := make(map[string]string, len(src))
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, envName := range keys {
		param := src[envName]
		v, ok := params[param]
		if !ok {
			return nil, fmt.Errorf("shell_env_params: parameter %q has no value (give it in const_args, required_args, tunable_params or the globals)", param)
		}
		out[envName] = configs.PyStr(v)
	}
	return out, nil
}

// AllVars returns every parameter under its sanitized name, as text (what
// upload/download paths are templated with).
func AllVars(params map[string]any) map[string]any {
	out := make(map[string]any, len(params))
	for k, v := range params {
		out[SanitizeName(k)] = configs.PyStr(v)
	}
	return out
}

// ParseStdout extracts results from a command's output: every match of
// pattern gives a (name, value) pair from its first two groups; values
// that read as numbers become int64 or float64. Later matches override
// earlier ones.
func ParseStdout(pattern *regexp.Regexp, stdout string) map[string]any {
	out := map[string]any{}
	if pattern == nil {
		return out
	}
	for _, m := range pattern.FindAllStringSubmatch(stdout, -1) {
		out[m[1]] = configs.ParseScalar(m[2])
	}
	return out
}

// CommandName names a remote command: "bench-<env>-<phase>" with the
// environment name lower-cased and runs of non-word characters replaced by
// '-'.
func CommandName(env, phase string) string {
	return "bench-" + strings.ToLower(nonWord.ReplaceAllString(env, "-")) + "-" + phase
}

var nonWord = regexp.MustCompile(`\W+`)

// CheckEnvParams reports a shell_env_params entry (or a
// shell_env_params_rename target) that no parameter of the environment
// provides: such a name would fail every trial at its first line (as in
// mlos_bench, where it is a KeyError), so it is an error when the
// environment is built, before anything runs, with a did-you-mean. params
// are the environment's parameters (const_args, required_args and its
// tunables); ref points at its "config" object.
func CheckEnvParams(c *Config, params map[string]any, ref source.Ref, env string) error {
	known := make([]string, 0, len(params))
	for k := range params {
		known = append(known, k)
	}
	sort.Strings(known)
	check := func(name string, at source.Ref) error {
		if _, ok := params[name]; ok {
			return nil
		}
		return at.Errorf("environment %q: shell_env_params: no parameter %q%s: an environment's parameters are its const_args, required_args and tunables (plus experiment_id, trial_id and trial_runner_id)", env, name, suggest.Hint(name, known))
	}
	for i, name := range c.ShellEnvParams {
		if err := check(name, ref.Child("shell_env_params").Index(i)); err != nil {
			return err
		}
	}
	renames := make([]string, 0, len(c.ShellEnvRename))
	for k := range c.ShellEnvRename {
		renames = append(renames, k)
	}
	sort.Strings(renames)
	for _, k := range renames {
		if err := check(c.ShellEnvRename[k], ref.Child("shell_env_params_rename").Child(k)); err != nil {
			return err
		}
	}
	return nil
}

// PatternNote says that a results_stdout_pattern matched none of the
// run's output lines, with the first few lines (each cut to a bounded
// length): a note for the trial's failure if a target metric is then
// missing. It is "" when there is no pattern or it matched.
func PatternNote(pattern *regexp.Regexp, stdout, who string) string {
	if pattern == nil || pattern.MatchString(stdout) {
		return ""
	}
	text := strings.TrimRight(stdout, "\n")
	if strings.TrimSpace(text) == "" {
		return fmt.Sprintf("%s: results_stdout_pattern %q matched nothing: the run printed nothing on stdout", who, pattern.String()[len("(?m)"):])
	}
	lines := strings.Split(text, "\n")
	const maxLines, maxLen = 5, 120
	shown := make([]string, 0, maxLines)
	for _, l := range lines[:min(len(lines), maxLines)] {
		l = strings.TrimRight(l, "\r")
		if r := []rune(l); len(r) > maxLen {
			l = string(r[:maxLen]) + "…"
		}
		shown = append(shown, strconv.Quote(l))
	}
	first := "the first lines"
	if len(lines) <= maxLines {
		first = "they are"
	}
	return fmt.Sprintf("%s: results_stdout_pattern %q matched none of the run's %d output line(s); %s: %s",
		who, pattern.String()[len("(?m)"):], len(lines), first, strings.Join(shown, ", "))
}
