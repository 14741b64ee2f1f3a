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
// get, when the engine asks for the reports in the job's log
// (engines.ProgressLogEnv, the Kubernetes engine), one marked line each on
// standard error; otherwise, for an s3:// outcome (AWS Batch), a sequence
// of progress objects beside it (S3 cannot append:
// engines.ObjectProgressWriter); otherwise none. The returned func closes
// the file (writes the last object).
func reportProgressBeside(outcomeURL string, spec *schedulers.Spec) func() {
	path := engines.ProgressPath(outcomeURL)
	if path == "" && os.Getenv(engines.ProgressLogEnv) != "" {
		spec.Progress = engines.ProgressLogWriter(os.Stderr)
		return func() {}
	}
	if w := engines.NewObjectProgressWriter(outcomeURL, 0); w != nil {
		spec.Progress = w.Add
		return func() {
			if err := w.Close(); err != nil {
				slog.Warn("bench exec-trial: cannot write the trial's last progress reports", "err", err)
			}
		}
	}
	if path == "" {
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
