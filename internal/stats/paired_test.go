package stats

import (
	"math"
	"testing"
)

func TestSignTest(t *testing.T) {
	// 6 of 6 pairs up: p = 2 / 2^6.
	x := []float64{1, 2, 3, 4, 5, 6}
	y := []float64{1.1, 2.1, 3.1, 4.1, 5.1, 6.1}
	p, up, down, ok := SignTest(x, y)
	if !ok || up != 6 || down != 0 || p != 2.0/64 || SignTestMinP(6) != 2.0/64 {
		t.Errorf("p=%v up=%d down=%d ok=%v", p, up, down, ok)
	}
	// 8 up, 2 down, 1 tie: n = 10, p = 2 * (1 + 10 + 45) / 1024 = 0.109375 (R: binom.test(8, 10)).
	x = []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	y = []float64{2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 1}
	p, up, down, _ = SignTest(x, y)
	if up != 8 || down != 2 || math.Abs(p-0.109375) > 1e-12 {
		t.Errorf("8/2: p=%v up=%d down=%d", p, up, down)
	}
	if p, _, _, _ := SignTest([]float64{1, 2}, []float64{1, 2}); p != 1 {
		t.Errorf("all tied: p=%v", p)
	}
	if _, _, _, ok := SignTest([]float64{1}, []float64{1, 2}); ok {
		t.Error("unequal lengths accepted")
	}
	// Per-block ratios 1.1, 1.2, 0.9, 1.05, 1.0: median 1.05.
	near(t, "ratio change", RatioChange([]float64{10, 10, 10, 20, 5}, []float64{11, 12, 9, 21, 5}), 0.05, 1e-12)
	lo, hi, ok := RatioChangeCI([]float64{10, 10, 10, 20, 5}, []float64{11, 12, 9, 21, 5}, 500, 0.95, 1)
	if !ok || lo > 0.05 || hi < 0.05 || lo < -0.1 || hi > 0.2 {
		t.Errorf("ratio CI [%v, %v] %v", lo, hi, ok)
	}
	if !math.IsNaN(RatioChange([]float64{0}, []float64{1})) {
		t.Error("zero baseline accepted")
	}
}
