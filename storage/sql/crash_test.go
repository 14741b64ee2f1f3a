package sql

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/benchtune/bench/storage"
)

// The crash test runs the writer in a child process (this test binary
// again, running TestCrashChild) and kills it with SIGKILL while it writes
// trials from several goroutines, then checks the database.
const crashEnv = "BENCH_STORAGE_CRASH_CHILD"

const crashExperiment = "crash"

// crashOutcome is what the child records for trial id: big enough that
// each Finish is a sizable transaction.
func crashOutcome(id int) storage.TrialOutcome {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(id) * time.Hour)
	out := storage.TrialOutcome{
		Status:  trial.SUCCEEDED,
		Ts:      base.Add(time.Minute),
		Results: map[string]any{"score": float64(id) * 1.5, "name": fmt.Sprintf("trial-%d", id)},
	}
	for i := range 20 {
		out.Telemetry = append(out.Telemetry, storage.Telemetry{Ts: base.Add(time.Duration(i) * time.Second), Metric: "m", Value: float64(id*100 + i)})
	}
	for i, phase := range []string{"setup", "run", "teardown"} {
		out.Output = append(out.Output, storage.Output{
			Phase: phase, Env: "env", Line: i, Command: "cmd " + phase, ExitCode: i,
			Stdout: strings.Repeat(strconv.Itoa(id)+" ", 2000), Stderr: phase, Start: base, Duration: time.Duration(id) * time.Millisecond,
		})
	}
	return out
}

// TestCrashChild is the child process of TestCrashSafety; it does nothing
// in a normal test run.
func TestCrashChild(t *testing.T) {
	raw := os.Getenv(crashEnv)
	if raw == "" {
		t.Skip("helper process of TestCrashSafety")
	}
	var cfg storage.Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Logger = quiet
	ctx := context.Background()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	exp, _, err := s.Experiment(ctx, storage.ExperimentInfo{ID: crashExperiment, Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Like the scheduler on resume: the pending trials run first.
	pending, err := exp.PendingTrials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queue := make(chan int, len(pending))
	for _, tr := range pending {
		queue <- tr.ID
	}
	close(queue)
	var mu sync.Mutex
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	deadline := time.Now().Add(2 * time.Minute) // in case nobody kills us
	var wg sync.WaitGroup
	for w := 1; w <= 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				id, ok := <-queue
				if !ok {
					tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"w": strconv.Itoa(w)}, TrialRunnerID: w})
					if err != nil {
						report("error %v", err)
						return
					}
					id = tr.ID
				}
				if err := exp.UpdateStatus(ctx, id, trial.RUNNING, time.Time{}); err != nil {
					if errors.Is(err, storage.ErrFinished) {
						continue // its commit landed after the last check
					}
					report("error %v", err)
					return
				}
				if err := exp.Finish(ctx, id, crashOutcome(id)); err != nil {
					report("error %v", err)
					return
				}
				report("finished %d", id)
			}
		}()
	}
	wg.Wait()
}

func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	forEach(t, func(t *testing.T, b backend) {
		cfg := b.fresh(t)
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reported := map[int]bool{}
		for round := range 3 {
			for _, id := range crashRound(t, cfg, string(raw), 4+6*round) {
				reported[id] = true
			}
			checkCrashedDB(t, cfg, reported)
		}
		// Resuming goes on after the last trial.
		s := open(t, cfg)
		exp, resumed, err := s.Experiment(context.Background(), storage.ExperimentInfo{ID: crashExperiment})
		if err != nil || !resumed {
			t.Fatalf("resume: %v %v", resumed, err)
		}
		all, err := exp.Trials(context.Background(), storage.TrialFilter{})
		if err != nil {
			t.Fatal(err)
		}
		tr := mustTrial(t, exp, map[string]string{"w": "0"})
		if want := all[len(all)-1].ID + 1; tr.ID != want {
			t.Errorf("trial id after resume = %d, want %d", tr.ID, want)
		}
	})
}

// crashRound runs the child until it has finished at least n trials, reading
// the database from this process meanwhile, kills it, and returns the ids it
// reported finished.
func crashRound(t *testing.T, cfg storage.Config, raw string, n int) []int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+raw)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	// A reader in this process, as `bench results` while a run goes on.
	reader := open(t, cfg)
	stopReader := make(chan struct{})
	readerErr := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for {
			select {
			case <-stopReader:
				readerErr <- nil
				return
			case <-time.After(5 * time.Millisecond):
			}
			exp, err := reader.LoadExperiment(ctx, crashExperiment)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err == nil {
				_, err = exp.Trials(ctx, storage.TrialFilter{})
			}
			if err != nil {
				readerErr <- err
				return
			}
		}
	}()

	var finished []int
	timeout := time.After(2 * time.Minute)
	for len(finished) < n {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("child exited early; stderr:\n%s", stderr.String())
			}
			if id, ok := strings.CutPrefix(line, "finished "); ok {
				v, _ := strconv.Atoi(id)
				finished = append(finished, v)
			} else {
				t.Fatalf("child: %s", line)
			}
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("child finished only %d trials in 2 minutes", len(finished))
		}
	}
	// Land the kill at a random moment of the writes.
	time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		if id, ok := strings.CutPrefix(line, "finished "); ok {
			v, _ := strconv.Atoi(id)
			finished = append(finished, v)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v; stderr:\n%s", err, stderr.String())
	}
	close(stopReader)
	if err := <-readerErr; err != nil {
		t.Errorf("reading while the child wrote: %v", err)
	}
	return finished
}

// checkCrashedDB checks the database after a kill: it is intact, every
// trial is either finished with its whole outcome or pending with none of
// it, and every trial the child reported finished is.
func checkCrashedDB(t *testing.T, cfg storage.Config, reported map[int]bool) {
	t.Helper()
	ctx := context.Background()
	s := open(t, cfg)
	if _, ok := s.dialect.(sqliteDialect); ok {
		var res string
		if err := s.DB().QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
			t.Fatalf("integrity_check: %q %v", res, err)
		}
		rows, err := s.DB().QueryContext(ctx, "PRAGMA foreign_key_check")
		if err != nil {
			t.Fatal(err)
		}
		if rows.Next() {
			t.Errorf("foreign_key_check found violations")
		}
		rows.Close()
	}
	exp, err := s.LoadExperiment(ctx, crashExperiment)
	if err != nil {
		t.Fatal(err)
	}
	all, err := exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var unfinished []int
	for i, tr := range all {
		if tr.ID != i+1 {
			t.Fatalf("trial ids are not dense: %s", fmtIDs(all))
		}
		d := mustDetail(t, exp, tr.ID)
		if !tr.Finished() {
			unfinished = append(unfinished, tr.ID)
			if reported[tr.ID] {
				t.Errorf("trial %d was reported finished but is %s", tr.ID, tr.Status)
			}
			if d.Results != nil || len(d.Telemetry) != 0 || len(d.Output) != 0 || d.FailureReason != "" {
				t.Errorf("unfinished trial %d has part of an outcome: %d results, %d telemetry, %d outputs",
					tr.ID, len(d.Results), len(d.Telemetry), len(d.Output))
			}
			if tr.Status != trial.PENDING && tr.Status != trial.RUNNING {
				t.Errorf("unfinished trial %d is %s", tr.ID, tr.Status)
			}
			continue
		}
		want := crashOutcome(tr.ID)
		got := storage.TrialOutcome{Status: d.Status, Ts: d.TsEnd, Telemetry: d.Telemetry, Output: d.Output}
		wantCmp := want
		wantCmp.Results = nil
		if diff := cmp.Diff(wantCmp, got); diff != "" {
			t.Errorf("finished trial %d is not intact (-want +got):\n%.2000s", tr.ID, diff)
		}
		if d.Results.Text("name") != want.Results["name"] || d.Results["score"] != want.Results["score"] || len(d.Results) != 2 {
			t.Errorf("finished trial %d results: %v", tr.ID, d.Results)
		}
		if last := d.History[len(d.History)-1]; last.Status != trial.SUCCEEDED {
			t.Errorf("trial %d history ends with %v", tr.ID, last)
		}
	}
	pending, err := exp.PendingTrials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(unfinished, ids(pending), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("PendingTrials (-want +got):\n%s", diff)
	}
	t.Logf("%d trials, %d finished, pending after the kill: %v", len(all), len(all)-len(unfinished), unfinished)
}
