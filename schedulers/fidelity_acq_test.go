package schedulers

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// TestDecodeFidelityStartAcquisition: start "acquisition" is accepted;
// an unknown start names it among the choices.
func TestDecodeFidelityStartAcquisition(t *testing.T) {
	got, err := DecodeConfig("", map[string]any{"fidelity": map[string]any{"param": "d", "min": int64(3), "max": int64(81), "start": "acquisition"}},
		nil, source.Ref{}, "e", false)
	if err != nil || got.Fidelity.Start != StartAcquisition {
		t.Fatalf("start acquisition: %+v %v", got.Fidelity, err)
	}
	_, err = DecodeConfig("", map[string]any{"fidelity": `{"param": "d", "min": 3, "max": 81, "start": "acquire"}`}, nil, source.Ref{}, "e", false)
	if err == nil || !strings.Contains(err.Error(), "/config/fidelity/start: fidelity.start must be") || !strings.Contains(err.Error(), `or "acquisition"`) {
		t.Errorf("start acquire: %v", err)
	}
}

// TestFidelityStartAcquisitionNeedsChooser: start "acquisition" with an
// optimizer that cannot choose a fidelity (RANDOM) is refused when the
// scheduler is built, with the key and what to use instead.
func TestFidelityStartAcquisitionNeedsChooser(t *testing.T) {
	cfg := decodeSchedDoc(t, `{"class": "bench.schedulers.ParallelScheduler", "config": {
  "fidelity": {"param": "budget", "min": 1, "max": 9, "start": "acquisition"}
}}`)
	err := newFidErr(t, cfg, randomOpt(t, 5))
	if err == nil || !strings.Contains(err.Error(), `/config/fidelity/start`) || !strings.Contains(err.Error(), `fidelity.start "acquisition" needs an optimizer`) ||
		!strings.Contains(err.Error(), `use start "bracket"`) {
		t.Errorf("error %v", err)
	}
	if ChoosesFidelity(randomOpt(t, 5)) {
		t.Error("RANDOM chooses fidelities")
	}
}

// acqOpt is a FidelityChooser over random search whose "model" is
// certain about large x: it starts x >= 15 at full fidelity and the
// others at the cheapest start it is offered.
type acqOpt struct {
	*predictOpt
	offered [][]float64
}

func (o *acqOpt) ChoosesFidelity() bool { return true }
func (o *acqOpt) ChooseStart(tun *tunables.Groups, fids []float64, _ float64) (int, bool, error) {
	o.offered = append(o.offered, slices.Clone(fids))
	if tun.Get("x").Int() >= 15 {
		return len(fids) - 1, true, nil
	}
	return 0, true, nil
}

// TestFidelityStartAcquisition: with start "acquisition" the optimizer is
// offered the first rung of each bracket in use and full fidelity, and
// each new configuration starts where it chose: with brackets 1 (ASHA)
// at the first rung or at full fidelity in the last bracket; with every
// bracket, in the chosen bracket. The plan stays sound.
func TestFidelityStartAcquisition(t *testing.T) {
	for _, tc := range []struct {
		brackets int64
		offered  []float64
	}{{1, []float64{1, 9}}, {0, []float64{1, 3, 9}}} {
		t.Run(fmt.Sprint("brackets", tc.brackets), func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
			fc := map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "brackets": tc.brackets, "start": "acquisition"}
			opt := &acqOpt{predictOpt: newPredictOpt(t, 20)}
			fs := newFid(t, st, fc, nil, 2, opt, nil)
			if err := fs.s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			trs := trials(t, fs.exp)
			checkPlan(t, trs, "budget", *fs.runs)
			if len(opt.offered) == 0 {
				t.Fatal("the optimizer was never asked")
			}
			for _, f := range opt.offered {
				if !slices.Equal(f, tc.offered) {
					t.Fatalf("offered %v, want %v", f, tc.offered)
				}
			}
			direct, first := 0, 0
			for _, tr := range trs {
				x, _ := strconv.Atoi(tr.Params["x"])
				rung, bracket := tr.Metadata[trial.FidelityRungKey], tr.Metadata[trial.FidelityBracketKey]
				if rung != bracket {
					continue // a promotion
				}
				switch {
				case x >= 15:
					direct++
					if bracket != "2" || tr.Metadata[trial.FidelityKey] != "9" {
						t.Errorf("trial %d: x=%d (full fidelity chosen) started in bracket %s at fidelity %s", tr.ID, x, bracket, tr.Metadata[trial.FidelityKey])
					}
				default:
					first++
					if bracket != "0" || tr.Metadata[trial.FidelityKey] != "1" {
						t.Errorf("trial %d: x=%d (the cheapest start chosen) started in bracket %s at fidelity %s", tr.ID, x, bracket, tr.Metadata[trial.FidelityKey])
					}
				}
			}
			if direct == 0 || first == 0 {
				t.Errorf("%d configurations started at full fidelity, %d at the first rung: want some of each", direct, first)
			}
		})
	}
}

var _ optimizers.FidelityChooser = (*acqOpt)(nil)
