package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/services"
)

// allowedList is the Cpus_allowed_list line of a /proc status file.
func allowedList(t *testing.T, status string) string {
	t.Helper()
	data, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no Cpus_allowed_list", status)
	return ""
}

// threadMasks returns the distinct CPU masks of bench's own threads.
func threadMasks(t *testing.T) map[string]int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil {
		t.Fatal(err)
	}
	masks := map[string]int{}
	for _, st := range tasks {
		data, err := os.ReadFile(st)
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				masks[strings.TrimSpace(v)]++
			}
		}
	}
	return masks
}

func TestLocalExecCPUAffinity(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pinning needs Linux")
	}
	own := allowedList(t, "/proc/self/status")
	if !strings.HasPrefix(own, "0") {
		t.Skipf("core 0 is not available to this process (Cpus_allowed_list %s)", own)
	}
	svc := newExec(t, DefaultConfig(), testOptions())
	ctx := services.WithCPUAffinity(context.Background(), []int{0})
	res, err := svc.LocalExec(ctx, services.ExecRequest{
		Dir: t.TempDir(),
		Lines: []string{
			"cat /proc/self/status | grep Cpus_allowed_list",
			// A grandchild started in the background inherits it too.
			"(sleep 0.05; grep Cpus_allowed_list /proc/self/status) & wait",
			// And the shell itself has it.
			"grep Cpus_allowed_list /proc/$$/status",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range res.Lines {
		if got := strings.Join(strings.Fields(l.Stdout), " "); got != "Cpus_allowed_list: 0" {
			t.Errorf("line %d %q printed %q (stderr %q), want the mask pinned to core 0", i+1, l.Line, l.Stdout, l.Stderr)
		}
	}

	// Without the context's cores, a line gets bench's mask.
	res = run(t, svc, services.ExecRequest{Dir: t.TempDir(), Lines: []string{"grep Cpus_allowed_list /proc/self/status"}})
	if got := strings.Join(strings.Fields(res.Stdout), " "); got != "Cpus_allowed_list: "+own {
		t.Errorf("unpinned line: %q, want bench's own %s", res.Stdout, own)
	}

	// bench's own threads keep their mask: the pinning thread is gone.
	deadline := time.Now().Add(2 * time.Second)
	for {
		masks := threadMasks(t)
		if len(masks) == 1 && masks[own] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bench's threads have masks %v, want only %s", masks, own)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLocalExecCPUAffinityErrors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pinning needs Linux")
	}
	svc := newExec(t, DefaultConfig(), testOptions())
	for _, tc := range []struct {
		cores []int
		want  string
	}{
		{[]int{-1}, "cannot pin to CPU core -1"},
		{[]int{1 << 20}, "cannot pin to CPU core 1048576"},
		// A core this machine does not have: the kernel refuses the mask.
		{[]int{1023}, "cannot pin to CPU cores 1023"},
	} {
		t.Run(fmt.Sprint(tc.cores), func(t *testing.T) {
			if tc.cores[0] == 1023 && runtime.NumCPU() > 1000 {
				t.Skip("this machine may have core 1023")
			}
			dir := t.TempDir()
			ctx := services.WithCPUAffinity(context.Background(), tc.cores)
			_, err := svc.LocalExec(ctx, services.ExecRequest{Dir: dir, Lines: []string{"touch ran"}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Error("the line ran unpinned")
			}
		})
	}
}

func TestLocalExecProcessEnv(t *testing.T) {
	if _, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		t.Skip("CUDA_VISIBLE_DEVICES is set in the test's own environment")
	}
	svc := newExec(t, DefaultConfig(), testOptions())
	ctx := services.WithProcessEnv(context.Background(), map[string]string{"CUDA_VISIBLE_DEVICES": "1,3"})
	ctx = services.WithProcessEnv(ctx, map[string]string{"BENCH_DEVICE_SLOT": "2"})
	res, err := svc.LocalExec(ctx, services.ExecRequest{
		Dir: t.TempDir(),
		// The script's own value loses to the trial's device.
		Env:   map[string]string{"CUDA_VISIBLE_DEVICES": "0", "OTHER": "kept"},
		Lines: []string{`echo "$CUDA_VISIBLE_DEVICES $BENCH_DEVICE_SLOT $OTHER"`, "printenv CUDA_VISIBLE_DEVICES"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "1,3 2 kept\n1,3\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") || strings.HasPrefix(kv, "BENCH_DEVICE_SLOT=") {
			t.Errorf("bench's own environment got %s", kv)
		}
	}
	// A later call without the context's env does not see it.
	res = run(t, svc, services.ExecRequest{Dir: t.TempDir(), Lines: []string{`echo "[${CUDA_VISIBLE_DEVICES-unset}]"`}})
	if res.Stdout != "[unset]\n" {
		t.Errorf("without the process env: %q", res.Stdout)
	}
}

func TestLocalExecProcessEnvBadName(t *testing.T) {
	svc := newExec(t, DefaultConfig(), testOptions())
	ctx := services.WithProcessEnv(context.Background(), map[string]string{"BAD-NAME": "x"})
	_, err := svc.LocalExec(ctx, services.ExecRequest{Dir: t.TempDir(), Lines: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "not a valid shell identifier") || !strings.Contains(err.Error(), "process environment") {
		t.Errorf("err = %v", err)
	}
}

// Trials running at once in one bench each see only their own device.
func TestLocalExecProcessEnvConcurrent(t *testing.T) {
	svc := newExec(t, DefaultConfig(), testOptions())
	const n = 8
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ctx := services.WithProcessEnv(context.Background(), map[string]string{"CUDA_VISIBLE_DEVICES": fmt.Sprint(i)})
			res, err := svc.LocalExec(ctx, services.ExecRequest{
				Dir:   t.TempDir(),
				Lines: []string{`sleep 0.1; echo "$CUDA_VISIBLE_DEVICES"`, `echo "$CUDA_VISIBLE_DEVICES"`},
			})
			got[i], errs[i] = res.Stdout, err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("trial %d: %v", i, errs[i])
		}
		if want := fmt.Sprintf("%d\n%d\n", i, i); got[i] != want {
			t.Errorf("trial %d saw %q, want %q", i, got[i], want)
		}
	}
}

func TestLocalExecTouchesActivity(t *testing.T) {
	svc := newExec(t, DefaultConfig(), testOptions())
	act := services.NewActivity()
	created := act.LastActive()
	ctx := services.WithActivity(context.Background(), act)
	start := time.Now()
	res, err := svc.LocalExec(ctx, services.ExecRequest{Dir: t.TempDir(), Lines: []string{"echo a; sleep 0.3; echo b"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "a\nb\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
	last := act.LastActive()
	if d := last.Sub(start); d < 250*time.Millisecond {
		t.Errorf("LastActive is %v after the start, want about 0.3s (the second echo)", d)
	}
	if last.After(time.Now()) || !last.After(created) {
		t.Errorf("LastActive %v out of range (created %v)", last, created)
	}

	// A silent line moves it only at its start.
	act2 := services.NewActivity()
	start = time.Now()
	run(t, svc, services.ExecRequest{Dir: t.TempDir(), Lines: []string{"sleep 0.3"}})
	if _, err := svc.LocalExec(services.WithActivity(context.Background(), act2),
		services.ExecRequest{Dir: t.TempDir(), Lines: []string{"sleep 0.3"}}); err != nil {
		t.Fatal(err)
	}
	if d := act2.LastActive().Sub(start); d < 250*time.Millisecond || d > 450*time.Millisecond {
		t.Errorf("silent line: LastActive %v after the start, want its start (~0.3s, after the first call)", d)
	}
}
