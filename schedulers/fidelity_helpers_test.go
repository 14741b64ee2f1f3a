package schedulers

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// decodeSchedDoc decodes a ParallelScheduler file's text (named
// sched.jsonc, so that errors point into it).
func decodeSchedDoc(t *testing.T, text string) Config {
	t.Helper()
	doc, err := source.Parse("sched.jsonc", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	cfgObj, _ := doc.Root.Get("config").Value().(map[string]any)
	cfg, err := DecodeConfig("bench.schedulers.ParallelScheduler", cfgObj, nil, doc.At(), "e", false)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newFidErr builds a scheduler with cfg, opt and one fidRunner over a new
// store, and returns New's error (a fidelity setting the optimizer
// cannot serve is refused there).
func newFidErr(t *testing.T, cfg Config, opt optimizers.Optimizer) error {
	t.Helper()
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var runs []Spec
	_, err = New(cfg, []Runner{&fidRunner{id: 1, param: "budget", mu: &mu, runs: &runs}}, opt, exp,
		Options{Tunables: fidTunables(t), Globals: map[string]any{"experiment_id": "e", "budget": int64(9)}})
	return err
}

// smacOpt is MlosCoreOptimizer with optimizer_type SMAC (the GP with a
// fidelity input) over fidTunables, seed 3.
func smacOpt(t *testing.T, maxSuggestions int64) *optimizers.MlosCore {
	t.Helper()
	o, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer",
		Config: map[string]any{"optimizer_type": "SMAC", "max_suggestions": maxSuggestions, "seed": int64(3)}, Tunables: fidTunables(t)})
	if err != nil {
		t.Fatal(err)
	}
	return o.(*optimizers.MlosCore)
}

// checkSucceeded checks that every trial succeeded.
func checkSucceeded(t *testing.T, trs []storage.Trial) {
	t.Helper()
	for _, tr := range trs {
		if tr.Status != trial.SUCCEEDED {
			t.Errorf("trial %d %s %s", tr.ID, tr.Status, tr.FailureReason)
		}
	}
}

// checkBestFull checks that the run's best trial is a full-fidelity one.
func checkBestFull(t *testing.T, fs fidSetup, trs []storage.Trial) {
	t.Helper()
	best, _, ok := storage.Best(trs, fs.s.targets)
	if !ok || trial.LowFidelity(best.Metadata) {
		t.Errorf("best trial %d at fidelity %s", best.ID, best.Metadata[trial.FidelityKey])
	}
}

// checkResumedAll checks the trials of a run and its resume together:
// every one finished, over n configurations (max_suggestions, across
// both runs).
func checkResumedAll(t *testing.T, all []storage.Trial, n int) {
	t.Helper()
	configs := map[string]bool{}
	for _, tr := range all {
		configs[cfgKey(tr.Params, "budget")] = true
		if !tr.Finished() {
			t.Errorf("trial %d left %s", tr.ID, tr.Status)
		}
	}
	if len(configs) != n {
		t.Errorf("%d configurations, want %d (max_suggestions, across both runs)", len(configs), n)
	}
}

// wantDecoded checks a decode table's case in: its error err against
// wantErr ("" for none), and reports whether the decoded config is there
// to check further.
func wantDecoded(t *testing.T, in any, err error, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%v: error %v, want %q", in, err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatalf("%v: %v", in, err)
	}
	return true
}
