package main

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// TestMFSplitTurbo: -turboP, -trmM, -trown and -trfF are cut from a
// method name wherever they are; bad values, repeats, the region options
// without -turboP, and -turboP with -locP are refused.
func TestMFSplitTurbo(t *testing.T) {
	for _, tc := range []struct {
		in, base string
		want     mfTurboOpt
		ok       bool
	}{
		{"asha-gp-fid-min3-eta9", "asha-gp-fid-min3-eta9", mfTurboOpt{}, true},
		{"asha-gp-fid-min3-loc50-box40-eta9", "asha-gp-fid-min3-loc50-box40-eta9", mfTurboOpt{}, true},
		{"asha-gp-fid-min3-turbo50-eta9", "asha-gp-fid-min3-eta9", mfTurboOpt{frac: 0.5}, true},
		{"asha-gp-fid-min3-turbo100-trm3-trown-trf5-eta9", "asha-gp-fid-min3-eta9", mfTurboOpt{frac: 1, regions: 3, own: true, failTol: 5}, true},
		{"asha-gp-fid-turbo0", "", mfTurboOpt{}, false},
		{"asha-gp-fid-turbo101", "", mfTurboOpt{}, false},
		{"asha-gp-fid-turbox", "", mfTurboOpt{}, false},
		{"asha-gp-fid-turbo5-turbo6", "", mfTurboOpt{}, false},
		{"asha-gp-fid-turbo5-trm0", "", mfTurboOpt{}, false},
		{"asha-gp-fid-turbo5-trm9", "", mfTurboOpt{}, false},
		{"asha-gp-fid-turbo5-trm2-trm3", "", mfTurboOpt{}, false},
		{"asha-gp-fid-turbo5-trown-trown", "", mfTurboOpt{}, false},
		{"asha-gp-fid-trm3", "", mfTurboOpt{}, false},
		{"asha-gp-fid-trown", "", mfTurboOpt{}, false},
		{"asha-gp-fid-trf4", "", mfTurboOpt{}, false},
		{"asha-gp-fid-min3-turbo50-trm3-trown-trts-eta9", "asha-gp-fid-min3-eta9", mfTurboOpt{frac: 0.5, regions: 3, own: true, ts: true}, true},
		{"asha-gp-fid-trts", "", mfTurboOpt{}, false},
		{"asha-gp-fid-turbo50-trts-trts", "", mfTurboOpt{}, false},
	} {
		base, got, ok := mfSplitTurbo(tc.in)
		if ok != tc.ok || (ok && (got != tc.want || base != tc.base)) {
			t.Errorf("%s: %q %+v %v, want %q %+v %v", tc.in, base, got, ok, tc.base, tc.want, tc.ok)
		}
	}
	p := curveProblem(braninProblem(), 9, 8)
	for _, m := range []string{"hb-random-turbo50", "asha-gp-fid-turbo50-loc50", "asha-gp-fid-trm2"} {
		if _, err := mfRun(p, m, false, 1, 50); err == nil {
			t.Errorf("%s: no error", m)
		}
	}
}

// turboWarm is an mfTurbo on lcnet that has observed locWarm random
// configurations at 3 epochs (levels respected), and those points.
func turboWarm(t *testing.T, opt mfTurboOpt) (*mfTurbo, mfProblem, []tunables.Point) {
	t.Helper()
	p := lcnetProblem(10)
	gf, err := newGPFid(p, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	m := newMFTurbo(gf, gf, opt, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []tunables.Point
	for range locWarm {
		x := make(tunables.Point, len(p.dims))
		for i := range x {
			x[i] = rng.Float64()
			if l := p.dims[i].Levels; l > 1 {
				x[i] = math.Round(x[i]*float64(l-1)) / float64(l-1)
			}
		}
		xs = append(xs, x)
		if err := m.observe(x, 0, 3, p.observe(x, 3, rng)); err != nil {
			t.Fatal(err)
		}
	}
	return m, p, xs
}

// TestMFTurboProposal: a region's proposal is a valid point within
// ±side/2 of its region's centre in every coordinate (levels respected),
// it becomes the region's, and with several regions the centres are
// distinct observed configurations at least trDistinct apart.
func TestMFTurboProposal(t *testing.T) {
	for _, regions := range []int{1, 3} {
		m, p, _ := turboWarm(t, mfTurboOpt{frac: 1, regions: regions})
		m.regs[0].side = 0.1
		for range 4 {
			q, err := m.propose(nil)
			if err != nil {
				t.Fatal(err)
			}
			j, ok := m.owner[pointKey(q)]
			if !ok {
				t.Fatalf("regions %d: proposal %v belongs to no region", regions, q)
			}
			g := m.regs[j]
			c, ok := m.seen[g.centre]
			if !ok {
				t.Fatalf("regions %d: region %d's centre %q is not an observed configuration", regions, j, g.centre)
			}
			if len(q) != len(p.dims) {
				t.Fatalf("%d coordinates, want %d", len(q), len(p.dims))
			}
			for i, v := range q {
				step := 0.0
				if l := p.dims[i].Levels; l > 1 {
					step = 1 / float64(l-1) // rounding to a level may leave the box by half a level
					if math.Abs(v*float64(l-1)-math.Round(v*float64(l-1))) > 1e-9 {
						t.Errorf("coordinate %d = %v not on its %d levels", i, v, l)
					}
				}
				if v < 0 || v > 1 || math.Abs(v-c[i]) > g.side/2+step/2+1e-12 {
					t.Errorf("regions %d: coordinate %d = %v outside region %d (centre %v, side %v)", regions, i, v, j, c[i], g.side)
				}
			}
			if err := m.observe(q, 0, 3, p.observe(q, 3, rand.New(rand.NewPCG(3, 4)))); err != nil {
				t.Fatal(err)
			}
		}
		if regions > 1 {
			for a := range m.regs {
				for b := range a {
					ca, cb := m.seen[m.regs[a].centre], m.seen[m.regs[b].centre]
					if ca == nil || cb == nil || trDist(ca, cb) < trDistinct {
						t.Errorf("regions %d and %d: centres %v and %v not distinct", a, b, ca, cb)
					}
				}
			}
		}
	}
}

// TestMFTurboAdapt: the side doubles after trSuccTol successes in a row
// (up to trMaxSide), halves after failTol failures in a row, and a
// region whose side falls below trMinSide restarts at trInitSide with
// its centre put aside, a new centre away from it at the next proposal,
// and its configurations no longer its own; a success is judged against
// the best at the result's fidelity (of all configurations, or with
// -trown of the region's own).
func TestMFTurboAdapt(t *testing.T) {
	g := newTuRegion()
	for range trSuccTol - 1 {
		g.count(true, 4)
	}
	g.count(false, 4) // breaks the run of successes
	if g.side != trInitSide {
		t.Fatalf("side %v after an interrupted run of successes, want %v", g.side, trInitSide)
	}
	for range trSuccTol {
		g.count(true, 4)
	}
	if g.side != 2*trInitSide {
		t.Fatalf("side %v after %d successes, want %v", g.side, trSuccTol, 2*trInitSide)
	}
	for range 3 * trSuccTol {
		g.count(true, 4)
	}
	if g.side != trMaxSide {
		t.Fatalf("side %v, want it capped at %v", g.side, trMaxSide)
	}
	for range 3 {
		g.count(false, 4)
	}
	g.count(true, 4) // breaks the run of failures
	for range 3 {
		g.count(false, 4)
	}
	if g.side != trMaxSide {
		t.Fatalf("side %v after interrupted failures, want %v", g.side, trMaxSide)
	}
	g.count(false, 4)
	if g.side != trMaxSide/2 {
		t.Fatalf("side %v after 4 failures in a row, want %v", g.side, trMaxSide/2)
	}

	// Through observe: results of a region's configuration.
	m, _, _ := turboWarm(t, mfTurboOpt{frac: 1, failTol: 2})
	q, err := m.propose(nil)
	if err != nil {
		t.Fatal(err)
	}
	k := pointKey(q)
	old := m.regs[0].centre
	bestAt3 := m.best[3]
	if err := m.observe(q, 0, 3, bestAt3+1); err != nil { // worse than the best at 3 epochs
		t.Fatal(err)
	}
	if g := m.regs[0]; g.fail != 1 || g.succ != 0 {
		t.Fatalf("after a worse result: %d failures, %d successes", g.fail, g.succ)
	}
	if err := m.observe(q, 1, 27, 0.5); err != nil { // the first result at 27 epochs: the best there
		t.Fatal(err)
	}
	if g := m.regs[0]; g.fail != 0 || g.succ != 1 {
		t.Fatalf("after a new best at its fidelity: %d failures, %d successes", g.fail, g.succ)
	}
	if err := m.observe(q, 0, 3, bestAt3-0.01); err != nil { // a new best at 3 epochs
		t.Fatal(err)
	}
	if g := m.regs[0]; g.succ != 2 {
		t.Fatalf("after a new best at 3 epochs: %d successes, want 2", g.succ)
	}
	// Fail until the side collapses: log2(trInitSide/trMinSide) halvings
	// of 2 failures each.
	halvings := int(math.Round(math.Log2(trInitSide / trMinSide)))
	for i := range 2 * (halvings + 1) {
		if m.regs[0].restarts != 0 {
			t.Fatalf("restarted after %d failures", i)
		}
		if err := m.observe(q, 1, 27, 1); err != nil {
			t.Fatal(err)
		}
	}
	g = m.regs[0]
	if g.restarts != 1 || g.side != trInitSide || g.centre != "" || g.fail != 0 {
		t.Fatalf("after the collapse: %+v, want a restart at side %v with no centre", g, trInitSide)
	}
	if len(m.tabu) != 1 || pointKey(m.tabu[0]) != old {
		t.Fatalf("collapsed centres %v, want the old centre", m.tabu)
	}
	if _, ok := m.owner[k]; ok {
		t.Fatal("the collapsed region's configuration is still its own")
	}
	if _, err := m.propose(nil); err != nil {
		t.Fatal(err)
	}
	if c := m.seen[m.regs[0].centre]; c == nil || trDist(c, m.tabu[0]) < trDistinct {
		t.Fatalf("new centre %v within %v of the collapsed one %v", c, trDistinct, m.tabu[0])
	}

	// -trown: the region's own best, not the best of all, is the reference.
	m, _, _ = turboWarm(t, mfTurboOpt{frac: 1, own: true})
	q, err = m.propose(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.observe(q, 0, 3, m.best[3]+1); err != nil { // the region's first result at 3 epochs
		t.Fatal(err)
	}
	if g := m.regs[0]; g.succ != 1 {
		t.Fatalf("-trown: the region's first result is not a success: %+v", g)
	}
}

// TestMFTurboRun: the -turboP methods run through -mf like the others.
func TestMFTurboRun(t *testing.T) {
	p := curveProblem(braninProblem(), 9, 8)
	for _, m := range []string{"asha-gp-fid-turbo50", "asha-gp-fid-min3-turbo100-trm3-eta9", "hb-gp-fid-turbo50-trown-trf3", "asha-gp-fid-turbo50-trm3-trts"} {
		for _, cont := range []bool{false, true} {
			checkMFRun(t, p, braninProblem().optimum, m, cont, 10) // hyperband_mf_test.go
		}
	}
	if _, err := mfRun(p, "asha-gp-fid-turbo50-trm2-trm2", false, 1, 50); err == nil || !strings.Contains(err.Error(), "-turboP") {
		t.Errorf("repeated -trmM: %v", err)
	}
}

// TestMFTurboTS: with -trts each proposal is the lowest of one posterior
// sample at full fidelity over the regions' candidates: 40 proposals from
// one state (nothing observed in between) come from more than one of
// three regions and differ from each other, each lies within its
// region's box, and the GP predicts them better on average than
// candidates of the same regions drawn at random.
func TestMFTurboTS(t *testing.T) {
	m, p, _ := turboWarm(t, mfTurboOpt{frac: 1, regions: 3, ts: true})
	regions := map[int]int{}
	distinct := map[string]bool{}
	var picked []tunables.Point
	for range 40 {
		q, err := m.propose(nil)
		if err != nil {
			t.Fatal(err)
		}
		j, ok := m.owner[pointKey(q)]
		if !ok {
			t.Fatalf("proposal %v belongs to no region", q)
		}
		g := m.regs[j]
		c := m.seen[g.centre]
		for i, v := range q {
			step := 0.0
			if l := p.dims[i].Levels; l > 1 {
				step = 1 / float64(l-1)
			}
			if v < 0 || v > 1 || math.Abs(v-c[i]) > g.side/2+step/2+1e-12 {
				t.Errorf("coordinate %d = %v outside region %d (centre %v, side %v)", i, v, j, c[i], g.side)
			}
		}
		regions[j]++
		distinct[pointKey(q)] = true
		picked = append(picked, m.gf.point(q))
	}
	t.Logf("proposals per region %v, %d distinct", regions, len(distinct))
	if len(regions) < 2 || len(distinct) < 30 {
		t.Errorf("proposals per region %v, %d distinct of 40: want several regions and distinct proposals", regions, len(distinct))
	}
	var random []tunables.Point
	for _, g := range m.regs {
		for _, q := range m.candidates(g)[:40] {
			random = append(random, m.gf.point(q))
		}
	}
	mean := func(xs []tunables.Point) float64 {
		pred, _, ok, err := m.gf.gp.PredictFull(xs, false)
		if err != nil || !ok {
			t.Fatalf("PredictFull: ok %v, err %v", ok, err)
		}
		s := 0.0
		for _, p := range pred {
			s += p.Mean
		}
		return s / float64(len(pred))
	}
	mp, mr := mean(picked), mean(random)
	t.Logf("mean prediction of the proposals %.4f, of random candidates %.4f", mp, mr)
	if mp >= mr {
		t.Errorf("mean prediction of the proposals %.4f, not below random candidates' %.4f", mp, mr)
	}
}
