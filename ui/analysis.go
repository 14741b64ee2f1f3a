package ui

import (
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/benchtune/bench/plots"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// param is a tunable as seen in the stored trials: numeric when every
// value parses as a number, else categorical.
type param struct {
	name    string
	numeric bool
	log     bool
	cats    []string // categorical: the values, sorted
}

// model is an experiment's trials prepared for the charts.
type model struct {
	info   storage.ExperimentInfo
	objs   trial.Objectives
	trials []storage.Trial // all, by id
	ok     []storage.Trial // SUCCEEDED with a numeric value of the first target, by id
	params []param
	// vals caches the targets' values of each trial (NaN: none).
	vals map[int][]float64
}

func newModel(info storage.ExperimentInfo, trials []storage.Trial, logX map[string]bool) *model {
	m := &model{info: info, objs: storage.Targets(info.Objectives), trials: trials, vals: make(map[int][]float64, len(trials))}
	for _, t := range trials {
		v := make([]float64, len(m.objs))
		for i, o := range m.objs {
			f, ok := t.Results.Float(o.Name)
			if !ok || math.IsInf(f, 0) {
				f = math.NaN()
			}
			v[i] = f
		}
		m.vals[t.ID] = v
	}
	for _, t := range trials {
		if t.Status != trial.SUCCEEDED || len(m.objs) == 0 {
			continue
		}
		if _, ok := t.Results.Float(m.objs[0].Name); ok {
			m.ok = append(m.ok, t)
		}
	}
	seen := map[string]bool{}
	var names []string
	for _, t := range trials {
		for k := range t.Params {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := param{name: n, numeric: true}
		vals := map[string]bool{}
		var xs []float64
		for _, t := range trials {
			v, ok := t.Params[n]
			if !ok {
				continue
			}
			vals[v] = true
			if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				xs = append(xs, f)
			} else {
				p.numeric = false
			}
		}
		if p.numeric {
			p.log = plots.Options{LogX: logX}.UseLog(n, xs)
		} else {
			for v := range vals {
				p.cats = append(p.cats, v)
			}
			sort.Strings(p.cats)
		}
		m.params = append(m.params, p)
	}
	return m
}

// x is trial t's value of the parameter on its axis (a categorical value's
// index), and whether it has one.
func (p param) x(t storage.Trial) (float64, bool) {
	v, ok := t.Params[p.name]
	if !ok {
		return 0, false
	}
	if !p.numeric {
		i := slices.Index(p.cats, v)
		return float64(i), i >= 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || (p.log && f <= 0) {
		return 0, false
	}
	return f, true
}

// value is trial t's value of target i.
func (m *model) value(t storage.Trial, i int) (float64, bool) {
	if i >= len(m.objs) {
		return 0, false
	}
	if vs, ok := m.vals[t.ID]; ok {
		return vs[i], !math.IsNaN(vs[i])
	}
	v, ok := t.Results.Float(m.objs[i].Name)
	if ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
		return 0, false
	}
	return v, ok
}

// score is target i's value turned so that lower is better.
func (m *model) score(t storage.Trial, i int) (float64, bool) {
	v, ok := m.value(t, i)
	if ok && m.objs[i].Max {
		v = -v
	}
	return v, ok
}

// best returns the best successful trial by the first target (ties: the
// lowest id).
func (m *model) best() (storage.Trial, bool) {
	var bt storage.Trial
	found := false
	bs := 0.0
	for _, t := range m.ok {
		if trial.LowFidelity(t.Metadata) {
			continue // a multi-fidelity run's lower-fidelity result is not an answer
		}
		s, _ := m.score(t, 0)
		if !found || s < bs {
			bt, bs, found = t, s, true
		}
	}
	return bt, found
}

// importance estimates each tunable's share of target i's variance: the
// trials are grouped by the tunable's value (a categorical value is a
// group; a numeric tunable is cut into up to 8 bins of equal counts, on
// its log scale when it has one), and the importance is the variance of
// the group means weighted by group size over the total variance (the
// correlation ratio η², i.e. a first-order sensitivity index that ignores
// interactions). The shares are normalized to sum to 1 when any is
// positive.
const importanceMethod = "first-order variance share (correlation ratio η²): the successful trials are grouped by the tunable's value (each category a group; numeric values in up to 8 equal-count bins), and the importance is the variance of the group means of the target over its total variance, normalized to sum to 1 across tunables; it ignores interactions between tunables"

type importanceRow struct {
	name  string
	share float64
	raw   float64
}

func (m *model) importance(i int) []importanceRow {
	var out []importanceRow
	for _, p := range m.params {
		var xs, ys []float64
		for _, t := range m.ok {
			x, okx := p.x(t)
			y, oky := m.value(t, i)
			if okx && oky {
				xs, ys = append(xs, x), append(ys, y)
			}
		}
		out = append(out, importanceRow{name: p.name, raw: etaSquared(xs, ys, p.numeric)})
	}
	sum := 0.0
	for _, r := range out {
		sum += r.raw
	}
	for k := range out {
		if sum > 0 {
			out[k].share = out[k].raw / sum
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].share > out[b].share })
	return out
}

func etaSquared(xs, ys []float64, numeric bool) float64 {
	n := len(ys)
	if n < 3 {
		return 0
	}
	mean := 0.0
	for _, y := range ys {
		mean += y
	}
	mean /= float64(n)
	total := 0.0
	for _, y := range ys {
		total += (y - mean) * (y - mean)
	}
	if total == 0 {
		return 0
	}
	group := make([]int, n)
	if numeric {
		idx := make([]int, n)
		for k := range idx {
			idx[k] = k
		}
		sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
		bins := min(8, n/2)
		// Equal-count bins that never split equal values.
		b, prev := 0, math.NaN()
		for rank, k := range idx {
			nb := rank * bins / n
			if nb > b && xs[k] != prev {
				b = nb
			}
			group[k] = b
			prev = xs[k]
		}
	} else {
		for k, x := range xs {
			group[k] = int(x)
		}
	}
	sums, counts := map[int]float64{}, map[int]int{}
	for k, y := range ys {
		sums[group[k]] += y
		counts[group[k]]++
	}
	between := 0.0
	for g, s := range sums {
		gm := s / float64(counts[g])
		between += float64(counts[g]) * (gm - mean) * (gm - mean)
	}
	return between / total
}

// paretoFront returns the indices of the points (lower is better in every
// coordinate) that no other point dominates, in increasing order. The
// points are visited in lexicographic order, where no point can be
// dominated by a later one, and each is checked against the front found
// so far only (whatever dominates it, a front point does too): n log n
// plus n times the front's size, instead of n².
func paretoFront(pts [][]float64) []int {
	idx := make([]int, len(pts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return slices.Compare(pts[idx[a]], pts[idx[b]]) < 0 })
	var front, out []int // front: one of each set of equal points
	for _, i := range idx {
		dominated, dup := false, false
		for _, j := range front {
			if dominates(pts[j], pts[i]) {
				dominated = true
				break
			}
			if slices.Equal(pts[j], pts[i]) {
				dup = true
				break
			}
		}
		if dominated {
			continue
		}
		out = append(out, i)
		if !dup {
			front = append(front, i)
		}
	}
	sort.Ints(out)
	return out
}

// weaklyDominates reports whether q is nowhere worse than p.
func weaklyDominates(q, p []float64) bool {
	for k := range p {
		if q[k] > p[k] {
			return false
		}
	}
	return true
}

func dominates(q, p []float64) bool {
	strict := false
	for k := range p {
		if q[k] > p[k] {
			return false
		}
		if q[k] < p[k] {
			strict = true
		}
	}
	return strict
}

// hypervolume is the volume dominated by the points (lower is better) and
// bounded by the reference point ref, by slicing along the first
// coordinate (exact; the fronts of an experiment are small).
func hypervolume(pts [][]float64, ref []float64) float64 {
	var in [][]float64
	for _, p := range pts {
		ok := true
		for k := range p {
			if p[k] >= ref[k] {
				ok = false
			}
		}
		if ok {
			in = append(in, p)
		}
	}
	return hv(in, ref)
}

func hv(pts [][]float64, ref []float64) float64 {
	if len(pts) == 0 {
		return 0
	}
	d := len(ref)
	if d == 1 {
		lo := pts[0][0]
		for _, p := range pts {
			lo = math.Min(lo, p[0])
		}
		return ref[0] - lo
	}
	if d == 2 {
		s := slices.Clone(pts)
		sort.Slice(s, func(a, b int) bool { return s[a][0] < s[b][0] })
		vol, bestY := 0.0, ref[1]
		for k, p := range s {
			if p[1] < bestY {
				bestY = p[1]
			}
			next := ref[0]
			if k+1 < len(s) {
				next = s[k+1][0]
			}
			vol += (next - p[0]) * (ref[1] - bestY)
		}
		return vol
	}
	// Slice along the last coordinate.
	s := slices.Clone(pts)
	sort.Slice(s, func(a, b int) bool { return s[a][d-1] < s[b][d-1] })
	vol := 0.0
	for k := range s {
		next := ref[d-1]
		if k+1 < len(s) {
			next = s[k+1][d-1]
		}
		if next <= s[k][d-1] {
			continue
		}
		var sub [][]float64
		for _, p := range s[:k+1] {
			sub = append(sub, p[:d-1])
		}
		sub = frontOf(sub)
		vol += hv(sub, ref[:d-1]) * (next - s[k][d-1])
	}
	return vol
}

func frontOf(pts [][]float64) [][]float64 {
	var out [][]float64
	for _, i := range paretoFront(pts) {
		out = append(out, pts[i])
	}
	return out
}
