// Package envtest helps the environments' tests build environments from
// JSON config text through environments.Builder, exactly as bench does.
package envtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/schemas"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/tunables"

	// The local services (LocalExecService, LocalDirFileShareService, ...)
	// are built from their configs by name.
	_ "github.com/benchtune/bench/services/local"
)

// TunablesJSON is the tunable groups of mlos_bench's test fixtures
// (provision, boot, kernel), as a tunable-params config.
const TunablesJSON = `{
    "provision": {
        "cost": 1000,
        "params": {
            "vmSize": {
                "description": "Azure VM size",
                "type": "categorical",
                "default": "Standard_B4ms",
                "values": ["Standard_B2s", "Standard_B2ms", "Standard_B4ms"]
            }
        }
    },
    "boot": {
        "cost": 300,
        "params": {
            "idle": {
                "description": "Idling method",
                "type": "categorical",
                "default": "halt",
                "values": ["halt", "mwait", "noidle"],
                "values_weights": [33, 33, 33]
            }
        }
    },
    "kernel": {
        "cost": 1,
        "params": {
            "kernel_sched_migration_cost_ns": {
                "description": "Cost of migrating the thread to another core",
                "type": "int",
                "default": -1,
                "range": [0, 500000],
                "special": [-1, 0],
                "special_weights": [0.25, 0.25],
                "range_weight": 0.5,
                "log": false,
                "meta": {"suffix": "ns", "sysctl": "kernel.sched_migration_cost_ns"}
            },
            "kernel_sched_latency_ns": {
                "description": "Initial value for the scheduler period",
                "type": "int",
                "default": 2000000,
                "range": [0, 1000000000],
                "quantization_bins": 11,
                "log": false
            }
        }
    }
}`

// Validate checks configs against bench's JSON schemas, as bench does.
func Validate(kind configs.Kind, doc *source.Doc) error {
	return schemas.Validate(schemas.Kind(kind), doc)
}

// Option changes a fixture.
type Option func(*options)

type options struct{ validate configs.ValidateFunc }

// NoValidation skips schema validation, for tests of the environments' own
// checks of configs the schemas would reject first.
func NoValidation(o *options) { o.validate = nil }

// Fixture is a config folder with a loader and a builder over it.
type Fixture struct {
	T       testing.TB
	Dir     string // the config folder (on the search path after the working folder)
	Loader  *configs.Loader
	Builder *environments.Builder
	// Tunables are the groups of TunablesJSON.
	Tunables *tunables.Groups
	// Services is the base stack: a LocalExecService built from the
	// built-in services/local/local_exec_service.jsonc.
	Services *services.Stack
}

// New writes files (path relative to a fresh config folder -> content)
// and returns a fixture over that folder. Configs are validated against the
// schemas unless NoValidation is given.
func New(t testing.TB, files map[string]string, opts ...Option) *Fixture {
	t.Helper()
	o := options{validate: Validate}
	for _, opt := range opts {
		opt(&o)
	}
	dir := t.TempDir()
	files = withDefault(files, "tunables.jsonc", TunablesJSON)
	WriteFiles(t, dir, files)
	loader, err := configs.NewLoader(o.validate, dir)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fixture{T: t, Dir: dir, Loader: loader, Builder: environments.NewBuilder(loader)}
	t.Cleanup(func() {
		if err := f.Builder.Close(); err != nil {
			t.Errorf("closing services: %v", err)
		}
	})
	if f.Tunables, err = f.Builder.LoadTunables([]string{"tunables.jsonc"}, nil); err != nil {
		t.Fatal(err)
	}
	f.Services = f.LoadServices(nil, "services/local/local_exec_service.jsonc")
	return f
}

func withDefault(files map[string]string, name, content string) map[string]string {
	out := map[string]string{name: content}
	for k, v := range files {
		out[k] = v
	}
	return out
}

// WriteFiles writes files under dir; names ending in ".sh" are made
// executable.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".sh" {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// LoadServices builds service configs (paths or inline JSON) on top of
// parent.
func (f *Fixture) LoadServices(parent *services.Stack, specs ...string) *services.Stack {
	f.T.Helper()
	s, err := f.Builder.LoadServices(context.Background(), specs, nil, parent)
	if err != nil {
		f.T.Fatal(err)
	}
	return s
}

// Build builds an environment from a config (a path or inline JSON) with
// the fixture's tunables and base services and the given globals.
func (f *Fixture) Build(spec string, globals environments.Params) environments.Environment {
	f.T.Helper()
	env, err := f.TryBuild(spec, globals)
	if err != nil {
		f.T.Fatal(err)
	}
	return env
}

// TryBuild is Build returning the error.
func (f *Fixture) TryBuild(spec string, globals environments.Params) (environments.Environment, error) {
	return f.Builder.LoadEnvironment(context.Background(), spec, f.Tunables, globals, nil, f.Services, nil)
}

// Open opens env and closes it when the test ends.
func Open(t testing.TB, env environments.Environment) {
	t.Helper()
	if err := env.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}

// Trial opens env, sets it up with tun and globals (failing the test on a
// setup error), runs it and reads its status.
func Trial(t testing.TB, env environments.Environment, tun *tunables.Groups, globals environments.Params) (environments.Result, environments.StatusReport) {
	t.Helper()
	ctx := context.Background()
	Open(t, env)
	if err := env.Setup(ctx, tun, globals); err != nil {
		t.Fatalf("setup: %v", err)
	}
	res := env.Run(ctx)
	return res, env.Status(ctx)
}

// WithoutMeasurements returns the results without the built-in
// measurements (the names starting with "bench."), for tests that compare
// the results the scripts produce. It returns nil for nil.
func WithoutMeasurements(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !strings.HasPrefix(k, "bench.") {
			out[k] = v
		}
	}
	return out
}
