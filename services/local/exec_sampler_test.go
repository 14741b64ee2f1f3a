package local

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/benchtune/bench/services"
)

func TestLocalExecRegistersLinesWithTheSampler(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	exe, err := NewLocalExec(DefaultConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exe.Close() })
	s := services.NewSampler(50 * time.Millisecond)
	defer s.Close()
	ctx := services.WithSampler(context.Background(), s)
	res, err := exe.LocalExec(ctx, services.ExecRequest{Lines: []string{
		// The shell spins (builtins only) until it has used 0.2 s of CPU
		// (its utime, field 14 of /proc/PID/stat, in 10 ms ticks), so a
		// loaded machine slows it down without failing the test.
		"while :; do read -r l < /proc/$$/stat; set -- $l; [ ${14} -ge 20 ] && break; done", "true"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d: %v %s", res.ExitCode, err, res.Stderr)
	}
	if s.Groups() != 0 {
		t.Errorf("%d groups still registered after the lines ended", s.Groups())
	}
	cpu := 0
	peak := 0.0
	for _, r := range s.Samples() {
		if r.Metric == services.MetricCPUSeconds {
			cpu++
			peak = max(peak, r.Value.(float64))
		}
	}
	if cpu < 3 || peak < 0.1 {
		t.Errorf("%d cpu samples, peak %.2fs, of a line spinning for 0.2s of CPU: %v", cpu, peak, s.Samples())
	}
	n := len(s.Samples())
	time.Sleep(150 * time.Millisecond)
	if len(s.Samples()) != n {
		t.Error("sampling went on with no line running")
	}
}
