package schedulers

import "github.com/benchtune/bench/optimizers"

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
