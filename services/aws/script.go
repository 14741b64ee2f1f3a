package aws

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// envNameRE is what a POSIX shell accepts as a variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// shellQuote returns s as one POSIX shell word: single-quoted, each
// embedded single quote written as '\”. Nothing inside is expanded.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sortedEnvNames checks the variables (valid names, no NUL bytes in
// values) and returns their names sorted. Errors name the variable, never
// its value.
func sortedEnvNames(env map[string]string) ([]string, error) {
	names := make([]string, 0, len(env))
	for k, v := range env {
		if !envNameRE.MatchString(k) {
			return nil, fmt.Errorf("invalid environment variable name %q: names must match [A-Za-z_][A-Za-z0-9_]*", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("environment variable %s: the value contains a NUL byte, which a shell variable cannot hold", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

// buildScript renders a script: one `export NAME='value'` line per
// variable (values quoted, never spliced), then the script lines. The
// lines form one script, so `cd` and variables carry over between them.
func buildScript(env map[string]string, lines []string) (string, error) {
	names, err := sortedEnvNames(env)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, k := range names {
		b.WriteString("export ")
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(shellQuote(env[k]))
		b.WriteByte('\n')
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), nil
}
