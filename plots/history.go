package plots

import (
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/internal/stats"
)

var red = color.RGBA{R: 214, G: 39, B: 40, A: 255}

// History draws a bench ci history series (bench ci history METRIC
// --plot): each run's median by run, the level of each segment between
// change points as a step line, and a red marker where each change point
// began (its commit in the legend).
func History(metric string, pts []ci.SeriesPoint, cps []ci.SeriesChange) (*Figure, error) {
	if len(pts) == 0 {
		return nil, errors.New("no runs to plot")
	}
	p := newPlot(fmt.Sprintf("History of %s [%s]", metric, pts[0].Config), fmt.Sprintf("run (%d runs)", len(pts)), metric+" (median of the run)")
	xy := make(plotter.XYs, len(pts))
	for i, q := range pts {
		xy[i] = plotter.XY{X: float64(i + 1), Y: q.Median}
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color = blue
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	sc.GlyphStyle.Radius = vg.Points(2.5)
	// Segment levels: the median of each segment.
	var level plotter.XYs
	start := 0
	ends := make([]int, 0, len(cps)+1)
	for _, c := range cps {
		ends = append(ends, c.Index)
	}
	ends = append(ends, len(pts))
	for _, end := range ends {
		vals := make([]float64, 0, end-start)
		for _, q := range pts[start:end] {
			vals = append(vals, q.Median)
		}
		m := stats.Median(vals)
		level = append(level, plotter.XY{X: float64(start) + 0.5, Y: m}, plotter.XY{X: float64(end) + 0.5, Y: m})
		start = end
	}
	ln, err := plotter.NewLine(level)
	if err != nil {
		return nil, err
	}
	ln.Color = orange
	ln.Width = vg.Points(1.5)
	p.Add(ln, sc)
	p.Legend.Add("run median", sc)
	p.Legend.Add("level between change points", ln)
	for _, c := range cps {
		mk, err := plotter.NewScatter(plotter.XYs{{X: float64(c.Index + 1), Y: pts[c.Index].Median}})
		if err != nil {
			return nil, err
		}
		mk.GlyphStyle.Color = red
		mk.GlyphStyle.Shape = draw.CrossGlyph{}
		mk.GlyphStyle.Radius = vg.Points(6)
		p.Add(mk)
		p.Legend.Add(fmt.Sprintf("change at run %d (%s): %s, p=%.3g", c.Index+1, shortCommit(c.Commit), ci.FormatChange(c.Change), c.P), mk)
	}
	p.Legend.Top = true
	pad(p, 0.04, 0.25, true)
	return newFigure("history", fmt.Sprintf("History of %s with change points (E-divisive means)", metric), p), nil
}

func shortCommit(c string) string {
	if c == "" {
		return "no commit"
	}
	if len(c) > 10 {
		return c[:10]
	}
	return c
}
