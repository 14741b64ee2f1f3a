package trial

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGlobals(t *testing.T) {
	tests := []struct {
		name     string
		base     map[string]any
		meta     map[string]string
		extra    map[string]any
		want     map[string]any
		unchange map[string]any // base after the call
	}{
		{"nil maps", nil, nil, nil,
			map[string]any{"experiment_id": "e", "trial_id": int64(7), "trial_runner_id": int64(2)}, nil},
		{"metadata fills keys base lacks",
			map[string]any{"repeat_i": "9", "x": 1.5},
			map[string]string{"repeat_i": "1", "optimizer": "mlos_core"},
			nil,
			map[string]any{"repeat_i": "9", "x": 1.5, "optimizer": "mlos_core", "experiment_id": "e", "trial_id": int64(7), "trial_runner_id": int64(2)},
			map[string]any{"repeat_i": "9", "x": 1.5}},
		{"extra over base and metadata",
			map[string]any{"gpu_id": "x"},
			map[string]string{"cpu_slot": "3"},
			map[string]any{"gpu_id": "0", "cpu_slot": int64(1)},
			map[string]any{"gpu_id": "0", "cpu_slot": int64(1), "experiment_id": "e", "trial_id": int64(7), "trial_runner_id": int64(2)},
			map[string]any{"gpu_id": "x"}},
		{"ids always win (a decoded request's float64 trial_id included)",
			map[string]any{"experiment_id": "other", "trial_id": 3},
			map[string]string{"trial_runner_id": "5"},
			map[string]any{"trial_id": float64(7), "experiment_id": "e2"},
			map[string]any{"experiment_id": "e", "trial_id": int64(7), "trial_runner_id": int64(2)},
			map[string]any{"experiment_id": "other", "trial_id": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Globals(tc.base, tc.meta, tc.extra, "e", 7, 2)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Globals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unchange, tc.base); diff != "" {
				t.Errorf("base changed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunEnd(t *testing.T) {
	tests := []struct {
		st      Status
		final   bool
		wantErr bool
	}{
		{SUCCEEDED, true, false},
		{FAILED, true, false},
		{TIMED_OUT, true, false},
		{CANCELED, true, false},
		{READY, false, false},
		{PENDING, false, false},
		{RUNNING, false, false},
		{UNKNOWN, false, true},
		{Status(42), false, true},
		{Status(-1), false, true},
	}
	for _, tc := range tests {
		final, err := RunEnd(tc.st)
		if final != tc.final || (err != nil) != tc.wantErr {
			t.Errorf("RunEnd(%s) = %v, %v; want %v, error %v", tc.st, final, err, tc.final, tc.wantErr)
		}
		if err != nil && !errors.Is(err, ErrBadRunStatus) {
			t.Errorf("RunEnd(%s): %v does not wrap ErrBadRunStatus", tc.st, err)
		}
	}
}

func TestFinalize(t *testing.T) {
	minScore := Objectives{{Name: "score"}}
	two := Objectives{{Name: "score"}, {Name: "tput", Max: true}}
	tests := []struct {
		name       string
		targets    Objectives
		in         Outcome
		wantStatus Status
		wantRes    map[string]any
		reasonHas  string
	}{
		{"succeeded with the metric", minScore,
			Outcome{Status: SUCCEEDED, Results: map[string]any{"score": 1.5, "x": "a"}},
			SUCCEEDED, map[string]any{"score": 1.5, "x": "a"}, ""},
		{"numeric string counts", minScore,
			Outcome{Status: SUCCEEDED, Results: map[string]any{"score": " 3 "}},
			SUCCEEDED, map[string]any{"score": " 3 "}, ""},
		{"missing metric fails", minScore,
			Outcome{Status: SUCCEEDED, Results: map[string]any{"other": 1.0}},
			FAILED, nil, `no "score" metric`},
		{"non-numeric metric fails", minScore,
			Outcome{Status: SUCCEEDED, Results: map[string]any{"score": "fast"}},
			FAILED, nil, "not a number"},
		{"infinite metric fails", minScore,
			Outcome{Status: SUCCEEDED, Results: map[string]any{"score": math.Inf(1)}},
			FAILED, nil, "not a number"},
		{"second target missing fails", two,
			Outcome{Status: SUCCEEDED, Results: map[string]any{"score": 1.0}},
			FAILED, nil, `"tput"`},
		{"failed stays as it is", minScore,
			Outcome{Status: FAILED, FailureReason: "boom", Results: map[string]any{"score": 1.0}},
			FAILED, map[string]any{"score": 1.0}, "boom"},
		{"no targets: nothing to check", nil,
			Outcome{Status: SUCCEEDED, Results: map[string]any{"x": 1.0}},
			SUCCEEDED, map[string]any{"x": 1.0}, ""},
		{"unfinished untouched", minScore, Outcome{Status: READY}, READY, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.targets.Finalize(tc.in)
			if got.Status != tc.wantStatus {
				t.Errorf("status %s, want %s", got.Status, tc.wantStatus)
			}
			if diff := cmp.Diff(tc.wantRes, got.Results); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if tc.reasonHas == "" && got.FailureReason != "" || !strings.Contains(got.FailureReason, tc.reasonHas) {
				t.Errorf("reason %q, want it to hold %q", got.FailureReason, tc.reasonHas)
			}
		})
	}
}

func TestStopCause(t *testing.T) {
	hung := fmt.Errorf("no output for 5s (trial_idle_timeout): %w", ErrTimeout)
	stop := errors.New("stopped on request (bench stop)")
	tests := []struct {
		name        string
		ctx         func() context.Context
		st          Status
		reason      string
		interrupted bool
	}{
		{"plain cancel: bench is stopping", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, CANCELED, "cancelled", true},
		{"cancel with a nil cause", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(nil)
			return ctx
		}, CANCELED, "cancelled", true},
		{"deadline without a cause", func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 0)
			_ = cancel
			<-ctx.Done()
			return ctx
		}, CANCELED, "cancelled", true},
		{"hung: a timeout cause", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(hung)
			return ctx
		}, TIMED_OUT, hung.Error(), false},
		{"a timeout cause of a parent", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			child, done := context.WithCancel(ctx)
			_ = done
			cancel(hung)
			return child
		}, TIMED_OUT, hung.Error(), false},
		{"bench stop: a cause of its own", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(stop)
			return ctx
		}, CANCELED, stop.Error(), false},
		{"explicit context.Canceled cause", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(context.Canceled)
			return ctx
		}, CANCELED, "cancelled", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, reason, interrupted := StopCause(tc.ctx())
			if st != tc.st || reason != tc.reason || interrupted != tc.interrupted {
				t.Errorf("StopCause = %s, %q, %v; want %s, %q, %v", st, reason, interrupted, tc.st, tc.reason, tc.interrupted)
			}
		})
	}
}

func TestBudgetSuggestions(t *testing.T) {
	tests := []struct {
		name                string
		b                   Budget
		trials, ahead, have int
		want                int
	}{
		{"one per trial", Budget{Repeats: 1}, 4, 0, 0, 4},
		{"repeats round up", Budget{Repeats: 3}, 4, 0, 0, 2},
		{"repeats exact", Budget{Repeats: 2}, 4, 0, 0, 2},
		{"repeats below 1 count as 1", Budget{Repeats: 0}, 3, 0, 0, 3},
		{"ahead adds configurations", Budget{Repeats: 2}, 1, 3, 0, 4},
		{"capped by max_trials", Budget{Repeats: 1, MaxTrials: 10}, 8, 0, 7, 3},
		{"cap rounds up to whole configurations", Budget{Repeats: 3, MaxTrials: 10}, 9, 0, 6, 2},
		{"cap takes ahead too", Budget{Repeats: 1, MaxTrials: 10}, 2, 5, 5, 5},
		{"budget spent", Budget{Repeats: 1, MaxTrials: 5}, 2, 0, 5, 0},
		{"budget overspent is never negative", Budget{Repeats: 2, MaxTrials: 5}, 2, 0, 9, 0},
		{"no trials wanted", Budget{Repeats: 1}, 0, 0, 0, 0},
		{"negative ahead ignored", Budget{Repeats: 1}, 2, -3, 0, 2},
	}
	for _, tc := range tests {
		if got := tc.b.Suggestions(tc.trials, tc.ahead, tc.have); got != tc.want {
			t.Errorf("%s: %+v.Suggestions(%d, %d, %d) = %d, want %d", tc.name, tc.b, tc.trials, tc.ahead, tc.have, got, tc.want)
		}
	}
}

func TestTakeOver(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname")
	}
	// A process that has surely exited: a child that was waited for.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	dead := host + ":" + strconv.Itoa(cmd.Process.Pid) + ":abcd"
	alive := host + ":1:abcd" // init never exits
	self := host + ":" + strconv.Itoa(os.Getpid()) + ":beef"
	tests := []struct {
		name     string
		owner    string
		self     string
		finished bool
		want     bool
	}{
		{"dead process of this host", dead, "me", false, true},
		{"finished trial", dead, "me", true, false},
		{"no owner", "", "me", false, false},
		{"own trial", dead, dead, false, false},
		{"live process", alive, "me", false, false},
		{"this process under another name", self, "me", false, false},
		{"another host", "elsewhere.example:" + strconv.Itoa(cmd.Process.Pid) + ":abcd", "me", false, false},
		{"not host:pid:random", "worker-7", "me", false, false},
		{"pid not a number", host + ":x:abcd", "me", false, false},
	}
	for _, tc := range tests {
		if got := TakeOver(tc.owner, tc.self, tc.finished); got != tc.want {
			t.Errorf("%s: TakeOver(%q, %q, %v) = %v, want %v", tc.name, tc.owner, tc.self, tc.finished, got, tc.want)
		}
	}
}

func TestOwnerPID(t *testing.T) {
	tests := []struct {
		owner, host string
		pid         int
		ok          bool
	}{
		{"h:12:ab", "h", 12, true},
		{"fe80::1:12:ab", "fe80::1", 12, true},
		{"h:12:ab", "g", 0, false},
		{"h:0:ab", "h", 0, false},
		{"h:-3:ab", "h", 0, false},
		{"h:12", "h", 0, false},
	}
	for _, tc := range tests {
		pid, ok := ownerPID(tc.owner, tc.host)
		if pid != tc.pid || ok != tc.ok {
			t.Errorf("ownerPID(%q, %q) = %d, %v; want %d, %v", tc.owner, tc.host, pid, ok, tc.pid, tc.ok)
		}
	}
}
