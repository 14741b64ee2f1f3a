package launcher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/schedulers"

	// The execution engines bench knows (each registers its classes).
	_ "github.com/benchtune/bench/engines/awsbatch"   // AWS Batch; the s3:// scheme of requests and outcomes
	_ "github.com/benchtune/bench/engines/kubernetes" // Kubernetes Jobs; the configmap:// scheme of outcomes
	_ "github.com/benchtune/bench/engines/local"
	_ "github.com/benchtune/bench/engines/slurm"
	_ "github.com/benchtune/bench/engines/sshpool"
)

// EngineSpec reads the engine config the scheduler config names: a path
// (searched like other configs, validated against the engine schema) or
// an inline object. ref locates it for errors.
func EngineSpec(l *configs.Launch, v any) (engines.Spec, source.Ref, error) {
	var m map[string]any
	ref := source.Ref{}
	switch e := v.(type) {
	case string:
		doc, err := l.Loader.Load(e, configs.KindEngine)
		if err != nil {
			return engines.Spec{}, ref, err
		}
		if m, err = configs.Object(doc); err != nil {
			return engines.Spec{}, ref, err
		}
		ref = doc.At()
	case map[string]any:
		m = e
	default:
		return engines.Spec{}, ref, fmt.Errorf("engine: want the path of an engine config or an object, got %T", v)
	}
	spec := engines.Spec{}
	spec.Class, _ = m["class"].(string)
	if spec.Class == "" {
		return spec, ref, ref.Child("class").Errorf("engine config: \"class\" is required (one of %v)", engines.Classes())
	}
	cfg, _ := m["config"].(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
	}
	// $variables in the engine's config come from the globals, as in
	// every other config.
	spec.Config, _ = configs.ExpandValue(cfg, configs.MapLookup(l.Globals)).(map[string]any)
	return spec, ref, nil
}

// engineRunners builds the engine of the scheduler config and one runner
// per slot.
func (r *Run) engineRunners(ctx context.Context, cfg schedulers.Config, owner string, log *slog.Logger) ([]schedulers.Runner, error) {
	l := r.Launch
	if r.engine == nil {
		if err := r.newEngine(ctx, cfg, false); err != nil {
			return nil, err
		}
	}
	eng, spec := r.engine, r.engineSpec
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	dir, _ = filepath.Abs(dir)
	var argv []string
	if l.Args != nil {
		argv = engines.SafeArgs(l.Args.Argv)
	}
	base := engines.Base{Args: argv, Dir: dir, Owner: owner, Globals: l.Globals}
	common, err := engines.CommonOf(spec)
	if err != nil {
		return nil, err
	}
	var out []schedulers.Runner
	for _, er := range engines.NewRunners(eng, common, base, log) {
		out = append(out, er)
	}
	return out, nil
}

// newEngine builds the engine of the scheduler config (provision's step:
// bench validate builds it with ValidateOnly, which creates nothing).
func (r *Run) newEngine(ctx context.Context, cfg schedulers.Config, validateOnly bool) error {
	l := r.Launch
	spec, ref, err := EngineSpec(l, cfg.Engine)
	if err != nil {
		return err
	}
	if err := checkEngine(spec, ref); err != nil {
		return err
	}
	if err := r.checkFidelityEngine(cfg, spec); err != nil { // fidelity.go
		return err
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	dir, _ = filepath.Abs(dir)
	p := engines.Params{Slots: cfg.NumTrialRunners, Dir: dir, ExperimentID: r.ExperimentID, Globals: l.Globals, ValidateOnly: validateOnly}
	eng, err := engines.New(ctx, spec, p)
	if err != nil {
		if ref.Doc != nil {
			return ref.Child("config").Errorf("%v", err)
		}
		return err
	}
	r.engine, r.engineSpec = eng, spec
	return nil
}
