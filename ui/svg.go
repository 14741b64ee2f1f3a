package ui

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// The charts are drawn on the server as inline SVG: nothing to fetch, no
// script needed to see them, and a test can count their marks (elements
// with class "mark", "line", "bar" or "cell").

// scale maps data values to pixels, linearly or on a log axis.
type scale struct {
	lo, hi float64 // data range (lo < hi)
	a, b   float64 // pixel range
	log    bool
	// cats labels a categorical axis: value i is category i.
	cats []string
}

func newScale(vals []float64, a, b float64, log bool) scale {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) || (log && v <= 0) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
		log = false
	}
	if log {
		f := math.Pow(hi/lo, 0.04)
		if f < 1.1 {
			f = 1.1
		}
		lo, hi = lo/f, hi*f
	} else {
		pad := (hi - lo) * 0.04
		if pad == 0 {
			pad = math.Max(math.Abs(lo)*0.1, 0.5)
		}
		lo, hi = lo-pad, hi+pad
	}
	return scale{lo: lo, hi: hi, a: a, b: b, log: log}
}

func catScale(cats []string, a, b float64) scale {
	return scale{lo: -0.5, hi: float64(len(cats)) - 0.5, a: a, b: b, cats: cats}
}

func (s scale) px(v float64) float64 {
	var f float64
	if s.log {
		f = (math.Log(v) - math.Log(s.lo)) / (math.Log(s.hi) - math.Log(s.lo))
	} else {
		f = (v - s.lo) / (s.hi - s.lo)
	}
	return s.a + f*(s.b-s.a)
}

// frac is the inverse of px, as a fraction of the data range's position.
func (s scale) value(f float64) float64 {
	if s.log {
		return math.Exp(math.Log(s.lo) + f*(math.Log(s.hi)-math.Log(s.lo)))
	}
	return s.lo + f*(s.hi-s.lo)
}

type tick struct {
	v     float64
	label string
}

// ticks returns about n labelled ticks: "nice" steps (1, 2, 5 × 10^k) on
// a linear axis, 1, 2 and 5 × each power of ten on a log axis (only the
// powers when it spans more than three decades).
func (s scale) ticks(n int) []tick {
	if s.cats != nil {
		out := make([]tick, len(s.cats))
		for i, c := range s.cats {
			out[i] = tick{float64(i), c}
		}
		return out
	}
	var out []tick
	if s.log {
		lo, hi := math.Floor(math.Log10(s.lo)), math.Ceil(math.Log10(s.hi))
		mults := []float64{1, 2, 5}
		if hi-lo > 3 {
			mults = []float64{1}
		}
		for e := lo; e <= hi; e++ {
			for _, m := range mults {
				v := m * math.Pow(10, e)
				if v >= s.lo && v <= s.hi {
					out = append(out, tick{v, num(v)})
				}
			}
		}
		return out
	}
	span := s.hi - s.lo
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	for v := math.Ceil(s.lo/step) * step; v <= s.hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, tick{v, num(v)})
	}
	return out
}

// num formats a number for a label, short.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e7 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	a := math.Abs(v)
	if a >= 1e6 || a < 1e-3 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// svg builds one chart.
type svg struct {
	b    strings.Builder
	w, h float64
}

// Plot area margins.
const (
	marginL = 62.0
	marginR = 14.0
	marginT = 14.0
	marginB = 40.0
)

func newSVG(w, h float64, label string) *svg {
	s := &svg{w: w, h: h}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s">`, w, h, w, h, esc(label))
	return s
}

func (s *svg) raw(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svg) String() string { return s.b.String() + "</svg>" }

// axes draws the frame, ticks with labels and the axis titles of a plot
// area with scales x and y.
func (s *svg) axes(x, y scale, xTitle, yTitle string) {
	x0, x1, y0, y1 := x.a, x.b, y.b, y.a // y.a is the bottom
	s.raw(`<rect class="frame" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, x0, y0, x1-x0, y1-y0)
	for _, t := range x.ticks(7) {
		p := x.px(t.v)
		s.raw(`<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, p, y0, p, y1)
		anchor := "middle"
		lbl := t.label
		if x.cats != nil && len(lbl) > 12 {
			lbl = lbl[:11] + "…"
		}
		s.raw(`<text class="tick" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, p, y1+14, anchor, esc(lbl))
	}
	for _, t := range y.ticks(6) {
		p := y.px(t.v)
		s.raw(`<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, p, x1, p)
		s.raw(`<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, x0-4, p+4, esc(t.label))
	}
	if x.log {
		xTitle += " (log)"
	}
	if y.log {
		yTitle += " (log)"
	}
	s.raw(`<text class="axis" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (x0+x1)/2, s.h-6, esc(xTitle))
	s.raw(`<text class="axis" transform="translate(12 %.1f) rotate(-90)" text-anchor="middle">%s</text>`, (y0+y1)/2, esc(yTitle))
}

// point is one trial's mark.
type point struct {
	x, y   float64
	trial  int
	colour string
	reused bool
	extra  string // class added to the mark
	title  string
}

// bigScatter is the number of points from which a scatter is drawn as one
// path per colour instead of one element per point, so that 10,000
// trials stay a small page.
const bigScatter = 2000

// scatter draws points: a circle per trial (a cross for a reused result),
// each with its trial id and a tooltip, or for many points one path per
// colour.
func (s *svg) scatter(x, y scale, pts []point, r float64) {
	if len(pts) > bigScatter {
		byColour := map[string]*strings.Builder{}
		var order []string
		for _, p := range pts {
			b := byColour[p.colour]
			if b == nil {
				b = &strings.Builder{}
				byColour[p.colour] = b
				order = append(order, p.colour)
			}
			fmt.Fprintf(b, "M%.1f %.1fh0", x.px(p.x), y.px(p.y))
		}
		for _, c := range order {
			s.raw(`<path class="marks" stroke="%s" stroke-width="%g" stroke-linecap="round" d="%s"/>`, c, 2*r, byColour[c].String())
		}
		return
	}
	for _, p := range pts {
		px, py := x.px(p.x), y.px(p.y)
		title := p.title
		if title == "" {
			title = "trial " + strconv.Itoa(p.trial)
		}
		if p.reused {
			s.raw(`<path class="mark reused %s" data-trial="%d" stroke="%s" d="M%.1f %.1fl%g %gm0 %gl%g %g"><title>%s (reused)</title></path>`,
				p.extra, p.trial, p.colour, px-r, py-r, 2*r, 2*r, -2*r, -2*r, 2*r, esc(title))
			continue
		}
		s.raw(`<circle class="mark %s" data-trial="%d" cx="%.1f" cy="%.1f" r="%g" fill="%s"><title>%s</title></circle>`,
			p.extra, p.trial, px, py, r, p.colour, esc(title))
	}
}

// polyline draws a line through (xs[i], ys[i]).
func (s *svg) polyline(x, y scale, xs, ys []float64, class, stroke string) {
	if len(xs) == 0 {
		return
	}
	var b strings.Builder
	for i := range xs {
		fmt.Fprintf(&b, "%.1f,%.1f ", x.px(xs[i]), y.px(ys[i]))
	}
	s.raw(`<polyline class="%s" fill="none" stroke="%s" points="%s"/>`, class, stroke, strings.TrimSpace(b.String()))
}

// legend writes a small legend line at the top right of the plot area.
func (s *svg) note(x, y float64, text string) {
	s.raw(`<text class="note" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, x, y, esc(text))
}

// orderColour is the colour of the i-th of n trials by order: dark blue
// for the first, through teal and green, to yellow for the last (the ends
// of the viridis map), as bench plot draws them.
func orderColour(i, n int) string {
	f := 0.0
	if n > 1 {
		f = float64(i) / float64(n-1)
	}
	return ramp(f)
}

func ramp(f float64) string {
	stops := [][3]float64{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}
	f = math.Max(0, math.Min(1, f))
	x := f * float64(len(stops)-1)
	k := int(math.Floor(x))
	if k >= len(stops)-1 {
		k, x = len(stops)-2, float64(len(stops)-1)
	}
	u := x - float64(k)
	var c [3]int
	for j := range c {
		c[j] = int(math.Round(stops[k][j] + (stops[k+1][j]-stops[k][j])*u))
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}

// orderBuckets is how many colours the trial order is drawn with: few
// enough that a big scatter is a few paths, enough to read the order.
const orderBuckets = 32

// orderColourBucketed is orderColour rounded to one of orderBuckets
// colours.
func orderColourBucketed(i, n int) string {
	if n <= 1 {
		return ramp(0)
	}
	f := float64(i) / float64(n-1)
	return bucketColours[int(math.Round(f*(orderBuckets-1)))]
}

var bucketColours = func() (out [orderBuckets]string) {
	for k := range out {
		out[k] = ramp(float64(k) / (orderBuckets - 1))
	}
	return out
}()

// orderLegend draws the colour bar "first … last trial" under the title
// line at (x, y).
func (s *svg) orderLegend(x, y float64) {
	const w = 90.0
	s.raw(`<text class="note" x="%.1f" y="%.1f" text-anchor="end">first</text>`, x-w-4, y+8)
	for i := 0; i < 10; i++ {
		s.raw(`<rect x="%.1f" y="%.1f" width="%.1f" height="9" fill="%s"/>`, x-w+float64(i)*w/10, y, w/10+0.3, ramp(float64(i)/9))
	}
	s.raw(`<text class="note" x="%.1f" y="%.1f">last trial</text>`, x+4, y+8)
}

func esc(s string) string { return html.EscapeString(s) }
