package optimizers

import (
	"context"
	"fmt"
	"github.com/benchtune/bench/trial"
	"log/slog"
	"strings"

	"github.com/benchtune/bench/tunables"
)

func init() {
	Register(newGrid, names("grid_search_optimizer", "GridSearchOptimizer")...)
}

// MaxGridSize bounds the number of grid points enumerated.
const MaxGridSize = 1_000_000

// Grid enumerates every combination of the tunables' values (all tunables
// must be categorical, int or quantized), the defaults first when
// start_with_defaults is set. Configurations already run (on resume) are
// not run again.
type Grid struct {
	*Base
	names   []string
	points  [][]any
	pending map[string]int // key -> index in points, not yet suggested
	order   []string       // keys in grid order
	pos     int
}

func newGrid(spec Spec) (Optimizer, error) {
	b, err := NewBase("GridSearchOptimizer", spec)
	if err != nil {
		return nil, err
	}
	g := &Grid{Base: b}
	var axes [][]any
	size := 1.0
	for _, t := range b.tunables.Tunables() {
		vals, err := t.GridValues()
		if err != nil {
			return nil, spec.Ref.Errorf("GridSearchOptimizer: %v (grid search needs categorical, int or quantized tunables)", err)
		}
		g.names = append(g.names, t.Name())
		axes = append(axes, vals)
		size *= float64(len(vals))
	}
	if size > MaxGridSize {
		return nil, spec.Ref.Errorf("GridSearchOptimizer: the grid has %.0f points, more than the %d bench enumerates; quantize the tunables more coarsely", size, MaxGridSize)
	}
	if size > 10000 {
		slog.Warn("large grid search", "points", int(size))
	}
	if int(size) > b.maxSuggestions {
		slog.Warn("grid search has more points than max_suggestions", "points", int(size), "max_suggestions", b.maxSuggestions)
	}
	g.points = product(axes)
	g.reset()
	return g, nil
}

func product(axes [][]any) [][]any {
	out := [][]any{{}}
	for _, axis := range axes {
		next := make([][]any, 0, len(out)*len(axis))
		for _, prefix := range out {
			for _, v := range axis {
				p := append(append(make([]any, 0, len(prefix)+1), prefix...), v)
				next = append(next, p)
			}
		}
		out = next
	}
	return out
}

func (g *Grid) reset() {
	g.pending = make(map[string]int, len(g.points))
	g.order = g.order[:0]
	for i, p := range g.points {
		k := g.key(p)
		g.pending[k] = i
		g.order = append(g.order, k)
	}
	g.pos = 0
}

func (g *Grid) key(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = g.names[i] + "=" + fmt.Sprint(v)
	}
	return strings.Join(parts, "\x00")
}

func (g *Grid) keyOf(tun *tunables.Groups) string {
	vals := make([]any, len(g.names))
	for i, n := range g.names {
		if t := tun.Get(n); t != nil {
			vals[i] = t.Value()
		}
	}
	return g.key(vals)
}

// Suggest returns the next k grid points.
func (g *Grid) Suggest(ctx context.Context, k int) ([]Suggestion, error) {
	return g.each(ctx, k, g.NotConverged, g.one)
}

func (g *Grid) one(ctx context.Context) (*tunables.Groups, error) {
	tun := g.next()
	if g.startWithDefaults {
		g.startWithDefaults = false
		tun.RestoreDefaults()
		delete(g.pending, g.keyOf(tun))
		return tun, nil
	}
	if len(g.pending) == 0 {
		g.reset() // the grid is exhausted but the budget is not: start over
	}
	for g.pos < len(g.order) {
		k := g.order[g.pos]
		g.pos++
		idx, ok := g.pending[k]
		if !ok {
			continue
		}
		delete(g.pending, k)
		vals := map[string]any{}
		for i, n := range g.names {
			vals[n] = g.points[idx][i]
		}
		if err := tun.Assign(vals); err != nil {
			return nil, err
		}
		return tun, nil
	}
	return nil, fmt.Errorf("grid search: no configurations left")
}

// NotConverged is true while the budget allows and grid points remain.
func (g *Grid) NotConverged() bool {
	return g.iter < g.maxSuggestions && len(g.pending) > 0
}

// Observe records a result.
func (g *Grid) Observe(id int, tun *tunables.Groups, status trial.Status, results map[string]any) ([]float64, error) {
	return g.Base.Observe(id, tun, status, results)
}

// BulkRegister records earlier results and removes their configurations
// from the grid, so that a resumed grid search does not repeat them.
func (g *Grid) BulkRegister(priors []Prior) error {
	return g.bulk(priors, func(t *tunables.Groups, s trial.Status, r map[string]any) error {
		delete(g.pending, g.keyOf(t))
		_, err := g.Observe(0, t, s, r)
		return err
	})
}

// gridSize is exported for tests.
func (g *Grid) gridSize() int { return len(g.points) }
