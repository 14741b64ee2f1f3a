package hyperband

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// playedRun is one run of a played experiment, as the scheduler stores it
// (a trial): configuration k in bracket b at rung r, and its result once
// done.
type playedRun struct {
	k, b, r int
	done    bool
	score   float64
}

// playRandom plays stopAt steps of an experiment on p with up to 4
// runners: at each step, when runs are running, one of them at random
// finishes (a random score; with fail, +Inf one time in ten) if 4 run or
// one time in two; else start gives the job started. It returns the runs
// in the order they started (the trial ids' order).
func playRandom(t *testing.T, rng *rand.Rand, p *Planner[int], stopAt int, fail bool, start func() (Job[int], error)) []playedRun {
	t.Helper()
	var runs []playedRun
	var running []int // indexes into runs
	for i := 0; i < stopAt; i++ {
		if len(running) > 0 && (len(running) >= 4 || rng.IntN(2) == 0) {
			j := rng.IntN(len(running))
			ri := running[j]
			running = append(running[:j], running[j+1:]...)
			runs[ri].done, runs[ri].score = true, rng.Float64()
			if fail && rng.IntN(10) == 0 {
				runs[ri].score = math.Inf(1)
			}
			if err := p.Report(runs[ri].k, runs[ri].r, runs[ri].score); err != nil {
				t.Fatal(err)
			}
			continue
		}
		j, err := start()
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, playedRun{k: j.Key, b: j.Bracket, r: j.Rung})
		running = append(running, len(runs)-1)
	}
	return runs
}

// resumeFrom rebuilds p's state from the stored runs, as the scheduler
// does on a resume.
func resumeFrom(t *testing.T, p *Planner[int], runs []playedRun) {
	t.Helper()
	for _, r := range runs { // stored order: trial ids
		if err := p.Resume(r.k, r.b, r.r); err != nil {
			t.Fatal(err)
		}
		if r.done {
			if err := p.Report(r.k, r.r, r.score); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// samePromotion checks that planners a (never stopped) and b (resumed)
// make the same promotion decision, and returns a's.
func samePromotion(t *testing.T, a, b *Planner[int], at string) (Job[int], bool) {
	t.Helper()
	ja, oka := a.Promotion()
	jb, okb := b.Promotion()
	if oka != okb || ja != jb {
		t.Fatalf("%s: %+v %v, want %+v %v", at, jb, okb, ja, oka)
	}
	return ja, oka
}

// sameCounts checks that planners a (never stopped) and b (resumed) have
// the same number of running jobs and the same counts per rung.
func sameCounts(t *testing.T, a, b *Planner[int], at string) {
	t.Helper()
	if a.Running() != b.Running() || !cmp.Equal(a.Counts(), b.Counts()) {
		t.Fatalf("%s: running %d/%d, counts %v/%v", at, a.Running(), b.Running(), a.Counts(), b.Counts())
	}
}
