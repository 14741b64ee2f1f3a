package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// TestTraceBestSoFarFullFidelityOnly: the dashboard's trace line, like
// its "best so far" (model.best) and bench run's best trial, follows full
// fidelity only: a lower value measured at a low fidelity of a
// multi-fidelity run is drawn as a point, never as the best so far.
func TestTraceBestSoFarFullFidelityOnly(t *testing.T) {
	at := func(id int, fid string, y float64) storage.Trial {
		return storage.Trial{ID: id, Status: trial.SUCCEEDED, Results: storage.Metrics{"y": y},
			Metadata: map[string]string{trial.FidelityKey: fid, trial.FidelityMaxKey: "27", trial.FidelityParamKey: "epochs"}}
	}
	ys := []float64{0.5, 4, 0.2, 3, 5}
	fids := []string{"1", "27", "3", "27", "27"}
	var trials []storage.Trial
	for i, y := range ys {
		trials = append(trials, at(i+1, fids[i], y))
	}
	info := storage.ExperimentInfo{ID: "mf", Objectives: []storage.Objective{{Name: "y", Direction: "min"}}}
	m := newModel(info, trials, nil)
	if b, ok := m.best(); !ok || b.ID != 4 {
		t.Fatalf("best %d (%v), want trial 4", b.ID, ok)
	}
	svg := string(m.traceChart(0))
	line := regexp.MustCompile(`<polyline class="best"[^>]*points="([^"]*)"`).FindStringSubmatch(svg)
	if line == nil {
		t.Fatalf("no best-so-far line in %s", svg)
	}
	x0, x1, y0, y1 := plotArea(chartW, chartH)
	xsc, ysc := newScale([]float64{1, 2, 3, 4, 5}, x0, x1, false), newScale(ys, y0, y1, false)
	var want []string
	for _, p := range [][2]float64{{2, 4}, {3, 4}, {4, 4}, {4, 3}, {5, 3}} {
		want = append(want, fmt.Sprintf("%.1f,%.1f", xsc.px(p[0]), ysc.px(p[1])))
	}
	if got := strings.Fields(line[1]); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("best so far at %v, want %v (4 from trial 2, 3 from trial 4; never trial 1's 0.5 or trial 3's 0.2, low fidelity)", got, want)
	}
}
