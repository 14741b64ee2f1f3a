package main

import (
	"math"

	"github.com/benchtune/bench/tunables"
)

// problem is a test function over the normalized space.
type problem struct {
	name    string
	dims    []tunables.Dim
	optimum float64
	box     string // the domain, for the report
	f       func(tunables.Point) []float64
	// initial is a "default configuration" for start_with_defaults (a
	// mediocre point, like a real system's defaults).
	initial tunables.Point
}

func continuous(names ...string) []tunables.Dim {
	dims := make([]tunables.Dim, len(names))
	for i, n := range names {
		dims[i] = tunables.Dim{Name: n, Tunable: n, Kind: tunables.DimNumeric}
	}
	return dims
}

// scale maps u in [0,1] onto [lo,hi].
func scale(u, lo, hi float64) float64 { return lo + u*(hi-lo) }

// branin on [-5,10]×[0,15]; minimum 0.397887 at three points.
func branin(x1, x2 float64) float64 {
	const (
		a = 1.0
		b = 5.1 / (4 * math.Pi * math.Pi)
		c = 5 / math.Pi
		r = 6.0
		s = 10.0
		t = 1 / (8 * math.Pi)
	)
	u := x2 - b*x1*x1 + c*x1 - r
	return a*u*u + s*(1-t)*math.Cos(x1) + s
}

func braninProblem() problem {
	return problem{
		name: "branin", optimum: 0.397887, box: "[-5,10]×[0,15]",
		dims: continuous("x1", "x2"),
		f: func(p tunables.Point) []float64 {
			return []float64{branin(scale(p[0], -5, 10), scale(p[1], 0, 15))}
		},
		initial: tunables.Point{0.5, 0.5},
	}
}

var (
	hartA = [4][6]float64{
		{10, 3, 17, 3.5, 1.7, 8},
		{0.05, 10, 17, 0.1, 8, 14},
		{3, 3.5, 1.7, 10, 17, 8},
		{17, 8, 0.05, 10, 0.1, 14},
	}
	hartP = [4][6]float64{
		{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
		{0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
		{0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
		{0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381},
	}
	hartAlpha = [4]float64{1.0, 1.2, 3.0, 3.2}
)

// hartmann6 on [0,1]^6; minimum -3.32237.
func hartmann6(x []float64) float64 {
	s := 0.0
	for i := range 4 {
		e := 0.0
		for j := range 6 {
			d := x[j] - hartP[i][j]
			e += hartA[i][j] * d * d
		}
		s += hartAlpha[i] * math.Exp(-e)
	}
	return -s
}

func hartmannProblem() problem {
	return problem{
		name: "hartmann6", optimum: -3.32237, box: "[0,1]^6",
		dims:    continuous("x1", "x2", "x3", "x4", "x5", "x6"),
		f:       func(p tunables.Point) []float64 { return []float64{hartmann6(p)} },
		initial: tunables.Point{0.5, 0.5, 0.5, 0.5, 0.5, 0.5},
	}
}

// rosenbrock on [-5,10]^4; minimum 0 at (1,1,1,1).
func rosenbrockProblem() problem {
	return problem{
		name: "rosenbrock4", optimum: 0, box: "[-5,10]^4",
		dims: continuous("x1", "x2", "x3", "x4"),
		f: func(p tunables.Point) []float64 {
			x := make([]float64, len(p))
			for i, u := range p {
				x[i] = scale(u, -5, 10)
			}
			s := 0.0
			for i := 0; i+1 < len(x); i++ {
				a := x[i+1] - x[i]*x[i]
				b := 1 - x[i]
				s += 100*a*a + b*b
			}
			return []float64{s}
		},
		initial: tunables.Point{1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3}, // x = 0
	}
}

// mixed is a function of our own over a mixed space, shaped like a system
// configuration:
//
//	x      continuous in [0,1]
//	n      integer 0..31 (32 levels)
//	algo   categorical, 4 choices
//	mode   categorical, 3 choices
//	cache  integer-like quantized tunable with 11 levels and one special
//	       value "off" (a selector dimension "cache!special" + the numeric one)
//	y      continuous in [0,1]
//
// f = off[algo] + 2.5 u² + u v + v² + 3 ((n − n*[algo])/31)²
//
//   - modeCost[mode]·(1 + y) + cacheCost
//
// with u = x − cx[algo], v = y − 0.35, cacheCost = 0.35 when "off", else
// 1.2 (c − 0.6)². Every term is ≥ 0 (2.5u² + uv + v² is positive definite),
// so the unique minimum is 0 at algo=1, x=0.7, n=20, mode=1, cache on at
// level 6 (c=0.6), y=0.35.
func mixedProblem() problem {
	dims := []tunables.Dim{
		{Name: "x", Tunable: "x", Kind: tunables.DimNumeric},
		{Name: "n", Tunable: "n", Kind: tunables.DimNumeric, Levels: 32},
		{Name: "algo", Tunable: "algo", Kind: tunables.DimCategorical, Choices: 4},
		{Name: "mode", Tunable: "mode", Kind: tunables.DimCategorical, Choices: 3},
		{Name: "cache!special", Tunable: "cache", Kind: tunables.DimCategorical, Choices: 2},
		{Name: "cache", Tunable: "cache", Kind: tunables.DimNumeric, Levels: 11},
		{Name: "y", Tunable: "y", Kind: tunables.DimNumeric},
	}
	off := [4]float64{0.8, 0, 0.4, 1.5}
	cx := [4]float64{0.2, 0.7, 0.5, 0.3}
	nStar := [4]float64{20, 20, 8, 28}
	modeCost := [3]float64{0.3, 0, 0.6}
	return problem{
		name: "mixed", optimum: 0, box: "see functions.go",
		dims: dims,
		f: func(p tunables.Point) []float64 {
			a := int(math.Round(p[2]))
			m := int(math.Round(p[3]))
			n := math.Round(p[1] * 31)
			u := p[0] - cx[a]
			v := p[6] - 0.35
			dn := (n - nStar[a]) / 31
			f := off[a] + 2.5*u*u + u*v + v*v + 3*dn*dn + modeCost[m]*(1+p[6])
			if p[4] != 0 {
				f += 0.35
			} else {
				c := math.Round(p[5]*10) / 10
				f += 1.2 * (c - 0.6) * (c - 0.6)
			}
			return []float64{f}
		},
		initial: tunables.Point{0.5, 0.5, 0, 0, 0, 0.5, 0.5},
	}
}

// braninCurrin is the two-objective Branin–Currin problem on [0,1]^2
// (both minimized), a common multi-objective test.
func braninCurrinProblem() problem {
	return problem{
		name: "branin-currin", box: "[0,1]^2",
		dims: continuous("x1", "x2"),
		f: func(p tunables.Point) []float64 {
			x1, x2 := p[0], p[1]
			f1 := branin(scale(x1, -5, 10), scale(x2, 0, 15))
			e := 1.0
			if x2 > 0 {
				e = 1 - math.Exp(-1/(2*x2))
			}
			f2 := e * (2300*x1*x1*x1 + 1900*x1*x1 + 2092*x1 + 60) / (100*x1*x1*x1 + 500*x1*x1 + 4*x1 + 20)
			return []float64{f1, f2}
		},
		initial: tunables.Point{0.5, 0.5},
	}
}

// hypervolume2D is the area dominated by the finite points ys (two
// minimized objectives) and bounded by ref.
func hypervolume2D(ys [][]float64, ref [2]float64) float64 {
	var pts [][2]float64
	for _, y := range ys {
		if y[0] < ref[0] && y[1] < ref[1] {
			pts = append(pts, [2]float64{y[0], y[1]})
		}
	}
	// Sort by the first objective and sweep.
	for i := 1; i < len(pts); i++ {
		for j := i; j > 0 && (pts[j][0] < pts[j-1][0] || (pts[j][0] == pts[j-1][0] && pts[j][1] < pts[j-1][1])); j-- {
			pts[j], pts[j-1] = pts[j-1], pts[j]
		}
	}
	hv, prevY := 0.0, ref[1]
	for _, p := range pts {
		if p[1] < prevY {
			hv += (ref[0] - p[0]) * (prevY - p[1])
			prevY = p[1]
		}
	}
	return hv
}
