package main

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/batch"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/awsbatch/awsbatchtest"
	"github.com/benchtune/bench/engines/enginetest"
	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/trial"
)

// The shared engine suite (engines/enginetest) with the real bench
// exec-trial on the far side, for each engine this machine can run.

func newSuiteEngine(t *testing.T, class, dir string, config map[string]any) engines.Engine {
	t.Helper()
	e, err := engines.New(context.Background(), engines.Spec{Class: class, Config: config},
		engines.Params{Slots: 1, Dir: dir, ExperimentID: "suite"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func merged(base, extra map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func TestEngineSuiteLocal(t *testing.T) {
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T, dir string, config map[string]any) engines.Engine {
			return newSuiteEngine(t, "bench.engines.LocalEngine", dir, merged(map[string]any{"bench": benchBin}, config))
		},
		// A person kills the far side (bench exec-trial, the job's shell's
		// child): the local engine has no scheduler of its own to ask, so
		// the signal is a person's: CANCELED.
		CancelOutside: func(t *testing.T, ref engines.Ref) {
			var r struct {
				PID int `json:"pid"`
			}
			if err := json.Unmarshal(ref, &r); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile("/proc/" + strconv.Itoa(r.PID) + "/task/" + strconv.Itoa(r.PID) + "/children")
			if err != nil || len(strings.Fields(string(b))) == 0 {
				t.Fatalf("the job's bench exec-trial: %q %v", b, err)
			}
			child, _ := strconv.Atoi(strings.Fields(string(b))[0])
			if err := syscall.Kill(child, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		},
		OutsideCancel: trial.CANCELED,
		NoTimeLimit:   "the local engine has no time limit of its own (the scheduler's trial timeouts apply)",
	})
}

func TestEngineSuiteSlurm(t *testing.T) {
	testenv.Get(t, "BENCH_TEST_SLURM")
	base := map[string]any{"bench": benchBin}
	if p := os.Getenv("BENCH_TEST_SLURM_PARTITION"); p != "" {
		base["partition"] = p
	}
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T, dir string, config map[string]any) engines.Engine {
			return newSuiteEngine(t, "bench.engines.SlurmEngine", dir, merged(base, config))
		},
		CancelOutside: func(t *testing.T, ref engines.Ref) {
			var r struct {
				JobID string `json:"job_id"`
			}
			if err := json.Unmarshal(ref, &r); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("scancel", r.JobID).CombinedOutput(); err != nil {
				t.Fatalf("scancel: %v: %s", err, out)
			}
		},
		OutsideCancel:       trial.FAILED,
		OutsideCancelReason: "CANCELLED",
		// Slurm counts whole minutes and checks limits every 30 s.
		TimeLimit:     map[string]any{"time_limit": 1},
		TimeLimitWait: 3 * time.Minute,
	})
}

func TestEngineSuiteAWSBatch(t *testing.T) {
	f := awsbatchtest.Start(t, benchContainer(t.TempDir()))
	env := map[string]any{}
	for k, v := range f.Env {
		env[k] = v
	}
	base := map[string]any{"job_queue": f.JobQueue, "job_definition": f.JobDefinition, "region": awsbatchtest.Region,
		"endpoint_url": f.Endpoint, "bucket": f.Bucket, "prefix": "suite", "environment": env}
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T, dir string, config map[string]any) engines.Engine {
			return newSuiteEngine(t, "bench.engines.AWSBatchEngine", dir, merged(base, config))
		},
		CancelOutside: func(t *testing.T, ref engines.Ref) {
			var r struct {
				JobID string `json:"job_id"`
			}
			if err := json.Unmarshal(ref, &r); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Batch.TerminateJob(t.Context(), &batch.TerminateJobInput{JobId: aws.String(r.JobID), Reason: aws.String("operator")}); err != nil {
				t.Fatal(err)
			}
		},
		OutsideCancel:       trial.FAILED,
		OutsideCancelReason: "operator",
		NoTimeLimit:         "moto ends a job past attemptDurationSeconds (60 s at least) without Batch's reason: the mapping is a table test (TestStateOf)",
	})
}

func TestEngineSuiteSSHPool(t *testing.T) {
	e := getSSHPoolEnv(t)
	// The hosts' login runs the bench binary: a copy it can read.
	binDir := t.TempDir()
	for _, d := range []string{filepath.Dir(binDir), binDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(binDir, "bench")
	if out, err := exec.Command("cp", benchBin, bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	enginetest.Run(t, enginetest.Harness{
		New: func(t *testing.T, dir string, config map[string]any) engines.Engine {
			// The hosts' login (another user) writes the trial's files.
			for _, d := range []string{filepath.Dir(dir), dir} {
				if err := os.Chmod(d, 0o777); err != nil {
					t.Fatal(err)
				}
			}
			host := map[string]any{"host": fmt.Sprintf("%s@%s:%d", e.user, e.host, e.port), "key_file": e.key,
				"slots": 1, "workdir": fmt.Sprintf("%s/%x", e.workdir, md5.Sum([]byte(dir)))}
			return newSuiteEngine(t, "bench.engines.SSHPoolEngine", dir, merged(map[string]any{
				"hosts": []any{host}, "known_hosts_file": e.knownHosts, "bench": bin}, config))
		},
		// A person on the host signals the far side (bench exec-trial, in
		// the job's process group): the pool has no scheduler of its own
		// to ask, so the signal is a person's: CANCELED.
		CancelOutside: func(t *testing.T, ref engines.Ref) {
			var r struct {
				Run string `json:"run"`
			}
			if err := json.Unmarshal(ref, &r); err != nil {
				t.Fatal(err)
			}
			h, err := e.svc.Host(services.Params{"ssh_hostname": e.host})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.Command(t.Context(), "pkill -TERM -g \"$(cat "+engines.ShellQuote(r.Run+"/pgid")+")\" -f exec-trial")
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("pkill on the host: %+v %v", res, err)
			}
		},
		OutsideCancel: trial.CANCELED,
		NoTimeLimit:   "the SSH pool has no time limit of its own",
	})
}
