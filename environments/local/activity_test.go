package local_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/environments/local"
	"github.com/benchtune/bench/services"
)

// Writes to read_telemetry_file count as activity, even from a run that
// prints nothing.
func TestTelemetryFileIsActivity(t *testing.T) {
	f := envtest.New(t, nil)
	env := localEnv(t, f, map[string]any{
		"run":                 []string{"sleep 0.3; echo 2030-01-01T00:00:00Z,cpu,1 > telemetry.csv; sleep 0.3"},
		"read_telemetry_file": "telemetry.csv",
	}, nil)
	act := services.NewActivity()
	ctx := services.WithActivity(context.Background(), act)
	envtest.Open(t, env)
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	dir := env.(*local.Env).TempDir()
	if got, want := act.Watched(), []string{filepath.Join(dir, "telemetry.csv")}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("Watched = %v, want %v", got, want)
	}
	start := time.Now()
	if res := env.Run(ctx); res.Status != environments.SUCCEEDED {
		t.Fatal(res.Reason)
	}
	// The line started at 0 and wrote the file at 0.3s; nothing after.
	if d := act.LastActive().Sub(start); d < 250*time.Millisecond || d > 550*time.Millisecond {
		t.Errorf("LastActive is %v after the run started, want about 0.3s (the telemetry write)", d)
	}
	if len(act.Watched()) != 1 {
		t.Errorf("Watched = %v after Run, want the file once", act.Watched())
	}
}

// Without an Activity in the context nothing is watched, and nothing fails.
func TestTelemetryWithoutActivity(t *testing.T) {
	f := envtest.New(t, nil)
	env := localEnv(t, f, map[string]any{"run": []string{"true"}, "read_telemetry_file": "telemetry.csv"}, nil)
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.SUCCEEDED {
		t.Fatal(res.Reason)
	}
}
