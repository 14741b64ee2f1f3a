package launcher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	_ "github.com/benchtune/bench/environments/all"
	"github.com/benchtune/bench/schemas"
)

// BenchmarkParallelThroughput runs experiments whose trials sleep 1s on 1,
// 4, 16 and 64 trial runners (4 waves of trials each) with the default
// SQLite storage, and reports the throughput as a fraction of the ideal
// (the waves' 4s) and bench's own CPU time per trial (this process only:
// the trials' shells and sleeps are its children). Run it with
// scripts/bench-parallel.sh or
//
//	go test -run XXX -bench ParallelThroughput -benchtime 1x ./launcher/
func BenchmarkParallelThroughput(b *testing.B) {
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("runners=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				frac, cpu := throughput(b, n, 4*n, time.Second)
				b.ReportMetric(frac, "ideal-fraction")
				b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/trial")
			}
		})
	}
}

func throughput(b *testing.B, runners, trials int, sleep time.Duration) (float64, time.Duration) {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{
		"tunables.jsonc": `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 100000], "default": 50}}}}`,
		"env.jsonc": fmt.Sprintf(`{"name": "sleepy", "class": "mlos_bench.environments.local.LocalEnv",
			"include_tunables": ["tunables.jsonc"],
			"config": {"tunable_params": ["g"], "shell_env_params": ["x"],
				"run": ["sleep %g", "printf 'metric,value\\nscore,%%s\\n' \"$x\" > results.csv"],
				"read_results_file": "results.csv"}}`, sleep.Seconds()),
		"opt.jsonc": fmt.Sprintf(`{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
			"config": {"optimizer_type": "RANDOM", "max_suggestions": %d}}`, trials),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		b.Fatal(err)
	}
	defer os.Chdir(wd)
	args, err := configs.ParseArgs([]string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc",
		"--num_trial_runners", fmt.Sprint(runners), "--experiment_id", "T"})
	if err != nil {
		b.Fatal(err)
	}
	l, err := configs.Prepare(args, func(kind configs.Kind, doc *source.Doc) error { return schemas.Validate(schemas.Kind(kind), doc) })
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	r, err := Build(ctx, l, Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if err := r.Scheduler.Start(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if st := r.Scheduler.Stats(); st.Succeeded != trials {
		b.Fatalf("%d of %d trials succeeded", st.Succeeded, trials)
	}
	ideal := time.Duration((trials+runners-1)/runners) * sleep
	cpu := time.Duration(syscall.TimevalToNsec(after.Utime)-syscall.TimevalToNsec(before.Utime)) +
		time.Duration(syscall.TimevalToNsec(after.Stime)-syscall.TimevalToNsec(before.Stime))
	return float64(ideal) / float64(elapsed), cpu / time.Duration(trials)
}
