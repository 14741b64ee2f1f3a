// The retry and failure policy: retries, fail-fast on repeated failures, stopping on a bad trial.

package schedulers

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// failureState is what the retry and failure policy counts.
type failureState struct {
	failed    int // trials of the experiment that failed for good
	succeeded int // trials of the experiment that succeeded
	// firstFailures holds the failure signatures of the first trials of
	// an experiment without successes (fail-fast).
	firstFailures []string
	firstReason   string
	// retryCount maps a trial's first attempt to its retries so far.
	retryCount map[int]int
	// failFastDone is set once the first failures were not all the same:
	// fail-fast no longer applies.
	failFastDone bool
}

// failurePolicy is the experiment's retry and failure policy
// (max_retries, max_failed_trials, fail_fast). Its methods are the
// policy's decisions, on the counts of a failureState and nothing else,
// so that they are table-tested alone (failure_test.go).
type failurePolicy struct {
	MaxRetries      int
	MaxFailedTrials int
	FailFast        int
}

// failures returns the scheduler's retry and failure policy.
func (s *Scheduler) failures() failurePolicy {
	return failurePolicy{MaxRetries: s.cfg.MaxRetries, MaxFailedTrials: s.cfg.MaxFailedTrials, FailFast: s.cfg.FailFast}
}

// retry decides whether an attempt (0 for the first) that ended with
// status st runs again: a FAILED or TIMED_OUT trial with retries left,
// unless the run itself is being stopped. SUCCEEDED and CANCELED (bench
// stop, an interruption) never are.
func (p failurePolicy) retry(st trial.Status, attempt int, stopping bool) bool {
	return st.IsFailed() && attempt < p.MaxRetries && !stopping
}

// failFast is how many first failures fail-fast compares (0: off).
func (p failurePolicy) failFast(f *failureState) int {
	if f.failFastDone {
		return 0
	}
	return max(p.FailFast, 0)
}

// count takes a recorded outcome (status st, failure reason) into the
// counts: successes, failures for good, and the first failures'
// signatures that fail-fast compares.
func (p failurePolicy) count(f *failureState, st trial.Status, reason string) {
	switch st {
	case trial.SUCCEEDED:
		f.succeeded++
	case trial.FAILED, trial.TIMED_OUT:
		f.failed++
		if f.succeeded == 0 && len(f.firstFailures) < p.failFast(f) {
			f.firstFailures = append(f.firstFailures, signature(reason))
			if f.firstReason == "" {
				f.firstReason = reason
			}
		}
	}
}

// stopVerdict is what the failure policy says after an outcome.
type stopVerdict int

const (
	policyGoOn          stopVerdict = iota
	policyFailureBudget             // max_failed_trials failures for good
	policyFailFast                  // the first fail_fast trials all failed the same way
)

// stop decides whether the experiment stops after an outcome was counted:
// its failure budget is spent, or its first trials, none of them a
// success, all failed the same way while the budget has trials left to
// save (budgetLeft). Once the first failures differ, fail-fast is done
// for the experiment (f.failFastDone).
func (p failurePolicy) stop(f *failureState, budgetLeft bool) stopVerdict {
	if p.MaxFailedTrials > 0 && f.failed >= p.MaxFailedTrials {
		return policyFailureBudget
	}
	// Fail-fast saves the rest of the budget: none left, nothing to save.
	if n := p.failFast(f); n > 0 && f.succeeded == 0 && len(f.firstFailures) >= n && budgetLeft {
		for _, sig := range f.firstFailures[1:n] {
			if sig != f.firstFailures[0] {
				f.firstFailures = f.firstFailures[:0:0]
				f.failFastDone = true // not all the same: fail-fast is done
				return policyGoOn
			}
		}
		return policyFailFast
	}
	return policyGoOn
}

// retry queues another attempt of a failed trial, preferably on another
// runner; the optimizer only sees the last attempt.
func (d *dispatch) retry(ctx context.Context, j *job, out trial.Outcome) error {
	s := d.s
	spec := storage.TrialSpec{ConfigHash: j.t.ConfigHash, Params: j.t.Params, Metadata: j.t.Metadata, RetryOf: j.root}
	t, err := s.exp.NewTrial(ctx, spec)
	if err != nil {
		return err
	}
	d.added(t)
	s.stats.Retried++
	d.retryCount[j.root]++
	// The reason is on the trial's own line (the observer's); the log
	// file gets it here too.
	s.log.Warn("trial failed; retrying it", "trial", j.t.ID, "status", out.Status, "retry_trial", t.ID,
		"attempt", j.attempt+2, "of", s.cfg.MaxRetries+1)
	s.log.Info("trial failed", "trial", j.t.ID, "reason", out.FailureReason)
	failed := j.t
	failed.Status = out.Status
	if s.o.Observer != nil {
		s.o.Observer.TrialFinished(failed, out, d.best)
	}
	it := item{t: t, sugID: j.sugID, root: j.root, attempt: j.attempt + 1, avoid: j.runner.ID()}
	d.queue = append([]item{it}, d.queue...)
	// The retry stands in for the failed trial for trials waiting on it.
	if w := d.waiting[j.t.ID]; len(w) > 0 {
		delete(d.waiting, j.t.ID)
		d.waiting[t.ID] = w
	}
	return nil
}

// resolveWaiting settles the trials that waited for trial id's result:
// they reuse a success, and run themselves after a failure.
func (d *dispatch) resolveWaiting(ctx context.Context, id int, out trial.Outcome) {
	s := d.s
	ws := d.waiting[id]
	if len(ws) == 0 {
		return
	}
	delete(d.waiting, id)
	for _, it := range ws {
		if out.Status == trial.SUCCEEDED {
			spec := *it.spec
			spec.Claim = false // it reuses the trial that holds the claim
			spec.ReusedFrom = &storage.TrialRef{ExperimentID: s.cfg.ExperimentID, TrialID: id}
			if t, err := s.exp.NewTrial(ctx, spec); err == nil {
				d.added(t)
				reused := trial.Outcome{Status: trial.SUCCEEDED, Results: out.Results}
				if err := s.exp.Finish(ctx, t.ID, reused); err == nil {
					s.stats.Reused++
					it.t, it.spec = t, nil
					d.record(it, reused)
					continue
				}
			}
		}
		d.queue = append(d.queue, it)
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

var tmpPaths = regexp.MustCompile(`/tmp/[^\s"']*`)

// signature normalizes a failure reason so that the same failure of two
// trials compares equal (numbers and temporary paths left out).
func signature(reason string) string {
	r := tmpPaths.ReplaceAllString(reason, "/tmp/…")
	r = digits.ReplaceAllString(r, "#")
	return strings.Join(strings.Fields(r), " ")
}

// checkStop stops the experiment when its failure budget is spent or its
// first trials all failed the same way.
func (d *dispatch) checkStop(out trial.Outcome) error {
	p := d.s.failures()
	n := p.failFast(&d.failureState)
	switch p.stop(&d.failureState, d.notDone() || len(d.queue) > 0) {
	case policyFailureBudget:
		return fmt.Errorf("%w: %d trials failed, the failure budget (max_failed_trials %d) is spent; the last failure: %s",
			ErrStopped, d.failed, p.MaxFailedTrials, out.FailureReason)
	case policyFailFast:
		return fmt.Errorf("%w early: the first %d trials all failed the same way, so the rest of the budget would likely fail too (fail_fast %d; set it to 0 to go on regardless): %s",
			ErrStopped, n, n, d.firstReason)
	}
	return nil
}
