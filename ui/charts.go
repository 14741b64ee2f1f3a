package ui

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

const (
	chartW = 520.0
	chartH = 300.0
	smallW = 340.0
	smallH = 240.0
)

// plotArea returns the pixel ranges of a chart's plot area.
func plotArea(w, h float64) (x0, x1, y0, y1 float64) {
	return marginL, w - marginR, h - marginB, marginT + 12
}

// traceChart is target i's optimization trace: each successful trial's
// value by trial id, coloured by order (a reused result as a cross), and
// the best so far as a step line.
func (m *model) traceChart(i int) template.HTML {
	o := m.objs[i]
	var pts []point
	var xs, ys, bx, by []float64
	best := math.NaN()
	for k, t := range m.ok {
		v, ok := m.value(t, i)
		if !ok {
			continue
		}
		xs, ys = append(xs, float64(t.ID)), append(ys, v)
		pts = append(pts, point{x: float64(t.ID), y: v, trial: t.ID, colour: orderColourBucketed(k, len(m.ok)), reused: t.ReusedFrom != nil,
			title: fmt.Sprintf("trial %d: %s = %s", t.ID, o.Name, num(v))})
		// A multi-fidelity run's lower-fidelity result is drawn but is
		// never the best so far, as it is never the best (model.best).
		if !trial.LowFidelity(t.Metadata) && (math.IsNaN(best) || (o.Max && v > best) || (!o.Max && v < best)) {
			if !math.IsNaN(best) {
				bx, by = append(bx, float64(t.ID)), append(by, best)
			}
			best = v
		}
		if !math.IsNaN(best) {
			bx, by = append(bx, float64(t.ID)), append(by, best)
		}
	}
	dir := "min"
	if o.Max {
		dir = "max"
	}
	s := newSVG(chartW, chartH, "optimization trace of "+o.Name)
	x0, x1, y0, y1 := plotArea(chartW, chartH)
	xsc, ysc := newScale(xs, x0, x1, false), newScale(ys, y0, y1, false)
	s.axes(xsc, ysc, "trial", o.Name+" ("+dir+")")
	s.polyline(xsc, ysc, bx, by, "best", "#d62728")
	s.scatter(xsc, ysc, pts, 3.5)
	s.orderLegend(x1-70, 4)
	s.raw(`<text class="note" x="%.1f" y="12" fill="#d62728">— best so far</text>`, x0)
	return template.HTML(s.String())
}

// maxLines caps the parallel coordinates' polylines: past it, the best
// quarter and an even sample of the rest are drawn.
const maxLines = 3000

// parallelChart draws one polyline per successful trial across an axis
// per tunable and per target, coloured by the first target (dark: best).
func (m *model) parallelChart() (template.HTML, int) {
	type axis struct {
		name string
		sc   scale
		get  func(storage.Trial) (float64, bool)
	}
	n := len(m.params) + len(m.objs)
	w := math.Max(chartW, float64(n)*110+40)
	h := chartH + 40
	s := newSVG(w, h, "parallel coordinates")
	var axes []axis
	step := (w - 80) / math.Max(1, float64(n-1))
	y0, y1 := h-50, 30.0
	for k, p := range m.params {
		p := p
		ax := axis{name: p.name, get: p.x}
		if p.numeric {
			var vs []float64
			for _, t := range m.ok {
				if v, ok := p.x(t); ok {
					vs = append(vs, v)
				}
			}
			ax.sc = newScale(vs, y0, y1, p.log)
		} else {
			ax.sc = catScale(p.cats, y0, y1)
		}
		_ = k
		axes = append(axes, ax)
	}
	for i, o := range m.objs {
		i := i
		var vs []float64
		for _, t := range m.ok {
			if v, ok := m.value(t, i); ok {
				vs = append(vs, v)
			}
		}
		axes = append(axes, axis{name: o.Name, sc: newScale(vs, y0, y1, false), get: func(t storage.Trial) (float64, bool) { return m.value(t, i) }})
	}
	// Colour by the first target's rank (dark = best).
	trials := m.ok
	ranks := make(map[int]float64, len(trials))
	idx := make([]int, len(trials))
	for k := range idx {
		idx[k] = k
	}
	sort.SliceStable(idx, func(a, b int) bool {
		sa, _ := m.score(trials[idx[a]], 0)
		sb, _ := m.score(trials[idx[b]], 0)
		return sa < sb
	})
	for r, k := range idx {
		ranks[trials[k].ID] = float64(r) / math.Max(1, float64(len(trials)-1))
	}
	draw := slices.Clone(trials)
	if len(trials) > maxLines {
		draw = nil
		keep := map[int]bool{}
		for _, k := range idx[:maxLines/4] {
			keep[k] = true
		}
		stride := float64(len(trials)) / float64(maxLines-maxLines/4)
		for f := 0.0; int(f) < len(trials); f += stride {
			keep[int(f)] = true
		}
		for k, t := range trials {
			if keep[k] {
				draw = append(draw, t)
			}
		}
	}
	// Worst first, so that the best lines are on top.
	sort.SliceStable(draw, func(a, b int) bool { return ranks[draw[a].ID] > ranks[draw[b].ID] })
	for _, t := range draw {
		var b strings.Builder
		for k, ax := range axes {
			v, ok := ax.get(t)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "%.1f,%.1f ", 40+float64(k)*step, ax.sc.px(v))
		}
		s.raw(`<polyline class="line" data-trial="%d" fill="none" stroke="%s" points="%s"><title>trial %d</title></polyline>`,
			t.ID, ramp(0.85*ranks[t.ID]), strings.TrimSpace(b.String()), t.ID)
	}
	for k, ax := range axes {
		x := 40 + float64(k)*step
		s.raw(`<line class="paxis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, y0, x, y1)
		for _, t := range ax.sc.ticks(5) {
			lbl := t.label
			if len(lbl) > 10 {
				lbl = lbl[:9] + "…"
			}
			s.raw(`<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, x-3, ax.sc.px(t.v)+4, esc(lbl))
		}
		name := ax.name
		if ax.sc.log {
			name += " (log)"
		}
		s.raw(`<text class="axis" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, h-28, esc(name))
	}
	s.raw(`<text class="note" x="40" y="14">colour: %s, dark = best</text>`, esc(m.objs[0].Name))
	return template.HTML(s.String()), len(draw)
}

// importanceChart draws one bar per tunable.
func (m *model) importanceChart(rows []importanceRow) template.HTML {
	h := 40 + float64(len(rows))*22
	s := newSVG(chartW, h, "parameter importance")
	x0, x1 := 150.0, chartW-60
	for k, r := range rows {
		y := 20 + float64(k)*22
		s.raw(`<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, x0-6, y+12, esc(r.name))
		s.raw(`<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="16" fill="#3b528b"><title>%s: %.1f%% (η² %.3f)</title></rect>`,
			x0, y, math.Max(1, (x1-x0)*r.share), esc(r.name), 100*r.share, r.raw)
		s.raw(`<text class="tick" x="%.1f" y="%.1f">%.0f%%</text>`, x0+(x1-x0)*r.share+4, y+12, 100*r.share)
	}
	return template.HTML(s.String())
}

// sliceChart draws target i against one tunable, coloured by order.
func (m *model) sliceChart(p param, i int) (template.HTML, int) {
	var pts []point
	var xs, ys []float64
	for k, t := range m.ok {
		x, okx := p.x(t)
		y, oky := m.value(t, i)
		if !okx || !oky {
			continue
		}
		if !p.numeric {
			x += jitter(t.ID)
		}
		xs, ys = append(xs, x), append(ys, y)
		pts = append(pts, point{x: x, y: y, trial: t.ID, colour: orderColourBucketed(k, len(m.ok)), reused: t.ReusedFrom != nil,
			title: fmt.Sprintf("trial %d: %s = %s, %s = %s", t.ID, p.name, t.Params[p.name], m.objs[i].Name, num(y))})
	}
	s := newSVG(smallW, smallH, "slice of "+m.objs[i].Name+" by "+p.name)
	x0, x1, y0, y1 := plotArea(smallW, smallH)
	var xsc scale
	if p.numeric {
		xsc = newScale(xs, x0, x1, p.log)
	} else {
		xsc = catScale(p.cats, x0, x1)
	}
	ysc := newScale(ys, y0, y1, false)
	s.axes(xsc, ysc, p.name, m.objs[i].Name)
	s.scatter(xsc, ysc, pts, 3)
	return template.HTML(s.String()), len(pts)
}

// jitter spreads the points of one category a little, the same way for a
// trial every time.
func jitter(id int) float64 {
	h := uint32(id)*2654435761 ^ 0x9e3779b9
	return (float64(h%1000)/1000 - 0.5) * 0.3
}

// contourCells is the contour's grid size per side.
const contourCells = 28

// contourMethod says how the contour is drawn.
const contourMethod = "filled contour of the target over the chosen pair: the target is interpolated on a 28×28 grid by inverse-distance weighting (power 2, in the axes' scaled coordinates) and cut into 8 bands; dots are the trials, coloured by order"

// contourChart draws target i over tunables px (x) and py (y).
func (m *model) contourChart(px, py param, i int) (template.HTML, int) {
	type obs struct{ fx, fy, v float64 }
	var pts []point
	var xs, ys []float64
	var vals []float64
	for k, t := range m.ok {
		x, okx := px.x(t)
		y, oky := py.x(t)
		v, okv := m.value(t, i)
		if !okx || !oky || !okv {
			continue
		}
		xs, ys, vals = append(xs, x), append(ys, y), append(vals, v)
		pts = append(pts, point{x: x, y: y, trial: t.ID, colour: orderColourBucketed(k, len(m.ok)), reused: t.ReusedFrom != nil, extra: "dot",
			title: fmt.Sprintf("trial %d: %s = %s, %s = %s, %s = %s", t.ID, px.name, t.Params[px.name], py.name, t.Params[py.name], m.objs[i].Name, num(v))})
	}
	const w, h = chartW, chartH + 40
	s := newSVG(w, h, "contour of "+m.objs[i].Name+" over "+px.name+" and "+py.name)
	x0, x1, y0, y1 := marginL, w-90, h-marginB, marginT+12
	axisOf := func(p param, vs []float64, a, b float64) scale {
		if p.numeric {
			return newScale(vs, a, b, p.log)
		}
		return catScale(p.cats, a, b)
	}
	xsc, ysc := axisOf(px, xs, x0, x1), axisOf(py, ys, y0, y1)
	if len(vals) >= 3 {
		lo, hi := vals[0], vals[0]
		for _, v := range vals {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		// Observations in [0,1]² of the axes.
		ob := make([]obs, len(vals))
		for k := range vals {
			ob[k] = obs{(xsc.px(xs[k]) - x0) / (x1 - x0), (ysc.px(ys[k]) - y0) / (y1 - y0), vals[k]}
		}
		cw, ch := (x1-x0)/contourCells, (y1-y0)/contourCells
		for gx := 0; gx < contourCells; gx++ {
			for gy := 0; gy < contourCells; gy++ {
				cx, cy := (float64(gx)+0.5)/contourCells, (float64(gy)+0.5)/contourCells
				num, den := 0.0, 0.0
				exact := math.NaN()
				for _, o := range ob {
					d := (o.fx-cx)*(o.fx-cx) + (o.fy-cy)*(o.fy-cy)
					if d < 1e-12 {
						exact = o.v
						break
					}
					num += o.v / d
					den += 1 / d
				}
				v := exact
				if math.IsNaN(v) {
					v = num / den
				}
				f := 0.0
				if hi > lo {
					f = (v - lo) / (hi - lo)
				}
				if m.objs[i].Max {
					f = 1 - f
				}
				band := math.Min(7, math.Floor(f*8)) / 7 // 0 best … 1 worst
				s.raw(`<rect class="cell" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`,
					x0+float64(gx)*cw, y0+float64(gy+1)*ch, cw+0.4, -ch+0.4, heat(band))
			}
		}
		// Legend of the bands.
		for b := 0; b < 8; b++ {
			s.raw(`<rect x="%.1f" y="%.1f" width="14" height="14" fill="%s"/>`, x1+14, y1+float64(b)*16, heat(float64(b)/7))
		}
		s.raw(`<text class="note" x="%.1f" y="%.1f">better</text>`, x1+32, y1+11)
		s.raw(`<text class="note" x="%.1f" y="%.1f">worse</text>`, x1+32, y1+7*16+11)
	}
	s.axes(xsc, ysc, px.name, py.name)
	s.scatter(xsc, ysc, pts, 3)
	return template.HTML(s.String()), len(pts)
}

// heat is a band's colour, 0 (best, blue) to 1 (worst, orange-red).
func heat(f float64) string {
	stops := [][3]float64{{49, 54, 149}, {116, 173, 209}, {224, 243, 248}, {253, 174, 97}, {215, 48, 39}}
	x := math.Max(0, math.Min(1, f)) * float64(len(stops)-1)
	k := int(math.Floor(x))
	if k >= len(stops)-1 {
		k = len(stops) - 2
	}
	u := x - float64(k)
	return fmt.Sprintf("#%02x%02x%02x", int(stops[k][0]+(stops[k+1][0]-stops[k][0])*u), int(stops[k][1]+(stops[k+1][1]-stops[k][1])*u), int(stops[k][2]+(stops[k+1][2]-stops[k][2])*u))
}

// paretoCharts draws targets a and b of the successful trials with the
// Pareto front over every target, and the front's hypervolume over time.
func (m *model) paretoCharts(a, b int) (front template.HTML, hvChart template.HTML, nFront int, hvNow float64, ref []float64) {
	var vecs [][]float64
	var trials []storage.Trial
	for _, t := range m.ok {
		v := make([]float64, len(m.objs))
		ok := true
		for i := range m.objs {
			if v[i], ok = m.score(t, i); !ok {
				break
			}
		}
		if ok {
			vecs, trials = append(vecs, v), append(trials, t)
		}
	}
	// Reference point: the worst value of each target, plus a tenth of
	// its range (so that the extreme points count).
	ref = make([]float64, len(m.objs))
	for i := range m.objs {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range vecs {
			lo, hi = math.Min(lo, v[i]), math.Max(hi, v[i])
		}
		span := hi - lo
		if span == 0 {
			span = math.Max(math.Abs(hi), 1)
		}
		ref[i] = hi + span/10
	}
	onFront := map[int]bool{}
	for _, k := range paretoFront(vecs) {
		onFront[k] = true
	}
	nFront = len(onFront)
	var pts []point
	var xs, ys []float64
	var fx, fy []float64
	for k, t := range trials {
		x, _ := m.value(t, a)
		y, _ := m.value(t, b)
		xs, ys = append(xs, x), append(ys, y)
		p := point{x: x, y: y, trial: t.ID, colour: orderColourBucketed(k, len(trials)), reused: t.ReusedFrom != nil,
			title: fmt.Sprintf("trial %d: %s = %s, %s = %s", t.ID, m.objs[a].Name, num(x), m.objs[b].Name, num(y))}
		if onFront[k] {
			p.extra = "front"
			fx, fy = append(fx, x), append(fy, y)
		}
		pts = append(pts, p)
	}
	s := newSVG(chartW, chartH, "Pareto front")
	x0, x1, y0, y1 := plotArea(chartW, chartH)
	xsc, ysc := newScale(xs, x0, x1, false), newScale(ys, y0, y1, false)
	s.axes(xsc, ysc, m.objs[a].Name+dirSuffix(m.objs[a].Max), m.objs[b].Name+dirSuffix(m.objs[b].Max))
	if len(m.objs) == 2 {
		ord := make([]int, len(fx))
		for k := range ord {
			ord[k] = k
		}
		sort.Slice(ord, func(p, q int) bool { return fx[ord[p]] < fx[ord[q]] })
		var sx, sy []float64
		for _, k := range ord {
			sx, sy = append(sx, fx[k]), append(sy, fy[k])
		}
		s.polyline(xsc, ysc, sx, sy, "frontline", "#d62728")
	}
	s.scatter(xsc, ysc, pts, 3.5)
	s.orderLegend(x1-70, 4)
	s.raw(`<text class="note" x="%.1f" y="12" fill="#d62728">ringed: Pareto front (%d)</text>`, x0, nFront)
	front = template.HTML(s.String())

	// Hypervolume after each trial, by trial id.
	var hx, hy []float64
	var cur [][]float64
	for k, t := range trials {
		// A point the front already covers changes nothing; otherwise
		// it joins the front and evicts the points it covers.
		covered := false
		for _, q := range cur {
			if weaklyDominates(q, vecs[k]) {
				covered = true
				break
			}
		}
		if !covered {
			kept := cur[:0:0]
			for _, q := range cur {
				if !weaklyDominates(vecs[k], q) {
					kept = append(kept, q)
				}
			}
			cur = append(kept, vecs[k])
			hvNow = hypervolume(cur, ref)
		}
		hx, hy = append(hx, float64(t.ID)), append(hy, hvNow)
	}
	h := newSVG(chartW, chartH, "hypervolume over time")
	xsc, ysc = newScale(hx, x0, x1, false), newScale(append(hy, 0), y0, y1, false)
	h.axes(xsc, ysc, "trial", "hypervolume")
	h.polyline(xsc, ysc, hx, hy, "hv", "#3b528b")
	hvChart = template.HTML(h.String())
	return front, hvChart, nFront, hvNow, ref
}

func dirSuffix(max bool) string {
	if max {
		return " (max)"
	}
	return " (min)"
}

// telemetryCharts draws each numeric telemetry metric of a trial over
// time (seconds since its first sample).
func telemetryCharts(tel []storage.Telemetry) []template.HTML {
	series := map[string][][2]float64{}
	var names []string
	if len(tel) == 0 {
		return nil
	}
	t0 := tel[0].Ts
	for _, s := range tel {
		if s.Ts.Before(t0) {
			t0 = s.Ts
		}
	}
	for _, s := range tel {
		v, ok := storage.Metrics{"v": s.Value}.Float("v")
		if !ok {
			continue
		}
		if _, seen := series[s.Metric]; !seen {
			names = append(names, s.Metric)
		}
		series[s.Metric] = append(series[s.Metric], [2]float64{s.Ts.Sub(t0).Seconds(), v})
	}
	sort.Strings(names)
	var out []template.HTML
	for _, n := range names {
		ps := series[n]
		sort.SliceStable(ps, func(a, b int) bool { return ps[a][0] < ps[b][0] })
		var xs, ys []float64
		var pts []point
		for _, p := range ps {
			xs, ys = append(xs, p[0]), append(ys, p[1])
			pts = append(pts, point{x: p[0], y: p[1], colour: "#3b528b", title: fmt.Sprintf("%s = %s at %ss", n, num(p[1]), num(p[0]))})
		}
		s := newSVG(smallW, smallH, "telemetry "+n)
		x0, x1, y0, y1 := plotArea(smallW, smallH)
		xsc, ysc := newScale(xs, x0, x1, false), newScale(ys, y0, y1, false)
		s.axes(xsc, ysc, "seconds", n)
		s.polyline(xsc, ysc, xs, ys, "tel", "#3b528b")
		s.scatter(xsc, ysc, pts, 2.5)
		out = append(out, template.HTML(s.String()))
	}
	return out
}
