package schedulers

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
)

// TestDecodeFidelityKernel: fidelity.kernel takes "stationary" or
// "decay" (absent: ""), anything else is refused at its JSON path.
func TestDecodeFidelityKernel(t *testing.T) {
	for _, k := range []string{KernelStationary, KernelDecay} {
		got, err := DecodeConfig("", map[string]any{"fidelity": map[string]any{"param": "d", "min": int64(3), "max": int64(81), "kernel": k}},
			nil, source.Ref{}, "e", false)
		if err != nil || got.Fidelity.Kernel != k {
			t.Fatalf("kernel %q: %+v %v", k, got.Fidelity, err)
		}
	}
	got, err := DecodeConfig("", map[string]any{"fidelity": "d:3:81"}, nil, source.Ref{}, "e", false)
	if err != nil || got.Fidelity.Kernel != "" {
		t.Fatalf("default: %+v %v", got.Fidelity, err)
	}
	for _, v := range []any{"freeze-thaw", int64(1)} {
		_, err = DecodeConfig("", map[string]any{"fidelity": map[string]any{"param": "d", "min": int64(3), "max": int64(81), "kernel": v}},
			nil, source.Ref{}, "e", false)
		if err == nil || !strings.Contains(err.Error(), "/config/fidelity/kernel: fidelity.kernel must be \"stationary\"") {
			t.Errorf("kernel %v: %v", v, err)
		}
	}
}

// TestFidelityKernelNeedsModel: kernel "decay" with RANDOM (no model) is
// refused when the scheduler is built, with the key and what to use.
func TestFidelityKernelNeedsModel(t *testing.T) {
	cfg := decodeSchedDoc(t, `{"class": "bench.schedulers.ParallelScheduler", "config": {
  "fidelity": {"param": "budget", "min": 1, "max": 9, "kernel": "decay"}
}}`)
	err := newFidErr(t, cfg, randomOpt(t, 5))
	if err == nil || !strings.Contains(err.Error(), "/config/fidelity/kernel") || !strings.Contains(err.Error(), `fidelity.kernel "decay" needs an optimizer`) {
		t.Errorf("error %v", err)
	}
}

// TestFidelityKernelDecaySMAC: with SMAC and kernel "decay" the plan runs
// to completion with sound rungs, and the GP uses the decay kernel.
func TestFidelityKernelDecaySMAC(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	opt := smacOpt(t, 12)
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "kernel": "decay"}, nil, 2, opt, nil)
	if got := opt.FidelityKernel(); got != KernelDecay {
		t.Fatalf("the GP's fidelity kernel is %q", got)
	}
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trs := trials(t, fs.exp)
	if rungs := checkPlan(t, trs, "budget", *fs.runs); len(rungs) != 12 {
		t.Errorf("%d configurations, want 12", len(rungs))
	}
	checkSucceeded(t, trs)
}
