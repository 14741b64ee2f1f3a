package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/storage"
)

// storageFlags are the flags that say which storage to read.
type storageFlags struct {
	storage     string
	configPaths []string
	globals     []string
	experiment  string
	// secrets are the secret parameters of the globals files given (set
	// by open): what bench show keeps out of its output.
	secrets *configs.Secrets
}

func (f *storageFlags) add(cmd *cobra.Command) {
	f.addStorageOnly(cmd)
	cmd.Flags().StringVar(&f.experiment, "experiment", "", "experiment id (default: the only experiment, or the most recent one)")
}

// addStorageOnly adds the flags that find the storage.
func (f *storageFlags) addStorageOnly(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.storage, "storage", "", "storage config file (default: the SQLite file bench.sqlite in the working folder)")
	cmd.Flags().StringSliceVar(&f.configPaths, "config-path", nil, "folders to search for config files")
	cmd.Flags().StringSliceVar(&f.globals, "globals", nil, "globals files (e.g. with the database password)")
}

// open opens the storage read-only and finds the experiment.
func (f *storageFlags) open(ctx context.Context) (storage.Storage, storage.Experiment, error) {
	return f.openMode(ctx, true)
}

// openMode opens the storage and finds the experiment; with readOnly a
// missing SQLite file is an error instead of being created.
func (f *storageFlags) openMode(ctx context.Context, readOnly bool) (storage.Storage, storage.Experiment, error) {
	args := &configs.Args{ConfigPaths: f.configPaths, Globals: f.globals}
	l, err := configs.Prepare(args, validateFunc)
	if err != nil {
		return nil, nil, exitWith(exitUsage, err)
	}
	f.secrets = l.Secrets
	st, err := launcher.OpenStorage(ctx, l.Loader, f.storage, l.Globals, readOnly)
	if err != nil {
		if errors.Is(err, storage.ErrNoDatabase) {
			return nil, nil, exitWith(exitUsage, fmt.Errorf("%w: no experiment has been run in this folder yet (or give --storage)", err))
		}
		return nil, nil, exitWith(exitUsage, err)
	}
	id := f.experiment
	if id == "" {
		exps, err := st.Experiments(ctx)
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		if len(exps) == 0 {
			st.Close()
			return nil, nil, exitWith(exitUsage, fmt.Errorf("no experiments in %s", st.Describe()))
		}
		sort.Slice(exps, func(i, j int) bool { return exps[i].TsStart.After(exps[j].TsStart) })
		id = exps[0].ID
	}
	exp, err := st.LoadExperiment(ctx, id)
	if err != nil {
		st.Close()
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil, exitWith(exitUsage, fmt.Errorf("experiment %q not found in %s", id, st.Describe()))
		}
		return nil, nil, err
	}
	return st, exp, nil
}

func newResultsCmd() *cobra.Command {
	var sf storageFlags
	var format string
	var list, front bool
	cmd := &cobra.Command{
		Use:   "results",
		Short: "Show an experiment's trials with their parameters and results",
		Long: `Show the trials of an experiment: id, status, the tunable values (config.*)
and the results (result.*), as a table, CSV, JSON or Markdown. With --list,
show the experiments in the storage instead. With --pareto, show only the
successful trials on the Pareto front of the experiment's objectives (the
trials no other trial beats on every objective).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "table", "csv", "json", "markdown":
			default:
				return exitWith(exitUsage, fmt.Errorf("--format must be table, csv, json or markdown, got %q", format))
			}
			ctx := cmd.Context()
			if list {
				return listExperiments(ctx, cmd.OutOrStdout(), &sf, format)
			}
			st, exp, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			trials, err := exp.Trials(ctx, storage.TrialFilter{})
			if err != nil {
				return err
			}
			if front {
				trials = paretoTrials(exp.Info().Objectives, trials)
			}
			return writeTrials(cmd.OutOrStdout(), exp.Info(), trials, format)
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&format, "format", "table", "table, csv, json or markdown")
	cmd.Flags().BoolVar(&list, "list", false, "list the experiments instead")
	cmd.Flags().BoolVar(&front, "pareto", false, "only the trials on the Pareto front of the objectives")
	return cmd
}

func listExperiments(ctx context.Context, w io.Writer, sf *storageFlags, format string) error {
	args := &configs.Args{ConfigPaths: sf.configPaths, Globals: sf.globals}
	l, err := configs.Prepare(args, validateFunc)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	st, err := launcher.OpenStorage(ctx, l.Loader, sf.storage, l.Globals, true)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	defer st.Close()
	exps, err := st.Experiments(ctx)
	if err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(w, exps)
	}
	header := []string{"experiment", "status", "trials", "succeeded", "failed", "started", "objectives", "description"}
	var rows [][]string
	for _, e := range exps {
		total := 0
		for _, n := range e.Trials {
			total += n
		}
		var objs []string
		for _, o := range e.Objectives {
			objs = append(objs, o.Name+":"+o.Direction)
		}
		rows = append(rows, []string{e.ID, e.Status.String(), strconv.Itoa(total), strconv.Itoa(e.Trials[trial.SUCCEEDED]),
			strconv.Itoa(e.Trials[trial.FAILED] + e.Trials[trial.TIMED_OUT]), e.TsStart.Local().Format(time.DateTime), strings.Join(objs, ","), e.Description})
	}
	return writeRows(w, format, header, rows)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeTrials writes trials with one column per tunable and per metric.
func writeTrials(w io.Writer, info storage.ExperimentInfo, trials []storage.Trial, format string) error {
	if format == "json" {
		return writeJSON(w, map[string]any{"experiment": info, "trials": trials})
	}
	params := map[string]bool{}
	metrics := map[string]bool{}
	for _, t := range trials {
		for k := range t.Params {
			params[k] = true
		}
		for k := range t.Results {
			metrics[k] = true
		}
	}
	pnames, mnames := sortedKeys(params), sortedKeys(metrics)
	// Objectives first, in their order.
	var ordered []string
	seen := map[string]bool{}
	for _, o := range info.Objectives {
		if metrics[o.Name] {
			ordered = append(ordered, o.Name)
			seen[o.Name] = true
		}
	}
	for _, m := range mnames {
		if !seen[m] {
			ordered = append(ordered, m)
		}
	}
	header := []string{"trial", "status", "config"}
	for _, p := range pnames {
		header = append(header, "config."+p)
	}
	for _, m := range ordered {
		header = append(header, "result."+m)
	}
	header = append(header, "duration", "reason")
	var rows [][]string
	for _, t := range trials {
		row := []string{strconv.Itoa(t.ID), t.Status.String(), strconv.FormatInt(t.ConfigID, 10)}
		for _, p := range pnames {
			row = append(row, t.Params[p])
		}
		for _, m := range ordered {
			row = append(row, t.Results.Text(m))
		}
		dur := ""
		if t.Finished() {
			dur = t.TsEnd.Sub(t.TsStart).Round(time.Millisecond).String()
		}
		row = append(row, dur, oneLine(t.FailureReason, 80))
		rows = append(rows, row)
	}
	return writeRows(w, format, header, rows)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-1] + "…"
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func writeRows(w io.Writer, format string, header []string, rows [][]string) error {
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(header); err != nil {
			return err
		}
		if err := cw.WriteAll(rows); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	case "markdown":
		esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
		fmt.Fprintf(w, "| %s |\n", strings.Join(mapStrings(header, esc), " | "))
		seps := make([]string, len(header))
		for i := range seps {
			seps[i] = "---"
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(mapStrings(r, esc), " | "))
		}
		return nil
	default:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		return tw.Flush()
	}
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// paretoTrials keeps the successful trials that no other successful trial
// dominates on the objectives.
func paretoTrials(objs []storage.Objective, trials []storage.Trial) []storage.Trial {
	targets := storage.Targets(objs)
	var cands []storage.Trial
	var scores [][]float64
	for _, t := range trials {
		if t.Status != trial.SUCCEEDED {
			continue
		}
		if row, err := targets.Scores(t.Status, t.Results); err == nil {
			cands = append(cands, t)
			scores = append(scores, row)
		}
	}
	var out []storage.Trial
	for _, i := range trial.ParetoFront(scores) {
		out = append(out, cands[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
