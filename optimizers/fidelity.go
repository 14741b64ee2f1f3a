package optimizers

import (
	"fmt"
	"math"
	"slices"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/optimizers/internal/algo"
	"github.com/benchtune/bench/optimizers/internal/history"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// MlosCore is FidelityAware (bench only). With optimizer_type SMAC, the
// GP takes the fidelity as one more input dimension (optimizers/bayes,
// fidelity.go): its unit coordinate is (v-Min)/(Max-Min), or the same on
// log(v) when Fidelity.Log is set; when Param is itself a tunable of the
// space, its own dimension (and scale) is the fidelity input. Outcomes at
// every fidelity train the one GP; suggestions are made for full fidelity
// (log EI at Max, with the incumbent taken from the model at Max). With
// RANDOM and FLAML, which have no model to share across fidelities,
// outcomes below Max are not given to the search (they only mark their
// configuration as tried), so they behave as an optimizer that is not
// FidelityAware. Only full-fidelity outcomes count for Best.

// fidelityMode is MlosCore's state once SetFidelity was called.
type fidelityMode struct {
	f    Fidelity
	ti   int     // Param's dimension in m.space, or -1: the engine's last dimension
	full float64 // the unit coordinate of Max
	gp   *bayes.Optimizer
}

var _ FidelityAware = (*MlosCore)(nil)

// SetFidelity turns on learning from every fidelity. It may be called
// again with the same setting; a different one is an error. Observations
// made before it (full fidelity) and priors with a Fidelity registered
// before it are given to the new model.
func (m *MlosCore) SetFidelity(f Fidelity) error {
	if m.fid != nil {
		if m.fid.f == f {
			return nil
		}
		return fmt.Errorf("%s: the fidelity is already set to %s in [%v, %v]", m.name, m.fid.f.Param, m.fid.f.Min, m.fid.f.Max)
	}
	if f.Param == "" {
		return fmt.Errorf("%s: the fidelity needs the name of the tunable or global that carries it", m.name)
	}
	if math.IsNaN(f.Min) || math.IsNaN(f.Max) || math.IsInf(f.Min, 0) || math.IsInf(f.Max, 0) || f.Min >= f.Max {
		return fmt.Errorf("%s: fidelity %s: want finite Min < Max, got [%v, %v]", m.name, f.Param, f.Min, f.Max)
	}
	if f.Log && f.Min <= 0 {
		return fmt.Errorf("%s: fidelity %s: a log scale needs Min > 0, got %v", m.name, f.Param, f.Min)
	}
	fm := &fidelityMode{f: f, ti: -1}
	dims := slices.Clone(m.space.Dims)
	if t := m.tunables.Get(f.Param); t != nil {
		if typ := t.Type(); (typ != tunables.Int && typ != tunables.Float) || len(t.Special()) > 0 {
			return fmt.Errorf("%s: fidelity %s: the tunable must be an int or float without special values", m.name, f.Param)
		}
		i, ok := m.space.Dim(f.Param)
		if !ok {
			return fmt.Errorf("%s: fidelity %s: tunable not in the search space", m.name, f.Param)
		}
		fm.ti = i
		for _, v := range []float64{f.Min, f.Max} {
			if _, err := m.coordOf(fm, v); err != nil {
				return err
			}
		}
	} else {
		dims = append(dims, tunables.Dim{Name: f.Param + "!fidelity", Kind: tunables.DimNumeric})
	}
	full, err := m.coordOf(fm, f.Max)
	if err != nil {
		return err
	}
	fm.full = full
	if m.kind == "SMAC" {
		o := m.opts
		gp, err := bayes.New(dims, bayes.Options{Seed: o.Seed, NRandomInit: o.NRandomInit, NumObjectives: o.NumObjectives,
			MaxTrials: o.MaxTrials, TrustRegion: -1})
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		idx := fm.ti
		if idx < 0 {
			idx = len(dims) - 1
		}
		if err := gp.SetFidelity(idx, full); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		fm.gp = gp
		eng := &fidelityEngine{gp: gp, ti: fm.ti, full: full}
		for _, ob := range m.observed {
			if err := gp.Observe(algo.Observation{X: eng.ext(ob.X, full), Y: ob.Y}); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		m.eng = eng
		if m.noise.Aware || len(m.noise.Aggregate) > 0 {
			m.SetNoise(m.noise)
		}
	}
	m.fid = fm
	stash := m.fidStash
	m.fidStash = nil
	return m.bulkAt(stash)
}

// coordOf returns the unit coordinate of fidelity value v.
func (m *MlosCore) coordOf(fm *fidelityMode, v float64) (float64, error) {
	f := fm.f
	if fm.ti >= 0 {
		tun := m.tunables.Copy()
		t := tun.Get(f.Param)
		var val any = v
		if t.Type() == tunables.Int {
			if v != math.Round(v) {
				return 0, fmt.Errorf("%s: fidelity %v of int tunable %s is not an integer", m.name, v, f.Param)
			}
			val = int64(v)
		}
		if err := t.Set(val); err != nil {
			return 0, fmt.Errorf("%s: fidelity %s: %w", m.name, f.Param, err)
		}
		p, err := m.space.Encode(tun.Values())
		if err != nil {
			return 0, err
		}
		return p[fm.ti], nil
	}
	if f.Log {
		return (math.Log(v) - math.Log(f.Min)) / (math.Log(f.Max) - math.Log(f.Min)), nil
	}
	return (v - f.Min) / (f.Max - f.Min), nil
}

// ObserveAt records the outcome of a trial run at fidelity (0: full
// fidelity). Below Max it trains the model (SMAC) but does not count for
// Best. id is settled as by Observe.
func (m *MlosCore) ObserveAt(id int, tun *tunables.Groups, fidelity float64, status trial.Status, results map[string]any) ([]float64, error) {
	fm := m.fid
	if fm == nil {
		if fidelity == 0 {
			return m.Observe(id, tun, status, results)
		}
		return nil, fmt.Errorf("%s: an outcome at fidelity %v before SetFidelity", m.name, fidelity)
	}
	if fidelity == 0 {
		fidelity = fm.f.Max
	}
	const tol = 1e-9
	span := fm.f.Max - fm.f.Min
	if math.IsNaN(fidelity) || fidelity < fm.f.Min-tol*span || fidelity > fm.f.Max+tol*span {
		return nil, fmt.Errorf("%s: fidelity %v outside [%v, %v] of %s", m.name, fidelity, fm.f.Min, fm.f.Max, fm.f.Param)
	}
	fidelity = min(max(fidelity, fm.f.Min), fm.f.Max)
	full := fidelity >= fm.f.Max
	var scores []float64
	var err error
	if full {
		scores, err = m.Base.Observe(id, tun, status, results) // tracks Best
	} else if !status.IsCompleted() {
		err = fmt.Errorf("cannot register a trial with status %s: only completed trials are registered", status)
	} else {
		scores, err = m.Base.Scores(status, results)
	}
	if err != nil {
		return nil, err
	}
	p, err := m.space.Encode(tun.Values())
	if err != nil {
		return nil, err
	}
	if fm.ti >= 0 {
		p[fm.ti] = fm.full // the configuration, whatever fidelity it ran at
	}
	m.settle(id, pointKey(m.space.Snap(p)))
	switch {
	case fm.gp != nil:
		c, err := m.coordOf(fm, fidelity)
		if err != nil {
			return nil, err
		}
		if full {
			c = fm.full
		}
		x := (&fidelityEngine{ti: fm.ti}).ext(p, c)
		if err := fm.gp.Observe(algo.Observation{X: x, Y: scores}); err != nil {
			return nil, err
		}
	case full:
		if err := m.eng.Observe(algo.Observation{X: p, Y: scores}); err != nil {
			return nil, err
		}
	}
	return scores, nil
}

// bulkAt is BulkRegister: each prior is observed at its Fidelity (0: full
// fidelity). Priors at a fidelity that arrive before SetFidelity wait for
// it.
func (m *MlosCore) bulkAt(priors []Prior) error {
	for _, p := range priors {
		if p.Fidelity != 0 && m.fid == nil {
			m.fidStash = append(m.fidStash, p)
			continue
		}
		err := m.bulk([]Prior{p}, func(t *tunables.Groups, s trial.Status, r map[string]any) error {
			_, err := m.ObserveAt(0, t, p.Fidelity, s, r)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fidelityEngine is the engine of MlosCore in fidelity mode: the GP over
// the configuration space plus the fidelity, seen from MlosCore as an
// engine over the configuration space whose observations and
// suggestions are at full fidelity (ObserveAt gives it the others).
type fidelityEngine struct {
	gp   *bayes.Optimizer
	ti   int
	full float64
}

// ext returns configuration point p at fidelity coordinate c.
func (e *fidelityEngine) ext(p tunables.Point, c float64) tunables.Point {
	if e.ti >= 0 {
		q := slices.Clone(p)
		q[e.ti] = c
		return q
	}
	return append(slices.Clone(p), c)
}

// strip returns the configuration part of a GP point.
func (e *fidelityEngine) strip(p tunables.Point) tunables.Point {
	if e.ti >= 0 {
		return p
	}
	return p[:len(p)-1]
}

func (e *fidelityEngine) Observe(obs ...algo.Observation) error {
	ext := make([]algo.Observation, len(obs))
	for i, o := range obs {
		ext[i] = algo.Observation{X: e.ext(o.X, e.full), Y: o.Y}
	}
	return e.gp.Observe(ext...)
}

func (e *fidelityEngine) Suggest(k int, pending []tunables.Point) ([]tunables.Point, error) {
	ext := make([]tunables.Point, len(pending))
	for i, p := range pending {
		ext[i] = e.ext(p, e.full)
	}
	pts, err := e.gp.Suggest(k, ext)
	for i, p := range pts {
		pts[i] = e.strip(p)
	}
	return pts, err
}

func (e *fidelityEngine) SetNoise(agg history.Aggregator, aware bool) { e.gp.SetNoise(agg, aware) }

// Ranked returns the best configurations observed at full fidelity.
func (e *fidelityEngine) Ranked(k int) []tunables.Point {
	var out []tunables.Point
	for _, p := range e.gp.Ranked(math.MaxInt32) {
		if c := p[e.idx(p)]; math.Abs(c-e.full) <= 1e-12 && len(out) < k {
			out = append(out, e.strip(p))
		}
	}
	return out
}

func (e *fidelityEngine) idx(p tunables.Point) int {
	if e.ti >= 0 {
		return e.ti
	}
	return len(p) - 1
}

func (e *fidelityEngine) NoiseLevel() (rel, snr float64, ok bool) { return e.gp.NoiseLevel() }
