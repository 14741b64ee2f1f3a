package storage

import (
	"context"
	"maps"
	"time"

	"github.com/benchtune/bench/trial"
)

// Redactor replaces secret values in what is stored (configs.Secrets).
type Redactor interface {
	// Redact replaces every secret value inside text.
	Redact(text string) string
	// RedactValue returns the value a parameter is stored with: a marker
	// for a secret parameter, else value with secret text replaced.
	RedactValue(name, value string) string
}

// Redacting returns a view of exp that stores no secret: the metadata of
// new trials goes through r.RedactValue, and a finished
// trial's captured output (commands, stdout, stderr), failure reason and
// text results and telemetry through r.Redact. Everything else passes
// through. A nil r returns exp.
func Redacting(exp Experiment, r Redactor) Experiment {
	if r == nil || exp == nil {
		return exp
	}
	return &redacting{Experiment: exp, r: r}
}

type redacting struct {
	Experiment
	r Redactor
}

func (e *redacting) params(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = e.r.RedactValue(k, v)
	}
	return out
}

// spec redacts a new trial's metadata. Its parameters are tunable values,
// which the optimizer picks from the search space and reads back on
// resume: they are never secret and are stored as they are.
func (e *redacting) spec(s TrialSpec) TrialSpec {
	s.Metadata = e.params(s.Metadata)
	return s
}

func (e *redacting) outcome(o TrialOutcome) TrialOutcome { return RedactOutcome(o, e.r) }

// RedactOutcome returns o with its failure reason, text results and
// telemetry, and captured output (commands, stdout, stderr) redacted by r,
// for outcomes that leave this process another way than through a
// Redacting experiment (bench exec-trial's outcome file, a network
// worker's result). o itself is not changed; a nil r returns o.
func RedactOutcome(o TrialOutcome, r Redactor) TrialOutcome {
	if r == nil {
		return o
	}
	e := &redacting{r: r}
	o.FailureReason = e.r.Redact(o.FailureReason)
	if o.Results != nil {
		res := maps.Clone(o.Results)
		for k, v := range res {
			if s, ok := v.(string); ok {
				res[k] = e.r.RedactValue(k, s)
			}
		}
		o.Results = res
	}
	if len(o.Telemetry) > 0 {
		tel := make([]trial.Telemetry, len(o.Telemetry))
		for i, t := range o.Telemetry {
			if s, ok := t.Value.(string); ok {
				t.Value = e.r.RedactValue(t.Metric, s)
			}
			tel[i] = t
		}
		o.Telemetry = tel
	}
	if len(o.Output) > 0 {
		out := make([]trial.Output, len(o.Output))
		for i, x := range o.Output {
			x.Command = e.r.Redact(x.Command)
			x.Stdout = e.r.Redact(x.Stdout)
			x.Stderr = e.r.Redact(x.Stderr)
			out[i] = x
		}
		o.Output = out
	}
	return o
}

func (e *redacting) NewTrial(ctx context.Context, spec TrialSpec) (Trial, error) {
	return e.Experiment.NewTrial(ctx, e.spec(spec))
}

func (e *redacting) Finish(ctx context.Context, trialID int, o TrialOutcome) error {
	return e.Experiment.Finish(ctx, trialID, e.outcome(o))
}

func (e *redacting) FinishAndQueue(ctx context.Context, trialID int, o TrialOutcome, next TrialSpec) (Trial, error) {
	return e.Experiment.FinishAndQueue(ctx, trialID, e.outcome(o), e.spec(next))
}

func (e *redacting) WithOwner(owner string, lease time.Duration) Experiment {
	return Redacting(e.Experiment.WithOwner(owner, lease), e.r)
}
