package hyperband

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// byKey ranks keys by a fixed score per key (a model's predictions).
func byKey(pred map[int]float64) Ranker[int] {
	return func(keys []int) ([]float64, bool) {
		out := make([]float64, len(keys))
		for i, k := range keys {
			v, ok := pred[k]
			if !ok {
				v = math.NaN()
			}
			out[i] = v
		}
		return out, true
	}
}

// TestRankerPromotion: with a ranker, a rung's top 1/eta is taken by the
// ranker's scores, not the observed ones; a failed run is never promoted
// whatever the ranker says; a ranker that cannot rank (ok false) leaves
// the observed order; scores that change later promote what is now top.
func TestRankerPromotion(t *testing.T) {
	asha := Config{Min: 1, Max: 9, Eta: 3, Brackets: 1}
	t.Run("by the ranker", func(t *testing.T) {
		p, _ := New[int](asha)
		p.SetRanker(byKey(map[int]float64{1: 0, 2: 5, 3: 3}))
		play(t, p, cat(addRep(1, 0, 9), addRep(2, 0, 1), addRep(3, 0, 3), []step{promo(1, 1), none()}))
		if r, n, keep, ok := p.Rank(1, 0); !ok || r != 1 || n != 3 || keep != 1 {
			t.Errorf("rank of 1: %d of %d (keep %d) %v, want 1 of 3 (keep 1)", r, n, keep, ok)
		}
	})
	t.Run("failures last whatever the ranker says", func(t *testing.T) {
		p, _ := New[int](asha)
		p.SetRanker(byKey(map[int]float64{1: -10, 2: 5, 3: 3}))
		play(t, p, cat(addRep(1, 0, math.Inf(1)), addRep(2, 0, 1), addRep(3, 0, 3), []step{promo(3, 1), none()}))
	})
	t.Run("NaN scores rank last", func(t *testing.T) {
		p, _ := New[int](asha)
		p.SetRanker(byKey(map[int]float64{2: 5, 3: 3})) // 1 unknown: NaN
		play(t, p, cat(addRep(1, 0, 0), addRep(2, 0, 1), addRep(3, 0, 3), []step{promo(3, 1), none()}))
	})
	t.Run("no model yet: observed values", func(t *testing.T) {
		p, _ := New[int](asha)
		p.SetRanker(func([]int) ([]float64, bool) { return nil, false })
		play(t, p, cat(addRep(1, 0, 9), addRep(2, 0, 1), addRep(3, 0, 3), []step{promo(2, 1), none()}))
	})
	t.Run("scores that change", func(t *testing.T) {
		p, _ := New[int](asha)
		pred := map[int]float64{1: 0, 2: 5, 3: 3}
		p.SetRanker(byKey(pred))
		play(t, p, cat(addRep(1, 0, 9), addRep(2, 0, 1), addRep(3, 0, 3), []step{promo(1, 1), none()}))
		pred[2] = -1 // the model learned: 2 is now the best of the rung
		play(t, p, []step{promo(2, 1), none()})
		pred[3] = -2
		play(t, p, []step{promo(3, 1), none()})
	})
}

// TestAddFull: a configuration started directly at full fidelity runs at
// the last rung in the last bracket, with Brackets 1 too, does not count
// in the shares, reports at the last rung, and survives Resume.
func TestAddFull(t *testing.T) {
	c := Config{Min: 1, Max: 9, Eta: 3, Brackets: 1}
	p, _ := New[int](c)
	j, err := p.AddFull(7)
	if err != nil || j.Rung != 2 || j.Bracket != 2 || j.Fidelity != 9 || j.Promoted {
		t.Fatalf("AddFull: %+v %v", j, err)
	}
	if _, err := p.AddFull(7); err == nil {
		t.Error("a second AddFull of the same key was accepted")
	}
	if err := p.Report(7, 2, 0.5); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(p.Counts(), []int{0}) || p.Running() != 0 {
		t.Errorf("counts %v, running %d", p.Counts(), p.Running())
	}
	if b, _ := p.NextBracket(); b != 0 {
		t.Errorf("next bracket %d", b)
	}
	b, _ := New[int](c)
	if err := b.Resume(7, 2, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.Report(7, 2, 0.5); err != nil {
		t.Fatal(err)
	}
	if _, rung, running, scores, ok := b.State(7); !ok || rung != 2 || running || scores[2] != 0.5 {
		t.Errorf("resumed: rung %d running %v scores %v", rung, running, scores)
	}
	// With every bracket, the last one is Hyperband's own: it counts.
	h, _ := New[int](Config{Min: 1, Max: 9, Eta: 3})
	if _, err := h.AddFull(1); err != nil || !cmp.Equal(h.Counts(), []int{0, 0, 1}) {
		t.Errorf("Hyperband AddFull: counts %v %v", h.Counts(), err)
	}
}

// TestResumeMatchesWithRanker: as TestResumeMatches, with promotions
// ranked by a ranker (the same model before and after) and some
// configurations started at full fidelity: a planner rebuilt from the
// stored runs makes the same decisions as the one that never stopped.
func TestResumeMatchesWithRanker(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 11))
		c := Config{Min: 1, Max: 27, Eta: 3}
		if seed%2 == 1 {
			c.Brackets = 1
		}
		pred := map[int]float64{}
		a, _ := New[int](c)
		a.SetRanker(byKey(pred))
		next := 1
		add := func(p *Planner[int], k int, full bool) (Job[int], error) {
			if full {
				return p.AddFull(k)
			}
			b, _ := p.NextBracket()
			return p.Add(k, b)
		}
		runs := playRandom(t, rng, a, 10+rng.IntN(60), false, func() (Job[int], error) {
			if j, ok := a.Promotion(); ok {
				return j, nil
			}
			pred[next] = rng.Float64()
			j, err := add(a, next, rng.IntN(5) == 0)
			next++
			return j, err
		})
		b, _ := New[int](c)
		b.SetRanker(byKey(pred))
		resumeFrom(t, b, runs)
		sameCounts(t, a, b, fmt.Sprint("seed ", seed))
		for i := 0; i < 30; i++ {
			ja, oka := samePromotion(t, a, b, fmt.Sprintf("seed %d, decision %d after resume", seed, i))
			if !oka {
				pred[next] = rng.Float64()
				full := rng.IntN(5) == 0
				ja, _ = add(a, next, full)
				_, _ = add(b, next, full)
				next++
			}
			v := rng.Float64()
			_ = a.Report(ja.Key, ja.Rung, v)
			_ = b.Report(ja.Key, ja.Rung, v)
		}
	}
}
