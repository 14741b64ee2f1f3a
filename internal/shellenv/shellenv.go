// Package shellenv passes variables to POSIX shell scripts safely: values
// are single-quoted, never spliced into the script text unquoted, and names
// are checked.
package shellenv

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// nameRE is what a POSIX shell accepts as a variable name.
var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidName reports whether name is a valid shell variable name.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Quote returns s as one POSIX shell word: single-quoted, with each
// embedded single quote written as '\”. Nothing inside is expanded.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Names checks the variables (valid names, no NUL bytes in values, which
// no environment variable can carry) and returns their names sorted.
// Errors name the variable, never its value.
func Names(env map[string]string) ([]string, error) {
	names := make([]string, 0, len(env))
	for k, v := range env {
		if !ValidName(k) {
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

// Script renders a script: one `export NAME='value'` line per variable,
// then the script lines. As in mlos_bench the lines form one script, so
// `cd` and variables carry over between them.
func Script(env map[string]string, lines []string) (string, error) {
	names, err := Names(env)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, k := range names {
		b.WriteString("export " + k + "=" + Quote(env[k]) + "\n")
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), nil
}
