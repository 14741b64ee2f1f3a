package launcher

import (
	"os"
	"slices"
	"strings"

	"github.com/benchtune/bench/runners/passive"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// trialGlobals are the globals every trial has besides the experiment's
// (what passive_command may name).
var trialGlobals = []string{"experiment_id", "trial_id", "trial_runner_id", "repeat_i", "optimizer", "is_defaults",
	"gpu_id", "cpu_slot", "device_slot"}

// passiveRunners builds the passive runners (runner "passive"): they show
// each trial to a person and wait for the result, typed at the prompt or
// given with bench submit.
func (r *Run) passiveRunners(cfg schedulers.Config, owner string, o Options) []schedulers.Runner {
	out := o.Stderr
	if out == nil {
		out = os.Stderr
	}
	po := passive.Options{Command: cfg.PassiveCommand, Out: out, Logger: r.log}
	if o.Stdin != nil && (cfg.PassivePrompt == "true" || cfg.PassivePrompt == "auto" && o.StdinTerminal) {
		po.In = o.Stdin
	}
	tun := r.Runners[0].Env.Tunables()
	for _, t := range tun.Tunables() {
		po.Order = append(po.Order, t.Name())
	}
	var unknown []string
	for _, n := range passive.Names(cfg.PassiveCommand) {
		if tun.Get(n) == nil && !slices.Contains(trialGlobals, n) && r.Launch.Globals[n] == nil {
			unknown = append(unknown, "$"+n)
		}
	}
	if len(unknown) > 0 {
		r.log.Warn("passive_command names variables that are neither tunables nor globals; they are shown as they are",
			"variables", strings.Join(unknown, ", "))
	}
	// A typed result must have the experiment's stored targets (what bench
	// submit checks) and the optimizer's.
	targets := passive.Targets(storage.Targets(r.Experiment.Info().Objectives), trial.Objectives(r.Optimizer.Targets()))
	desk := passive.NewDesk(r.Experiment.WithOwner(owner, cfg.Lease), targets, po)
	return desk.Runners(cfg.NumTrialRunners)
}
