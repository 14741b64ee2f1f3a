package ssh

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// envNameRE is what a portable shell accepts as a variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// shellQuote returns s as one POSIX shell word: single-quoted, with each
// embedded single quote written as '\”. Nothing inside is expanded.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// envNames returns the names of env sorted, after checking that each one is
// a valid shell variable name and that no value holds a NUL byte (which no
// environment variable can carry). Errors name the variable, never the
// value.
func envNames(env map[string]string) ([]string, error) {
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

// buildScript renders the script run on the host: one quoted export line
// per environment variable, then the script lines. As in mlos_bench the
// lines form one script, so `cd` and variables carry over between them.
func buildScript(env map[string]string, lines []string) (string, error) {
	names, err := envNames(env)
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
