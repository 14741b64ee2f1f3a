package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/batch"

	"github.com/benchtune/bench/engines/awsbatch/awsbatchtest"
)

// TestAWSBatchOutsideTerminate: a running trial's AWS Batch job is
// terminated from outside bench (TerminateJob by someone else: the
// container gets SIGTERM, the real bench exec-trial stops the trial and
// writes an outcome that names the signal). Batch ends the job FAILED: the
// trial is FAILED, not CANCELED (issue 22, bug 2), and max_retries runs it
// again.
func TestAWSBatchOutsideTerminate(t *testing.T) {
	logs := t.TempDir()
	f := awsbatchtest.Start(t, benchContainer(logs))
	dir := chaosExperiment(t, 1, "0")
	write(t, dir, "run.sh", `#!/bin/sh
set -e
echo "$trial_id" >> "$marker_dir/started"
if mkdir "$marker_dir/first" 2>/dev/null; then
	touch "$marker_dir/running"
	sleep 600
fi
printf 'metric,value\nscore,%s\n' "$(( (xv - 30) * (xv - 30) ))" > results.csv
`, 0o755)
	awsBatchEngine(t, dir, f, "")
	tmp := t.TempDir()
	cmd := startBench(t, dir, tmp, "bench", "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "AT", "--no-progress", "--max_retries", "1")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "running")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
			t.Fatalf("the trial did not start:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	out, err := f.Batch.ListJobs(t.Context(), awsbatchtest.ListJobsInput(f.JobQueue))
	if err != nil {
		t.Fatal(err)
	}
	terminated := 0
	for _, j := range out.JobSummaryList {
		if j.Status == "RUNNING" {
			if _, err := f.Batch.TerminateJob(t.Context(), &batch.TerminateJobInput{JobId: j.JobId, Reason: aws.String("operator: maintenance")}); err != nil {
				t.Fatal(err)
			}
			terminated++
		}
	}
	if terminated != 1 {
		t.Fatalf("%d running jobs terminated, want 1: %+v", terminated, out.JobSummaryList)
	}
	select {
	case err := <-exited:
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
			t.Fatalf("bench: %v\n%s", err, log)
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("bench did not finish")
	}
	rows := trialReasons(t, dir, "AT")
	if len(rows) != 2 || rows[1][0] != "FAILED" || rows[2][0] != "SUCCEEDED" {
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Fatalf("trials %v, want 1 FAILED (terminated) and its retry 2 SUCCEEDED\n%s", rows, log)
	}
	if r := rows[1][1]; !strings.Contains(r, "SIGTERM") || !strings.Contains(r, "operator: maintenance") {
		t.Errorf("trial 1: %q: want the signal and Batch's reason", r)
	}
}
