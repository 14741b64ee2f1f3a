package sshpool

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/engines"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkEnv checks the pool's "env": variable names, none set by bench
// (BENCH_*), and no secret by value: a name that looks like one (a key,
// a password, a token, credentials) is refused unless it names a file
// (…_FILE), where the host keeps the secret.
func checkEnv(env map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		switch {
		case !envName.MatchString(k):
			return fmt.Errorf(`config key "env": %q is not an environment variable name`, k)
		case strings.HasPrefix(k, "BENCH_"):
			return fmt.Errorf(`config key "env": %s is set by bench`, k)
		case configs.IsSecretKey(k) && !strings.HasSuffix(strings.ToUpper(k), "_FILE"):
			return fmt.Errorf(`config key "env": %s looks like a secret, which never goes in a config or a job's script: keep it on the hosts (in a file whose path a ..._FILE variable names, such as AWS_SHARED_CREDENTIALS_FILE, or the login's own configuration)`, k)
		case strings.ContainsRune(env[k], 0):
			return fmt.Errorf(`config key "env": %s: the value holds a NUL byte`, k)
		}
	}
	return nil
}

// envLines are the shell lines that export env (quoted; sorted by name),
// put before the command of every job and pilot the pool starts.
func envLines(env map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		b.WriteString("export " + k + "=" + engines.ShellQuote(env[k]) + "\n")
	}
	return b.String()
}
