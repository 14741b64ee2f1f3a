package analysis

import (
	"testing"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// TestByConfigSkipsLowerFidelity: a multi-fidelity run's trials of one
// configuration at lower fidelities are not repeats of its full-fidelity
// one (nor answers): only the full-fidelity result is aggregated.
func TestByConfigSkipsLowerFidelity(t *testing.T) {
	at := func(id int, f string, score float64) storage.Trial {
		return tr(id, "h", score, map[string]string{trial.FidelityKey: f, trial.FidelityMaxKey: "9"})
	}
	objs := trial.Objectives{{Name: "score"}}
	cs := ByConfig([]storage.Trial{at(1, "1", 50), at(2, "3", 20), at(3, "9", 4)}, objs, nil, false)
	if len(cs) != 1 || cs[0].Succeeded != 1 || cs[0].Values[0] != 4 || len(cs[0].TrialIDs) != 1 || cs[0].TrialIDs[0] != 3 {
		t.Fatalf("by config: %+v", cs)
	}
}
