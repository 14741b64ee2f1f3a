package script

import (
	"strings"
	"testing"
)

func TestPatternNote(t *testing.T) {
	re, err := CompilePattern(`^(\w+)=(\S+)$`)
	if err != nil {
		t.Fatal(err)
	}
	if n := PatternNote(re, "a=1\nb=2\n", `environment "e"`); n != "" {
		t.Errorf("a pattern that matched: %q", n)
	}
	if n := PatternNote(nil, "x", `environment "e"`); n != "" {
		t.Errorf("no pattern: %q", n)
	}
	if n, want := PatternNote(re, "", `environment "e"`), `environment "e": results_stdout_pattern "^(\\w+)=(\\S+)$" matched nothing: the run printed nothing on stdout`; n != want {
		t.Errorf("got  %s\nwant %s", n, want)
	}
	n := PatternNote(re, "starting\nscore: 12.5\ndone\n", `environment "e"`)
	if want := `environment "e": results_stdout_pattern "^(\\w+)=(\\S+)$" matched none of the run's 3 output line(s); they are: "starting", "score: 12.5", "done"`; n != want {
		t.Errorf("got  %s\nwant %s", n, want)
	}
	// Many and long lines: the first five, each cut.
	long := strings.Repeat("x", 500)
	out := strings.Repeat(long+"\n", 100)
	n = PatternNote(re, out, `environment "e"`)
	if !strings.Contains(n, "none of the run's 100 output line(s); the first lines: ") || strings.Count(n, "…") != 5 || len(n) > 1000 {
		t.Errorf("not bounded: %d bytes: %s", len(n), n)
	}
}
