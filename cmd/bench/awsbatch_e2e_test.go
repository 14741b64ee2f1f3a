package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/engines/awsbatch/awsbatchtest"
)

// benchContainer plays the container of an AWS Batch job (moto runs no
// containers: awsbatchtest's fake Docker calls this with the job's
// command and environment): "bench ..." runs the real bench binary, as
// the job definition's image would, with the job's environment (the
// request in BENCH_REQUEST or S3, AWS_ENDPOINT_URL pointing at moto's S3
// for the outcome). Its output goes to logDir/<n>.log.
func benchContainer(logDir string) awsbatchtest.RunFunc {
	var n atomic.Int32 // containers started
	return func(ctx context.Context, argv, env []string) int {
		if len(argv) == 0 || argv[0] != "bench" {
			return 127
		}
		logf, err := os.Create(filepath.Join(logDir, fmt.Sprintf("container-%d.log", n.Add(1))))
		if err != nil {
			return 126
		}
		defer logf.Close()
		cmd := exec.Command(benchBin, argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(logf, err)
			return 127
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
				// TerminateJob: like ECS, SIGTERM, then SIGKILL after a
				// grace period (ECS: the container's stopTimeout, 30 s).
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				}
			case <-done:
			}
		}()
		err = cmd.Wait()
		close(done)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ee.ExitCode() < 0 {
				return 137
			}
			return ee.ExitCode()
		}
		if err != nil {
			return 126
		}
		return 0
	}
}

// awsBatchEngine writes engine.jsonc for the fixture's queue.
func awsBatchEngine(t *testing.T, dir string, f *awsbatchtest.Fixture, extra string) {
	write(t, dir, "engine.jsonc", fmt.Sprintf(`{"class": "bench.engines.AWSBatchEngine",
		"config": {"job_queue": %q, "job_definition": %q, "region": %q, "endpoint_url": %q,
			"bucket": %q, "prefix": "bench", "max_jobs": 3, "poll_interval": "100ms"%s}}`,
		f.JobQueue, f.JobDefinition, awsbatchtest.Region, f.Endpoint, f.Bucket, extra), 0o644)
}

// TestAWSBatchKillAndReattach: an experiment whose trials run as AWS Batch
// jobs on moto, each job's container being the real `bench exec-trial`
// (see benchContainer). bench is SIGKILLed while three jobs run and
// started again with the same command: it re-attaches to the running jobs
// (no new SubmitJob for them), and every trial's script ran once, was
// submitted once and is stored once, SUCCEEDED.
func TestAWSBatchKillAndReattach(t *testing.T) {
	const n = 7
	logs := t.TempDir()
	f := awsbatchtest.Start(t, benchContainer(logs))
	dir := chaosExperiment(t, n, "2")
	awsBatchEngine(t, dir, f, "")
	tmp := t.TempDir()
	args := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--engine", "engine.jsonc",
		"--experiment_id", "AB", "--no-progress",
		// max_jobs jobs at once from the start: no canary trial alone first
		"--no-canary"}
	cmd := startBench(t, dir, tmp, "bench", args...)
	deadline := time.Now().Add(90 * time.Second)
	for len(startedCounts(t, dir)) < 3 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
			t.Fatalf("trials did not start\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	submitted := f.Server.Count("/v1/submitjob")
	if submitted != 3 {
		t.Errorf("%d jobs submitted before the kill, want 3 (max_jobs)", submitted)
	}
	r := runBench(t, dir, append(args, "--log_level", "INFO")...)
	if r.code != 0 {
		log, _ := os.ReadFile(filepath.Join(tmp, "bench.log"))
		t.Fatalf("restarted bench: exit %d\n%s%s\nfirst run:\n%s", r.code, r.stdout, r.stderr, log)
	}
	if got := strings.Count(r.stderr, "re-attaching"); got != 3 {
		t.Errorf("the restarted bench re-attached to %d jobs, want 3:\n%s", got, r.stderr)
	}
	jobs := engineJobs(t, dir, "AB") // the trials that ran (not those that reused another's result)
	if got := f.Server.Count("/v1/submitjob"); got != len(jobs) {
		t.Errorf("%d SubmitJob calls in all, want %d (one per trial that ran: none again for the re-attached jobs)", got, len(jobs))
	}
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "AB")
	if len(rows) != n {
		t.Fatalf("%d trials stored, want %d", len(rows), n)
	}
	for id, st := range rows {
		if st != "SUCCEEDED" {
			t.Errorf("trial %d: %s", id, st)
		}
	}
	for id, runs := range startedCounts(t, dir) {
		if runs != 1 {
			t.Errorf("trial %s ran %d times", id, runs)
		}
	}
	for id, job := range jobs {
		if job != "aws_batch/1" {
			t.Errorf("trial %d: engine job %s, want aws_batch/1 (submitted once)", id, job)
		}
	}
	if t.Failed() {
		t.Logf("moto log:\n%s", f.Server.Log(40))
	}
}

// TestAWSBatchHungJobRelaunched: a job that shows no progress for
// hang_timeout (on Batch: no state change while RUNNING) is terminated
// (TerminateJob kills its container) and submitted again with the same
// request; after max_relaunches the trial is TIMED_OUT.
func TestAWSBatchHungJobRelaunched(t *testing.T) {
	logs := t.TempDir()
	f := awsbatchtest.Start(t, benchContainer(logs))
	dir := experiment(t, `echo "$trial_id" >> "$marker_dir/started"; sleep 60`)
	awsBatchEngine(t, dir, f, `, "hang_timeout": "2s", "max_relaunches": 1`)
	r := runBench(t, dir, "--environment", "env.jsonc", "--engine", "engine.jsonc", "--experiment_id", "H", "--no-progress", "--log_level", "INFO")
	defer func() {
		if t.Failed() {
			t.Logf("bench:\n%s", r.stderr)
		}
	}()
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "H")
	if rows[1] != "TIMED_OUT" {
		t.Fatalf("hung trial: %v\n%s", rows, r.stderr)
	}
	if jobs := engineJobs(t, dir, "H"); jobs[1] != "aws_batch/2" {
		t.Errorf("engine job %s, want aws_batch/2 (relaunched once)", jobs[1])
	}
	if c := startedCounts(t, dir)["1"]; c != 2 {
		t.Errorf("the hung job ran %d times, want 2", c)
	}
	if got := f.Server.Count("/v1/terminatejob"); got < 2 {
		t.Errorf("%d TerminateJob calls, want one per hung job (2)", got)
	}
	// Both jobs got the same request (inline, in their environment).
	out, err := f.Batch.ListJobs(t.Context(), awsbatchtest.ListJobsInput(f.JobQueue))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []string
	for _, j := range out.JobSummaryList {
		// moto notices a termination within half a second.
		job := f.WaitStatus(t, *j.JobId, "FAILED", "SUCCEEDED")
		reqs = append(reqs, job.Env["BENCH_REQUEST"])
		if job.Status != "FAILED" || !strings.Contains(job.Reason, "bench: trial cancelled") {
			t.Errorf("job %s: %s %q, want FAILED by bench's TerminateJob", job.ID, job.Status, job.Reason)
		}
	}
	if len(reqs) != 2 || reqs[0] == "" || reqs[0] != reqs[1] {
		t.Errorf("the relaunch did not get the same request: %q", reqs)
	}
}
