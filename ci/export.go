package ci

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/storage"
)

// Table is bench export's tidy table: one row per trial, one column per
// variable. Cells are float64, int64, string or nil (missing).
type Table struct {
	Columns []string
	Rows    [][]any
}

// The fixed columns of an export, before config.*, result.* and
// telemetry.* ones.
var exportFixed = []string{"experiment_id", "trial_id", "status", "config_id", "config_hash", "trial_runner_id",
	"ts_start", "ts_end", "duration_s", "retry_of", "failure_reason", "reused_from", "reused_from_experiment"}

// ExportTable builds the tidy table of an experiment's trials: ids,
// status, timestamps (RFC 3339, UTC), duration, each tunable as
// config.NAME, each result as result.NAME (numbers where they are
// numeric), per telemetry metric, telemetry.NAME.mean, .min and .max
// over the trial's numeric samples, and per progress metric (telemetry
// with a step) progress.NAME.last (the value at the largest step),
// .last_step and .reports.
func ExportTable(ctx context.Context, exp storage.Experiment, trials []storage.Trial) (*Table, error) {
	params, results := map[string]bool{}, map[string]bool{}
	tele := make([]map[string][]float64, len(trials))
	teleNames := map[string]bool{}
	prog := make([]map[string]progressCell, len(trials))
	progNames := map[string]bool{}
	for i, t := range trials {
		for k := range t.Params {
			params[k] = true
		}
		for k := range t.Results {
			results[k] = true
		}
		d, err := exp.Trial(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		tm := map[string][]float64{}
		prog[i] = progressOf(d.Telemetry)
		for m := range prog[i] {
			progNames[m] = true
		}
		for _, s := range d.Telemetry {
			if s.Step != nil {
				continue // progress: progress.* columns
			}
			if f, ok := number(s.Value); ok {
				tm[s.Metric] = append(tm[s.Metric], f)
				teleNames[s.Metric] = true
			}
		}
		tele[i] = tm
	}
	pn, rn, tn, gn := sorted(params), sorted(results), sorted(teleNames), sorted(progNames)
	tb := &Table{Columns: append([]string(nil), exportFixed...)}
	for _, p := range pn {
		tb.Columns = append(tb.Columns, "config."+p)
	}
	for _, r := range rn {
		tb.Columns = append(tb.Columns, "result."+r)
	}
	for _, m := range tn {
		tb.Columns = append(tb.Columns, "telemetry."+m+".mean", "telemetry."+m+".min", "telemetry."+m+".max")
	}
	for _, m := range gn {
		tb.Columns = append(tb.Columns, "progress."+m+".last", "progress."+m+".last_step", "progress."+m+".reports")
	}
	for i, t := range trials {
		row := []any{t.ExperimentID, int64(t.ID), t.Status.String(), t.ConfigID, t.ConfigHash, optInt(t.TrialRunnerID),
			ts(t.TsStart), ts(t.TsEnd), nil, optInt(t.RetryOf), optStr(t.FailureReason), nil, nil}
		if r := t.ReusedFrom; r != nil {
			// A reused copy of trial N: its result was not measured again.
			row[11] = int64(r.TrialID)
			exp := r.ExperimentID
			if exp == "" {
				exp = t.ExperimentID
			}
			row[12] = exp
		}
		if t.Finished() {
			row[8] = t.TsEnd.Sub(t.TsStart).Seconds()
		}
		for _, p := range pn {
			v, ok := t.Params[p]
			if !ok {
				row = append(row, nil)
				continue
			}
			row = append(row, cell(v))
		}
		for _, r := range rn {
			if f, ok := t.Results.Float(r); ok {
				row = append(row, f)
			} else if s := t.Results.Text(r); s != "" {
				row = append(row, s)
			} else {
				row = append(row, nil)
			}
		}
		for _, m := range tn {
			xs := tele[i][m]
			if len(xs) == 0 {
				row = append(row, nil, nil, nil)
				continue
			}
			sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
			for _, x := range xs {
				sum += x
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
			row = append(row, sum/float64(len(xs)), lo, hi)
		}
		for _, m := range gn {
			if c, ok := prog[i][m]; ok {
				row = append(row, c.last, c.step, c.n)
			} else {
				row = append(row, nil, nil, nil)
			}
		}
		tb.Rows = append(tb.Rows, row)
	}
	return tb, nil
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	return 0, false
}

// cell turns a stored parameter (text) into a number when it is one, so
// that JSON readers get numeric columns.
func cell(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f
	}
	return s
}

func optInt(i int) any {
	if i == 0 {
		return nil
	}
	return int64(i)
}

func optStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// text renders a cell for CSV: empty for missing (NA in R, NaN in
// pandas), numbers in Go's shortest form.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
		if math.IsInf(v, 1) {
			return "Inf"
		}
		if math.IsInf(v, -1) {
			return "-Inf"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return v
	}
	return ""
}

// WriteCSV writes the table as CSV with a header row.
func (tb *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(tb.Columns); err != nil {
		return err
	}
	rec := make([]string, len(tb.Columns))
	for _, r := range tb.Rows {
		for i, v := range r {
			rec[i] = text(v)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the table as a JSON array of row objects (pandas
// read_json, R jsonlite::fromJSON), every column in every row (null when
// missing); NaN and infinities, which JSON lacks, become null.
func (tb *Table) WriteJSON(w io.Writer) error {
	if _, err := io.WriteString(w, "[\n"); err != nil {
		return err
	}
	for ri, r := range tb.Rows {
		buf := []byte("  {")
		for i, v := range r {
			if i > 0 {
				buf = append(buf, ", "...)
			}
			k, _ := json.Marshal(tb.Columns[i])
			buf = append(buf, k...)
			buf = append(buf, ": "...)
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				v = nil
			}
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			buf = append(buf, b...)
			if f, ok := v.(float64); ok && f == math.Trunc(f) && !strings.ContainsAny(string(b), ".eE") {
				// A float stays a float: 0.0, not 0 (a float tunable's
				// value, as mlos_bench stores it; readers then type the
				// column as float).
				buf = append(buf, ".0"...)
			}
		}
		buf = append(buf, '}')
		if ri < len(tb.Rows)-1 {
			buf = append(buf, ',')
		}
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]\n")
	return err
}

// progressCell sums up a metric's progress: its value at the largest
// step (the latest report of that step), that step, and how many reports
// gave it.
type progressCell struct {
	last any
	step int64
	n    int64
}

func progressOf(tel []storage.Telemetry) map[string]progressCell {
	out := map[string]progressCell{}
	for _, t := range tel {
		if t.Step == nil {
			continue
		}
		c, seen := out[t.Metric]
		c.n++
		if !seen || *t.Step >= c.step {
			c.step = *t.Step
			if f, ok := number(t.Value); ok {
				c.last = f
			} else if t.Value == nil {
				c.last = nil
			} else {
				c.last = fmt.Sprint(t.Value)
			}
		}
		out[t.Metric] = c
	}
	return out
}
