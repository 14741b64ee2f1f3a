package schedulers

import (
	"fmt"
	"testing"

	"github.com/benchtune/bench/trial"
)

var policyStatuses = []trial.Status{trial.SUCCEEDED, trial.FAILED, trial.TIMED_OUT, trial.CANCELED}

// The retry decision for every final status × retries left × whether the
// run is being stopped.
func TestFailurePolicyRetry(t *testing.T) {
	p := failurePolicy{MaxRetries: 2}
	for _, st := range policyStatuses {
		for _, attempt := range []int{0, 1, 2, 3} { // retries left: 2, 1, 0, none (past the limit)
			for _, stopping := range []bool{false, true} {
				want := (st == trial.FAILED || st == trial.TIMED_OUT) && attempt < 2 && !stopping
				if got := p.retry(st, attempt, stopping); got != want {
					t.Errorf("%s, attempt %d of max_retries 2, stopping %v: retry %v, want %v", st, attempt, stopping, got, want)
				}
			}
		}
	}
	if (failurePolicy{}).retry(trial.FAILED, 0, false) {
		t.Error("max_retries 0 retries a failure")
	}
}

// What counting an outcome and the stop decision give, for every final
// status in each fail-fast and failure-budget situation.
func TestFailurePolicyStop(t *testing.T) {
	const boom, other = "step 3 failed: exit 1 in /tmp/x1", "another error"
	type want struct {
		verdict      stopVerdict
		firstFailure int // len(firstFailures) after
		failFastDone bool
	}
	cases := []struct {
		name       string
		p          failurePolicy
		before     failureState
		reason     string
		budgetLeft bool
		// by status: SUCCEEDED, FAILED, TIMED_OUT, CANCELED
		want [4]want
	}{{
		name: "fail-fast off", p: failurePolicy{}, reason: boom, budgetLeft: true,
		want: [4]want{{policyGoOn, 0, false}, {policyGoOn, 0, false}, {policyGoOn, 0, false}, {policyGoOn, 0, false}},
	}, {
		name: "first of fail_fast 2", p: failurePolicy{FailFast: 2}, reason: boom, budgetLeft: true,
		want: [4]want{{policyGoOn, 0, false}, {policyGoOn, 1, false}, {policyGoOn, 1, false}, {policyGoOn, 0, false}},
	}, {
		// The numbers and /tmp path differ: the same failure.
		name: "second of fail_fast 2, same", p: failurePolicy{FailFast: 2}, reason: boom, budgetLeft: true,
		before: failureState{failed: 1, firstFailures: []string{signature("step 7 failed: exit 2 in /tmp/y")}, firstReason: "x"},
		want:   [4]want{{policyGoOn, 1, false}, {policyFailFast, 2, false}, {policyFailFast, 2, false}, {policyGoOn, 1, false}},
	}, {
		name: "second of fail_fast 2, different", p: failurePolicy{FailFast: 2}, reason: other, budgetLeft: true,
		before: failureState{failed: 1, firstFailures: []string{signature(boom)}, firstReason: boom},
		want:   [4]want{{policyGoOn, 1, false}, {policyGoOn, 0, true}, {policyGoOn, 0, true}, {policyGoOn, 1, false}},
	}, {
		name: "second of fail_fast 2, same, no budget left to save", p: failurePolicy{FailFast: 2}, reason: boom, budgetLeft: false,
		before: failureState{failed: 1, firstFailures: []string{signature(boom)}, firstReason: boom},
		want:   [4]want{{policyGoOn, 1, false}, {policyGoOn, 2, false}, {policyGoOn, 2, false}, {policyGoOn, 1, false}},
	}, {
		name: "fail-fast after a success", p: failurePolicy{FailFast: 2}, reason: boom, budgetLeft: true,
		before: failureState{succeeded: 1, failed: 1, firstFailures: []string{signature(boom)}, firstReason: boom},
		want:   [4]want{{policyGoOn, 1, false}, {policyGoOn, 1, false}, {policyGoOn, 1, false}, {policyGoOn, 1, false}},
	}, {
		name: "fail-fast done earlier", p: failurePolicy{FailFast: 2}, reason: boom, budgetLeft: true,
		before: failureState{failed: 3, failFastDone: true},
		want:   [4]want{{policyGoOn, 0, true}, {policyGoOn, 0, true}, {policyGoOn, 0, true}, {policyGoOn, 0, true}},
	}, {
		name: "failure budget: one failure left", p: failurePolicy{MaxFailedTrials: 3}, reason: boom, budgetLeft: true,
		before: failureState{failed: 2},
		want:   [4]want{{policyGoOn, 0, false}, {policyFailureBudget, 0, false}, {policyFailureBudget, 0, false}, {policyGoOn, 0, false}},
	}, {
		name: "failure budget before fail-fast", p: failurePolicy{MaxFailedTrials: 2, FailFast: 2}, reason: boom, budgetLeft: true,
		before: failureState{failed: 1, firstFailures: []string{signature(boom)}, firstReason: boom},
		want:   [4]want{{policyGoOn, 1, false}, {policyFailureBudget, 2, false}, {policyFailureBudget, 2, false}, {policyGoOn, 1, false}},
	}}
	for _, c := range cases {
		for i, st := range policyStatuses {
			t.Run(fmt.Sprintf("%s/%s", c.name, st), func(t *testing.T) {
				f := c.before
				f.firstFailures = append([]string(nil), c.before.firstFailures...)
				c.p.count(&f, st, c.reason)
				got := want{c.p.stop(&f, c.budgetLeft), len(f.firstFailures), f.failFastDone}
				if got != c.want[i] {
					t.Errorf("got %+v, want %+v", got, c.want[i])
				}
				wantFailed, wantSucceeded := c.before.failed, c.before.succeeded
				switch st {
				case trial.FAILED, trial.TIMED_OUT:
					wantFailed++
				case trial.SUCCEEDED:
					wantSucceeded++
				}
				if f.failed != wantFailed || f.succeeded != wantSucceeded {
					t.Errorf("counts failed %d succeeded %d, want %d and %d", f.failed, f.succeeded, wantFailed, wantSucceeded)
				}
			})
		}
	}
}
