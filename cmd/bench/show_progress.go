package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchtune/bench/storage"
)

// writeProgress prints a trial's progress (the telemetry with a step) as
// a table, one row per report (step and time), one column per metric, and
// returns the rest of the telemetry.
func writeProgress(w io.Writer, tel []storage.Telemetry) []storage.Telemetry {
	type report struct {
		step   int64
		ts     time.Time
		values map[string]any
	}
	var reports []*report
	var plain []storage.Telemetry
	metrics := map[string]bool{}
	for _, t := range tel {
		if t.Step == nil {
			plain = append(plain, t)
			continue
		}
		metrics[t.Metric] = true
		if n := len(reports); n > 0 && reports[n-1].step == *t.Step && reports[n-1].ts.Equal(t.Ts) {
			reports[n-1].values[t.Metric] = t.Value
			continue
		}
		reports = append(reports, &report{step: *t.Step, ts: t.Ts, values: map[string]any{t.Metric: t.Value}})
	}
	if len(reports) == 0 {
		return plain
	}
	names := make([]string, 0, len(metrics))
	for m := range metrics {
		names = append(names, m)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "\nProgress (%s):\n", plural(len(reports), "report"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  step\ttime\t%s\n", strings.Join(names, "\t"))
	for _, r := range reports {
		cells := make([]string, len(names))
		for i, m := range names {
			if v, ok := r.values[m]; ok {
				cells[i] = fmt.Sprint(v)
			} else {
				cells[i] = "-"
			}
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", r.step, r.ts.Local().Format(time.RFC3339Nano), strings.Join(cells, "\t"))
	}
	tw.Flush()
	return plain
}
