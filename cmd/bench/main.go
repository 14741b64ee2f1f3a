// Command bench benchmarks and autotunes systems from mlos_bench-compatible
// JSON5 configs.
//
//	bench --config cli.jsonc          run an experiment (same as bench run)
//	bench run [options]               run an experiment
//	bench validate [--kind K] PATH... check configs
//	bench results [--experiment ID]   show an experiment's trials
//	bench show TRIAL                  show one trial in detail
//	bench ci --config F --thresholds T run a fixed set N times and fail on regressions
//	bench compare A B                 compare two experiments or exported files
//	bench export EXPERIMENT           write an experiment's trials as one tidy table
//	bench plot EXPERIMENT             draw an experiment's plots (PNG, SVG)
//	bench report EXPERIMENT -o F      write an experiment's self-contained HTML report
//	bench worker --experiment ID      run trials of an experiment another process drives
//	bench stop EXPERIMENT [TRIAL]     stop a running experiment or trial
//	bench submit EXPERIMENT TRIAL ... store the result of a trial run by hand
//	bench schema export DIR           write the JSON schemas for editors
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/clilog"
	"github.com/benchtune/bench/internal/reaper"
	"github.com/benchtune/bench/launcher"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1   // the experiment ran but failed its rules; invalid configs in validate
	exitUsage       = 2   // bad usage or invalid config
	exitInterrupted = 130 // SIGINT/SIGTERM
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark and autotune systems from mlos_bench-compatible configs",
		Long: `bench runs benchmark experiments described by JSON5 configs (the mlos_bench
format): an optimizer suggests configurations of your tunables, bench runs
a trial of your environment's scripts for each, reads the results back,
stores everything and repeats.

  bench --config cli.jsonc            same as: bench run --config cli.jsonc`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(newRunCmd(), newWorkerCmd(), newStopCmd(), newSubmitCmd(), newExecTrialCmd(), newPilotsCmd(), newServeCmd(), newValidateCmd(), newResultsCmd(), newShowCmd(), newSchemaCmd(), newCICmd(), newCompareCmd(), newExportCmd(), newPlotCmd(), newReportCmd(), newConfirmCmd())
	root.AddCommand(newUICmd())
	return root
}

// isRunShorthand reports whether argv (without the program name) is the
// `bench --config X` form of `bench run`.
func isRunShorthand(args []string) bool {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return false
	}
	switch args[0] {
	case "-h", "--help", "--version", "-v":
		return false
	}
	return true
}

func main() {
	// BENCH_OWNER_VAR names the variable that marks the trials' processes
	// instead of BENCH_OWNER (for tests on a shared machine: other bench
	// processes then neither reap nor see these marks).
	if v := os.Getenv("BENCH_OWNER_VAR"); v != "" && strings.HasPrefix(v, "BENCH_OWNER_") {
		reaper.EnvVar = v
	}
	if len(os.Args) == 3 && os.Args[1] == reaper.WatchdogArg {
		os.Exit(launcher.Watchdog(os.Args[2]))
	}
	// BENCH_TRACE=file writes an execution trace (for developing bench:
	// `go tool trace -pprof=sync FILE` shows where goroutines waited).
	if f := os.Getenv("BENCH_TRACE"); f != "" {
		out, err := os.Create(f)
		if err == nil && trace.Start(out) == nil {
			code := run(os.Args[1:])
			trace.Stop()
			out.Close()
			os.Exit(code)
		}
	}
	// BENCH_CPUPROFILE=file writes a CPU profile (for developing bench).
	if f := os.Getenv("BENCH_CPUPROFILE"); f != "" {
		out, err := os.Create(f)
		if err == nil && pprof.StartCPUProfile(out) == nil {
			code := run(os.Args[1:])
			pprof.StopCPUProfile()
			out.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	// Until a command sets up its logging (bench run and the commands that
	// take run options do), warnings and errors are in the terminal format.
	slog.SetDefault(slog.New(clilog.Terminal(os.Stderr, slog.LevelWarn)))
	root := newRootCmd()
	if isRunShorthand(args) {
		args = append([]string{"run"}, args...)
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "bench: error:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "bench: error:", err)
	if configs.IsUsage(err) || strings.Contains(err.Error(), "unknown command") || strings.Contains(err.Error(), "flag") || strings.Contains(err.Error(), "arg(s)") {
		return exitUsage
	}
	return exitFailed
}
