package main

import (
	"log/slog"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/schedulers"
)

// reportProgressBeside makes the trial's progress (spec.Progress) go to
// the progress file beside the outcome file (engines.ProgressPath), which
// the driver reads while the job runs. An s3:// outcome (AWS Batch) gets
// a sequence of progress objects beside it instead (S3 cannot append:
// engines.ObjectProgressWriter); other outcomes that are not local paths
// get none. The returned func closes the file (writes the last object).
func reportProgressBeside(outcomeURL string, spec *schedulers.Spec) func() {
	if w := engines.NewObjectProgressWriter(outcomeURL, 0); w != nil {
		spec.Progress = w.Add
		return func() {
			if err := w.Close(); err != nil {
				slog.Warn("bench exec-trial: cannot write the trial's last progress reports", "err", err)
			}
		}
	}
	path := engines.ProgressPath(outcomeURL)
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
