package main

import (
	"log/slog"
	"os"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/schedulers"
)

// reportProgressBeside makes the trial's progress (spec.Progress) go to
// the progress file beside the outcome file (engines.ProgressPath), which
// the driver reads while the job runs. Outcomes that are not local paths
// (AWS Batch's s3://) get none, unless the engine asks for the reports in
// the job's log (engines.ProgressLogEnv, the Kubernetes engine): then
// each goes to standard error as one marked line. The returned func
// closes the file.
func reportProgressBeside(outcomeURL string, spec *schedulers.Spec) func() {
	path := engines.ProgressPath(outcomeURL)
	if path == "" {
		if os.Getenv(engines.ProgressLogEnv) != "" {
			spec.Progress = engines.ProgressLogWriter(os.Stderr)
		}
		return func() {}
	}
	w, err := engines.NewProgressWriter(path)
	if err != nil {
		slog.Warn("bench exec-trial: cannot create the progress file; the trial's progress is not reported", "file", path, "err", err)
		return func() {}
	}
	spec.Progress = w.Add
	return func() { _ = w.Close() }
}
