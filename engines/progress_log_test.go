package engines

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/trial"
)

// TestProgressFromLog: the marked lines of a log, written by
// ProgressLogWriter between other log lines, come back as a progress
// file's lines; an unfinished last line waits for its newline; a marker
// after other text on the same line (a script's output without a final
// newline) still counts.
func TestProgressFromLog(t *testing.T) {
	var log bytes.Buffer
	w := ProgressLogWriter(&log)
	ts := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	log.WriteString("time=... level=INFO msg=\"bench exec-trial: running\"\n")
	w(trial.Progress{Step: 0, Ts: ts, Values: map[string]any{"loss": 0.9}})
	log.WriteString("partial script output without newline ")
	w(trial.Progress{Step: 1, Ts: ts.Add(time.Second), Values: map[string]any{"loss": 0.5}})
	log.WriteString("BENCH_PROGRESS_JSON \nother line\n")
	full := log.Bytes()

	got := ProgressFromLog(full)
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("ProgressFromLog = %q, want 2 lines", got)
	}
	for i, l := range lines {
		var p trial.Progress
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		if p.Step != int64(i) || !p.Ts.Equal(ts.Add(time.Duration(i)*time.Second)) {
			t.Errorf("line %d = %+v", i, p)
		}
	}
	if got[len(got)-1] != '\n' {
		t.Errorf("ProgressFromLog = %q, want a newline at the end", got)
	}

	// Every prefix of the log gives a prefix of the full result (the
	// reader's offsets stay valid as the log grows); a cut inside a
	// marked line gives none of that line.
	for n := 0; n <= len(full); n++ {
		part := ProgressFromLog(full[:n])
		if !bytes.HasPrefix(got, part) {
			t.Fatalf("prefix %d: %q is not a prefix of %q", n, part, got)
		}
		if len(part) > 0 && part[len(part)-1] != '\n' {
			t.Fatalf("prefix %d: %q ends without a newline", n, part)
		}
	}
	if out := ProgressFromLog([]byte("no marker\n")); len(out) != 0 {
		t.Errorf("ProgressFromLog of a log without reports = %q", out)
	}
}
