package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/storage"
)

func newExportCmd() *cobra.Command {
	var sf storageFlags
	var format, output string
	cmd := &cobra.Command{
		Use:   "export EXPERIMENT",
		Short: "Write an experiment's trials as one tidy table (CSV or JSON)",
		Long: `Write one row per trial: experiment_id, trial_id, status, config_id,
config_hash, trial_runner_id, ts_start, ts_end (RFC 3339, UTC),
duration_s, retry_of, failure_reason, reused_from and
reused_from_experiment (set on a row that is a reused copy of trial N:
its result is that trial's, not a new measurement), then each tunable (config.NAME),
each result (result.NAME) and, per telemetry metric, its mean, min and
max over the trial (telemetry.NAME.mean, .min, .max), and per progress
metric (intermediate results, telemetry with a step) its value at the
largest step, that step and its number of reports (progress.NAME.last,
.last_step, .reports). Missing values are
empty in CSV and null in JSON, so that pandas (read_csv, read_json) and R
(read.csv, jsonlite::fromJSON) read the file as it is. The file is also a
baseline for bench ci and bench compare.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "csv" && format != "json" {
				return exitWith(exitUsage, fmt.Errorf("--format must be csv or json, got %q", format))
			}
			sf.experiment = args[0]
			ctx := cmd.Context()
			st, exp, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			trials, err := exp.Trials(ctx, storage.TrialFilter{})
			if err != nil {
				return err
			}
			tb, err := ci.ExportTable(ctx, exp, trials)
			if err != nil {
				return err
			}
			var w io.Writer = cmd.OutOrStdout()
			var f *os.File
			if output != "" && output != "-" {
				if f, err = os.Create(output); err != nil {
					return exitWith(exitUsage, err)
				}
				w = f
			}
			if format == "csv" {
				err = tb.WriteCSV(w)
			} else {
				err = tb.WriteJSON(w)
			}
			if f != nil {
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			return err
		},
	}
	sf.addStorageOnly(cmd)
	cmd.Flags().StringVar(&format, "format", "csv", "csv or json")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file (default: stdout)")
	return cmd
}
