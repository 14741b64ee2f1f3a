package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/internal/stats"
	"github.com/benchtune/bench/plots"
)

const ciHistoryHelp = `Usage: bench ci history METRIC --history FILE [options]

Show METRIC's series over the runs recorded in a bench ci history file
(bench ci --history FILE), one line per run (time, commit, branch,
testbed, median, n), and the change points found by E-divisive means
with a permutation test: the run (and commit) where a level shift began.
See docs/ci.md.

Options:
  --history FILE        the history file (JSON Lines; required)
  --config LABEL        the configuration (default: the first recorded)
  --testbed LABEL       only runs of this testbed
  --branch NAME         only runs of this branch
  --alpha P             significance of a change point (default 0.01)
  --permutations N      permutations per test (default 499)
  --min-size N          fewest runs between change points (default 5)
  --plot FILE           also draw the series (.png or .svg)
  --format text|json    output format (default text)
`

// runCIHistory is bench ci history.
func runCIHistory(stdout, stderr io.Writer, argv []string) error {
	var metric, path, plotFile, format = "", "", "", "text"
	var filter ci.HistoryFilter
	o := stats.ChangePointOptions{Seed: 1}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "-h" || a == "--help" {
			fmt.Fprint(stdout, ciHistoryHelp)
			return nil
		}
		name, val, has := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") {
			if metric != "" {
				return exitWith(exitUsage, fmt.Errorf("bench ci history takes one METRIC, got %q and %q", metric, a))
			}
			metric = a
			continue
		}
		if !has {
			if i+1 >= len(argv) {
				return exitWith(exitUsage, fmt.Errorf("%s needs a value", name))
			}
			i++
			val = argv[i]
		}
		var err error
		switch strings.ReplaceAll(name, "_", "-") {
		case "--history":
			path = val
		case "--config":
			filter.Config = val
		case "--testbed":
			filter.Testbed = val
		case "--branch":
			filter.Branch = val
		case "--plot":
			plotFile = val
		case "--format":
			format = val
		case "--alpha":
			o.Alpha, err = strconv.ParseFloat(val, 64)
			if err != nil || !(o.Alpha > 0 && o.Alpha < 1) {
				err = fmt.Errorf("--alpha must be between 0 and 1, got %q", val)
			}
		case "--permutations":
			o.Permutations, err = strconv.Atoi(val)
			if err != nil || o.Permutations < 19 {
				err = fmt.Errorf("--permutations must be an integer >= 19, got %q", val)
			}
		case "--min-size":
			o.MinSize, err = strconv.Atoi(val)
			if err != nil || o.MinSize < 2 {
				err = fmt.Errorf("--min-size must be an integer >= 2, got %q", val)
			}
		default:
			err = fmt.Errorf("unknown option %s (see bench ci history --help)", name)
		}
		if err != nil {
			return exitWith(exitUsage, err)
		}
	}
	switch {
	case metric == "":
		return exitWith(exitUsage, errors.New("bench ci history needs a METRIC (see bench ci history --help)"))
	case path == "":
		return exitWith(exitUsage, errors.New("bench ci history needs --history FILE"))
	case format != "text" && format != "json":
		return exitWith(exitUsage, fmt.Errorf("--format must be text or json, got %q", format))
	case plotFile != "" && !plots.ImageFile(plotFile):
		return exitWith(exitUsage, fmt.Errorf("--plot %s: the file name must end in .png or .svg", plotFile))
	}
	recs, err := ci.ReadHistory(path)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	pts, configs := ci.Series(recs, metric, filter)
	if len(pts) == 0 {
		if len(configs) > 0 {
			return exitWith(exitUsage, fmt.Errorf("%s: no run of configuration %q has %s (configurations: %s)", path, filter.Config, metric, strings.Join(configs, ", ")))
		}
		return exitWith(exitUsage, fmt.Errorf("%s: no recorded run has metric %q", path, metric))
	}
	cps := ci.ChangePointsOf(pts, o)
	if plotFile != "" {
		fig, err := plots.History(metric, pts, cps)
		if err == nil {
			err = fig.WriteFile(plotFile)
		}
		if err != nil {
			return exitWith(exitUsage, fmt.Errorf("--plot: %w", err))
		}
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"metric": metric, "config": pts[0].Config, "series": pts, "change_points": cps,
			"method": fmt.Sprintf("E-divisive means (exponent 1), permutation test with %d permutations, alpha %g, segments of at least %d runs", o.Permutations, o.Alpha, o.MinSize)})
	}
	at := map[int]ci.SeriesChange{}
	for _, c := range cps {
		at[c.Index] = c
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s [%s]: %d runs\n", metric, pts[0].Config, len(pts))
	fmt.Fprintln(tw, "run\ttime\tcommit\tbranch\ttestbed\tmedian\tn\t")
	for i, p := range pts {
		mark := ""
		if c, ok := at[i]; ok {
			mark = fmt.Sprintf("◀ change point: %s (%s → %s, p=%.3g)", ci.FormatChange(c.Change), ci.FormatValue(c.Before), ci.FormatValue(c.After), c.P)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", i+1, p.Time.Format("2006-01-02 15:04"), short(p.Commit), p.Branch, p.Record.Testbed, ci.FormatValue(p.Median), p.N, mark)
	}
	tw.Flush()
	if len(cps) == 0 {
		fmt.Fprintf(stdout, "no change point (E-divisive means, permutation test at alpha %g)\n", o.Alpha)
	}
	for _, c := range cps {
		fmt.Fprintf(stdout, "change point at run %d, commit %s (%s): %s\n", c.Index+1, c.Commit, c.Time.Format("2006-01-02 15:04"), ci.FormatChange(c.Change))
	}
	return nil
}
