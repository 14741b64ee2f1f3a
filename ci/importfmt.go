package ci

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Result file formats bench ci and bench compare read besides bench
// export files: results of suites bench did not run.
const (
	FormatBenchExport = "bench-export"
	FormatGoTest      = "go-test-bench"    // go test -bench output (benchstat's input)
	FormatHyperfine   = "hyperfine"        // hyperfine --export-json
	FormatGoogleBench = "google-benchmark" // --benchmark_format=json / --benchmark_out
	FormatPytest      = "pytest-benchmark" // --benchmark-json (with --benchmark-save-data)
)

// samplesBuilder collects values per configuration in order of first
// appearance.
type samplesBuilder struct {
	s   *Samples
	idx map[string]int
}

func newBuilder(name string) *samplesBuilder {
	return &samplesBuilder{s: &Samples{Name: name}, idx: map[string]int{}}
}

func (b *samplesBuilder) add(key, label, metric string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	i, ok := b.idx[key]
	if !ok {
		i = len(b.s.Configs)
		b.idx[key] = i
		b.s.Configs = append(b.s.Configs, ConfigSamples{Key: key, Label: label, Values: map[string][]float64{}})
	}
	c := &b.s.Configs[i]
	c.Values[metric] = append(c.Values[metric], v)
	if n := len(c.Values[metric]); n > c.Trials {
		c.Trials = n
	}
}

// detectFormat tells the format of a result file from its content.
func detectFormat(data []byte) string {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return ""
	}
	if t[0] == '{' {
		var probe struct {
			Results    []map[string]json.RawMessage `json:"results"`
			Benchmarks []map[string]json.RawMessage `json:"benchmarks"`
			Context    map[string]json.RawMessage   `json:"context"`
			Machine    map[string]json.RawMessage   `json:"machine_info"`
		}
		if json.Unmarshal(t, &probe) != nil {
			return ""
		}
		switch {
		case len(probe.Results) > 0 && probe.Results[0]["command"] != nil:
			return FormatHyperfine
		case probe.Machine != nil || len(probe.Benchmarks) > 0 && probe.Benchmarks[0]["stats"] != nil:
			return FormatPytest
		case probe.Benchmarks != nil:
			return FormatGoogleBench
		}
		return ""
	}
	if t[0] == '[' {
		return FormatBenchExport
	}
	for _, line := range strings.Split(string(t), "\n") {
		if strings.HasPrefix(line, "Benchmark") && len(strings.Fields(line)) >= 4 {
			return FormatGoTest
		}
	}
	return FormatBenchExport // CSV
}

// readGoTest reads go test -bench output with x/perf's benchfmt (the
// reader of benchstat): one configuration per benchmark (its package and
// full name, as benchstat's rows and tables), one metric per unit, in
// benchstat's tidied units ("sec/op", "B/op", "allocs/op", ...), one
// value per result line (go test -count N gives N).
func readGoTest(name string, data []byte) (*Samples, error) {
	b := newBuilder(name)
	r := benchfmt.NewReader(bytes.NewReader(data), name)
	var syntax []string
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			syntax = append(syntax, rec.Error())
		case *benchfmt.Result:
			bench := rec.Name.String()
			key, label := bench, bench
			if pkg := rec.GetConfig("pkg"); pkg != "" {
				key = pkg + "." + bench
			}
			for _, v := range rec.Values {
				b.add(key, label, v.Unit, v.Value)
			}
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if len(b.s.Configs) == 0 {
		if len(syntax) > 0 {
			return nil, errors.New(syntax[0])
		}
		return nil, errors.New("no benchmark results (lines like \"BenchmarkX-8  1000  1234 ns/op\")")
	}
	return b.s, nil
}

// readHyperfine reads hyperfine --export-json: one configuration per
// command, metric wall_s from every run's time ("times", seconds).
func readHyperfine(name string, data []byte) (*Samples, error) {
	var doc struct {
		Results []struct {
			Command string    `json:"command"`
			Times   []float64 `json:"times"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	b := newBuilder(name)
	for i, r := range doc.Results {
		if len(r.Times) == 0 {
			return nil, fmt.Errorf("results[%d] (%s) has no \"times\": use hyperfine 1.9 or later, whose --export-json writes every run", i, r.Command)
		}
		for _, v := range r.Times {
			b.add(r.Command, r.Command, "wall_s", v)
		}
	}
	return b.s, nil
}

// timeUnit converts Google Benchmark's time_unit to seconds.
var timeUnit = map[string]float64{"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}

// gbenchFixed are Google Benchmark fields that are not measurements.
var gbenchFixed = map[string]bool{
	"name": true, "run_name": true, "run_type": true, "repetitions": true, "repetition_index": true, "threads": true,
	"iterations": true, "real_time": true, "cpu_time": true, "time_unit": true, "family_index": true,
	"per_family_instance_index": true, "aggregate_name": true, "aggregate_unit": true, "label": true, "error_occurred": true,
	"error_message": true, "big_o": true, "rms": true, "complexity_n": true,
}

// readGoogleBench reads Google Benchmark JSON: one configuration per
// run_name; per repetition (run_type "iteration"; aggregates such as
// mean and median are skipped) the metrics real_time_s and cpu_time_s
// (seconds per iteration) and every user counter by its name.
func readGoogleBench(name string, data []byte) (*Samples, error) {
	var doc struct {
		Benchmarks []map[string]any `json:"benchmarks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	b := newBuilder(name)
	for i, bm := range doc.Benchmarks {
		if rt, _ := bm["run_type"].(string); rt == "aggregate" {
			continue
		}
		if e, _ := bm["error_occurred"].(bool); e {
			continue
		}
		run, _ := bm["run_name"].(string)
		if run == "" {
			run, _ = bm["name"].(string)
		}
		if run == "" {
			return nil, fmt.Errorf("benchmarks[%d] has no name", i)
		}
		unit := 1e-9
		if u, ok := bm["time_unit"].(string); ok {
			if f, ok := timeUnit[u]; ok {
				unit = f
			} else {
				return nil, fmt.Errorf("benchmarks[%d] (%s): unknown time_unit %q", i, run, u)
			}
		}
		for _, k := range []string{"real_time", "cpu_time"} {
			if v, ok := bm[k].(float64); ok {
				b.add(run, run, k+"_s", v*unit)
			}
		}
		for k, v := range bm {
			if f, ok := v.(float64); ok && !gbenchFixed[k] {
				b.add(run, run, k, f)
			}
		}
	}
	if len(b.s.Configs) == 0 {
		return nil, errors.New("no benchmark repetitions (only aggregates or errors?)")
	}
	return b.s, nil
}

// readPytest reads pytest-benchmark JSON: one configuration per test
// (fullname), metric time_s from every round ("stats"."data", written
// with --benchmark-save-data).
func readPytest(name string, data []byte) (*Samples, error) {
	var doc struct {
		Benchmarks []struct {
			Name     string `json:"name"`
			Fullname string `json:"fullname"`
			Stats    struct {
				Data []float64 `json:"data"`
			} `json:"stats"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	b := newBuilder(name)
	for _, bm := range doc.Benchmarks {
		key := bm.Fullname
		if key == "" {
			key = bm.Name
		}
		if len(bm.Stats.Data) == 0 {
			return nil, fmt.Errorf("benchmark %s has no per-round data: run pytest with --benchmark-save-data (the summary statistics alone are not samples)", key)
		}
		for _, v := range bm.Stats.Data {
			b.add(key, bm.Name, "time_s", v)
		}
	}
	if len(b.s.Configs) == 0 {
		return nil, errors.New("no benchmarks")
	}
	return b.s, nil
}
