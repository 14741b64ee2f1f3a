package bayes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/benchtune/bench/tunables"
)

// hartmann6 on [0,1]^6 (minimum −3.32237).
func hartmann6(x tunables.Point) float64 {
	a := [4][6]float64{{10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14}, {3, 3.5, 1.7, 10, 17, 8}, {17, 8, 0.05, 10, 0.1, 14}}
	p := [4][6]float64{{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886}, {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
		{0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650}, {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}}
	alpha := [4]float64{1.0, 1.2, 3.0, 3.2}
	s := 0.0
	for i := range 4 {
		e := 0.0
		for j := range 6 {
			d := x[j] - p[i][j]
			e += a[i][j] * d * d
		}
		s += alpha[i] * math.Exp(-e)
	}
	return -s
}

func unitDims(d int) []tunables.Dim {
	dims := make([]tunables.Dim, d)
	for i := range dims {
		dims[i] = tunables.Dim{Name: fmt.Sprintf("x%d", i), Tunable: fmt.Sprintf("x%d", i), Kind: tunables.DimNumeric}
	}
	return dims
}

// benchmarkSuggest measures one Suggest(1) + Observe round on Hartmann6
// after n observations (random points plus points found by the optimizer),
// hyperparameter refits included at their natural frequency.
func benchmarkSuggest(b *testing.B, n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	o, err := New(unitDims(6), Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for range n {
		x := make(tunables.Point, 6)
		for j := range x {
			x[j] = rng.Float64()
		}
		if err := o.Observe(Observation{X: x, Y: []float64{hartmann6(x)}}); err != nil {
			b.Fatal(err)
		}
	}
	// Fit once outside the timer, as a running optimizer would have.
	if _, err := o.Suggest(1, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		// Keep the data size constant: observe, then forget by rebuilding
		// is too costly; the growth over b.N rounds is small.
		if err := o.Observe(Observation{X: pts[0], Y: []float64{hartmann6(pts[0])}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func BenchmarkSuggest50(b *testing.B)  { benchmarkSuggest(b, 50) }
func BenchmarkSuggest200(b *testing.B) { benchmarkSuggest(b, 200) }

// BenchmarkSuggestTrust500 is one Suggest(1) + Observe round with the trust
// region after 500 random observations of a 20-D function.
func BenchmarkSuggestTrust500(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	o, err := New(unitDims(20), Options{Seed: 1, TrustRegion: 1})
	if err != nil {
		b.Fatal(err)
	}
	f := func(x tunables.Point) float64 {
		s := 0.0
		for _, v := range x {
			s += (v-0.3)*(v-0.3) - 0.1*math.Cos(20*v)
		}
		return s
	}
	for range 500 {
		x := make(tunables.Point, 20)
		for j := range x {
			x[j] = rng.Float64()
		}
		if err := o.Observe(Observation{X: x, Y: []float64{f(x)}}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := o.Suggest(1, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		pts, err := o.Suggest(1, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := o.Observe(Observation{X: pts[0], Y: []float64{f(pts[0])}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
