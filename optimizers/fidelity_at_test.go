package optimizers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestMlosCorePredictAt: SMAC predicts at any fidelity (the fidelity
// tunable's own value ignored): at max it agrees with PredictFull; at a
// fidelity where it has many results its SD is smaller than at max,
// where it has few; one incumbent per fidelity. It declines before
// SetFidelity and without results, and refuses mismatched lengths.
func TestMlosCorePredictAt(t *testing.T) {
	o := newFidOpt(t, "SMAC", true)
	at := fidAt(t, o)
	p := at(0.5, 0.5, 0.5, 60)
	if _, _, ok, err := o.PredictAt([]*tunables.Groups{p}, []float64{5}); ok || err != nil {
		t.Errorf("before SetFidelity: ok %v, err %v", ok, err)
	}
	if err := o.SetFidelity(Fidelity{Param: "duration", Min: 5, Max: 60}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := o.PredictAt([]*tunables.Groups{p}, []float64{5}); ok || err != nil {
		t.Errorf("without results: ok %v, err %v", ok, err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	observeDurationRounds(t, o, rng, 12, 4)
	if _, _, _, err := o.PredictAt([]*tunables.Groups{p}, []float64{5, 60}); err == nil {
		t.Error("2 fidelities for 1 configuration accepted")
	}
	tuns := []*tunables.Groups{at(0.2, 0.3, 0.4, 5), at(0.2, 0.3, 0.4, 60), at(0.7, 0.2, 0.5, 5), at(0.7, 0.2, 0.5, 5)}
	pred, inc, ok, err := o.PredictAt(tuns, []float64{60, 60, 5, 60})
	if err != nil || !ok || len(pred) != 4 || len(inc) != 4 {
		t.Fatalf("PredictAt: %v %v %v %v", pred, inc, ok, err)
	}
	full, incFull, _, _ := o.PredictFull(tuns[:2], true)
	for i := range 2 {
		if math.Abs(pred[i].Mean-full[i].Mean) > 1e-9 || math.Abs(pred[i].SD-full[i].SD) > 1e-9 || math.Abs(inc[i]-incFull) > 1e-9 {
			t.Errorf("at max: %+v (incumbent %v), PredictFull %+v (%v)", pred[i], inc[i], full[i], incFull)
		}
	}
	if !(pred[2].SD < pred[3].SD) {
		t.Errorf("SD at the lowest fidelity %v, at max %v: want smaller where the results are", pred[2].SD, pred[3].SD)
	}
	if inc[2] == inc[3] || math.IsNaN(inc[2]) {
		t.Errorf("incumbents %v and %v at two fidelities", inc[2], inc[3])
	}
}
