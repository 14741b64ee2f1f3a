// Package mock implements mlos_bench's MockEnv: an environment that runs
// nothing and scores a configuration from its tunable values, for trying
// optimizers, schedulers and storage quickly.
//
// The score is the mean of the squared normalized values of the
// environment's tunables, where a numeric tunable's normalized value is
// (value - low) / (high - low) clipped to [0, 1] (a special value outside
// the range counts as 0 or 1) and a categorical tunable's is the index of
// its value divided by (number of values - 1) (0 when there is only one
// value). With mock_env_seed > 0, Gaussian noise (σ = 0.2) from Python's
// random.Random(seed).gauss, as mlos_bench draws it, is added (so a seed
// gives mlos_bench's numbers); mock_env_seed 0 adds noise from an unseeded
// generator, a negative or absent seed adds none. The score is clipped to
// [0, 1], scaled to mock_env_range (default [0, 1]) and reported under
// every name of mock_env_metrics (default ["score"]). An environment
// without tunables scores 0 (plus noise).
package mock

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/internal/script"
	"github.com/benchtune/bench/internal/pyrand"
	"github.com/benchtune/bench/tunables"
)

// Classes are the class names of MockEnv.
var Classes = []string{
	"mlos_bench.environments.MockEnv",
	"mlos_bench.environments.mock_env.MockEnv",
	"bench.environments.MockEnv",
}

func init() {
	environments.Register(New, Classes...)
}

// NoiseSigma is the standard deviation of the noise added to the score.
const NoiseSigma = 0.2

type rawMock struct {
	TunableParams  any       `json:"tunable_params"`
	RequiredArgs   any       `json:"required_args"`
	ConstArgs      any       `json:"const_args"`
	MockEnvSeed    *int64    `json:"mock_env_seed"`
	MockEnvRange   []float64 `json:"mock_env_range"`
	MockEnvMetrics []string  `json:"mock_env_metrics"`
	// bench only (progress.go): intermediate results while running.
	ProgressSteps int64 `json:"mock_env_progress_steps"`
	ProgressDelay any   `json:"mock_env_progress_delay"`
}

// Env is a MockEnv.
type Env struct {
	*environments.Base
	lo, hi  float64
	metrics []string

	mu        sync.Mutex
	ready     bool
	runRand   *pyrand.Rand // nil: no noise
	statusRnd *pyrand.Rand
	// progress: intermediate results of a run (bench only; progress.go).
	progressSteps int64
	progressDelay time.Duration
}

var _ environments.Environment = (*Env)(nil)

// New builds a MockEnv.
func New(_ context.Context, spec environments.Spec) (environments.Environment, error) {
	base, err := environments.NewBase(spec)
	if err != nil {
		return nil, err
	}
	ref := spec.Ref.Child("config")
	var raw rawMock
	if err := script.DecodeKeys(spec.Config, ref, &raw, append(slices.Clone(script.CommonKeys),
		"mock_env_seed", "mock_env_range", "mock_env_metrics", "mock_env_progress_steps", "mock_env_progress_delay")...); err != nil {
		return nil, err
	}
	e := &Env{Base: base, lo: 0, hi: 1, metrics: []string{"score"}, ready: true}
	if raw.MockEnvRange != nil {
		if len(raw.MockEnvRange) != 2 {
			return nil, ref.Child("mock_env_range").Errorf("expected [low, high], got %d numbers", len(raw.MockEnvRange))
		}
		e.lo, e.hi = raw.MockEnvRange[0], raw.MockEnvRange[1]
	}
	if raw.MockEnvMetrics != nil {
		if len(raw.MockEnvMetrics) == 0 {
			return nil, ref.Child("mock_env_metrics").Errorf("expected at least one metric name")
		}
		e.metrics = raw.MockEnvMetrics
	}
	seed := int64(-1)
	if raw.MockEnvSeed != nil {
		seed = *raw.MockEnvSeed
	}
	e.runRand, e.statusRnd = newRand(seed), newRand(seed)
	if err := e.decodeProgress(raw, ref); err != nil {
		return nil, err
	}
	return e, nil
}

// newRand returns the noise generator: Python's random.Random(seed), as
// mlos_bench's MockEnv uses, so that a seed gives mlos_bench's numbers.
func newRand(seed int64) *pyrand.Rand {
	switch {
	case seed < 0:
		return nil
	case seed == 0:
		// mlos_bench: random.Random(None), seeded from the OS.
		return pyrand.New(int64(rand.Uint64() >> 1))
	}
	return pyrand.New(seed)
}

// Normalized maps a tunable's current value to [0, 1] as MockEnv scores
// it (see the package documentation).
func Normalized(t *tunables.Tunable) float64 {
	var v float64
	if t.Type() == tunables.Categorical {
		vals := t.Values()
		if len(vals) > 1 {
			v = float64(slices.Index(vals, fmt.Sprint(t.Value()))) / float64(len(vals)-1)
		}
	} else {
		lo, hi := t.Range()
		if hi > lo {
			v = (t.Float() - lo) / (hi - lo)
		}
	}
	return math.Min(1, math.Max(0, v))
}

// Score computes the noise-free score of the tunables, in [0, 1].
func Score(tun *tunables.Groups) float64 {
	ts := tun.Tunables()
	if len(ts) == 0 {
		return 0
	}
	sum := 0.0
	for _, t := range ts {
		n := Normalized(t)
		sum += n * n
	}
	return sum / float64(len(ts))
}

func (e *Env) produce(rng *pyrand.Rand) map[string]any {
	score := Score(e.Tunables())
	if rng != nil {
		score += rng.Gauss(0, NoiseSigma)
	}
	score = math.Min(1, math.Max(0, score))
	score = e.lo + score*(e.hi-e.lo)
	out := make(map[string]any, len(e.metrics))
	for _, m := range e.metrics {
		out[m] = score
	}
	return out
}

// Open does nothing.
func (e *Env) Open(context.Context) error { return nil }

// Close does nothing.
func (e *Env) Close() error { return nil }

// Setup assigns the tunable values.
func (e *Env) Setup(_ context.Context, tun *tunables.Groups, globals environments.Params) error {
	if err := e.SetupParams(tun, globals); err != nil {
		return err
	}
	e.mu.Lock()
	e.ready = true
	e.mu.Unlock()
	return nil
}

// Run reports the score of the current tunable values.
func (e *Env) Run(ctx context.Context) environments.Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now().UTC()
	if !e.ready {
		return environments.Result{Status: environments.PENDING, Time: now, Reason: fmt.Sprintf("environment %q is not set up", e.Name())}
	}
	metrics := e.produce(e.runRand)
	if err := e.reportProgress(ctx, metrics); err != nil {
		return environments.Result{Status: environments.CANCELED, Time: time.Now().UTC(), Reason: "run: " + err.Error()}
	}
	return environments.Result{Status: environments.SUCCEEDED, Time: time.Now().UTC(), Metrics: metrics}
}

// Status reports READY with one telemetry reading per metric.
func (e *Env) Status(context.Context) environments.StatusReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now().UTC()
	if !e.ready {
		return environments.StatusReport{Status: environments.PENDING, Time: now}
	}
	vals := e.produce(e.statusRnd)
	tel := make([]environments.Telemetry, 0, len(e.metrics))
	for _, m := range e.metrics {
		tel = append(tel, environments.Telemetry{Ts: now, Metric: m, Value: vals[m]})
	}
	return environments.StatusReport{Status: environments.READY, Time: now, Telemetry: tel}
}

// Teardown marks the environment as not set up.
func (e *Env) Teardown(context.Context) error {
	e.mu.Lock()
	e.ready = false
	e.mu.Unlock()
	return nil
}
