package analysis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/internal/stats"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

var end = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func tr(id int, hash string, score float64, meta map[string]string) storage.Trial {
	return storage.Trial{ID: id, ConfigID: int64(len(hash)), ConfigHash: hash, Status: trial.SUCCEEDED, TsEnd: end,
		Params: map[string]string{"x": hash}, Metadata: meta, Results: storage.Metrics{"score": score}}
}

func TestByConfigAggregates(t *testing.T) {
	objs := trial.Objectives{{Name: "score"}}
	trials := []storage.Trial{
		tr(1, "a", 10, nil), tr(2, "a", 12, nil), tr(3, "a", 100, nil), // an outlier
		tr(4, "bb", 20, nil), tr(5, "bb", 21, nil), tr(6, "bb", 22, nil),
		{ID: 7, ConfigHash: "ccc", Status: trial.FAILED, TsEnd: end},
	}
	// By the mean, a's outlier makes bb the best; by the median, a wins.
	mean := ByConfig(trials, objs, nil, true)
	if mean[0].ConfigHash != "bb" || mean[0].Values[0] != 21 || mean[1].ConfigHash != "a" || mean[2].ConfigHash != "ccc" {
		t.Fatalf("by the mean: %+v", mean)
	}
	med, _ := aggregate.Parse("median")
	byMed := ByConfig(trials, objs, Policies{med}, true)
	if byMed[0].ConfigHash != "a" || byMed[0].Values[0] != 12 || byMed[0].Succeeded != 3 {
		t.Fatalf("by the median: %+v", byMed[0])
	}
	if s := byMed[1].Spread; s.N != 3 || math.Abs(s.CV-1/21.0) > 1e-12 || !(s.Lo < 21 && s.Hi > 21) {
		t.Errorf("spread of bb: %+v", s)
	}
	if byMed[2].Failed != 1 || byMed[2].Values != nil {
		t.Errorf("failed-only config: %+v", byMed[2])
	}
	// A max target: "min" is the pessimistic aggregate.
	mn, _ := aggregate.Parse("min")
	maxObjs := trial.Objectives{{Name: "score", Max: true}}
	byMin := ByConfig(trials, maxObjs, Policies{mn}, true)
	if byMin[0].ConfigHash != "bb" || byMin[0].Values[0] != 20 {
		t.Errorf("max target by min: %+v", byMin[0])
	}
}

func confirmTrials(def, cand []float64) []storage.Trial {
	var out []storage.Trial
	id := 100
	for i := range max(len(def), len(cand)) {
		r := map[string]string{MetaPhase: PhaseConfirm, MetaRound: "1"}
		if i < len(cand) {
			m := map[string]string{MetaPhase: PhaseConfirm, MetaRole: RoleCandidate}
			out = append(out, tr(id, "cand", cand[i], m))
			id++
		}
		if i < len(def) {
			r[MetaRole] = RoleDefault
			out = append(out, tr(id, "default", def[i], r))
			id++
		}
	}
	return out
}

func TestConfirmWinner(t *testing.T) {
	objs := trial.Objectives{{Name: "score"}}
	def := []float64{100, 101, 99, 102, 98, 100, 103, 97}
	cand := []float64{77, 78, 76, 79, 75, 77, 80, 74}
	v, ok := Confirm(confirmTrials(def, cand), objs)
	if !ok || v.Winner != 0 {
		t.Fatalf("verdict %+v", v)
	}
	line := v.Line()
	for _, want := range []string{"best vs default: −23%", "p < 0.001", "n=8+8"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if id, hash := v.WinnerConfig(); hash != "cand" || id != 4 {
		t.Errorf("winner config %d %s", id, hash)
	}
}

func TestConfirmNoWinner(t *testing.T) {
	objs := trial.Objectives{{Name: "score"}}
	// Same distribution: no difference.
	def := []float64{100, 101, 99, 102, 98, 100}
	cand := []float64{99, 102, 100, 98, 101, 100}
	v, ok := Confirm(confirmTrials(def, cand), objs)
	if !ok || v.Winner != -1 {
		t.Fatalf("verdict %+v", v)
	}
	if !strings.HasPrefix(v.Line(), "no candidate beats the default") {
		t.Errorf("line %q", v.Line())
	}
	if _, hash := v.WinnerConfig(); hash != "default" {
		t.Errorf("without a winner the default stays: %s", hash)
	}
	// Significantly worse is not a winner either (max target: lower is worse).
	worse := []float64{77, 78, 76, 79, 75, 77, 80, 74}
	v, _ = Confirm(confirmTrials(def, worse), trial.Objectives{{Name: "score", Max: true}})
	if v.Winner != -1 || v.Candidates[0].P >= 0.05 || v.Candidates[0].Better {
		t.Errorf("a worse candidate: %+v", v.Candidates[0])
	}
	if _, ok := Confirm([]storage.Trial{tr(1, "a", 1, nil)}, objs); ok {
		t.Error("no confirmation runs, yet a verdict")
	}
}

// Deterministic scores tie within each sample: the p-value is the exact
// one over the 20 splits of 3+3 mid-ranks (0.1 at the extreme), never
// the normal approximation's 0.046 that confirmed a winner below the
// smallest p the test can reach.
func TestConfirmTiedScoresExact(t *testing.T) {
	objs := trial.Objectives{{Name: "score", Max: true}}
	v, ok := Confirm(confirmTrials([]float64{0, 0, 0}, []float64{400, 400, 400}), objs)
	if !ok {
		t.Fatal("no verdict")
	}
	c := v.Candidates[0]
	if math.Abs(c.P-0.1) > 1e-12 || v.Winner != -1 || c.Significant {
		t.Fatalf("tied 3+3: p=%v winner=%d significant=%v, want p=0.1 and no winner", c.P, v.Winner, c.Significant)
	}
	if line := v.Line(); !strings.Contains(line, "p = 0.1 ") || !strings.Contains(line, "smallest possible p-value is 0.1") {
		t.Errorf("line %q", line)
	}
	if c.P < stats.MinP(c.N, v.DefaultN) {
		t.Errorf("p %v below the smallest possible %v", c.P, stats.MinP(c.N, v.DefaultN))
	}
}

func TestBestAnswer(t *testing.T) {
	objs := trial.Objectives{{Name: "score"}}
	main := []storage.Trial{tr(1, "a", 10, nil), tr(2, "a", 12, nil), tr(3, "bb", 5, nil), tr(4, "bb", 40, nil)}
	// mlos_bench's answer: the best single trial.
	a, ok := Best(nil, main, objs, nil)
	if !ok || a.Basis != BasisObservation || a.TrialID != 3 || a.Values[0] != 5 {
		t.Fatalf("%+v", a)
	}
	// A noise-aware run's note names the model's pick: aggregated.
	a, _ = Best([]string{"x", NoiseBestNote("a", "posterior mean")}, main, objs, nil)
	if a.Basis != BasisModel || a.ConfigHash != "a" || a.Values[0] != 11 || a.TrialID != 1 || a.Config.Spread.N != 2 {
		t.Fatalf("%+v", a)
	}
	if d := a.Describe(objs); !strings.Contains(d, "score=11 over 2 runs") {
		t.Errorf("describe %q", d)
	}
	// A confirmation wins over both.
	def := []float64{100, 101, 99, 102, 98, 100, 103, 97}
	cand := []float64{77, 78, 76, 79, 75, 77, 80, 74}
	all := append(main, confirmTrials(def, cand)...)
	a, _ = Best([]string{NoiseBestNote("a", "")}, all, objs, nil)
	if a.Basis != BasisConfirmed || a.ConfigHash != "cand" || a.Verdict == nil || a.Values[0] != 77 {
		t.Fatalf("%+v", a)
	}
	same := []float64{99, 102, 100, 98, 101, 100}
	a, _ = Best(nil, append(main, confirmTrials(def[:6], same)...), objs, nil)
	if a.Basis != BasisDefault || a.ConfigHash != "default" {
		t.Fatalf("%+v", a)
	}
}

func TestAggregateNote(t *testing.T) {
	objs := trial.Objectives{{Name: "lat"}, {Name: "tps", Max: true}}
	if n := AggregateNote(objs, nil); n != "" {
		t.Errorf("the mean needs no note: %q", n)
	}
	med, _ := aggregate.Parse("median")
	n := AggregateNote(objs, Policies{med})
	if n != "repeat aggregate: lat=median tps=mean" {
		t.Errorf("note %q", n)
	}
	p := PoliciesFromNotes([]string{"x", n}, objs)
	if len(p) != 2 || p[0] != med || p[1] != aggregate.Default {
		t.Errorf("read back %v", p)
	}
	if PoliciesFromNotes(nil, objs) != nil {
		t.Error("no note, yet policies")
	}
}
