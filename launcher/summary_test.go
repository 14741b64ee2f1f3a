package launcher

import "testing"

// FinalScore is written as mlos_bench logs "Final score: ...": a Python
// dict of floats in target order, None without a best trial.
func TestFinalScore(t *testing.T) {
	s := &Summary{Targets: []string{"score:min", "throughput:max"}, BestTrial: 3,
		BestScores: map[string]any{"score": "67", "throughput": 1234.5}}
	if got, want := s.FinalScore(), "{'score': 67.0, 'throughput': 1234.5}"; got != want {
		t.Errorf("FinalScore = %s, want %s", got, want)
	}
	if got := (&Summary{Targets: []string{"score:min"}}).FinalScore(); got != "None" {
		t.Errorf("FinalScore without a best = %s", got)
	}
}
