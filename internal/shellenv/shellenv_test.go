package shellenv

import (
	"os/exec"
	"strings"
	"testing"
)

func TestScriptPassesValuesVerbatim(t *testing.T) {
	hostile := []string{`it's`, `"q"`, `$(touch /tmp/pwned)`, "`id`", "a\nb", `\`, `$HOME`, ""}
	for _, v := range hostile {
		script, err := Script(map[string]string{"V": v}, []string{`printf '%s' "$V"`})
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("/bin/sh", "-c", script).Output()
		if err != nil || string(out) != v {
			t.Errorf("value %q came out as %q (%v)", v, out, err)
		}
	}
}

func TestNamesRejected(t *testing.T) {
	for _, env := range []map[string]string{{"1X": "a"}, {"A-B": "a"}, {"X": "a\x00b"}} {
		_, err := Names(env)
		if err == nil || strings.Contains(err.Error(), "a\x00b") {
			t.Errorf("%v: %v", env, err)
		}
	}
}
