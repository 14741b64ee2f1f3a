package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func runProgress(p *progress, planned, n int) {
	p.begin(planned, []optimizers.Target{{Name: "score"}})
	for i := 1; i <= n; i++ {
		p.TrialStarted(storage.Trial{ID: i})
		time.Sleep(120 * time.Millisecond)
		p.TrialFinished(storage.Trial{ID: i}, trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": float64(i)}},
			&schedulers.Best{TrialID: 1, Values: []float64{1}})
	}
}

// The bar is created with the planned total and shows the time left.
func TestProgressBarPlannedAndETA(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, useBar: true}
	runProgress(p, 4, 2)
	time.Sleep(2 * redrawEvery) // the last trial's end is drawn
	p.mu.Lock()
	out := b.String()
	p.mu.Unlock()
	if !strings.Contains(out, "2/4") {
		t.Errorf("the bar does not show done/planned:\n%q", out)
	}
	// progressbar's elapsed:remaining pair, e.g. "[0s:0s]".
	if !regexp.MustCompile(`\[\d+s:\d+s\]`).MatchString(out) {
		t.Errorf("the bar shows no ETA:\n%q", out)
	}
	p.finish()
}

// Without a terminal, each trial's line has the planned count and an ETA.
func TestProgressLinesPlannedAndETA(t *testing.T) {
	var b bytes.Buffer
	runProgress(&progress{w: &b}, 4, 2)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines:\n%s", b.String())
	}
	re := regexp.MustCompile(`^bench: trial finished trial=1 status=SUCCEEDED done=1 planned=4 score=1 best="score=1 \(trial 1\)" elapsed=\S+ eta=\S+$`)
	if !re.MatchString(lines[0]) {
		t.Errorf("line %q does not match %s", lines[0], re)
	}
}

// On resume, the bar counts the trials left, and the lines say how many
// had finished before.
func TestProgressResumed(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, useBar: true}
	p.begin(10, []optimizers.Target{{Name: "score"}})
	p.Resumed(6)
	for i := 7; i <= 8; i++ {
		p.TrialFinished(storage.Trial{ID: i}, trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}, nil)
	}
	time.Sleep(2 * redrawEvery)
	p.mu.Lock()
	out := b.String()
	p.mu.Unlock()
	p.finish()
	if !strings.Contains(out, "2/4") {
		t.Errorf("the bar does not count the trials left:\n%q", out)
	}

	b.Reset()
	q := &progress{w: &b}
	q.begin(10, []optimizers.Target{{Name: "score"}})
	q.Resumed(6)
	q.TrialFinished(storage.Trial{ID: 7}, trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}, nil)
	if !regexp.MustCompile(`done=1 planned=10 finished_before=6 score=1 elapsed=\S+ eta=\S+$`).MatchString(strings.TrimSpace(b.String())) {
		t.Errorf("line: %s", b.String())
	}
}

// A failed trial's reason is printed once: one line above the bar on a
// terminal (the environment no longer warns about the failing script).
func TestProgressBarPrintsFailureOnce(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, useBar: true}
	p.begin(4, []optimizers.Target{{Name: "score"}})
	p.TrialStarted(storage.Trial{ID: 1})
	p.TrialFinished(storage.Trial{ID: 1}, trial.Outcome{Status: trial.FAILED, FailureReason: "scripts/missing.sh: not found"}, nil)
	p.TrialFinished(storage.Trial{ID: 2}, trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}, nil)
	p.mu.Lock()
	out := b.String()
	p.mu.Unlock()
	p.finish()
	if n := strings.Count(out, "scripts/missing.sh: not found"); n != 1 {
		t.Errorf("the reason is printed %d times:\n%q", n, out)
	}
	if !strings.Contains(out, "bench: trial finished trial=1 status=FAILED reason=") {
		t.Errorf("no failure line:\n%q", out)
	}
}
