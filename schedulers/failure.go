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

// retry queues another attempt of a failed trial, preferably on another
// runner; the optimizer only sees the last attempt.
func (d *dispatch) retry(ctx context.Context, j *job, out trial.Outcome) error {
	s := d.s
	spec := storage.TrialSpec{ConfigHash: j.t.ConfigHash, Params: j.t.Params, Metadata: j.t.Metadata, RetryOf: j.root}
	t, err := s.exp.NewTrial(ctx, spec)
	if err != nil {
		return err
	}
	s.logAdded(t)
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
				s.logAdded(t)
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
	s := d.s
	if s.cfg.MaxFailedTrials > 0 && d.failed >= s.cfg.MaxFailedTrials {
		return fmt.Errorf("%w: %d trials failed, the failure budget (max_failed_trials %d) is spent; the last failure: %s",
			ErrStopped, d.failed, s.cfg.MaxFailedTrials, out.FailureReason)
	}
	// Fail-fast saves the rest of the budget: none left, nothing to save.
	if n := s.cfg.FailFast; n > 0 && d.succeeded == 0 && len(d.firstFailures) >= n && (d.notDone() || len(d.queue) > 0) {
		same := true
		for _, f := range d.firstFailures[1:n] {
			if f != d.firstFailures[0] {
				same = false
				break
			}
		}
		if same {
			return fmt.Errorf("%w early: the first %d trials all failed the same way, so the rest of the budget would likely fail too (fail_fast %d; set it to 0 to go on regardless): %s",
				ErrStopped, n, n, d.firstReason)
		}
		d.firstFailures = d.firstFailures[:0:0]
		d.s.cfg.FailFast = 0 // not all the same: fail-fast is done
	}
	return nil
}
