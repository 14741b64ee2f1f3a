package optimizers

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/benchtune/bench/trial"
)

// TestMlosCoreChooseStart: SMAC with a fidelity (a global here) chooses
// where a configuration starts (FidelityChooser) once it has results: the
// cheapest start for a configuration far from everything it has seen, full
// fidelity for one it has seen at every fidelity; RANDOM and FLAML do not
// choose; nothing is chosen before SetFidelity; fidelities that do not end
// at full fidelity are refused.
func TestMlosCoreChooseStart(t *testing.T) {
	ctx := context.Background()
	for _, typ := range []string{"RANDOM", "FLAML"} {
		if o := newFidOpt(t, typ, false); o.ChoosesFidelity() {
			t.Errorf("%s chooses", typ)
		}
	}
	o := newFidOpt(t, "SMAC", false)
	at := fidAt(t, o)
	fids := []float64{1, 3, 9, 27}
	if _, ok, err := o.ChooseStart(at(0.5, 0.5, 0.5), fids, 0); ok || err != nil {
		t.Errorf("before SetFidelity: ok %v, err %v", ok, err)
	}
	if err := o.SetFidelity(fid27); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := o.ChooseStart(at(0.5, 0.5, 0.5), fids, 0); ok || err != nil {
		t.Errorf("without results: ok %v, err %v", ok, err)
	}
	// Results in the corner a, b, c < 0.3 only, each at every fidelity.
	rng := rand.New(rand.NewPCG(4, 4))
	for range 40 {
		tun := at(0.3*rng.Float64(), 0.3*rng.Float64(), 0.3*rng.Float64())
		for _, f := range fids {
			y := curveScore(tun, f, rng)
			if _, err := o.ObserveAt(0, tun, f, trial.SUCCEEDED, map[string]any{"score": y}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := o.Suggest(ctx, 1); err != nil { // the model exists and is used
		t.Fatal(err)
	}
	known, ok, err := o.ChooseStart(at(0.15, 0.15, 0.15), fids, 0)
	if err != nil || !ok {
		t.Fatalf("known: ok %v, err %v", ok, err)
	}
	far, _, err := o.ChooseStart(at(0.95, 0.9, 0.95), fids, 0)
	if err != nil {
		t.Fatal(err)
	}
	if known != len(fids)-1 || far != 0 {
		t.Errorf("starts: %d for a configuration known at every fidelity (want %d), %d for one far from the data (want 0)", known, len(fids)-1, far)
	}
	if _, _, err := o.ChooseStart(at(0.5, 0.5, 0.5), []float64{1, 9}, 0); err == nil || !strings.Contains(err.Error(), "must end at full fidelity 27") {
		t.Errorf("fidelities not ending at full fidelity: %v", err)
	}
}
