package devices_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/benchtune/bench/schedulers/devices"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/local"
)

// Two trials run at once, each with its slot: each one's commands see its
// own GPUs and run on its own core, and bench's environment is untouched.
func TestSlotsReachOnlyTheirTrial(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.NumCPU() < 2 {
		t.Skip("needs Linux and 2 cores")
	}
	if _, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		t.Skip("CUDA_VISIBLE_DEVICES is set in the test's own environment")
	}
	pool, err := devices.NewPool(devices.Config{GPUs: []string{"0", "1", "2", "3"}, GPUsPerTrial: 2, CPUSlots: 2, CoresPerSlot: 1, PinCores: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := local.NewLocalExec(local.DefaultConfig(), local.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	out := make([]string, 2)
	want := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			slot, err := pool.Acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			defer pool.Release(slot)
			want[slot.ID] = fmt.Sprintf("%s %d", slot.Env()["CUDA_VISIBLE_DEVICES"], slot.Cores[0])
			res, err := svc.LocalExec(slot.Context(context.Background()), services.ExecRequest{
				Dir:   t.TempDir(),
				Lines: []string{`sleep 0.2; echo "$CUDA_VISIBLE_DEVICES $(grep Cpus_allowed_list /proc/self/status | cut -f2)"`},
			})
			if err != nil {
				t.Errorf("trial %d: %v", i, err)
				return
			}
			out[slot.ID] = strings.TrimSpace(res.Stdout)
		})
	}
	wg.Wait()
	if out[0] != want[0] || out[1] != want[1] || want[0] == want[1] {
		t.Errorf("trials saw %q, want %q", out, want)
	}
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		t.Errorf("bench's environment has CUDA_VISIBLE_DEVICES=%s", v)
	}
}
