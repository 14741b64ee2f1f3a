package optimizers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestMlosCorePredictFull: SMAC with a fidelity predicts at full
// fidelity (FidelityPredictor) once it has results, and ranks a
// configuration at the full-fidelity optimum above one that only the
// lowest fidelity favours; RANDOM and FLAML do not predict; nothing is
// predicted before SetFidelity.
func TestMlosCorePredictFull(t *testing.T) {
	for _, typ := range []string{"RANDOM", "FLAML"} {
		if o := newFidOpt(t, typ, false); o.PredictsFull() {
			t.Errorf("%s predicts", typ)
		}
	}
	o := newFidOpt(t, "SMAC", true)
	if !o.PredictsFull() {
		t.Fatal("SMAC does not predict")
	}
	at := fidAt(t, o)
	if _, _, ok, err := o.PredictFull([]*tunables.Groups{at(0.5, 0.5, 0.5, 60)}, false); ok || err != nil {
		t.Errorf("before SetFidelity: ok %v, err %v", ok, err)
	}
	if err := o.SetFidelity(Fidelity{Param: "duration", Min: 5, Max: 60}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := o.PredictFull([]*tunables.Groups{at(0.5, 0.5, 0.5, 60)}, false); ok || err != nil {
		t.Errorf("without results: ok %v, err %v", ok, err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	observeDurationRounds(t, o, rng, 15, 3)
	// The full-fidelity optimum against a point the low fidelity's tilt
	// (0.3a) favours less than its distance costs at full fidelity.
	good, far := at(0.75, 0.25, 0.5, 5), at(0.1, 0.9, 0.1, 60)
	pred, inc, ok, err := o.PredictFull([]*tunables.Groups{good, far}, true)
	if err != nil || !ok || len(pred) != 2 {
		t.Fatalf("PredictFull: %v %v %v", pred, ok, err)
	}
	if !(pred[0].Mean < pred[1].Mean) || !(pred[0].SD > 0) || math.IsNaN(inc) {
		t.Errorf("predictions %+v (incumbent %v): the optimum is not predicted better", pred, inc)
	}
	// The fidelity tunable's own value does not matter.
	again, _, _, _ := o.PredictFull([]*tunables.Groups{at(0.75, 0.25, 0.5, 60)}, false)
	if math.Abs(again[0].Mean-pred[0].Mean) > 1e-9 || !math.IsNaN(again[0].SD) {
		t.Errorf("at duration 60: %+v, at 5: %+v", again[0], pred[0])
	}
}
