package plots

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/benchtune/bench/storage"
)

// Options change how the figures are drawn.
type Options struct {
	// LogX names the tunables drawn on a log axis (the tunables with
	// "log": true). A numeric tunable whose values are all positive and
	// span a factor of 1000 or more is drawn on a log axis as well.
	LogX map[string]bool
}

// logSpan is the ratio of largest to smallest value from which a
// positive numeric tunable is drawn on a log axis without being named.
const logSpan = 1000

// useLog reports whether a numeric tunable's values go on a log axis.
func (o Options) useLog(name string, xs []float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if x <= 0 {
			return false // a log axis cannot show it
		}
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if len(xs) == 0 {
		return false
	}
	return o.LogX[name] || hi/lo >= logSpan
}

// UseLog reports whether a numeric tunable named name with values xs is
// drawn on a log axis (named in LogX, or positive and spanning a factor
// of 1000 or more): the same rule for bench plot, report and ui.
func (o Options) UseLog(name string, xs []float64) bool { return o.useLog(name, xs) }

// setLogX puts the plot's x axis on a log scale, padded by a factor on
// each side, with ticks at powers of ten and 2 and 5 times them.
func setLogX(p *plot.Plot, xs []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	f := math.Pow(hi/lo, 0.05)
	if f < 1.2 {
		f = 1.2
	}
	p.X.Min, p.X.Max = lo/f, hi*f
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
}

// logTicks labels 1, 2 and 5 times each power of ten in range (only the
// powers of ten when the range spans more than three decades), with a
// minor tick at every other integer multiple.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	var out []plot.Tick
	decades := math.Log10(max / min)
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		p10 := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p10
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (decades <= 3 && (m == 2 || m == 5)) {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
			out = append(out, t)
		}
	}
	return out
}

// denseTicks labels about eight values at a 1, 2 or 5 step (gonum's
// default labels about three), with a minor tick between them.
type denseTicks struct{}

func (denseTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) || math.IsInf(max-min, 0) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	raw := (max - min) / 8
	p10 := math.Pow(10, math.Floor(math.Log10(raw)))
	step := p10
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p10 >= raw {
			step = m * p10
			break
		}
	}
	prec := max0(-int(math.Floor(math.Log10(step))))
	var out []plot.Tick
	for i := math.Ceil(min / step * 2); i*step/2 <= max; i++ {
		v := i * step / 2
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', prec, 64)
			if math.Abs(v) >= 1e6 || (v != 0 && math.Abs(v) < 1e-4) {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
		}
		out = append(out, t)
		if len(out) > 100 {
			return plot.DefaultTicks{}.Ticks(min, max)
		}
	}
	return out
}

func max0(i int) int {
	if i < 0 {
		return 0
	}
	return i
}

// orderColor is the colour of the i-th of n trials by order: dark blue
// for the first, through teal and green, to yellow for the last (the ends
// of the viridis map).
func orderColor(i, n int) color.RGBA {
	stops := []color.RGBA{{68, 1, 84, 255}, {59, 82, 139, 255}, {33, 145, 140, 255}, {94, 201, 98, 255}, {253, 231, 37, 255}}
	f := 0.0
	if n > 1 {
		f = float64(i) / float64(n-1)
	}
	x := f * float64(len(stops)-1)
	k := int(math.Floor(x))
	if k >= len(stops)-1 {
		return stops[len(stops)-1]
	}
	a, b, u := stops[k], stops[k+1], x-float64(k)
	mix := func(p, q uint8) uint8 { return uint8(math.Round(float64(p) + (float64(q)-float64(p))*u)) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 255}
}

// orderPoint is a point of a trial, coloured by its trial order.
type orderPoint struct {
	XY     plotter.XY
	ID     int
	Reused bool
}

// addOrdered adds the points to p coloured by trial order (first blue,
// last yellow): measured trials as filled circles, trials that reused an
// identical trial's result as crosses; and legend entries for the first
// and last trial and for reuse.
func addOrdered(p *plot.Plot, pts []orderPoint) error {
	if len(pts) == 0 {
		return nil
	}
	ids := make([]int, len(pts))
	for i, pt := range pts {
		ids[i] = pt.ID
	}
	rank := ranks(ids)
	n := len(rank)
	// One scatter per colour level and shape (at most 256 levels), not per
	// point: 10,000 trials draw as fast as before.
	levels := min(n, 256)
	level := func(id int) int {
		if n <= 1 {
			return 0
		}
		return int(math.Round(float64(rank[id]) * float64(levels-1) / float64(n-1)))
	}
	type key struct {
		level  int
		reused bool
	}
	groups := map[key]plotter.XYs{}
	var order []key
	var reused int
	for _, pt := range pts {
		k := key{level(pt.ID), pt.Reused}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], pt.XY)
		if pt.Reused {
			reused++
		}
	}
	for _, k := range order {
		sc, err := plotter.NewScatter(groups[k])
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = orderColor(k.level, levels)
		sc.GlyphStyle.Radius = vg.Points(2.8)
		if k.reused {
			sc.GlyphStyle.Shape = draw.CrossGlyph{}
			sc.GlyphStyle.Radius = vg.Points(3.5)
		} else {
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
		}
		p.Add(sc)
	}
	minID, maxID := ids[0], ids[0]
	for _, id := range ids {
		minID, maxID = min(minID, id), max(maxID, id)
	}
	first := legendGlyph(orderColor(0, levels), draw.CircleGlyph{})
	p.Legend.Add(fmt.Sprintf("trial %d (first)", minID), first)
	if n > 1 {
		p.Legend.Add(fmt.Sprintf("trial %d (last)", maxID), legendGlyph(orderColor(levels-1, levels), draw.CircleGlyph{}))
	}
	if reused > 0 {
		p.Legend.Add(fmt.Sprintf("reused result (%d)", reused), legendGlyph(grey, draw.CrossGlyph{}))
	}
	return nil
}

func legendGlyph(c color.Color, s draw.GlyphDrawer) plot.Thumbnailer {
	sc, _ := plotter.NewScatter(plotter.XYs{{}})
	sc.GlyphStyle.Color = c
	sc.GlyphStyle.Shape = s
	sc.GlyphStyle.Radius = vg.Points(3)
	return sc
}

// ranks maps each distinct id to its place in ascending order.
func ranks(ids []int) map[int]int {
	seen := map[int]bool{}
	var u []int
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			u = append(u, id)
		}
	}
	sortInts(u)
	out := make(map[int]int, len(u))
	for i, id := range u {
		out[id] = i
	}
	return out
}

func reusedTrial(t storage.Trial) bool { return t.ReusedFrom != nil }
