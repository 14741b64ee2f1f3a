package schedulers

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/local"
	"github.com/benchtune/bench/trial"
)

// busyTrial runs a shell busy loop of about d through a real LocalExec.
func busyTrial(t *testing.T, d time.Duration) func(context.Context, environments.Params) environments.Result {
	exe, err := local.NewLocalExec(local.DefaultConfig(), local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, params environments.Params) environments.Result {
		// The shell spins (builtins only: its own CPU time) for a fixed
		// amount of work, about d of CPU or more (dash counts about a
		// million a second here), not for a wall-clock time: a loaded
		// machine stretches the run instead of starving the samples.
		line := fmt.Sprintf("i=0; while [ $i -lt %d ]; do i=$((i+1)); done", int(d.Seconds()*2e6))
		res, err := exe.LocalExec(ctx, services.ExecRequest{Lines: []string{line}, Verbatim: true})
		if err != nil || res.ExitCode != 0 {
			return environments.Result{Status: trial.FAILED, Reason: fmt.Sprint(err, res.Stderr)}
		}
		return score(params)
	}
}

func storedTelemetry(t *testing.T, p parSetup) []trial.Telemetry {
	t.Helper()
	ts := trials(t, p.exp)
	if len(ts) != 1 || ts[0].Status != trial.SUCCEEDED {
		t.Fatalf("trials: %+v", ts)
	}
	d, err := p.exp.Trial(context.Background(), ts[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return d.Telemetry
}

func TestPeriodicTelemetryIsStored(t *testing.T) {
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"),
		Config{ExperimentID: "e", Parallel: true, TelemetryInterval: 100 * time.Millisecond}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(1)}, Options{}, busyTrial(t, 700*time.Millisecond))
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tel := storedTelemetry(t, p)
	if len(tel) == 0 || tel[0].Metric != "cpu" {
		t.Fatalf("the environment's own telemetry comes first: %+v", tel)
	}
	var cpu, rss []float64
	for _, r := range tel[1:] {
		v, ok := r.Value.(float64)
		if !ok {
			t.Errorf("%s value %v (%T) is not a number", r.Metric, r.Value, r.Value)
		}
		switch r.Metric {
		case services.MetricCPUSeconds:
			cpu = append(cpu, v)
		case services.MetricRSSMiB:
			rss = append(rss, v)
		default:
			t.Errorf("unexpected row %+v", r)
		}
	}
	if len(cpu) < 3 || len(rss) != len(cpu) {
		t.Fatalf("%d %s and %d %s rows, want >= 3 of each: %+v", len(cpu), services.MetricCPUSeconds, len(rss), services.MetricRSSMiB, tel)
	}
	peak := 0.0
	for _, v := range cpu {
		peak = max(peak, v)
	}
	if peak < 0.2 {
		t.Errorf("a 0.7s busy loop: cpu samples %v", cpu)
	}
}

func TestPeriodicTelemetryOffByDefault(t *testing.T) {
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(1)}, Options{}, busyTrial(t, 300*time.Millisecond))
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range storedTelemetry(t, p) {
		if r.Metric == services.MetricCPUSeconds || r.Metric == services.MetricRSSMiB {
			t.Fatalf("periodic telemetry without telemetry_interval: %+v", r)
		}
	}
}
