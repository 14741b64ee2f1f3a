package mock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/environments/mock"
	"github.com/benchtune/bench/trial"
)

// TestProgressCurve: with mock_env_progress_steps the run reports one
// value per step through the context's listener, converging on the final
// score, and stops (CANCELED, the cause in the reason) once its context is
// cancelled, as a pruner does.
func TestProgressCurve(t *testing.T) {
	f := envtest.New(t, nil)
	env := f.Build(mockJSON(`, "mock_env_seed": -1, "mock_env_progress_steps": 4, "mock_env_progress_delay": "1ms"`), nil)
	envtest.Open(t, env)
	if err := env.Setup(context.Background(), f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	var got []trial.Progress
	ctx := environments.WithProgress(context.Background(), func(p trial.Progress) { got = append(got, p) })
	res := env.Run(ctx)
	if res.Status != environments.SUCCEEDED {
		t.Fatal(res.Status, res.Reason)
	}
	final := res.Metrics["score"].(float64)
	if len(got) != 4 {
		t.Fatalf("%d reports, want 4", len(got))
	}
	for i, p := range got {
		v := p.Values["score"].(float64)
		if p.Step != int64(i+1) || (i > 0 && v >= got[i-1].Values["score"].(float64)) || v < final {
			t.Errorf("report %d: step %d value %v (final %v): want steps 1.., decreasing to the final score", i, p.Step, v, final)
		}
	}
	if last := got[3].Values["score"].(float64); math.Abs(last-final) > 1e-9 {
		t.Errorf("last step %v, final %v", last, final)
	}

	// Cancelled at the second report, with a cause.
	cctx, cancel := context.WithCancelCause(context.Background())
	n := 0
	cctx = environments.WithProgress(cctx, func(p trial.Progress) {
		if n++; n == 2 {
			cancel(trial.ErrPruned)
		}
	})
	res = env.Run(cctx)
	if res.Status != environments.CANCELED || !strings.Contains(res.Reason, "pruned") || n != 2 {
		t.Errorf("cancelled run: %s %q after %d reports", res.Status, res.Reason, n)
	}
	if !errors.Is(context.Cause(cctx), trial.ErrPruned) {
		t.Fatal("cause")
	}

	// Without the key, no progress (mlos_bench's behaviour).
	plain := f.Build(mockJSON(`, "mock_env_seed": -1`), nil)
	envtest.Open(t, plain)
	if err := plain.Setup(context.Background(), f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	n = 0
	if res := plain.Run(environments.WithProgress(context.Background(), func(trial.Progress) { n++ })); res.Status != environments.SUCCEEDED || n != 0 {
		t.Errorf("plain mock: %s, %d reports", res.Status, n)
	}
}

func TestCurveOrdersAsFinal(t *testing.T) {
	for k := int64(1); k <= 5; k++ {
		if !(mock.Curve(1, 10, k, 5) < mock.Curve(2, 10, k, 5)) {
			t.Errorf("step %d: curve does not keep the order of the final values", k)
		}
	}
	if mock.Curve(3, 10, 5, 5) != 3 || mock.Curve(3, 10, 0, 0) != 3 {
		t.Error("the last step is the final value")
	}
}

func TestProgressKeyErrors(t *testing.T) {
	for _, extra := range []string{`, "mock_env_progress_steps": -1`, `, "mock_env_progress_delay": "soon"`} {
		f := envtest.New(t, nil)
		if _, err := f.TryBuild(mockJSON(extra), nil); err == nil || !strings.Contains(err.Error(), "mock_env_progress") {
			t.Errorf("%s: error %v", extra, err)
		}
	}
}
