package schedulers

import (
	"context"
	"maps"
	"strconv"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/tunables"
)

// ConfirmPrefix starts the experiment note with the confirmation's
// verdict.
const ConfirmPrefix = "confirmation: "

// policies returns the aggregation of each target, in target order.
func (s *Scheduler) policies() analysis.Policies {
	var p analysis.Policies
	for _, t := range s.targets {
		p = append(p, s.cfg.Noise.Policy(t.Name))
	}
	return p
}

// Ranker is an optimizer that ranks the configurations it observed by its
// own estimate (the Bayesian optimizer's posterior mean when noise_aware
// is on), best first.
type Ranker interface {
	Ranked(k int) []map[string]any
}

// confirmPhase re-runs, after the search, the confirm_top_k best
// configurations and the defaults confirm_repeats times each, interleaved
// (round r runs every one of them once, starting at a rotating offset), and
// records the verdict of analysis.Confirm. Trials of a confirmation begun
// by an earlier run are not run again.
func (d *dispatch) confirmPhase(ctx context.Context, runErr error) error {
	s := d.s
	n := s.cfg.Noise
	if n.ConfirmTopK <= 0 || runErr != nil || ctx.Err() != nil || s.o.Worker || s.cfg.DriverOnly {
		return runErr
	}
	all, err := s.exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return err
	}
	d.searchEnd = d.endReason(nil, false)
	def := s.o.Tunables.Copy()
	def.RestoreDefaults()
	defHash := def.Hash()
	var cands []*tunables.Groups
	add := func(values map[string]any) {
		if len(cands) >= n.ConfirmTopK {
			return
		}
		tun := s.o.Tunables.Copy()
		if err := tun.Assign(values); err != nil {
			return
		}
		h := tun.Hash()
		if h == defHash {
			return
		}
		for _, c := range cands {
			if c.Hash() == h {
				return
			}
		}
		cands = append(cands, tun)
	}
	refined, err := d.refinePhase(ctx, all) // refine.go
	if err != nil {
		return err
	}
	if refined != nil {
		add(refined)
		if all, err = s.exp.Trials(ctx, storage.TrialFilter{}); err != nil {
			return err
		}
	}
	if r, ok := s.opt.(Ranker); ok && n.NoiseAware {
		for _, v := range r.Ranked(n.ConfirmTopK + 1) {
			add(v)
		}
	}
	for _, c := range analysis.ByConfig(all, s.targets, s.policies(), true) {
		if c.Succeeded > 0 {
			add(stringValues(c.Params))
		}
	}
	if len(cands) == 0 {
		s.log.Warn("confirmation: no configuration other than the defaults succeeded; nothing to confirm")
		return nil
	}
	done := map[string]bool{}
	for _, t := range all {
		if analysis.IsConfirm(t) {
			done[t.ConfigHash+"|"+t.Metadata[analysis.MetaRound]] = true
		}
	}
	group := append(cands, def)
	queued := 0
	for r := 1; r <= n.ConfirmRepeats; r++ {
		for i := range group {
			tun := group[(i+r-1)%len(group)]
			round := strconv.Itoa(r)
			if done[tun.Hash()+"|"+round] {
				continue
			}
			meta := d.metadata(tun)
			meta["repeat_i"] = strconv.Itoa(s.cfg.TrialConfigRepeatCount + r)
			meta[analysis.MetaPhase] = analysis.PhaseConfirm
			meta[analysis.MetaRound] = round
			meta[analysis.MetaRole] = analysis.RoleCandidate
			if tun == def {
				meta[analysis.MetaRole] = analysis.RoleDefault
			}
			spec := storage.TrialSpec{ConfigHash: tun.Hash(), Params: tun.StringValues(), Metadata: maps.Clone(meta)}
			d.queue = append(d.queue, item{spec: &spec})
			queued++
		}
	}
	s.log.Info("confirmation: re-running the best configurations and the defaults, interleaved",
		"candidates", len(cands), "rounds", n.ConfirmRepeats, "trials", queued)
	// Every round counts, also those an earlier run finished: they are
	// among the experiment's finished trials (and progress's resumed ones).
	s.growPlan(len(group) * n.ConfirmRepeats)
	d.noMore = true
	d.stopApplied = true // a stopping rule ended the search, not the confirmation
	if err := d.loop(ctx); err != nil {
		return err
	}
	all, err = s.exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		return err
	}
	v, ok := analysis.Confirm(all, s.targets)
	if !ok {
		s.log.Warn("confirmation: no verdict: no successful confirmation run of both a candidate and the defaults")
		return nil
	}
	line := v.Line()
	s.stats.Confirmation = line
	s.log.Info("confirmation", "verdict", line, "test", v.Test)
	if na, ok := s.exp.(storage.NoteAdder); ok {
		if err := na.AddNotes(context.WithoutCancel(ctx), ConfirmPrefix+line); err != nil {
			s.log.Warn("storing the confirmation's verdict", "err", err)
		}
	}
	return nil
}
