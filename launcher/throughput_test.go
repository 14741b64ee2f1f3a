package launcher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	_ "github.com/benchtune/bench/environments/all"
	"github.com/benchtune/bench/schemas"
)

// BenchmarkParallelThroughput runs experiments whose trials sleep 1s on 1,
// 4, 16 and 64 trial runners (4 trials per runner) with the default SQLite
// storage, and reports the throughput as a fraction of the ideal (4s),
// the same for a shell running the same process launches in as many lanes
// (the baseline, measured in the same run: what this machine allows),
// bench's time over the shell's, and bench's own CPU time per trial (this
// process only: the trials' shells and sleeps are its children). Run it
// with
// scripts/bench-parallel.sh or
//
//	go test -run XXX -bench ParallelThroughput -benchtime 1x ./launcher/
func BenchmarkParallelThroughput(b *testing.B) {
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("runners=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				// The baseline, in the same run: a shell running the same
				// process launches in n lanes of 4 trials, no framework.
				shell := shellLanes(b, n, 4, time.Second)
				frac, cpu, elapsed := throughput(b, n, 4*n, time.Second)
				ideal := 4 * time.Second
				b.ReportMetric(frac, "ideal-fraction")
				b.ReportMetric(float64(ideal)/float64(shell), "shell-ideal-fraction")
				b.ReportMetric(float64(elapsed)/float64(shell), "bench/shell")
				b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/trial")
			}
		})
	}
}

// lanesScript runs N lanes of W trials, each trial two shell launches like
// the LocalEnv's two script lines: sleep S, then write a results file.
const lanesScript = `N=$1; W=$2; S=$3; d=$4
i=0
while [ $i -lt $N ]; do
  ( w=0; while [ $w -lt $W ]; do /bin/sh -c "sleep $S"; /bin/sh -c "printf 'metric,value\nscore,1\n' > $d/$w-$i.csv"; w=$((w+1)); done ) &
  i=$((i+1))
done
wait`

func shellLanes(b *testing.B, lanes, waves int, sleep time.Duration) time.Duration {
	b.Helper()
	start := time.Now()
	out, err := exec.Command("/bin/sh", "-c", lanesScript, "lanes", fmt.Sprint(lanes), fmt.Sprint(waves),
		fmt.Sprintf("%g", sleep.Seconds()), b.TempDir()).CombinedOutput()
	if err != nil {
		b.Fatalf("shell baseline: %v\n%s", err, out)
	}
	return time.Since(start)
}

func throughput(b *testing.B, runners, trials int, sleep time.Duration) (float64, time.Duration, time.Duration) {
	b.Helper()
	dir := b.TempDir()
	files := map[string]string{
		"tunables.jsonc": `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [0, 100000], "default": 50}}}}`,
		"env.jsonc": fmt.Sprintf(`{"name": "sleepy", "class": "mlos_bench.environments.local.LocalEnv",
			"include_tunables": ["tunables.jsonc"],
			"config": {"tunable_params": ["g"], "shell_env_params": ["xv"],
				"run": ["sleep %g", "echo metric,value > results.csv; echo score,$xv >> results.csv"],
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
	argv := []string{"--environment", "env.jsonc", "--optimizer", "opt.jsonc",
		"--num_trial_runners", fmt.Sprint(runners), "--experiment_id", "T", "--storage", os.Getenv("THROUGHPUT_STORAGE")}
	// THROUGHPUT_ARGS adds command-line arguments (split at spaces), e.g.
	// "--no-canary" to measure without the canary's lone first trial.
	argv = append(argv, strings.Fields(os.Getenv("THROUGHPUT_ARGS"))...)
	args, err := configs.ParseArgs(argv)
	if err != nil {
		b.Fatal(err)
	}
	l, err := configs.Prepare(args, func(kind configs.Kind, doc *source.Doc) error { return schemas.Validate(schemas.Kind(kind), doc) })
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	prev := slog.Default()
	slog.SetDefault(quiet) // the services log to the default logger
	defer slog.SetDefault(prev)
	ctx := context.Background()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	r, err := Build(ctx, l, Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	built := time.Now()
	if err := r.Scheduler.Start(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(built.Sub(start).Milliseconds()), "build-ms")
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if st := r.Scheduler.Stats(); st.Succeeded != trials {
		b.Fatalf("%d of %d trials succeeded", st.Succeeded, trials)
	}
	ideal := time.Duration((trials+runners-1)/runners) * sleep
	cpu := time.Duration(syscall.TimevalToNsec(after.Utime)-syscall.TimevalToNsec(before.Utime)) +
		time.Duration(syscall.TimevalToNsec(after.Stime)-syscall.TimevalToNsec(before.Stime))
	return float64(ideal) / float64(elapsed), cpu / time.Duration(trials), elapsed
}
