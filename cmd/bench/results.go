package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchtune/bench/trial"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/ci"
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

// open opens the storage read-only and finds the experiment: an
// mlos_bench database is read as it is, not adopted.
func (f *storageFlags) open(ctx context.Context) (storage.Storage, storage.Experiment, error) {
	return f.openWith(ctx, true, true)
}

// openMode opens the storage and finds the experiment; with readOnly a
// missing SQLite file is an error instead of being created.
func (f *storageFlags) openMode(ctx context.Context, readOnly bool) (storage.Storage, storage.Experiment, error) {
	return f.openWith(ctx, readOnly, false)
}

// openWith is openMode; with reading, the storage is opened for reading
// only (launcher.OpenStorageForReading).
func (f *storageFlags) openWith(ctx context.Context, readOnly, reading bool) (storage.Storage, storage.Experiment, error) {
	args := &configs.Args{ConfigPaths: f.configPaths, Globals: f.globals}
	l, err := configs.Prepare(args, validateFunc)
	if err != nil {
		return nil, nil, exitWith(exitUsage, err)
	}
	f.secrets = l.Secrets
	var st storage.Storage
	if reading {
		st, err = launcher.OpenStorageForReading(ctx, l.Loader, f.storage, l.Globals)
	} else {
		st, err = launcher.OpenStorage(ctx, l.Loader, f.storage, l.Globals, readOnly)
	}
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
	var q trialQuery
	var cols columnSel
	var byConfig bool
	var aggSpec string
	cmd := &cobra.Command{
		Use:   "results",
		Short: "Show an experiment's trials with their parameters and results",
		Long: `Show the trials of an experiment: id, status, the tunable values (config.*)
and the results (result.*), as a table, CSV, JSON or Markdown. A header
names the experiment and its status (on stderr for CSV, in the document
for JSON). With --list, show the experiments in the storage instead. With
--pareto, show only the successful trials on the Pareto front of the
experiment's objectives (the trials no other trial beats on every
objective).

Filters: --status keeps trials in the given statuses; --where NAME=VALUE
keeps trials whose tunable NAME (or result NAME) has that value (numbers
compare as numbers; repeatable, all must hold); --best N keeps the N best
successful trials by the objectives, best first. --sort COLUMN orders by a
column of the table (trial, status, config, config.NAME, result.NAME,
duration; a leading - sorts descending; numbers sort as numbers).

A trial that reused the result of an identical trial (not measured again)
has it in a reused_from column (the trial id, or EXPERIMENT:ID for a
trial of a --reuse-from experiment), shown when any trial reused one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "table", "csv", "json", "markdown":
			default:
				return exitWith(exitUsage, fmt.Errorf("--format must be table, csv, json or markdown, got %q", format))
			}
			if cmd.Flags().Changed("best") && q.best < 1 {
				return exitWith(exitUsage, fmt.Errorf("--best must be >= 1, got %d", q.best))
			}
			if err := q.parse(); err != nil {
				return exitWith(exitUsage, err)
			}
			if err := cols.check(); err != nil {
				return exitWith(exitUsage, err)
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
			total := len(trials)
			all := trials
			info := exp.Info()
			if front {
				trials = paretoTrials(info.Objectives, trials)
			}
			if trials, err = q.apply(info.Objectives, trials); err != nil {
				return exitWith(exitUsage, err)
			}
			stored := info.Status
			if counts, err := exp.Counts(ctx); err == nil {
				info.Status = trueStatus(info, counts)
			}
			header := resultsHeader(info, total, len(trials), sf.experiment == "")
			if info.Status != stored {
				header += fmt.Sprintf(" (stored as %s, but its bench process %d has exited: rerun the same command to resume)", stored, info.DriverPID)
			}
			var pols analysis.Policies
			if byConfig {
				// Refused before the header is printed.
				if pols, err = parsePolicies(aggSpec, storage.Targets(info.Objectives)); err != nil {
					return exitWith(exitUsage, err)
				}
			}
			extra := experimentAnswerLines(info, all)
			if r := endReasonLine(info); r != "" && format != "json" {
				fmt.Fprintln(cmd.ErrOrStderr(), "bench: "+r)
			}
			switch format {
			case "table", "markdown":
				fmt.Fprintln(cmd.OutOrStdout(), header)
				for _, l := range extra {
					fmt.Fprintln(cmd.OutOrStdout(), l)
				}
				fmt.Fprintln(cmd.OutOrStdout())
			case "csv":
				fmt.Fprintln(cmd.ErrOrStderr(), "bench: "+header)
				for _, l := range extra {
					fmt.Fprintln(cmd.ErrOrStderr(), "bench: "+l)
				}
			}
			if byConfig {
				return writeByConfig(cmd.OutOrStdout(), info, trials, pols, format)
			}
			return writeTrialColumns(cmd.OutOrStdout(), info, trials, format, cols)
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&format, "format", "table", "table, csv, json or markdown")
	cmd.Flags().BoolVar(&list, "list", false, "list the experiments instead")
	cmd.Flags().BoolVar(&front, "pareto", false, "only the trials on the Pareto front of the objectives")
	cmd.Flags().StringSliceVar(&q.statuses, "status", nil, "only trials in these statuses (e.g. SUCCEEDED,FAILED)")
	cmd.Flags().IntVar(&q.best, "best", 0, "only the N best successful trials by the objectives, best first")
	cmd.Flags().StringArrayVar(&q.where, "where", nil, "only trials whose tunable (or result) NAME=VALUE (repeatable)")
	cmd.Flags().BoolVar(&cols.all, "all", false, "table and markdown: also show the built-in bench.* measurements (CSV and JSON always have every column)")
	cmd.Flags().StringSliceVar(&cols.metrics, "metrics", nil, "table and markdown: also show these built-in measurements, by name or pattern (e.g. bench.*.run.wall_s)")
	cmd.Flags().StringVar(&q.sort, "sort", "", "sort by this column (e.g. result.score, config.level, duration; -COLUMN: descending)")
	cmd.Flags().BoolVar(&byConfig, "by-config", false, "one row per configuration: its repeats aggregated (--aggregate), their CV and 95% interval, best first")
	cmd.Flags().StringVar(&aggSpec, "aggregate", "", "with --by-config: mean, median, min, max, trimmed_mean[:F], mean_minus_ksd[:K], or TARGET=POLICY,... (default: the experiment's repeat_aggregate, else the mean)")
	return cmd
}

// resultsHeader names the experiment (and says it was picked when no
// --experiment was given).
func resultsHeader(info storage.ExperimentInfo, total, shown int, picked bool) string {
	var objs []string
	for _, o := range info.Objectives {
		objs = append(objs, o.Name+" ("+o.Direction+")")
	}
	h := fmt.Sprintf("Experiment %s: %s, %d trials", info.ID, info.Status, total)
	if shown != total {
		h += fmt.Sprintf(" (%d shown)", shown)
	}
	if len(objs) > 0 {
		h += ", objectives " + strings.Join(objs, ", ")
	}
	if picked {
		h += " [the most recent experiment; choose with --experiment]"
	}
	return h
}

// trueStatus is the status to show: the stored one, except that an
// experiment still marked PENDING, READY or RUNNING whose driver process
// is gone (on this host) is shown as CANCELED when it has unfinished
// trials, or as SUCCEEDED / FAILED from its trials when it has none.
func trueStatus(info storage.ExperimentInfo, counts map[trial.Status]int) trial.Status {
	st := info.Status
	if st.IsCompleted() || !driverGone(info) {
		return st
	}
	unfinished := counts[trial.PENDING] + counts[trial.READY] + counts[trial.RUNNING]
	switch {
	case unfinished > 0:
		return trial.CANCELED
	case counts[trial.SUCCEEDED] > 0:
		return trial.SUCCEEDED
	case counts[trial.FAILED]+counts[trial.TIMED_OUT] > 0:
		return trial.FAILED
	}
	return st
}

// driverGone reports whether the experiment's last driver ran on this
// host and its process no longer exists.
func driverGone(info storage.ExperimentInfo) bool {
	host, err := os.Hostname()
	if err != nil || info.DriverName == "" || info.DriverName != host || info.DriverPID <= 0 {
		return false
	}
	if info.DriverPID == os.Getpid() {
		return false
	}
	err = syscall.Kill(info.DriverPID, 0)
	return errors.Is(err, syscall.ESRCH)
}

// trialQuery is bench results' filters and sort order.
type trialQuery struct {
	statuses []string
	best     int
	where    []string
	sort     string

	wantStatus map[trial.Status]bool
	conds      [][2]string
}

func (q *trialQuery) parse() error {
	if q.best < 0 {
		return fmt.Errorf("--best must be >= 1, got %d", q.best)
	}
	for _, s := range q.statuses {
		st, err := trial.ParseStatus(s)
		if err != nil {
			return fmt.Errorf("--status %q: %w", s, err)
		}
		if q.wantStatus == nil {
			q.wantStatus = map[trial.Status]bool{}
		}
		q.wantStatus[st] = true
	}
	for _, w := range q.where {
		name, val, ok := strings.Cut(w, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("--where %q: want NAME=VALUE, e.g. --where level=6", w)
		}
		q.conds = append(q.conds, [2]string{name, strings.TrimSpace(val)})
	}
	return nil
}

// sameValue compares a stored value with a --where value: as numbers when
// both are numbers, else as text.
func sameValue(stored, want string) bool {
	if stored == want {
		return true
	}
	a, err1 := strconv.ParseFloat(stored, 64)
	b, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && a == b
}

func (q *trialQuery) apply(objs []storage.Objective, trials []storage.Trial) ([]storage.Trial, error) {
	for _, c := range q.conds {
		// A name no trial has is a typo, not a filter that keeps nothing.
		known := len(trials) == 0
		for _, t := range trials {
			_, p := t.Params[strings.TrimPrefix(c[0], "config.")]
			if p || t.Results[strings.TrimPrefix(c[0], "result.")] != nil {
				known = true
				break
			}
		}
		if !known {
			return nil, fmt.Errorf("--where %q: no trial has a tunable or result named %q", c[0]+"="+c[1], c[0])
		}
	}
	var out []storage.Trial
	for _, t := range trials {
		if q.wantStatus != nil && !q.wantStatus[t.Status] {
			continue
		}
		ok := true
		for _, c := range q.conds {
			v, has := t.Params[strings.TrimPrefix(c[0], "config.")]
			if !has {
				v, has = t.Results.Text(strings.TrimPrefix(c[0], "result.")), t.Results[strings.TrimPrefix(c[0], "result.")] != nil
			}
			if !has || !sameValue(v, c[1]) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, t)
		}
	}
	if q.best > 0 {
		if len(objs) == 0 {
			return nil, errors.New("--best: the experiment has no objectives")
		}
		targets := storage.Targets(objs)
		type scored struct {
			t  storage.Trial
			sc []float64
		}
		var cands []scored
		for _, t := range out {
			if t.Status != trial.SUCCEEDED || trial.LowFidelity(t.Metadata) {
				continue // a lower-fidelity result is not an answer
			}
			if sc, err := targets.Scores(t.Status, t.Results); err == nil {
				cands = append(cands, scored{t, sc})
			}
		}
		sort.SliceStable(cands, func(i, j int) bool { return ci.LexLess(cands[i].sc, cands[j].sc) })
		out = out[:0:0]
		for i := 0; i < len(cands) && i < q.best; i++ {
			out = append(out, cands[i].t)
		}
	}
	if q.sort != "" {
		col, desc := strings.CutPrefix(q.sort, "-")
		key, err := sortKey(col, trials)
		if err != nil {
			return nil, err
		}
		sort.SliceStable(out, func(i, j int) bool {
			a, b := key(out[i]), key(out[j])
			if desc {
				return lessCell(b, a)
			}
			return lessCell(a, b)
		})
	}
	return out, nil
}

// cellKey is a sortable cell: numbers before text, missing last.
type cellKey struct {
	missing bool
	isNum   bool
	num     float64
	text    string
}

func lessCell(a, b cellKey) bool {
	switch {
	case a.missing != b.missing:
		return b.missing
	case a.isNum != b.isNum:
		return a.isNum
	case a.isNum:
		return a.num < b.num
	}
	return a.text < b.text
}

func textKey(s string) cellKey {
	if s == "" {
		return cellKey{missing: true}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return cellKey{isNum: true, num: f}
	}
	return cellKey{text: s}
}

// sortKey returns the sort key of a column of the results table.
func sortKey(col string, trials []storage.Trial) (func(storage.Trial) cellKey, error) {
	switch col {
	case "trial", "trial_id":
		return func(t storage.Trial) cellKey { return cellKey{isNum: true, num: float64(t.ID)} }, nil
	case "status":
		return func(t storage.Trial) cellKey { return cellKey{text: t.Status.String()} }, nil
	case "config", "config_id":
		return func(t storage.Trial) cellKey { return cellKey{isNum: true, num: float64(t.ConfigID)} }, nil
	case "duration", "duration_s":
		return func(t storage.Trial) cellKey {
			if !t.Finished() {
				return cellKey{missing: true}
			}
			return cellKey{isNum: true, num: t.TsEnd.Sub(t.TsStart).Seconds()}
		}, nil
	}
	if p, ok := strings.CutPrefix(col, "config."); ok {
		return func(t storage.Trial) cellKey { return textKey(t.Params[p]) }, nil
	}
	if m, ok := strings.CutPrefix(col, "result."); ok {
		return func(t storage.Trial) cellKey { return textKey(t.Results.Text(m)) }, nil
	}
	// A bare name: a tunable, else a result.
	for _, t := range trials {
		if _, ok := t.Params[col]; ok {
			return sortKey("config."+col, trials)
		}
		if _, ok := t.Results[col]; ok {
			return sortKey("result."+col, trials)
		}
	}
	return nil, fmt.Errorf("--sort %q: no such column (use trial, status, config, duration, config.NAME or result.NAME)", col)
}

func listExperiments(ctx context.Context, w io.Writer, sf *storageFlags, format string) error {
	args := &configs.Args{ConfigPaths: sf.configPaths, Globals: sf.globals}
	l, err := configs.Prepare(args, validateFunc)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	st, err := launcher.OpenStorageForReading(ctx, l.Loader, sf.storage, l.Globals)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	defer st.Close()
	exps, err := st.Experiments(ctx)
	if err != nil {
		return err
	}
	for i := range exps {
		exps[i].Status = trueStatus(exps[i].ExperimentInfo, exps[i].Trials)
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
	return writeTrialColumns(w, info, trials, format, columnSel{all: true})
}

// writeTrialColumns is writeTrials with a choice of result columns for
// the table and markdown formats, whose numbers are rounded
// (results_columns.go); CSV and JSON have every column in full.
func writeTrialColumns(w io.Writer, info storage.ExperimentInfo, trials []storage.Trial, format string, cols columnSel) error {
	human := format == "table" || format == "markdown"
	if !human {
		cols = columnSel{all: true}
	}
	round := func(s string) string { return s }
	if human {
		round = roundCell
	}
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
			if cols.shows(k, info.Objectives) {
				metrics[k] = true
			}
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
	reusedCol := anyReused(trials)
	if reusedCol {
		header = append(header, "reused_from")
	}
	fidCol := anyFidelity(trials) // results_fidelity.go
	if fidCol {
		header = append(header, "fidelity")
	}
	header = append(header, "duration", "reason")
	var rows [][]string
	for _, t := range trials {
		row := []string{strconv.Itoa(t.ID), t.Status.String(), strconv.FormatInt(t.ConfigID, 10)}
		for _, p := range pnames {
			row = append(row, round(t.Params[p]))
		}
		for _, m := range ordered {
			row = append(row, round(t.Results.Text(m)))
		}
		if reusedCol {
			row = append(row, reusedCell(info.ID, t.ReusedFrom))
		}
		if fidCol {
			row = append(row, fidelityCell(t))
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
