package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/tunables"
)

// ValidateOptions tune Validate and ValidateFile.
type ValidateOptions struct {
	// MissingArgs, when set, is told about required args without a value
	// instead of failing (environments.Builder.MissingArgs).
	MissingArgs func(who string, at source.Ref, names []string)
	// Warn, when set, is told what a run accepts but looks wrong (a
	// script file not on the search path), and what ValidateFile cannot
	// decide about a file alone, instead of failing: an optimizer checked
	// without tunables (a run adds its environment's), a storage driver
	// bench does not have (a run that uses the file fails with the same
	// error).
	Warn func(err error)
}

// Validate is bench validate's check of a run: the steps Build takes
// before it starts anything (provision), with the same code and so the
// same errors, but nothing created: one trial runner's environment and
// services are built in validate-only mode (no folders, connections or
// processes), the scheduler, optimizer, storage and engine configs are
// decoded and checked, and storage is not opened.
func Validate(ctx context.Context, l *configs.Launch, o ValidateOptions) error {
	if l.Environment == "" {
		return noEnvironment(l)
	}
	r := &Run{Launch: l, log: slog.Default(), RootEnv: l.Loader.Resolve(l.Environment)}
	defer r.Close()
	_, err := r.provision(ctx, Options{}, &o)
	return err
}

// ValidateFile checks one config file of kind on its own, with the step
// a run takes for a file of that kind (and so the same errors): an
// environment is validated as the root of a run (Validate with
// --environment file: default optimizer, scheduler and storage); services
// are built on a local exec service in validate-only mode; an optimizer
// gets the tunables it includes (a run adds the environment's); a
// scheduler, storage or engine config is decoded and checked. Kinds that
// are only data (globals, tunables) have nothing more to check here.
func ValidateFile(ctx context.Context, l *configs.Launch, kind configs.Kind, file string, o ValidateOptions) error {
	c := *l
	r := &Run{Launch: &c, log: slog.Default()}
	defer r.Close()
	switch kind {
	case configs.KindEnvironment:
		c.Environment = file
		return Validate(ctx, &c, o)
	case configs.KindService:
		// As a run's --service: on the local exec service every stack
		// starts with.
		c.Services = []string{file}
		b := environments.NewBuilder(c.Loader)
		b.ValidateOnly = true
		r.builders = append(r.builders, b)
		globals := maps.Clone(c.Globals)
		globals["trial_runner_id"] = int64(1)
		_, err := r.baseServices(ctx, b, globals)
		return err
	case configs.KindOptimizer:
		c.Optimizer = file
		var err error
		if r.Tunables, err = tunables.New(); err != nil {
			return err
		}
		_, err = r.buildOptimizer()
		if err == nil || r.optimizerSpace == nil || r.optimizerSpace.Len() > 0 {
			return err
		}
		// It includes no tunables (a run gives it its environment's):
		// check it again with one, so that only the errors of the config
		// itself remain.
		if r.Tunables, err = placeholderTunables(); err != nil {
			return err
		}
		if _, err = r.buildOptimizer(); err == nil {
			return nil
		}
		var se *source.Error
		if errors.As(err, &se) && strings.HasPrefix(se.Path, "/config/tunable_values_cycle") && o.Warn != nil {
			o.Warn(noTunables(err))
			return nil
		}
		return err
	case configs.KindScheduler:
		c.Scheduler = file
		_, err := r.schedulerConfig()
		return err
	case configs.KindStorage:
		_, err := StorageConfig(c.Loader, file, c.Globals)
		if err != nil && errors.Is(err, storage.ErrUnsupportedDriver) && o.Warn != nil {
			o.Warn(err)
			return nil
		}
		return err
	case configs.KindEngine:
		r.ExperimentID = "validate"
		return r.newEngine(ctx, schedulers.Config{Engine: file, NumTrialRunners: 1}, true)
	}
	return nil
}

// noTunables says that an optimizer's error may come from checking it
// without tunables.
func noTunables(err error) error {
	var se *source.Error
	if errors.As(err, &se) {
		c := *se
		c.Msg = "checked without tunables (it includes none; a run adds its environment's), " + c.Msg
		return &c
	}
	return fmt.Errorf("checked without tunables (it includes none; a run adds its environment's): %w", err)
}

// placeholderTunables is one float tunable, for checking an optimizer
// config that includes no tunables.
func placeholderTunables() (*tunables.Groups, error) {
	doc, err := source.Parse("<bench validate placeholder tunables>", []byte(`{"bench-validate": {"cost": 1, "params": {"x": {"type": "float", "range": [0, 1], "default": 0.5}}}}`))
	if err != nil {
		return nil, err
	}
	g, err := tunables.ParseParams(doc.At())
	if err != nil {
		return nil, err
	}
	out, err := tunables.New()
	if err != nil {
		return nil, err
	}
	if err := out.Merge(g); err != nil {
		return nil, err
	}
	return out, nil
}

// checkEngine is an engine config's check (engines.Check), located in its
// file when it has one.
func checkEngine(spec engines.Spec, ref source.Ref) error {
	err := engines.Check(spec)
	if err == nil || ref.Doc == nil {
		return err
	}
	at := ref.Child("config")
	if errors.Is(err, engines.ErrUnknownClass) {
		at = ref.Child("class")
	}
	e := at.Errorf("")
	e.Err = err
	return e
}

// noEnvironment is the error of a run without an environment config: at
// the CLI config when there is one.
func noEnvironment(l *configs.Launch) error {
	const msg = "no environment config: give --environment FILE or set \"environment\" in the --config file"
	if l.CLIDoc != nil {
		return l.CLIDoc.Errorf(nil, "%s", msg)
	}
	return &configs.UsageError{Msg: msg}
}
