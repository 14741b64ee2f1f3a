package tunables

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs/source"
)

const spaceDoc = `{
  "g1": {"cost": 1, "params": {
    "int": {"type": "int", "range": [0, 10], "default": 5},
    "wide": {"type": "int", "range": [0, 100000000], "default": 7},
    "float": {"type": "float", "range": [-1, 1], "default": 0},
    "logf": {"type": "float", "range": [1, 100], "log": true, "default": 10},
    "logi": {"type": "int", "range": [1, 1024], "log": true, "default": 32},
    "log0": {"type": "int", "range": [0, 99], "log": true, "default": 9},
    "qi": {"type": "int", "range": [0, 100], "quantization_bins": 5, "default": 50},
    "qf": {"type": "float", "range": [0, 1], "quantization_bins": 3, "default": 0.5}
  }},
  "g2": {"cost": 2, "params": {
    "sp": {"type": "int", "range": [0, 100], "special": [-1, 0], "special_weights": [0.09, 0.01], "range_weight": 0.9, "default": 20},
    "spf": {"type": "float", "range": [0.5, 1.5], "special": [-1], "default": -1},
    "cat": {"type": "categorical", "values": ["a", "b", "c"], "values_weights": [1, 1, 2], "default": "b"},
    "cat2": {"type": "categorical", "values": [true, false], "default": false}
  }}
}`

func TestSpaceLayout(t *testing.T) {
	sp := mustParse(t, spaceDoc).Space()
	want := []Dim{
		{Name: "int", Tunable: "int", Kind: DimNumeric, Levels: 11},
		{Name: "wide", Tunable: "wide", Kind: DimNumeric},
		{Name: "float", Tunable: "float", Kind: DimNumeric},
		{Name: "logf", Tunable: "logf", Kind: DimNumeric, Log: true},
		{Name: "logi", Tunable: "logi", Kind: DimNumeric, Log: true},
		{Name: "log0", Tunable: "log0", Kind: DimNumeric, Log: true},
		{Name: "qi", Tunable: "qi", Kind: DimNumeric, Levels: 5},
		{Name: "qf", Tunable: "qf", Kind: DimNumeric, Levels: 3},
		{Name: "sp!special", Tunable: "sp", Kind: DimCategorical, Choices: 3, Weights: []float64{0.9, 0.09, 0.01}},
		{Name: "sp", Tunable: "sp", Kind: DimNumeric, Levels: 101},
		{Name: "spf!special", Tunable: "spf", Kind: DimCategorical, Choices: 2, Weights: []float64{0.5, 0.5}},
		{Name: "spf", Tunable: "spf", Kind: DimNumeric},
		{Name: "cat", Tunable: "cat", Kind: DimCategorical, Choices: 3, Weights: []float64{0.25, 0.25, 0.5}},
		{Name: "cat2", Tunable: "cat2", Kind: DimCategorical, Choices: 2},
	}
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })
	if diff := cmp.Diff(want, sp.Dims, approx); diff != "" {
		t.Errorf("Dims (-want +got):\n%s", diff)
	}
	if i, ok := sp.Dim("sp!special"); !ok || i != 8 {
		t.Errorf("Dim(sp!special) = %d, %v", i, ok)
	}
	if _, ok := sp.Dim("nope"); ok {
		t.Error("Dim(nope) found")
	}
}

func TestEncodeDecode(t *testing.T) {
	g := mustParse(t, spaceDoc)
	sp := g.Space()
	idx := func(name string) int {
		i, ok := sp.Dim(name)
		if !ok {
			t.Fatalf("no dim %s", name)
		}
		return i
	}
	defaults := g.Values()
	// Each case changes some values from the defaults and checks some
	// coordinates of the encoded point.
	cases := []struct {
		name   string
		values map[string]any
		coords map[string]float64
	}{
		{"defaults", nil, map[string]float64{
			"int": 0.5, "float": 0.5, "logf": 0.5, "logi": 0.5, "log0": 0.5, "qi": 0.5, "qf": 0.5,
			"sp!special": 0, "sp": 0.2, "spf!special": 1, "spf": 0, "cat": 1, "cat2": 1,
		}},
		{"bounds", map[string]any{"int": 0, "wide": 100000000, "float": 1.0, "logf": 1.0, "logi": 1024, "log0": 0, "qi": 100, "qf": 1.0, "sp": 100, "spf": 0.5, "cat": "a", "cat2": "True"},
			map[string]float64{"int": 0, "wide": 1, "float": 1, "logf": 0, "logi": 1, "log0": 0, "qi": 1, "qf": 1, "sp!special": 0, "sp": 1, "spf!special": 0, "spf": 0, "cat": 0, "cat2": 0}},
		{"interior", map[string]any{"int": 3, "wide": 12345678, "float": -0.25, "logf": 31.622776601683793, "logi": 2, "qi": 75, "qf": 0.5, "sp": 37, "spf": 1.2, "cat": "c"},
			map[string]float64{"int": 0.3, "float": 0.375, "logf": 0.75, "logi": 0.1, "qi": 0.75, "qf": 0.5, "sp": 0.37, "spf": 0.7, "cat": 2}},
		{"special values", map[string]any{"sp": -1, "spf": -1.0},
			map[string]float64{"sp!special": 1, "sp": 0, "spf!special": 1, "spf": 0}}, // a chosen special value puts the numeric coordinate at 0
		{"special inside the range", map[string]any{"sp": 0},
			map[string]float64{"sp!special": 2, "sp": 0}},
		{"off-grid quantized value keeps its coordinate", map[string]any{"qi": 10},
			map[string]float64{"qi": 0.1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vals := make(map[string]any, len(defaults))
			for k, v := range defaults {
				vals[k] = v
			}
			for k, v := range tc.values {
				c, err := g.Get(k).Coerce(v)
				if err != nil {
					t.Fatal(err)
				}
				vals[k] = c
			}
			p, err := sp.Encode(vals)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.coords {
				if got := p[idx(name)]; math.Abs(got-want) > 1e-12 {
					t.Errorf("coordinate %s = %v, want %v", name, got, want)
				}
			}
			for i, x := range p {
				if !(x >= 0) || (sp.Dims[i].Kind == DimNumeric && x > 1) {
					t.Errorf("coordinate %d = %v out of bounds", i, x)
				}
			}
			got, err := sp.Decode(p)
			if err != nil {
				t.Fatal(err)
			}
			want := vals
			if tc.name == "off-grid quantized value keeps its coordinate" {
				want["qi"] = int64(0) // decodes to the nearest level
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return a == b || math.Abs(a-b) <= 1e-12*math.Abs(a) })); diff != "" {
				t.Errorf("Decode(Encode(v)) (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeClampsAndSnaps(t *testing.T) {
	g := mustParse(t, spaceDoc)
	sp := g.Space()
	n := len(sp.Dims)
	fill := func(x float64) Point {
		p := make(Point, n)
		for i := range p {
			p[i] = x
		}
		return p
	}
	low, err := sp.Decode(fill(-3))
	if err != nil {
		t.Fatal(err)
	}
	wantLow := map[string]any{"int": int64(0), "wide": int64(0), "float": -1.0, "logf": 1.0, "logi": int64(1), "log0": int64(0), "qi": int64(0), "qf": 0.0, "sp": int64(0), "spf": 0.5, "cat": "a", "cat2": "True"}
	if diff := cmp.Diff(wantLow, low); diff != "" {
		t.Errorf("Decode(all -3) (-want +got):\n%s", diff)
	}
	high, err := sp.Decode(fill(7))
	if err != nil {
		t.Fatal(err)
	}
	wantHigh := map[string]any{"int": int64(10), "wide": int64(100000000), "float": 1.0, "logf": 100.0, "logi": int64(1024), "log0": int64(99), "qi": int64(100), "qf": 1.0, "sp": int64(0), "spf": -1.0, "cat": "c", "cat2": "False"}
	if diff := cmp.Diff(wantHigh, high); diff != "" {
		t.Errorf("Decode(all 7) (-want +got):\n%s", diff)
	}
	nan, err := sp.Decode(fill(math.NaN()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantLow, nan); diff != "" {
		t.Errorf("Decode(all NaN) (-want +got):\n%s", diff)
	}
	// Rounding to levels and choices.
	p := fill(0.5)
	p[0] = 0.26             // int: 2.6 -> 3
	p[6] = 0.37             // qi: level round(0.37*4)=1 -> 25
	p[7] = 0.74             // qf: level round(1.48)=1 -> 0.5
	p[12] = 1.4             // cat -> "b"
	p[8], p[9] = 0.4, 0.123 // sp: range, 12.3 -> 12
	v, _ := sp.Decode(p)
	for name, want := range map[string]any{"int": int64(3), "qi": int64(25), "qf": 0.5, "cat": "b", "sp": int64(12)} {
		if v[name] != want {
			t.Errorf("%s = %v, want %v", name, v[name], want)
		}
	}
	if _, err := sp.Decode(Point{0.5}); err == nil {
		t.Error("short point accepted")
	}
	if sp.Snap(Point{0.5}) != nil {
		t.Error("Snap of a short point is not nil")
	}

	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		p := make(Point, n)
		for i := range p {
			p[i] = rng.Float64()*1.4 - 0.2
		}
		vals, err := sp.Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Copy().Assign(vals); err != nil {
			t.Fatalf("Decode(%v) gave invalid values: %v", p, err)
		}
		s1 := sp.Snap(p)
		s2 := sp.Snap(s1)
		if !slices.Equal(s1, s2) {
			t.Fatalf("Snap not idempotent:\n%v\n%v\n%v", p, s1, s2)
		}
		again, _ := sp.Decode(s1)
		if diff := cmp.Diff(vals, again); diff != "" {
			t.Fatalf("Decode(Snap(p)) != Decode(p):\n%s", diff)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	g := mustParse(t, spaceDoc)
	sp := g.Space()
	vals := g.Values()
	vals["bogus"] = 1
	vals["sp!special"] = 1
	delete(vals, "int")
	vals["cat"] = "zzz"
	_, err := sp.Encode(vals)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, frag := range []string{`unknown tunable "bogus"`, `unknown tunable "sp!special"`, `missing value for tunable "int"`, `'zzz' is not one of the values`} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q lacks %q", err, frag)
		}
	}
}

func TestSnapGridValues(t *testing.T) {
	// Every grid value of a finite tunable encodes onto its exact level and
	// survives Snap.
	g := mustParse(t, `{"g": {"cost": 1, "params": {
  "a": {"type": "int", "range": [-5, 5], "special": [99], "default": 0},
  "b": {"type": "int", "range": [0, 1000], "quantization_bins": 7, "default": 0},
  "c": {"type": "float", "range": [0.001, 10], "quantization_bins": 9, "log": true, "default": 1},
  "d": {"type": "int", "range": [2, 5000], "quantization_bins": 40, "log": true, "default": 2},
  "e": {"type": "float", "range": [-3, 7], "quantization_bins": 13, "default": 0}
}}}`)
	sp := g.Space()
	for _, tu := range g.Tunables() {
		grid, err := tu.GridValues()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range grid {
			vals := g.Values()
			vals[tu.Name()] = v
			p, err := sp.Encode(vals)
			if err != nil {
				t.Fatal(err)
			}
			i, _ := sp.Dim(tu.Name())
			if s := sp.Snap(p); s[i] != p[i] || (i > 0 && s[i-1] != p[i-1]) {
				t.Errorf("%s=%v: Snap moved %v to %v", tu.Name(), v, p, s)
			}
			dec, _ := sp.Decode(p)
			if dec[tu.Name()] != v {
				t.Errorf("%s=%v decodes to %v", tu.Name(), v, dec[tu.Name()])
			}
			if lv := sp.Dims[i].Levels; lv > 1 && tu.InRange() {
				k := p[i] * float64(lv-1)
				if math.Abs(k-math.Round(k)) > 1e-9 {
					t.Errorf("%s=%v: coordinate %v is not on a level", tu.Name(), v, p[i])
				}
			}
		}
	}
}

func TestSampleDeterministic(t *testing.T) {
	sp := mustParse(t, spaceDoc).Space()
	a := rand.New(rand.NewPCG(42, 1))
	b := rand.New(rand.NewPCG(42, 1))
	for range 100 {
		pa, pb := sp.Sample(a), sp.Sample(b)
		if !slices.Equal(pa, pb) {
			t.Fatalf("same seed, different points: %v %v", pa, pb)
		}
		if !slices.Equal(sp.Snap(pa), pa) {
			t.Fatalf("Sample returned a non-canonical point %v", pa)
		}
	}
}

// within reports whether got is within tol of want.
func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestSampleWeightsAndDistributions(t *testing.T) {
	g := mustParse(t, `{"g": {"cost": 1, "params": {
  "w": {"type": "int", "range": [1, 100], "special": [0], "special_weights": [0.1], "range_weight": 0.9, "default": 1},
  "nw": {"type": "float", "range": [1, 2], "special": [-1, -2], "default": 1},
  "cat": {"type": "categorical", "values": ["x", "y", "z"], "values_weights": [0.9, 0.1, 0], "default": "x"},
  "u": {"type": "int", "range": [0, 3], "default": 0},
  "logu": {"type": "float", "range": [1, 10000], "log": true, "default": 1},
  "norm": {"type": "float", "range": [0, 100], "default": 50, "distribution": {"type": "normal", "params": {"mu": 30, "sigma": 5}}},
  "lognorm": {"type": "float", "range": [1, 1000000], "log": true, "default": 1, "distribution": {"type": "normal", "params": {"mu": 1000, "sigma": 1}}},
  "beta": {"type": "float", "range": [10, 20], "default": 10, "distribution": {"type": "beta", "params": {"alpha": 2, "beta": 5}}},
  "betasmall": {"type": "float", "range": [0, 1], "default": 0, "distribution": {"type": "beta", "params": {"alpha": 0.1, "beta": 0.1}}},
  "qn": {"type": "int", "range": [0, 100], "quantization_bins": 11, "default": 0, "distribution": {"type": "normal", "params": {"mu": 50, "sigma": 10}}}
}}}`)
	sp := g.Space()
	rng := rand.New(rand.NewPCG(2024, 11))
	const n = 20000
	var (
		special, cx, cy, cz, nwSpecial int
		uCount                         [4]int
		logBelow100, betaSmallExtremes int
		normSum, normSq, lnSum, lnSq   float64
		betaSum, qnSum                 float64
		qnOff                          int
		nwFirst, nwSecond              int
	)
	for range n {
		v, err := sp.Decode(sp.Sample(rng))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Copy().Assign(v); err != nil {
			t.Fatalf("sampled invalid values: %v", err)
		}
		if v["w"] == int64(0) {
			special++
		}
		switch v["nw"] {
		case -1.0:
			nwSpecial++
			nwFirst++
		case -2.0:
			nwSpecial++
			nwSecond++
		}
		switch v["cat"] {
		case "x":
			cx++
		case "y":
			cy++
		case "z":
			cz++
		}
		uCount[v["u"].(int64)]++
		if v["logu"].(float64) < 100 {
			logBelow100++
		}
		x := v["norm"].(float64)
		normSum += x
		normSq += x * x
		l := math.Log(v["lognorm"].(float64))
		lnSum += l
		lnSq += l * l
		betaSum += (v["beta"].(float64) - 10) / 10
		if b := v["betasmall"].(float64); b < 0.05 || b > 0.95 {
			betaSmallExtremes++
		}
		q := v["qn"].(int64)
		qnSum += float64(q)
		if q%10 != 0 {
			qnOff++
		}
	}
	frac := func(k int) float64 { return float64(k) / n }
	checks := []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"special_weights 0.1 vs range_weight 0.9", frac(special), 0.1, 0.01},
		{"no weights: half the draws pick a special value", frac(nwSpecial), 0.5, 0.015},
		{"no weights: specials share equally", frac(nwFirst) - frac(nwSecond), 0, 0.02},
		{"values_weights x=0.9", frac(cx), 0.9, 0.01},
		{"values_weights y=0.1", frac(cy), 0.1, 0.01},
		{"values_weights z=0", frac(cz), 0, 0},
		{"uniform int levels equally likely (0)", frac(uCount[0]), 0.25, 0.015},
		{"uniform int levels equally likely (3)", frac(uCount[3]), 0.25, 0.015},
		{"log-uniform: half below the geometric mean", frac(logBelow100), 0.5, 0.015},
		{"normal mean", normSum / n, 30, 0.15},
		{"normal sd", math.Sqrt(normSq/n - (normSum/n)*(normSum/n)), 5, 0.15},
		{"log normal: mean of ln", lnSum / n, math.Log(1000), 0.03},
		{"log normal: sd of ln", math.Sqrt(lnSq/n - (lnSum/n)*(lnSum/n)), 1, 0.03},
		{"beta(2,5) mean on the unit coordinate", betaSum / n, 2.0 / 7, 0.01},
		{"beta(0.1,0.1) piles up at the ends", frac(betaSmallExtremes), 0.75, 0.05},
		{"quantized normal mean", qnSum / n, 50, 0.5},
		{"quantized values stay on levels", float64(qnOff), 0, 0},
	}
	for _, c := range checks {
		if !within(c.got, c.want, c.tol) {
			t.Errorf("%s: got %.4f, want %.4f ± %.4f", c.name, c.got, c.want, c.tol)
		}
	}
}

func TestTruncNormalExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		m, sd  float64
		lo, hi float64
	}{
		{-50, 0.01, 0, 1e-9},    // mass far below: sticks to 0
		{50, 0.01, 1 - 1e-9, 1}, // far above: sticks to 1
		{0.5, 1e-300, 0.5, 0.5},
		{0.5, math.Inf(1), 0, 1},
		{-3, 1, 0, 1},
		{4, 1, 0, 1},
	}
	for _, c := range cases {
		for range 100 {
			x := truncNormalUnit(rng, c.m, c.sd)
			if !(x >= c.lo && x <= c.hi) {
				t.Fatalf("truncNormalUnit(%v, %v) = %v, want in [%v, %v]", c.m, c.sd, x, c.lo, c.hi)
			}
		}
	}
	for _, ab := range [][2]float64{{1e-3, 1e-3}, {1e-3, 1000}, {1000, 1e-3}, {1, 1}} {
		for range 100 {
			if x := sampleBeta(rng, ab[0], ab[1]); !(x >= 0 && x <= 1) {
				t.Fatalf("sampleBeta(%v) = %v", ab, x)
			}
		}
	}
}

func BenchmarkHash(b *testing.B) {
	g, err := parseTextB(b, spaceDoc)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = g.Hash()
	}
}

func BenchmarkSnap(b *testing.B) {
	g, err := parseTextB(b, spaceDoc)
	if err != nil {
		b.Fatal(err)
	}
	sp := g.Space()
	rng := rand.New(rand.NewPCG(1, 1))
	p := make(Point, len(sp.Dims))
	for i := range p {
		p[i] = rng.Float64()
	}
	for b.Loop() {
		_ = sp.Snap(p)
	}
}

func BenchmarkSample(b *testing.B) {
	g, err := parseTextB(b, spaceDoc)
	if err != nil {
		b.Fatal(err)
	}
	sp := g.Space()
	rng := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		_ = sp.Sample(rng)
	}
}

func parseTextB(b *testing.B, text string) (*Groups, error) {
	doc, err := source.Parse("bench.jsonc", []byte(text))
	if err != nil {
		return nil, err
	}
	return ParseParams(doc.At())
}
