package schedulers

import (
	"sort"
	"strings"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
)

// registerPending tells a resumed optimizer which configurations earlier
// runs of the experiment suggested without a result it can observe
// (trials queued, running or interrupted when bench stopped, and
// cancelled ones), when it can take them in (optimizers.PendingRegisterer)
// and takes earlier results at all (SupportsPreload). A seeded optimizer
// starts its sequence again after a restart; told these, it suggests new
// configurations instead of repeats that would each cost a trial of the
// budget.
func registerPending(opt optimizers.Optimizer, values []map[string]any) error {
	pr, ok := opt.(optimizers.PendingRegisterer)
	if !ok || len(values) == 0 || !opt.SupportsPreload() {
		return nil
	}
	return pr.RegisterPending(values)
}

// warnTunablesChanged says, on resume, when the experiment's earlier
// trials were run with other tunables than the configs define now (names
// added or removed, values that no longer fit): what happens to them, and
// how to start afresh.
func (s *Scheduler) warnTunablesChanged(all []storage.Trial) {
	if len(all) == 0 || s.o.Tunables == nil {
		return
	}
	now := map[string]bool{}
	for _, t := range s.o.Tunables.Tunables() {
		now[t.Name()] = true
	}
	stored := map[string]bool{}
	misfits := 0
	for _, t := range all {
		for k := range t.Params {
			stored[k] = true
		}
		if err := s.o.Tunables.Copy().Assign(stringValues(t.Params)); err != nil {
			misfits++
		}
	}
	var added, removed []string
	for k := range now {
		if !stored[k] {
			added = append(added, k)
		}
	}
	for k := range stored {
		if !now[k] {
			removed = append(removed, k)
		}
	}
	if misfits > 0 || len(removed) > 0 || len(added) == 0 {
		// Nothing changed, or the optimizer's warm start refuses the
		// trials that no longer fit, with the reason.
		return
	}
	sort.Strings(added)
	s.log.Warn("resuming an experiment whose tunables changed: its earlier trials have no value for the new tunables, and they warm-start the optimizer as if those had their defaults; use a new --experiment_id for a clean start",
		"experiment", s.cfg.ExperimentID, "new_tunables", strings.Join(added, ","), "earlier_trials", len(all))
}

// lastAttempts maps each trial's first attempt to the id of its last
// attempt (retries are stored with retry_of naming the first attempt).
func lastAttempts(all []storage.Trial) map[int]int {
	last := make(map[int]int, len(all))
	for _, t := range all {
		root := t.ID
		if t.RetryOf != 0 {
			root = t.RetryOf
		}
		last[root] = max(last[root], t.ID)
	}
	return last
}

// retriedLater reports whether a trial has a later attempt.
func retriedLater(last map[int]int, t storage.Trial) bool {
	root := t.ID
	if t.RetryOf != 0 {
		root = t.RetryOf
	}
	return last[root] > t.ID
}

func stringValues(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
