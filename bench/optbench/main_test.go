package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/tunables"
)

func TestKnownOptima(t *testing.T) {
	tests := []struct {
		p   problem
		at  tunables.Point
		tol float64
	}{
		{braninProblem(), tunables.Point{(math.Pi + 5) / 15, 2.275 / 15}, 1e-5},
		{braninProblem(), tunables.Point{(9.42478 + 5) / 15, 2.475 / 15}, 1e-5},
		{hartmannProblem(), tunables.Point{0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}, 1e-5},
		{rosenbrockProblem(), tunables.Point{0.4, 0.4, 0.4, 0.4}, 1e-12},
		{mixedProblem(), tunables.Point{0.7, 20.0 / 31, 1, 1, 0, 0.6, 0.35}, 1e-12},
	}
	for _, tc := range tests {
		if got := tc.p.f(tc.at)[0]; math.Abs(got-tc.p.optimum) > tc.tol {
			t.Errorf("%s at %v = %v, want %v", tc.p.name, tc.at, got, tc.p.optimum)
		}
	}
	// No point of the mixed function is below its optimum.
	p := mixedProblem()
	rs := newRandomSearch(p.dims, 1)
	for range 5000 {
		x := rs.point()
		if y := p.f(x)[0]; y < 0 {
			t.Fatalf("mixed(%v) = %v < 0", x, y)
		}
	}
	for _, mk := range append(allProblems, braninCurrinProblem) {
		p := mk()
		if len(p.initial) != len(p.dims) {
			t.Errorf("%s: initial point has %d coordinates for %d dimensions", p.name, len(p.initial), len(p.dims))
		}
	}
}

func TestHypervolume2D(t *testing.T) {
	ref := [2]float64{4, 4}
	tests := []struct {
		ys   [][]float64
		want float64
	}{
		{nil, 0},
		{[][]float64{{1, 1}}, 9},
		{[][]float64{{1, 3}, {3, 1}}, 3 + 3 - 1},
		{[][]float64{{1, 3}, {3, 1}, {2, 2}, {3, 3}, {5, 0}}, 3 + 2 + 1},
		{[][]float64{{math.Inf(1), math.Inf(1)}, {2, 2}}, 4},
	}
	for _, tc := range tests {
		if got := hypervolume2D(tc.ys, ref); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("hypervolume2D(%v) = %v, want %v", tc.ys, got, tc.want)
		}
	}
}

func TestQuartiles(t *testing.T) {
	q1, med, q3 := quartiles([]float64{5, 1, 4, 2, 3})
	if diff := cmp.Diff([]float64{2, 3, 4}, []float64{q1, med, q3}); diff != "" {
		t.Errorf("quartiles (-want +got):\n%s", diff)
	}
	q1, med, q3 = quartiles([]float64{1, 2, 3, 4})
	if diff := cmp.Diff([]float64{1.75, 2.5, 3.25}, []float64{q1, med, q3}); diff != "" {
		t.Errorf("quartiles (-want +got):\n%s", diff)
	}
}

func TestRunSmall(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-funcs", "branin,mixed", "-seeds", "2", "-budget", "12", "-checkpoints", "5,12,50",
		"-latency", "10", "-parallel=true", "-multi=true"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"== branin", "== mixed", "gp ", "ls ", "random ", "N=5", "N=12", "suggest latency", "k=4", "branin-currin"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "N=50") {
		t.Errorf("checkpoint above the budget reported:\n%s", s)
	}
}

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-funcs", "nope"},
		{"-methods", "nope"},
		{"-checkpoints", "x"},
		{"-seeds", "0"},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%v) succeeded", args)
		}
	}
}

func TestRunNoiseSmall(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-noise", "0.1", "-funcs", "branin", "-seeds", "2", "-budget", "20"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deployed regret", "noise-free GP regret", "10%", "naive/confirm", "floored", "the best configuration it measured"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run([]string{"-noise", "0.1", "-budget", "10"}, &bytes.Buffer{}); err == nil {
		t.Error("a budget below the minimum was accepted")
	}
	// The 10-D function's optimum.
	p := levy10Problem()
	x := make(tunables.Point, 10)
	for i := range x {
		x[i] = 11.0 / 20 // x_i = 1 on [-10, 10]
	}
	if v := p.f(x)[0]; math.Abs(v-1) > 1e-9 {
		t.Errorf("levy10 at its optimum: %v", v)
	}
}
