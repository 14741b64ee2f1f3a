package tunables

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/testenv"
)

func FuzzParseParams(f *testing.F) {
	f.Add([]byte(mlosFixture))
	f.Add([]byte(spaceDoc))
	f.Add([]byte(oneTunableDoc(`{"type": "int", "range": [0, 10], "special": [-1], "special_weights": [1], "range_weight": 1, "quantization_bins": 4, "log": true, "default": -1, "distribution": {"type": "beta", "params": {"alpha": 0.1, "beta": 3}}}`)))
	f.Add([]byte(oneTunableDoc(`{"type": "float", "range": [-1e308, 1e308], "default": 0, "distribution": {"type": "normal", "params": {"mu": 1e307, "sigma": 1e300}}}`)))
	f.Add([]byte(oneTunableDoc(`{"type": "int", "range": [-9223372036854775808, 9223372036854775807], "log": true, "default": 0}`)))
	f.Add([]byte(oneTunableDoc(`{"type": "categorical", "values": ["a", 1, true, 0x10, 1e400], "values_weights": [1, 2, 3, 4, 5], "default": "a", "meta": {"k": [1, null]}}`)))
	var files []string
	if dir := testenv.OptionalConformanceDir(f); dir != "" {
		files, _ = filepath.Glob(filepath.Join(dir, "tunable-params", "*", "*", "*.jsonc"))
	}
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := source.Parse("fuzz.jsonc", data)
		if err != nil {
			return
		}
		g, err := ParseParams(doc.At())
		if err != nil {
			var se *source.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *source.Error", err, err)
			}
			_ = err.Error()
			return
		}
		_ = g.String()
		_ = g.Hash()
		c := g.Copy()
		if c.String() != g.String() {
			t.Fatal("copy differs")
		}
		for _, tu := range g.Tunables() {
			if n, finite := tu.Cardinality(); finite && n <= 1<<12 {
				vals, err := tu.GridValues()
				if err != nil {
					t.Fatalf("GridValues of %s: %v", tu.Name(), err)
				}
				for _, v := range vals {
					if err := tu.Set(v); err != nil {
						t.Fatalf("grid value %v of %s: %v", v, tu.Name(), err)
					}
				}
			}
		}
		g.RestoreDefaults()
		sp := g.Space()
		p, err := sp.Encode(g.Values())
		if err != nil {
			t.Fatalf("Encode(defaults): %v", err)
		}
		rng := rand.New(rand.NewPCG(uint64(len(data)), 3))
		for _, q := range []Point{p, sp.Sample(rng), sp.Sample(rng)} {
			vals, err := sp.Decode(q)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Assign(vals); err != nil {
				t.Fatalf("decoded values are invalid: %v", err)
			}
		}
	})
}

// fuzzSpaceDoc covers every kind of dimension, with awkward ranges.
const fuzzSpaceDoc = `{
  "g": {"cost": 1, "params": {
    "i": {"type": "int", "range": [-5, 5], "special": [99, -100], "default": 0},
    "wide": {"type": "int", "range": [-9223372036854775808, 9223372036854775807], "default": 0},
    "wlog": {"type": "int", "range": [-9223372036854775808, 9223372036854775807], "log": true, "default": 0},
    "f": {"type": "float", "range": [-1e308, 1e308], "default": 0},
    "tiny": {"type": "float", "range": [1e-300, 2e-300], "log": true, "default": 1e-300},
    "flog0": {"type": "float", "range": [-10, 10], "log": true, "special": [-1e300], "special_weights": [1], "range_weight": 3, "default": 0},
    "qi": {"type": "int", "range": [0, 1000000007], "quantization_bins": 1000, "default": 0},
    "qilog": {"type": "int", "range": [1, 1000], "quantization_bins": 500, "log": true, "default": 1},
    "qf": {"type": "float", "range": [0.1, 0.2], "quantization_bins": 7, "default": 0.1},
    "qflog": {"type": "float", "range": [0.001, 1000], "quantization_bins": 13, "log": true, "default": 1},
    "c": {"type": "categorical", "values": ["a", "b", true, 3], "default": "a"}
  }}
}`

func FuzzDecode(f *testing.F) {
	doc, err := source.Parse("fuzz.jsonc", []byte(fuzzSpaceDoc))
	if err != nil {
		f.Fatal(err)
	}
	g, err := ParseParams(doc.At())
	if err != nil {
		f.Fatal(err)
	}
	sp := g.Space()
	n := len(sp.Dims)
	encode := func(p Point) []byte {
		b := make([]byte, 8*len(p))
		for i, x := range p {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return b
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for range 4 {
		f.Add(encode(sp.Sample(rng)))
	}
	special := make(Point, n)
	for i := range special {
		special[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.0, 1e-320, 0.9999999999999999}[i%6]
	}
	f.Add(encode(special))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := make(Point, n)
		for i := range p {
			if 8*i+8 <= len(data) {
				p[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
			} else if i < len(data) {
				p[i] = float64(data[i]) / 255
			}
		}
		vals, err := sp.Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		c := g.Copy()
		if err := c.Assign(vals); err != nil {
			t.Fatalf("Decode(%v) gave invalid values: %v", p, err)
		}
		s1 := sp.Snap(p)
		for i, x := range s1 {
			if !(x >= 0) || (sp.Dims[i].Kind == DimNumeric && x > 1) || (sp.Dims[i].Kind == DimCategorical && (x != math.Trunc(x) || int(x) >= sp.Dims[i].Choices)) {
				t.Fatalf("Snap coordinate %d = %v is not canonical", i, x)
			}
		}
		s2 := sp.Snap(s1)
		for i := range s1 {
			if s1[i] != s2[i] {
				t.Fatalf("Snap not idempotent at %d (%s): %v -> %v (point %v)", i, sp.Dims[i].Name, s1[i], s2[i], p)
			}
		}
		again, err := sp.Decode(s1)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range vals {
			if again[k] != v {
				t.Fatalf("Decode(Snap(p))[%s] = %v, Decode(p) = %v", k, again[k], v)
			}
		}
	})
}
