package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/engines/awsbatch/awsbatchtest"
)

// TestAWSBatchFailedJobReasonRealExecTrial: issue 22, bug 6, with the real
// bench exec-trial as the job's container. The far side runs the trial
// but cannot write its outcome (its S3 endpoint points nowhere, as for a
// job role that may not write the bucket), so it exits non-zero without
// one, and AWS Batch (moto) gives the FAILED job no status reason. The
// trial is stored FAILED with what is known (that Batch gave no reason,
// the log stream), never with an empty reason part (before: "the aws_batch
// job failed: : AWS Batch job … FAILED"). engines/awsbatch's
// TestFailedJobReasonSaysWhatIsKnown checks the same with a stand-in
// container; TestStateOf the exit code and container reason moto does not
// report.
func TestAWSBatchFailedJobReasonRealExecTrial(t *testing.T) {
	logs := t.TempDir()
	f := awsbatchtest.Start(t, benchContainer(logs))
	dir := chaosExperiment(t, 1, "0")
	awsBatchEngine(t, dir, f, `, "environment": {"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1"}`)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "AR", "--no-progress")
	rows := trialReasons(t, dir, "AR")
	if len(rows) != 1 || rows[1][0] != "FAILED" {
		t.Fatalf("trials %v, want trial 1 FAILED\n%s", rows, r.stderr)
	}
	reason := rows[1][1]
	t.Logf("stored reason: %s", reason)
	for _, want := range []string{"AWS Batch gave no status reason", "log stream"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not say %q", reason, want)
		}
	}
	if strings.Contains(reason, ": :") || strings.Contains(reason, ":  ") {
		t.Errorf("reason with an empty part: %q", reason)
	}
	// The far side was the real bench exec-trial, and it did run the trial.
	if b, err := os.ReadFile(filepath.Join(logs, "container-1.log")); err != nil || !strings.Contains(string(b), "outcome") {
		t.Errorf("the container's log does not show bench exec-trial failing to write the outcome (%v):\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err != nil {
		t.Errorf("the trial's script did not run in the container: %v", err)
	}
}
