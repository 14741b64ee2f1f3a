package engines

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/benchtune/bench/trial"
)

// Engines whose jobs have no file system shared with the driver (the
// Kubernetes engine: request and outcome travel through a ConfigMap or
// S3) get a running trial's progress from the job's log instead: `bench
// exec-trial`, when its outcome is not a local file and ProgressLogEnv is
// set in its environment, writes each report as one line
// "BENCH_PROGRESS_JSON {...}" on its standard error, and the engine reads
// the job's log and keeps those lines (ProgressFromLog).

// ProgressLogEnv, set (to any value) in a job's environment by its
// engine, asks `bench exec-trial` to write its progress to its log.
const ProgressLogEnv = "BENCH_PROGRESS_TO_LOG"

// ProgressLogMarker starts each progress line in a job's log.
const ProgressLogMarker = "BENCH_PROGRESS_JSON "

// ProgressLogWriter returns a Spec.Progress that writes each report to w
// as one marked line, in one Write (so that it is not torn by the log
// lines written beside it). Safe for concurrent use; a write error drops
// the report.
func ProgressLogWriter(w io.Writer) func(trial.Progress) {
	var mu sync.Mutex
	return func(p trial.Progress) {
		if p.Ts.IsZero() {
			p.Ts = time.Now().UTC()
		}
		b, err := json.Marshal(p)
		if err != nil {
			return
		}
		line := make([]byte, 0, len(ProgressLogMarker)+len(b)+2)
		// (A script's output without a final newline may come before
		// the marker on its line: the reader finds it anywhere.)
		line = append(append(append(line, ProgressLogMarker...), b...), '\n')
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(line)
	}
}

// ProgressFromLog returns the progress lines of a job's log as a progress
// file's content (one JSON report a line, each ending with a newline):
// the text after ProgressLogMarker of each complete line (one ending with
// a newline) that holds it. A last line without its newline yet is left
// for the next read, so the result of a longer read of the same log
// always begins with that of a shorter one. Other lines are skipped.
func ProgressFromLog(log []byte) []byte {
	var out []byte
	marker := []byte(ProgressLogMarker)
	for {
		i := bytes.IndexByte(log, '\n')
		if i < 0 {
			return out
		}
		line := log[:i]
		log = log[i+1:]
		j := bytes.Index(line, marker)
		if j < 0 {
			continue
		}
		rep := bytes.TrimSpace(line[j+len(marker):])
		if len(rep) == 0 {
			continue
		}
		out = append(append(out, rep...), '\n')
	}
}
