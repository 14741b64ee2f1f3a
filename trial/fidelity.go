package trial

import (
	"strconv"
)

// Multi-fidelity (bench only): the scheduler runs a configuration at
// several values of one "fidelity" parameter (a run's duration, a data
// size) and records, in each trial's metadata (mlos_bench's trial_param
// rows), the value it ran at. These keys are read back on resume, by the
// best-trial rule (a lower-fidelity result is never the answer), and by
// Globals, which hands the value to the trial on every runner kind.
const (
	// FidelityParamKey names the parameter that carries the fidelity (a
	// tunable, or a global the environments read).
	FidelityParamKey = "bench_fidelity_param"
	// FidelityKey is the value this trial ran at.
	FidelityKey = "bench_fidelity"
	// FidelityMaxKey is full fidelity: a trial whose FidelityKey is lower
	// gives no answer.
	FidelityMaxKey = "bench_fidelity_max"
	// FidelityRungKey and FidelityBracketKey place the trial in the
	// Hyperband plan (schedulers/hyperband).
	FidelityRungKey    = "bench_fidelity_rung"
	FidelityBracketKey = "bench_fidelity_bracket"
	// ContinueFromKey (promotion "continue") is the id of the trial this
	// one continues: the same configuration's run at the rung below.
	ContinueFromKey = "bench_continue_from_trial"
	// CheckpointDirKey (promotion "continue") is a directory kept for the
	// configuration across its rungs, for the program to save its state
	// in and resume from.
	CheckpointDirKey = "bench_checkpoint_dir"
)

// FidelityOf returns the fidelity a stored trial ran at, and full
// fidelity; ok is false for a trial not run by a multi-fidelity scheduler.
func FidelityOf(metadata map[string]string) (value, full float64, ok bool) {
	v, err1 := strconv.ParseFloat(metadata[FidelityKey], 64)
	m, err2 := strconv.ParseFloat(metadata[FidelityMaxKey], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return v, m, true
}

// LowFidelity tells whether a stored trial ran below full fidelity: its
// result is an estimate, never the experiment's answer (best trial,
// budget of answers).
func LowFidelity(metadata map[string]string) bool {
	v, m, ok := FidelityOf(metadata)
	return ok && v < m
}

// fidelityGlobals gives the trial its fidelity value under the fidelity
// parameter's name (over the experiment's global of that name, which is
// full fidelity's default), as an integer when it is one. The metadata
// keys themselves (bench_fidelity, bench_continue_from_trial, ...) stay
// text, as every metadata global: a network worker is sent them back
// from the globals (serve's Pool.metadata) and rebuilds the same globals.
func fidelityGlobals(g map[string]any, metadata map[string]string) {
	param := metadata[FidelityParamKey]
	if s, ok := metadata[FidelityKey]; ok && param != "" {
		g[param] = number(s)
	}
}

// number reads a metadata value as an int64 when it is an integer, else
// a float64, else keeps the string.
func number(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}
