package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/trial"
)

// quickBench plays `bench exec-trial --request R --outcome O` at its
// fastest: it writes a SUCCEEDED outcome and exits, so that a job's time
// is the engine's own overhead.
const quickBench = `#!/bin/sh
printf '{"status":"SUCCEEDED","results":{"score":1}}' > "$5.tmp" && mv "$5.tmp" "$5"
`

func newLocal(t testing.TB, poll time.Duration) *Engine {
	t.Helper()
	dir := t.TempDir()
	bench := filepath.Join(dir, "quick-bench")
	if err := os.WriteFile(bench, []byte(quickBench), 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := engines.New(context.Background(), engines.Spec{Class: "bench.engines.LocalEngine",
		Config: map[string]any{"bench": bench, "poll_interval": poll.String()}},
		engines.Params{Slots: 1, Dir: dir, ExperimentID: "exp"})
	if err != nil {
		t.Fatal(err)
	}
	return e.(*Engine)
}

// polledOnly hides the engine's Notifier: the runner polls, as before
// the local engine told when its child ends.
type polledOnly struct{ engines.Engine }

func runOne(t testing.TB, eng engines.Engine, poll time.Duration, id int) trial.Outcome {
	t.Helper()
	common := engines.Common{PollInterval: decode.Duration(poll)}
	r := engines.NewRunners(eng, common, engines.Base{}, nil)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return r.Run(ctx, schedulers.Spec{ExperimentID: "exp", TrialID: id, Params: map[string]string{}})
}

// TestLocalEngineToldWhenChildEnds: with a poll_interval of an hour, a job
// of the local engine still ends as soon as its process does: the runner
// is told when the child ends instead of polling it (issue 22, bug 5).
// Before, Run waited out the interval (here: until the test's 60 s
// guard cancelled it).
func TestLocalEngineToldWhenChildEnds(t *testing.T) {
	e := newLocal(t, time.Hour)
	for id := 1; id <= 3; id++ {
		out := runOne(t, e, time.Hour, id)
		if out.Status != trial.SUCCEEDED {
			t.Fatalf("trial %d: %s (%s), want SUCCEEDED", id, out.Status, out.FailureReason)
		}
	}
	e.mu.Lock()
	left := len(e.ended)
	e.mu.Unlock()
	if left != 0 {
		t.Errorf("%d finished jobs' channels kept", left)
	}
}

// BenchmarkLocalEngineJob measures one job of the local engine from
// submission to outcome with the default poll_interval (1 s): polled (the
// runner reads the job's state every poll_interval, as before) and
// notified (the engine tells when its child ends). Compare the two in one
// run:
//
//	go test ./engines/local -run '^$' -bench LocalEngineJob -benchtime 10x
func BenchmarkLocalEngineJob(b *testing.B) {
	for _, mode := range []string{"polled", "notified"} {
		b.Run(mode, func(b *testing.B) {
			e := newLocal(b, time.Second)
			var eng engines.Engine = e
			if mode == "polled" {
				eng = polledOnly{e}
			}
			// The runner's first poll comes at once: a job already ended by
			// then would not show the difference. The far side takes a
			// moment in reality; the job here ends within a few ms.
			for i := 0; b.Loop(); i++ {
				if out := runOne(b, eng, time.Second, i+1); out.Status != trial.SUCCEEDED {
					b.Fatalf("%s: %s", out.Status, out.FailureReason)
				}
			}
		})
	}
}
