package local

import (
	"fmt"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/services"
)

// MeasurementsKey is the config key and the global that turn the built-in
// measurements off ("bench_measurements": false). The environment's own
// config key, when given, wins over the trial's globals; globals given when
// the environment is built have already replaced the key (mlos_bench's
// rule: globals reach the config keys they name). The default is on.
const MeasurementsKey = "bench_measurements"

// MeasurementPrefix starts the names of the built-in measurements:
// bench.<environment name>.<phase>.<measure>.
const MeasurementPrefix = "bench."

// Measure names (the last part of a measurement's name).
const (
	MeasureWall     = "wall_s"     // sum of the lines' wall times, seconds
	MeasureCPUUser  = "cpu_user_s" // sum of the lines' user CPU, seconds
	MeasureCPUSys   = "cpu_sys_s"  // sum of the lines' system CPU, seconds
	MeasureMaxRSSMB = "max_rss_mb" // largest peak RSS of the lines, MiB
)

// MeasurementName returns the result name of a built-in measurement, e.g.
// MeasurementName("run_env", "run", MeasureWall) is
// "bench.run_env.run.wall_s".
func MeasurementName(env, phase, measure string) string {
	return MeasurementPrefix + env + "." + phase + "." + measure
}

// usage is what a phase's command lines used.
type usage struct {
	wall, user, sys time.Duration
	maxRSS          int64 // bytes; 0: not measured (not Linux)
}

// phaseUsage sums the lines' wall and CPU times and takes the largest
// peak RSS.
func phaseUsage(lines []services.LineResult) usage {
	var u usage
	for _, l := range lines {
		u.wall += l.Duration
		u.user += l.UserCPU
		u.sys += l.SysCPU
		u.maxRSS = max(u.maxRSS, l.MaxRSSBytes)
	}
	return u
}

// metrics returns the phase's measurements under their names. Without
// rusage (no peak RSS: not Linux), only the wall time is reported.
func (u usage) metrics(env, phase string) map[string]any {
	m := map[string]any{MeasurementName(env, phase, MeasureWall): u.wall.Seconds()}
	if u.maxRSS > 0 {
		m[MeasurementName(env, phase, MeasureCPUUser)] = u.user.Seconds()
		m[MeasurementName(env, phase, MeasureCPUSys)] = u.sys.Seconds()
		m[MeasurementName(env, phase, MeasureMaxRSSMB)] = float64(u.maxRSS) / (1 << 20)
	}
	return m
}

// parseSwitch reads a bench_measurements value: a boolean, or a value
// decode.Bool reads (globals given on the command line are strings).
func parseSwitch(v any) (bool, error) {
	if b, ok := decode.Bool(v); ok {
		return b, nil
	}
	return false, fmt.Errorf("global %q: expected true or false, got %v", MeasurementsKey, v)
}

// measuring tells whether the built-in measurements are on: the config
// key when given, else the global (the trial's globals, else the ones the
// environment was built with), else on.
func (e *Env) measuring(globals environments.Params) (bool, error) {
	if e.measureCfg != nil {
		return *e.measureCfg, nil
	}
	if v, ok := globals[MeasurementsKey]; ok && v != nil {
		return parseSwitch(v)
	}
	if v, ok := e.Spec().Globals[MeasurementsKey]; ok && v != nil {
		return parseSwitch(v)
	}
	return true, nil
}

// addMeasurements adds the setup and run measurements to the results;
// a result of the same name (from the user's scripts) wins.
func (e *Env) addMeasurements(metrics map[string]any, setup, run *usage) {
	add := func(u *usage, phase string) {
		if u == nil {
			return
		}
		for k, v := range u.metrics(e.Name(), phase) {
			if _, taken := metrics[k]; taken {
				e.log.Debug("a result of the scripts has the name of a built-in measurement; keeping the scripts' value", "name", k)
				continue
			}
			metrics[k] = v
		}
	}
	add(setup, "setup")
	add(run, "run")
}
