// Package plots draws an experiment's figures with gonum.org/v1/plot —
// the optimization trace, each tunable against the score, the Pareto
// front of two targets, a trial's telemetry over time and the comparison
// of two sides of bench compare — and writes bench report's
// self-contained HTML page.
package plots

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// ErrNoData is wrapped when there is nothing to draw (no successful trial
// with a numeric score, no numeric telemetry, ...).
var ErrNoData = errors.New("nothing to plot")

// Figure is one image: one plot, or several drawn one under another.
type Figure struct {
	// Name is the file name without extension: trace, tunable-NAME,
	// pareto, telemetry-trial-N, compare.
	Name string
	// Title says what the figure shows (the report's caption).
	Title string
	plots []*plot.Plot
	// w and h are the size of one plot.
	w, h vg.Length
}

// Default size of one plot.
const (
	width  = 6 * vg.Inch
	height = 4 * vg.Inch
)

func newFigure(name, title string, ps ...*plot.Plot) *Figure {
	return &Figure{Name: name, Title: title, plots: ps, w: width, h: height}
}

// Formats are the image formats Render writes.
var Formats = []string{"png", "svg"}

// Render draws the figure as PNG (at dpi, 0: 96) or SVG. A panic of the
// plotting library (on data it cannot draw) is returned as an error.
func (f *Figure) Render(format string, dpi int) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("drawing %s: %v", f.Name, r)
		}
	}()
	if len(f.plots) == 0 {
		return nil, fmt.Errorf("%w: figure %s is empty", ErrNoData, f.Name)
	}
	w, h := f.w, f.h*vg.Length(len(f.plots))
	var buf bytes.Buffer
	switch format {
	case "png":
		if dpi <= 0 {
			dpi = 96
		}
		c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
		f.draw(draw.New(c))
		if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
			return nil, err
		}
	case "svg":
		c := vgsvg.New(w, h)
		dc := draw.New(c)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		f.draw(dc)
		if _, err := c.WriteTo(&buf); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown image format %q (png or svg)", format)
	}
	return buf.Bytes(), nil
}

func (f *Figure) draw(dc draw.Canvas) {
	if len(f.plots) == 1 {
		f.plots[0].Draw(dc)
		return
	}
	rows := make([][]*plot.Plot, len(f.plots))
	for i, p := range f.plots {
		rows[i] = []*plot.Plot{p}
	}
	cs := plot.Align(rows, draw.Tiles{Rows: len(rows), Cols: 1, PadY: vg.Points(6)}, dc)
	for i := range rows {
		rows[i][0].Draw(cs[i][0])
	}
}

// Write renders the figure in each format into dir as NAME.FORMAT and
// returns the paths written.
func (f *Figure) Write(dir string, formats []string) ([]string, error) {
	var out []string
	for _, format := range formats {
		b, err := f.Render(format, 0)
		if err != nil {
			return out, err
		}
		p := filepath.Join(dir, f.Name+"."+format)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ImageFile reports whether path ends in .png or .svg (any case).
func ImageFile(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".png" || ext == ".svg"
}

// WriteFile renders the figure into path, in the format its extension
// names (.png or .svg).
func (f *Figure) WriteFile(path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != "png" && format != "svg" {
		return fmt.Errorf("%s: the file name must end in .png or .svg", path)
	}
	b, err := f.Render(format, 0)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// objective returns the experiment's i-th objective and whether larger is
// better.
func objective(info storage.ExperimentInfo, i int) (string, bool, error) {
	if len(info.Objectives) <= i {
		return "", false, fmt.Errorf("%w: experiment %s has %d objective(s)", ErrNoData, info.ID, len(info.Objectives))
	}
	o := info.Objectives[i]
	return o.Name, o.Direction == "max", nil
}

func dirWord(max bool) string {
	if max {
		return "larger is better"
	}
	return "smaller is better"
}

// value is a successful trial's finite numeric result name.
func value(t storage.Trial, name string) (float64, bool) {
	if t.Status != trial.SUCCEEDED {
		return 0, false
	}
	v, ok := t.Results.Float(name)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

func byID(trials []storage.Trial) []storage.Trial {
	out := append([]storage.Trial(nil), trials...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func noScores(info storage.ExperimentInfo, name string, trials []storage.Trial) error {
	if len(trials) == 0 {
		return fmt.Errorf("%w: experiment %s has no trials", ErrNoData, info.ID)
	}
	ok := 0
	for _, t := range trials {
		if t.Status == trial.SUCCEEDED {
			ok++
		}
	}
	if ok == 0 {
		return fmt.Errorf("%w: experiment %s has no successful trial (of %d)", ErrNoData, info.ID, len(trials))
	}
	return fmt.Errorf("%w: none of the %d successful trials of experiment %s has a numeric %q result", ErrNoData, ok, info.ID, name)
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Y.Tick.Marker = denseTicks{}
	p.X.Tick.Marker = denseTicks{}
	return p
}

func sortInts(a []int) { sort.Ints(a) }

// pad widens the axes' ranges (set from the data by Add) so that no
// point sits on an axis: by frac of the range on each side, and by legend
// more at the top (or bottom) where the legend sits.
func pad(p *plot.Plot, frac, legend float64, top bool) {
	padAxis := func(a *plot.Axis, lo, hi float64) {
		d := a.Max - a.Min
		if d == 0 {
			d = math.Max(math.Abs(a.Max), 1)
		}
		a.Min -= d * lo
		a.Max += d * hi
	}
	padAxis(&p.X, frac, frac)
	if top {
		padAxis(&p.Y, frac, frac+legend)
	} else {
		padAxis(&p.Y, frac+legend, frac)
	}
}

var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	grey   = color.RGBA{R: 150, G: 150, B: 150, A: 255}
)

// Trace is the optimization trace: each successful trial's score by trial
// id, coloured by trial order (a reused result as a cross), and the best
// score so far as a step line (the largest for a max objective); one plot
// per objective, one under another.
func Trace(info storage.ExperimentInfo, trials []storage.Trial) (*Figure, error) {
	if _, _, err := objective(info, 0); err != nil {
		return nil, err
	}
	var ps []*plot.Plot
	var names []string
	for i := range info.Objectives {
		name, max, _ := objective(info, i)
		p, err := tracePlot(info, trials, name, max)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			continue // a later target without scores: the others are drawn
		}
		ps = append(ps, p)
		names = append(names, name)
	}
	title := fmt.Sprintf("Optimization trace: %s by trial, and the best so far", strings.Join(names, ", "))
	if len(info.Objectives) == 1 {
		_, max, _ := objective(info, 0)
		title += " (" + dirWord(max) + ")"
	}
	return newFigure("trace", title, ps...), nil
}

func tracePlot(info storage.ExperimentInfo, trials []storage.Trial, name string, max bool) (*plot.Plot, error) {
	pts, best := traceSeries(trials, name, max)
	if len(pts) == 0 {
		return nil, noScores(info, name, trials)
	}
	p := newPlot(fmt.Sprintf("Optimization trace of %s: %s", info.ID, name),
		fmt.Sprintf("trial (%d of %d trials scored)", len(pts), len(trials)),
		fmt.Sprintf("%s (%s)", name, dirWord(max)))
	ln, err := plotter.NewLine(best)
	if err != nil {
		return nil, err
	}
	ln.StepStyle = plotter.PostStep
	ln.Color = orange
	ln.Width = vg.Points(1.5)
	p.Add(ln)
	p.Legend.Add("best so far", ln)
	var ops []orderPoint
	for _, t := range byID(trials) {
		if v, ok := value(t, name); ok {
			ops = append(ops, orderPoint{XY: plotter.XY{X: float64(t.ID), Y: v}, ID: t.ID, Reused: reusedTrial(t)})
		}
	}
	if err := addOrdered(p, ops); err != nil {
		return nil, err
	}
	// The legend sits where the best-so-far line is not heading.
	p.Legend.Top = !max
	pad(p, 0.04, 0.25, p.Legend.Top)
	return p, nil
}

// traceSeries returns each successful trial's finite numeric result name
// by trial id, and the best value so far at each (the largest when max).
func traceSeries(trials []storage.Trial, name string, max bool) (pts, best plotter.XYs) {
	cur, have := 0.0, false
	for _, t := range byID(trials) {
		v, ok := value(t, name)
		if !ok {
			continue
		}
		pts = append(pts, plotter.XY{X: float64(t.ID), Y: v})
		// A multi-fidelity run's lower-fidelity result is drawn but is
		// never the best so far, as it is never the best trial
		// (storage.Best).
		if !trial.LowFidelity(t.Metadata) && (!have || (max && v > cur) || (!max && v < cur)) {
			cur, have = v, true
		}
		if have {
			best = append(best, plotter.XY{X: float64(t.ID), Y: cur})
		}
	}
	return pts, best
}

// Tunables draws each tunable against the score (the first objective),
// one figure per tunable, in name order. A tunable whose values are all
// numbers is a numeric axis; any other is categorical, one column per
// value (points spread a little sideways so that equal ones show).
func Tunables(info storage.ExperimentInfo, trials []storage.Trial) ([]*Figure, error) {
	return TunablesWith(info, trials, Options{})
}

// TunablesWith is Tunables drawn with the options: a numeric tunable named
// in opt.LogX (or spanning three decades or more) is on a log axis.
func TunablesWith(info storage.ExperimentInfo, trials []storage.Trial, opt Options) ([]*Figure, error) {
	name, max, err := objective(info, 0)
	if err != nil {
		return nil, err
	}
	type point struct {
		id     int
		param  string
		score  float64
		reused bool
	}
	byParam := map[string][]point{}
	scored := 0
	for _, t := range byID(trials) {
		v, ok := value(t, name)
		if !ok {
			continue
		}
		scored++
		for k, pv := range t.Params {
			byParam[k] = append(byParam[k], point{t.ID, pv, v, reusedTrial(t)})
		}
	}
	if scored == 0 {
		return nil, noScores(info, name, trials)
	}
	params := make([]string, 0, len(byParam))
	for k := range byParam {
		params = append(params, k)
	}
	sort.Strings(params)
	var out []*Figure
	used := map[string]bool{}
	for _, param := range params {
		pts := byParam[param]
		numeric := true
		for _, pt := range pts {
			if f, err := strconv.ParseFloat(pt.param, 64); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				numeric = false
				break
			}
		}
		xy := make(plotter.XYs, len(pts))
		var cats []string
		if numeric {
			for i, pt := range pts {
				f, _ := strconv.ParseFloat(pt.param, 64)
				xy[i] = plotter.XY{X: f, Y: pt.score}
			}
		} else {
			idx := map[string]int{}
			for _, pt := range pts {
				if _, ok := idx[pt.param]; !ok {
					idx[pt.param] = 0
					cats = append(cats, pt.param)
				}
			}
			sort.Strings(cats)
			for i, c := range cats {
				idx[c] = i
			}
			for i, pt := range pts {
				xy[i] = plotter.XY{X: float64(idx[pt.param]) + jitter(pt.id), Y: pt.score}
			}
		}
		kind := "numeric"
		logX := false
		if !numeric {
			kind = "categorical"
		} else {
			xs := make([]float64, len(xy))
			for i := range xy {
				xs[i] = xy[i].X
			}
			if logX = opt.useLog(param, xs); logX {
				kind = "numeric, log scale"
			}
		}
		p := newPlot(fmt.Sprintf("%s against %s", name, param), fmt.Sprintf("%s (%s)", param, kind), fmt.Sprintf("%s (%s)", name, dirWord(max)))
		ops := make([]orderPoint, len(pts))
		for i, pt := range pts {
			ops[i] = orderPoint{XY: xy[i], ID: pt.id, Reused: pt.reused}
		}
		if err := addOrdered(p, ops); err != nil {
			return nil, err
		}
		p.Legend.Top = true
		pad(p, 0.05, 0.25, true)
		if logX {
			xs := make([]float64, len(xy))
			for i := range xy {
				xs[i] = xy[i].X
			}
			setLogX(p, xs)
		}
		if !numeric {
			p.NominalX(cats...)
			p.X.Min, p.X.Max = -0.5, float64(len(cats))-0.5
		}
		out = append(out, newFigure(uniqueName(used, "tunable-"+fileSafe(param)),
			fmt.Sprintf("Tunable %s (%s) against %s", param, kind, name), p))
	}
	return out, nil
}

// jitter spreads points of one category by up to ±0.2, the same for a
// trial id every time.
func jitter(id int) float64 {
	h := fnv.New32a()
	fmt.Fprint(h, id)
	return (float64(h.Sum32()%1000)/999 - 0.5) * 0.4
}

// fileSafe keeps letters, digits, '.', '_' and '-' of s and turns any
// other character into '_'.
func fileSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.' && b.Len() > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

func uniqueName(used map[string]bool, name string) string {
	n := name
	for i := 2; used[n]; i++ {
		n = name + "-" + strconv.Itoa(i)
	}
	used[n] = true
	return n
}

// Pareto draws the first two objectives of the successful trials against
// each other and marks the Pareto front (the trials no other one beats
// on both). It returns nil, nil when the experiment has fewer than two
// objectives.
func Pareto(info storage.ExperimentInfo, trials []storage.Trial) (*Figure, error) {
	if len(info.Objectives) < 2 {
		return nil, nil
	}
	xn, xmax, _ := objective(info, 0)
	yn, ymax, _ := objective(info, 1)
	var pts plotter.XYs
	var ops []orderPoint
	var ys [][]float64
	for _, t := range byID(trials) {
		x, okx := value(t, xn)
		y, oky := value(t, yn)
		if !okx || !oky {
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: y})
		ops = append(ops, orderPoint{XY: plotter.XY{X: x, Y: y}, ID: t.ID, Reused: reusedTrial(t)})
		sx, sy := x, y
		if xmax {
			sx = -sx
		}
		if ymax {
			sy = -sy
		}
		ys = append(ys, []float64{sx, sy})
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%w: no successful trial of experiment %s has numeric %q and %q results", ErrNoData, info.ID, xn, yn)
	}
	var front plotter.XYs
	for _, i := range trial.ParetoFront(ys) {
		front = append(front, pts[i])
	}
	sort.Slice(front, func(i, j int) bool {
		if front[i].X != front[j].X {
			return front[i].X < front[j].X
		}
		return front[i].Y < front[j].Y
	})
	p := newPlot(fmt.Sprintf("Pareto front of %s", info.ID),
		fmt.Sprintf("%s (%s)", xn, dirWord(xmax)), fmt.Sprintf("%s (%s)", yn, dirWord(ymax)))
	fl, fp, err := plotter.NewLinePoints(front)
	if err != nil {
		return nil, err
	}
	fl.Color = orange
	fl.Width = vg.Points(1.5)
	fp.GlyphStyle.Color = orange
	fp.GlyphStyle.Shape = draw.CircleGlyph{}
	fp.GlyphStyle.Shape = draw.RingGlyph{}
	fp.GlyphStyle.Radius = vg.Points(5)
	p.Add(fl, fp)
	p.Legend.Add(fmt.Sprintf("Pareto front (%d)", len(front)), fl, fp)
	if err := addOrdered(p, ops); err != nil {
		return nil, err
	}
	p.Legend.Top = true
	pad(p, 0.05, 0.25, true)
	return newFigure("pareto", fmt.Sprintf("Pareto front of %s and %s (%d of %d trials on it)", xn, yn, len(front), len(pts)), p), nil
}

// Telemetry draws a trial's numeric telemetry over time, one line per
// metric, against the seconds since the trial started (or since its first
// sample).
func Telemetry(d storage.TrialDetail) (*Figure, error) {
	series := map[string]plotter.XYs{}
	var t0 = d.TsStart
	for _, s := range d.Telemetry {
		if t0.IsZero() || s.Ts.Before(t0) {
			t0 = s.Ts
		}
	}
	skipped := 0
	for _, s := range d.Telemetry {
		v, ok := trial.Numeric(s.Value)
		if !ok || math.IsInf(v, 0) || math.IsNaN(v) {
			skipped++
			continue
		}
		series[s.Metric] = append(series[s.Metric], plotter.XY{X: s.Ts.Sub(t0).Seconds(), Y: v})
	}
	if len(series) == 0 {
		if len(d.Telemetry) == 0 {
			return nil, fmt.Errorf("%w: trial %d has no telemetry", ErrNoData, d.ID)
		}
		return nil, fmt.Errorf("%w: trial %d has no numeric telemetry (%d non-numeric samples)", ErrNoData, d.ID, skipped)
	}
	names := make([]string, 0, len(series))
	for k := range series {
		names = append(names, k)
	}
	sort.Strings(names)
	p := newPlot(fmt.Sprintf("Telemetry of trial %d", d.ID), "seconds since the trial started", "value")
	for i, n := range names {
		xy := series[n]
		sort.SliceStable(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		l, pt, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		pt.GlyphStyle.Color = plotutil.Color(i)
		pt.GlyphStyle.Shape = plotutil.Shape(i)
		pt.GlyphStyle.Radius = vg.Points(2)
		p.Add(l, pt)
		p.Legend.Add(n, l, pt)
	}
	p.Legend.Top = true
	pad(p, 0.04, 0.05*float64(len(names)+1), true)
	return newFigure(fmt.Sprintf("telemetry-trial-%d", d.ID), fmt.Sprintf("Telemetry of trial %d over time (%d numeric metrics)", d.ID, len(names)), p), nil
}

// Compare draws a comparison of bench compare: per row (configuration and
// metric), the samples of the baseline and the current side next to each
// other as dots over a box plot (median, quartiles, whiskers).
func Compare(rep *ci.Report, base, cur *ci.Samples) (*Figure, error) {
	var ps []*plot.Plot
	for _, r := range rep.Rows {
		c := cur.Find(r.Key)
		b := base.Find(r.Key)
		if b == nil && len(base.Configs) == 1 && len(cur.Configs) == 1 {
			b = &base.Configs[0]
		}
		var bv, cv []float64
		if b != nil {
			bv = b.Values[r.Metric]
		}
		if c != nil {
			cv = c.Values[r.Metric]
		}
		if len(bv) == 0 && len(cv) == 0 {
			continue
		}
		title := r.Metric
		if len(rep.Rows) > 1 && r.Config != "" {
			title = r.Config + ": " + r.Metric
		}
		if r.Change != nil {
			title += fmt.Sprintf(" (change of the median %+.1f%%", *r.Change*100)
			if r.P != nil {
				title += fmt.Sprintf(", p=%.3g", *r.P)
			}
			title += ")"
		}
		p := newPlot(title, "", r.Metric)
		for i, vals := range [][]float64{bv, cv} {
			if len(vals) == 0 {
				continue
			}
			col := blue
			if i == 1 {
				col = orange
			}
			if len(vals) >= 2 {
				bp, err := plotter.NewBoxPlot(vg.Points(40), float64(i), plotter.Values(vals))
				if err != nil {
					return nil, err
				}
				bp.BoxStyle.Color = grey
				bp.MedianStyle.Color = grey
				bp.WhiskerStyle.Color = grey
				bp.CapWidth = vg.Points(20)
				p.Add(bp)
			}
			xy := make(plotter.XYs, len(vals))
			for j, v := range vals {
				xy[j] = plotter.XY{X: float64(i) + jitter(j)*0.6, Y: v}
			}
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			sc.GlyphStyle.Radius = vg.Points(2.5)
			p.Add(sc)
		}
		pad(p, 0, 0.05, true)
		p.NominalX(fmt.Sprintf("A: %s (n=%d)", rep.Baseline, len(bv)), fmt.Sprintf("B: %s (n=%d)", rep.Current, len(cv)))
		p.X.Min, p.X.Max = -0.5, 1.5
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%w: %s and %s have no samples to compare", ErrNoData, rep.Baseline, rep.Current)
	}
	f := newFigure("compare", fmt.Sprintf("Comparison of %s (A) and %s (B)", rep.Baseline, rep.Current), ps...)
	f.h = 3 * vg.Inch
	return f, nil
}

// All makes the figures of bench plot: the trace, each tunable against
// the score and, with two or more objectives, the Pareto front. Figures
// that cannot be drawn are left out, each with a note saying why; the
// error is set only when none can be drawn.
func All(info storage.ExperimentInfo, trials []storage.Trial) (figs []*Figure, notes []string, err error) {
	return AllWith(info, trials, Options{})
}

// AllWith is All drawn with the options (log axes).
func AllWith(info storage.ExperimentInfo, trials []storage.Trial, opt Options) (figs []*Figure, notes []string, err error) {
	tr, err := Trace(info, trials)
	if err != nil {
		return nil, nil, err
	}
	figs = append(figs, tr)
	tun, err := TunablesWith(info, trials, opt)
	if err != nil {
		notes = append(notes, "tunables: "+err.Error())
	}
	figs = append(figs, tun...)
	par, err := Pareto(info, trials)
	switch {
	case err != nil:
		notes = append(notes, "pareto: "+err.Error())
	case par == nil:
		notes = append(notes, fmt.Sprintf("pareto: left out, experiment %s has one objective", info.ID))
	default:
		figs = append(figs, par)
	}
	return figs, notes, nil
}
