package plots

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// After a confirmation, the report's best configuration is the confirmed
// winner, not the luckiest trial.
func TestReportUsesConfirmedWinner(t *testing.T) {
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id int, hash string, v float64, meta map[string]string) storage.Trial {
		return storage.Trial{ID: id, ConfigID: int64(len(hash)), ConfigHash: hash, Status: trial.SUCCEEDED, TsStart: end, TsEnd: end,
			Params: map[string]string{"x": hash}, Metadata: meta, Results: storage.Metrics{"score": v}}
	}
	trials := []storage.Trial{mk(1, "lucky", 1, nil)}
	id := 2
	for i := range 6 {
		trials = append(trials,
			mk(id, "good", 50+float64(i), map[string]string{analysis.MetaPhase: analysis.PhaseConfirm, analysis.MetaRole: analysis.RoleCandidate}),
			mk(id+1, "dflt", 90+float64(i), map[string]string{analysis.MetaPhase: analysis.PhaseConfirm, analysis.MetaRole: analysis.RoleDefault}))
		id += 2
	}
	var b bytes.Buffer
	in := ReportInput{Info: storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}}, Trials: trials}
	if err := WriteReport(&b, in); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, "<p>Trial 2 ") && !strings.Contains(page, "<p>Trial 2<") {
		t.Errorf("the best shown is not the confirmed winner's trial 2")
	}
	if !strings.Contains(page, "confirmed: best vs default") {
		t.Errorf("no verdict in the report")
	}
}
