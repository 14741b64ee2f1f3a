package remote_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/trial"
)

// A RemoteEnv's progress_pattern lines reach the trial's listener while
// the script runs on the SSH host (it waits for the listener to have
// seen step 0 before it goes on).
func TestSSHProgressLines(t *testing.T) {
	f, srv := sshFixture(t)
	dir := t.TempDir()
	// The host's login may be another user: it reads the gate's folder.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gate := filepath.Join(dir, "gate")
	globals := environments.Params{"ssh_hostname": srv.host, "gate": gate}
	env := f.Build(`{"name": "prog", "class": "mlos_bench.environments.RemoteEnv", "config": {
		"required_args": ["ssh_hostname", "gate"], "shell_env_params": ["gate"],
		"progress_pattern": "^BENCH_PROGRESS\\b",
		"run": ["echo 'BENCH_PROGRESS step=0 loss=0.9'; i=0; while [ ! -e \"$gate\" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done; [ -e \"$gate\" ] || exit 9; echo 'BENCH_PROGRESS step=1 loss=0.5'"]}}`, globals)
	var (
		mu  sync.Mutex
		got []trial.Progress
	)
	ctx := environments.WithProgress(context.Background(), func(p trial.Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
		if p.Step == 0 {
			_ = os.WriteFile(gate, nil, 0o644)
		}
	})
	envtest.Open(t, env)
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	res := env.Run(ctx)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("run: %s %s", res.Status, res.Reason)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Step != 0 || got[1].Step != 1 || got[1].Values["loss"] != 0.5 {
		t.Errorf("progress %+v, want steps 0 and 1", got)
	}
}
