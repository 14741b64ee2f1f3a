package hyperband

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRungs(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want []float64
	}{
		{Config{Min: 5, Max: 60, Eta: 3, Integer: true}, []float64{5, 15, 45, 60}},
		{Config{Min: 1, Max: 27, Eta: 3}, []float64{1, 3, 9, 27}},
		{Config{Min: 1, Max: 81, Eta: 3}, []float64{1, 3, 9, 27, 81}},
		{Config{Min: 0.5, Max: 10, Eta: 2}, []float64{0.5, 1, 2, 4, 8, 10}},
		{Config{Min: 1, Max: 10, Eta: 3, Integer: true}, []float64{1, 3, 9, 10}},
		{Config{Min: 2, Max: 3, Eta: 2}, []float64{2, 3}},
		{Config{Min: 1, Max: 2, Eta: 4}, []float64{1, 2}},
	} {
		if got := tc.c.Rungs(); !cmp.Equal(got, tc.want) {
			t.Errorf("%+v: rungs %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string // "" = valid
	}{
		{Config{Min: 5, Max: 60, Eta: 3}, ""},
		{Config{Min: 5, Max: 60, Eta: 3, Brackets: 4}, ""},
		{Config{Min: 60, Max: 5, Eta: 3}, "max must be a number greater than min"},
		{Config{Min: 5, Max: 5, Eta: 3}, "max must be a number greater than min"},
		{Config{Min: 0, Max: 5, Eta: 3}, "min must be a number > 0"},
		{Config{Min: -1, Max: 5, Eta: 3}, "min must be a number > 0"},
		{Config{Min: math.NaN(), Max: 5, Eta: 3}, "min must be"},
		{Config{Min: 1, Max: math.Inf(1), Eta: 3}, "max must be"},
		{Config{Min: 1, Max: 5, Eta: 1}, "eta must be an integer >= 2"},
		{Config{Min: 1, Max: 5, Eta: 0}, "eta must be"},
		{Config{Min: 1, Max: 27, Eta: 3, Brackets: 5}, "brackets must be at most the number of rungs (4: 1, 3, 9, 27)"},
		{Config{Min: 1, Max: 27, Eta: 3, Brackets: -1}, "brackets must be >= 0"},
		{Config{Min: 0.5, Max: 27, Eta: 3, Integer: true}, "must be integers"},
	} {
		err := tc.c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want %q", tc.c, err, tc.want)
		}
		if _, nerr := New[int](tc.c); (nerr == nil) != (tc.want == "") {
			t.Errorf("%+v: New error %v", tc.c, nerr)
		}
	}
}

// step is one event of a scripted play: add a configuration (bracket
// -1: the one NextBracket picks), report a score, or ask for a promotion
// (want: the key promoted, 0: none).
type step struct {
	add     int
	bracket int
	report  int
	rung    int
	score   float64
	promote bool
	want    int
	wantTo  int // the rung promoted to
}

func play(t *testing.T, p *Planner[int], steps []step) {
	t.Helper()
	for i, s := range steps {
		switch {
		case s.add != 0:
			b := s.bracket
			if b < 0 {
				b, _ = p.NextBracket()
			}
			if _, err := p.Add(s.add, b); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case s.report != 0:
			if err := p.Report(s.report, s.rung, s.score); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case s.promote:
			j, ok := p.Promotion()
			got := 0
			if ok {
				got = j.Key
			}
			if got != s.want || (ok && j.Rung != s.wantTo) || (ok && (!j.Promoted || j.Fidelity != p.Fidelity(j.Rung))) {
				t.Fatalf("step %d: promoted %d to rung %d (%+v), want %d to rung %d", i, got, j.Rung, j, s.want, s.wantTo)
			}
		}
	}
}

func add(k, b int) step                 { return step{add: k, bracket: b} }
func rep(k, r int, v float64) step      { return step{report: k, rung: r, score: v} }
func promo(k, to int) step              { return step{promote: true, want: k, wantTo: to} }
func none() step                        { return step{promote: true} }
func addRep(k, b int, v float64) []step { return []step{add(k, b), rep(k, b, v)} }

func cat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestPromotion(t *testing.T) {
	asha := Config{Min: 1, Max: 9, Eta: 3, Brackets: 1} // rungs 1, 3, 9
	for _, tc := range []struct {
		name  string
		c     Config
		steps []step
	}{
		{"nothing is promoted before eta results reached the rung", asha, cat(
			addRep(1, 0, 5), []step{none()}, addRep(2, 0, 1), []step{none()},
			addRep(3, 0, 3), []step{promo(2, 1), none()},
		)},
		{"the top 1/eta of what reached the rung so far", asha, cat(
			addRep(1, 0, 5), addRep(2, 0, 1), addRep(3, 0, 3), []step{promo(2, 1)},
			addRep(4, 0, 4), []step{none()}, // 4 results: keep 1, and 2 had it
			addRep(5, 0, 0.5), []step{promo(5, 1), none()}, // 5 is the best now
		)},
		{"the best of the top is promoted once, then the next", asha, cat(
			addRep(1, 0, 5), addRep(2, 0, 1), addRep(3, 0, 3), addRep(4, 0, 4), addRep(5, 0, 6), addRep(6, 0, 2),
			[]step{promo(2, 1), promo(6, 1), none()},
		)},
		{"a running configuration is not promoted again", asha, cat(
			addRep(1, 0, 1), addRep(2, 0, 2), addRep(3, 0, 3), []step{promo(1, 1), none()},
			addRep(4, 0, 4), addRep(5, 0, 5), addRep(6, 0, 6), []step{promo(2, 1), none()},
		)},
		{"higher rungs first", asha, cat(
			addRep(1, 0, 1), addRep(2, 0, 2), addRep(3, 0, 3), []step{promo(1, 1), rep(1, 1, 1)},
			addRep(4, 0, 4), addRep(5, 0, 5), addRep(6, 0, 6), []step{promo(2, 1), rep(2, 1, 2)},
			addRep(7, 0, 7), addRep(8, 0, 8), addRep(9, 0, 0), // rung 0: keep 3; 9 best and unpromoted
			// rung 1 has 2 results (none to promote); rung 0 keeps 3: 9 first
			[]step{promo(9, 1), rep(9, 1, 0), promo(9, 2), none()},
		)},
		{"failures are never promoted", asha, cat(
			addRep(1, 0, math.Inf(1)), addRep(2, 0, math.NaN()), addRep(3, 0, math.Inf(1)), []step{none()},
			addRep(4, 0, 7), addRep(5, 0, 8), addRep(6, 0, 9), []step{promo(4, 1), promo(5, 1), none()},
		)},
		{"brackets rank on their own", Config{Min: 1, Max: 9, Eta: 3}, cat(
			addRep(1, 0, 1), addRep(2, 0, 2), // bracket 0 has 2 results
			[]step{add(3, 1), rep(3, 1, 9), add(4, 1), rep(4, 1, 8), add(5, 1), rep(5, 1, 7)}, // bracket 1, rung 1
			[]step{promo(5, 2), none()},
			addRep(6, 0, 3), []step{promo(1, 1), none()},
		)},
		{"the last rung has no promotion", Config{Min: 1, Max: 3, Eta: 3, Brackets: 2}, cat(
			[]step{add(1, 1), rep(1, 1, 1), add(2, 1), rep(2, 1, 2), add(3, 1), rep(3, 1, 3), none()},
		)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New[int](tc.c)
			if err != nil {
				t.Fatal(err)
			}
			play(t, p, tc.steps)
		})
	}
}

func TestBracketShares(t *testing.T) {
	// Synchronous Hyperband with eta 3 and rungs 1, 3, 9, 27 starts 27,
	// 12, 6 and 4 configurations in its brackets.
	p, err := New[int](Config{Min: 1, Max: 27, Eta: 3})
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	for k := 1; k <= 49; k++ {
		b, f := p.NextBracket()
		if f != p.Fidelity(b) {
			t.Fatalf("bracket %d starts at %g, want %g", b, f, p.Fidelity(b))
		}
		if _, err := p.Add(k, b); err != nil {
			t.Fatal(err)
		}
		order = append(order, b)
	}
	if got := p.Counts(); !cmp.Equal(got, []int{27, 12, 6, 4}) {
		t.Errorf("counts %v, want [27 12 6 4]", got)
	}
	// Interleaved: every bracket has started within the first 15.
	seen := map[int]bool{}
	for _, b := range order[:15] {
		seen[b] = true
	}
	if len(seen) != 4 {
		t.Errorf("first 15 brackets %v: not interleaved", order[:15])
	}
	one, _ := New[int](Config{Min: 1, Max: 27, Eta: 3, Brackets: 1})
	for k := 1; k <= 5; k++ {
		if b, f := one.NextBracket(); b != 0 || f != 1 {
			t.Fatalf("ASHA: bracket %d at %g", b, f)
		}
		_, _ = one.Add(k, 0)
	}
}

func TestErrors(t *testing.T) {
	p, _ := New[int](Config{Min: 1, Max: 9, Eta: 3, Brackets: 2})
	if _, err := p.Add(1, 2); err == nil {
		t.Error("bracket out of range accepted")
	}
	if _, err := p.Add(1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add(1, 0); err == nil {
		t.Error("a key added twice accepted")
	}
	if err := p.Report(2, 0, 1); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("report of an unknown key: %v", err)
	}
	if err := p.Report(1, 1, 1); err == nil {
		t.Error("report at a rung never started accepted")
	}
	if err := p.Resume(1, 1, 1); err == nil {
		t.Error("a key in two brackets accepted")
	}
	if err := p.Resume(3, 1, 0); err == nil {
		t.Error("a rung below the bracket accepted")
	}
}

// TestResumeMatches plays random experiments, stops each at a random
// point, rebuilds a planner from the runs so far (as the scheduler does
// from stored trials) and checks that it then decides exactly as the
// planner that never stopped.
func TestResumeMatches(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := Config{Min: 1, Max: 27, Eta: 3}
		if seed%3 == 1 {
			c.Brackets = 1
		}
		a, _ := New[int](c)
		next := 1
		runs := playRandom(t, rng, a, 10+rng.IntN(60), true, func() (Job[int], error) {
			if j, ok := a.Promotion(); ok {
				return j, nil
			}
			b, _ := a.NextBracket()
			j, err := a.Add(next, b)
			next++
			return j, err
		})
		b, _ := New[int](c)
		resumeFrom(t, b, runs)
		sameCounts(t, a, b, fmt.Sprint("seed ", seed))
		for i := 0; i < 30; i++ {
			ja, oka := samePromotion(t, a, b, fmt.Sprintf("seed %d, decision %d after resume", seed, i))
			if !oka {
				ba, _ := a.NextBracket()
				bb, _ := b.NextBracket()
				if ba != bb {
					t.Fatalf("seed %d: next bracket %d after resume, want %d", seed, bb, ba)
				}
				_, _ = a.Add(next, ba)
				_, _ = b.Add(next, bb)
				ja = Job[int]{Key: next, Rung: ba}
				next++
			}
			v := rng.Float64()
			_ = a.Report(ja.Key, ja.Rung, v)
			_ = b.Report(ja.Key, ja.Rung, v)
		}
	}
}

func TestRankAndState(t *testing.T) {
	p, _ := New[string](Config{Min: 5, Max: 60, Eta: 3, Integer: true, Brackets: 1})
	for i, k := range []string{"a", "b", "c"} {
		if _, err := p.Add(k, 0); err != nil {
			t.Fatal(err)
		}
		_ = p.Report(k, 0, float64(3-i))
	}
	if rank, n, keep, ok := p.Rank("b", 0); !ok || rank != 2 || n != 3 || keep != 1 {
		t.Errorf("rank of b: %d of %d, keep %d, %v", rank, n, keep, ok)
	}
	j, ok := p.Promotion()
	if !ok || j.Key != "c" || j.Fidelity != 15 || !j.Promoted {
		t.Fatalf("promotion %+v %v", j, ok)
	}
	if b, r, running, scores, ok := p.State("c"); !ok || b != 0 || r != 1 || !running || scores[0] != 1 {
		t.Errorf("state of c: %d %d %v %v %v", b, r, running, scores, ok)
	}
	if !p.Full(3) || p.Full(2) {
		t.Error("Full")
	}
	if r, ok := p.RungOf(45); !ok || r != 2 {
		t.Errorf("RungOf(45) = %d %v", r, ok)
	}
	if _, ok := p.RungOf(44); ok {
		t.Error("RungOf(44) found")
	}
	if s := p.String(); !strings.Contains(s, "rungs 5, 15, 45, 60 (eta 3)") {
		t.Errorf("String %q", s)
	}
}
