// Multi-fidelity: the "fidelity" scheduler key (bench only) and its checks.

package schedulers

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/internal/suggest"
	"github.com/benchtune/bench/schedulers/hyperband"
	"github.com/benchtune/bench/tunables"
)

// Promotion modes (FidelityConfig.Promotion).
const (
	// PromotionRerun runs a promoted configuration again from the start
	// at the higher fidelity (the default).
	PromotionRerun = "rerun"
	// PromotionContinue starts the promoted run told which trial it
	// continues (bench_continue_from_trial) and a checkpoint directory
	// kept for the configuration (bench_checkpoint_dir), for a program
	// that can resume.
	PromotionContinue = "continue"
)

// What ranks a rung's results for promotion (FidelityConfig.PromoteBy).
const (
	// PromoteByObserved ranks by the observed values at the rung (ASHA's
	// rule; the default).
	PromoteByObserved = "observed"
	// PromoteByModel ranks by the optimizer's predicted value at full
	// fidelity (optimizers.FidelityPredictor), which it infers from every
	// fidelity it has seen.
	PromoteByModel = "model"
)

// Where a new configuration starts (FidelityConfig.Start).
const (
	// StartBracket starts it at the first rung of the bracket Hyperband's
	// shares pick (the default).
	StartBracket = "bracket"
	// StartModel starts it directly at full fidelity when the optimizer's
	// model gives it a probability of at least StartConfidence of beating
	// the incumbent there, else as StartBracket.
	StartModel = "model"
)

// FidelityConfig is the scheduler's "fidelity" key (bench only; absent or
// "" = off, mlos_bench's behaviour): which tunable or global carries the
// fidelity, its range, and the Hyperband plan (schedulers/hyperband).
type FidelityConfig struct {
	// Param is the tunable or global that carries the fidelity ("": off).
	Param string
	// Min and Max bound it; Max is full fidelity.
	Min, Max float64
	// Eta is the reduction factor (default 3).
	Eta int
	// Brackets is the number of Hyperband brackets (0: all; 1: ASHA).
	Brackets int
	// Promotion is PromotionRerun (default) or PromotionContinue.
	Promotion string
	// CheckpointDir is where promotion "continue" keeps a directory per
	// configuration (default "bench-checkpoints", relative to bench's
	// working directory).
	CheckpointDir string
	// CheckpointStore (promotion "continue"; "": none) is the s3:// store
	// each trial's checkpoint is staged through, wherever it runs
	// (fidelity_store.go); CheckpointDir is then not used.
	CheckpointStore string
	// PromoteBy is PromoteByObserved (default) or PromoteByModel.
	PromoteBy string
	// Start is StartBracket (default), StartModel, with
	// StartConfidence in (0, 1) (default 0.5), or StartAcquisition
	// (fidelity_acq.go).
	Start           string
	StartConfidence float64
	// Planner is "" (PlannerHyperband, the default) or PlannerDyHPO
	// (fidelity_dyn.go).
	Planner string
	// Kernel is the optimizer model's kernel along the fidelity:
	// "" or KernelStationary (default), KernelDecay (fidelity_ftk.go).
	Kernel string
	// Ref points at the key in the scheduler config (errors found once
	// the tunables are known point there).
	Ref source.Ref
}

// On reports whether a fidelity is configured.
func (f FidelityConfig) On() bool { return f.Param != "" }

// Plan returns the Hyperband planner config; integer rounds the rungs (an
// integer tunable).
func (f FidelityConfig) Plan(integer bool) hyperband.Config {
	return hyperband.Config{Min: f.Min, Max: f.Max, Eta: f.Eta, Brackets: f.Brackets, Integer: integer}
}

var fidelityKeys = map[string]bool{"param": true, "min": true, "max": true, "eta": true, "brackets": true,
	"promotion": true, "checkpoint_dir": true, "promote_by": true,
	"start": true, "start_confidence": true,
	"checkpoint_store": true, // fidelity_store.go
	"planner":          true, // fidelity_dyn.go
	"kernel":           true, // fidelity_ftk.go
}

// withFidelityDefaults adds the fidelity key to a scheduler's defaults.
func withFidelityDefaults(cfg map[string]any) map[string]any {
	cfg["fidelity"] = ""
	return cfg
}

// decodeFidelity reads the "fidelity" key of a merged scheduler config
// into out.Fidelity, and refuses what it does not combine with. It
// accepts "" / "off" (off), an object, the same object as JSON text (a
// --fidelity '{...}' global), or the shorthand "param:min:max[:eta]"
// (--fidelity duration_s:5:60:3).
func decodeFidelity(cfg, globals map[string]any, cref source.Ref, out *Config) []error {
	ref := cref.Child("fidelity")
	if _, global := globals["fidelity"]; global {
		// Given as a global (--fidelity, a globals file): not the
		// scheduler file's key (the launcher locates a globals file's).
		ref = source.Ref{Path: []string{"fidelity"}}
	}
	var errs []error
	bad := func(at source.Ref, format string, args ...any) {
		errs = append(errs, at.Errorf(format, args...))
	}
	var m map[string]any
	switch v := cfg["fidelity"].(type) {
	case nil:
		return nil
	case string:
		s := strings.TrimSpace(v)
		switch {
		case s == "" || s == "none" || s == "off":
			return nil
		case strings.HasPrefix(s, "{"):
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				bad(ref, "fidelity: not a JSON object: %v", err)
				return errs
			}
		default:
			parts := strings.Split(s, ":")
			if len(parts) < 3 || len(parts) > 4 {
				bad(ref, "fidelity must be an object like {\"param\": \"duration_s\", \"min\": 5, \"max\": 60} or \"param:min:max[:eta]\", got %q", s)
				return errs
			}
			m = map[string]any{"param": parts[0], "min": parts[1], "max": parts[2]}
			if len(parts) == 4 {
				m["eta"] = parts[3]
			}
		}
	case map[string]any:
		m = v
	default:
		bad(ref, "fidelity must be an object like {\"param\": \"duration_s\", \"min\": 5, \"max\": 60}, got %v", configs.PyStr(v))
		return errs
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !fidelityKeys[k] {
			bad(ref.Child(k), "fidelity: unknown key %q%s; known keys: %s", k, suggest.Hint(k, slices.Sorted(maps.Keys(fidelityKeys))),
				strings.Join(slices.Sorted(maps.Keys(fidelityKeys)), ", "))
		}
	}
	f := FidelityConfig{Eta: 3, Promotion: PromotionRerun, CheckpointDir: "bench-checkpoints", PromoteBy: PromoteByObserved,
		Start: StartBracket, StartConfidence: 0.5, Ref: ref}
	p, _ := m["param"].(string)
	if f.Param = strings.TrimSpace(p); f.Param == "" {
		bad(ref.Child("param"), "fidelity.param must name the tunable or global that carries the fidelity, got %v", configs.PyStr(m["param"]))
	}
	num := func(key string) (float64, bool) {
		v, ok := m[key]
		if !ok {
			bad(ref.Child(key), "fidelity.%s is required (a number)", key)
			return 0, false
		}
		x, isNum := decode.Float(v)
		if !isNum {
			if n, isText := v.(string); isText {
				bad(ref.Child(key), "fidelity.%s must be a number, got %q", key, n)
			} else {
				bad(ref.Child(key), "fidelity.%s must be a number, got %v", key, configs.PyStr(v))
			}
			return 0, false
		}
		if math.IsInf(x, 0) {
			bad(ref.Child(key), "fidelity.%s must be a finite number, got %v", key, configs.PyStr(v))
			return 0, false
		}
		return x, true
	}
	minOK, maxOK := false, false
	f.Min, minOK = num("min")
	f.Max, maxOK = num("max")
	if minOK && f.Min <= 0 {
		bad(ref.Child("min"), "fidelity.min must be > 0 (the cheapest fidelity), got %g", f.Min)
		minOK = false
	}
	if minOK && maxOK && f.Max <= f.Min {
		bad(ref.Child("max"), "fidelity.max (%g, full fidelity) must be greater than fidelity.min (%g)", f.Max, f.Min)
		maxOK = false
	}
	ints := []struct {
		key string
		dst *int
		min int
	}{{"eta", &f.Eta, 2}, {"brackets", &f.Brackets, 0}}
	for _, it := range ints {
		v, ok := m[it.key]
		if !ok {
			continue
		}
		n, isInt := toInt(v)
		if !isInt || n < it.min {
			bad(ref.Child(it.key), "fidelity.%s must be an integer >= %d, got %v", it.key, it.min, configs.PyStr(v))
			continue
		}
		*it.dst = n
	}
	if minOK && maxOK && f.Eta >= 2 {
		if n := len(f.Plan(false).Rungs()); f.Brackets > n {
			bad(ref.Child("brackets"), "fidelity.brackets must be at most the number of rungs (%d: %s), got %d",
				n, rungText(f.Plan(false).Rungs()), f.Brackets)
		}
	}
	choice := func(key string, dst *string, explain string, allowed ...string) {
		v, ok := m[key]
		if !ok {
			return
		}
		at := ref.Child(key)
		if s, ok := decodeChoice(v, "fidelity."+key, explain, false, func(format string, args ...any) { bad(at, format, args...) }, allowed...); ok {
			*dst = s
		}
	}
	choice("promotion", &f.Promotion, fmt.Sprintf("%q or %q", PromotionRerun, PromotionContinue), PromotionRerun, PromotionContinue)
	choice("promote_by", &f.PromoteBy, fmt.Sprintf("%q (the values observed at the rung, ASHA's rule) or %q (the optimizer's predicted value at full fidelity)",
		PromoteByObserved, PromoteByModel), PromoteByObserved, PromoteByModel)
	choice("start", &f.Start, fmt.Sprintf("%q (the first rung of a Hyperband bracket), %q (full fidelity when the optimizer's model is confident, else a bracket) or %q (the fidelity the optimizer's cost-aware acquisition chooses)",
		StartBracket, StartModel, StartAcquisition), StartBracket, StartModel, StartAcquisition)
	if v, ok := m["start_confidence"]; ok {
		if c, isNum := decode.Float(v); !isNum || !(c > 0 && c < 1) {
			bad(ref.Child("start_confidence"), "fidelity.start_confidence must be a number between 0 and 1 (exclusive), got %v", configs.PyStr(v))
		} else {
			f.StartConfidence = c
		}
	}
	if v, ok := m["checkpoint_dir"]; ok {
		s, _ := v.(string)
		if f.CheckpointDir = strings.TrimSpace(s); f.CheckpointDir == "" {
			bad(ref.Child("checkpoint_dir"), "fidelity.checkpoint_dir must be a directory path, got %v", configs.PyStr(v))
		}
	}
	errs = append(errs, decodeCheckpointStore(m, ref, &f)...) // fidelity_store.go
	errs = append(errs, decodePlanner(m, ref, &f)...)         // fidelity_dyn.go
	errs = append(errs, decodeFidelityKernel(m, ref, &f)...)  // fidelity_ftk.go
	// What it does not combine with, refused rather than half-working.
	switch {
	case out.Pruner.Kind != "":
		bad(ref, "fidelity and pruner cannot be combined: Hyperband already stops unpromising configurations at its rungs (remove one of them)")
	case out.TrialConfigRepeatCount > 1:
		bad(ref, "fidelity cannot be combined with trial_config_repeat_count %d: each configuration runs once per rung", out.TrialConfigRepeatCount)
	case out.Noise.Racing:
		bad(ref, "fidelity cannot be combined with racing (adaptive repeats)")
	case out.Noise.ConfirmTopK > 0:
		bad(ref, "fidelity cannot be combined with confirm_top_k: confirm the best configuration in a run without a fidelity")
	case out.ReuseFrom != "":
		// A global fidelity is not part of a configuration's hash: another
		// experiment's result may be of another fidelity.
		bad(ref, "fidelity cannot be combined with reuse_from %q: the other experiment's results may be of other fidelities", out.ReuseFrom)
	}
	if len(errs) == 0 {
		out.Fidelity = f
	}
	return errs
}

func rungText(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.FormatFloat(r, 'g', -1, 64)
	}
	return strings.Join(s, ", ")
}

// CheckFidelity checks the fidelity against the experiment's tunables: a
// tunable Param must be an int or float whose range covers min..max (an
// int one needs integer min and max); any other Param must be a key that
// some config has (known: const_args, globals, ...; nil: not checked),
// since a global reaches an environment only through a parameter it
// declares. Errors point at the fidelity key.
func CheckFidelity(f FidelityConfig, tun *tunables.Groups, known map[string]bool) error {
	if !f.On() {
		return nil
	}
	at := f.Ref.Child("param")
	integer := false
	if t := tunOf(tun, f.Param); t != nil {
		switch t.Type() {
		case tunables.Int:
			integer = true
			lo, hi := t.IntRange()
			if f.Min != math.Trunc(f.Min) || f.Max != math.Trunc(f.Max) {
				return f.Ref.Errorf("fidelity: tunable %q is an integer: min and max must be integers, got %g and %g", f.Param, f.Min, f.Max)
			}
			if float64(lo) > f.Min || float64(hi) < f.Max {
				return at.Errorf("fidelity: tunable %q has the range [%d, %d], which does not cover fidelity.min..max (%g..%g)", f.Param, lo, hi, f.Min, f.Max)
			}
		case tunables.Float:
			lo, hi := t.Range()
			if lo > f.Min || hi < f.Max {
				return at.Errorf("fidelity: tunable %q has the range [%g, %g], which does not cover fidelity.min..max (%g..%g)", f.Param, lo, hi, f.Min, f.Max)
			}
		default:
			return at.Errorf("fidelity: tunable %q is %s: a fidelity must be an int or float tunable, or a global", f.Param, t.Type())
		}
	} else if known != nil && !known[f.Param] {
		var cands []string
		if tun != nil {
			for _, t := range tun.Tunables() {
				cands = append(cands, t.Name())
			}
		}
		cands = append(cands, slices.Sorted(maps.Keys(known))...)
		return at.Errorf("fidelity.param %q is neither a tunable nor a parameter that any config has%s: declare it in an environment's const_args (the trial's value overrides it) or name a tunable",
			f.Param, suggest.Hint(f.Param, cands))
	}
	if err := f.Plan(integer).Validate(); err != nil {
		return f.Ref.Errorf("fidelity: %v", err)
	}
	return nil
}

func tunOf(tun *tunables.Groups, name string) *tunables.Tunable {
	if tun == nil {
		return nil
	}
	return tun.Get(name)
}
