package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/plots"
	"github.com/benchtune/bench/storage"
)

func newPlotCmd() *cobra.Command {
	var sf storageFlags
	var dir, format string
	var trialID int
	var scale plotScaleFlags
	cmd := &cobra.Command{
		Use:   "plot EXPERIMENT",
		Short: "Draw an experiment's plots as PNG and SVG files",
		Long: `Draw an experiment's plots into a folder (-o, default the working folder),
as PNG, SVG or both (--format), one file per plot and format:

  trace.EXT            each successful trial's score by trial id, and the
                       best score so far as a step line (the largest for a
                       max objective): one plot per objective
  tunable-NAME.EXT     the score against tunable NAME, one file per tunable
                       (categorical tunables: one column per value; log
                       axis for --log NAME, a --tunables FILE's "log": true
                       tunables, or values spanning three decades)
  pareto.EXT           the first two objectives against each other with
                       the Pareto front (only with two or more objectives)

With --trial N, draw only trial N's telemetry over time instead, one line
per numeric metric: telemetry-trial-N.EXT. Points are coloured by trial
order (first dark blue, last yellow); a trial that reused an identical
trial's result is a cross. The paths written are printed
one per line. bench compare A B --plot FILE draws a comparison; bench
report puts the plots on an HTML page. See docs/plots.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var formats []string
			switch format {
			case "png", "svg":
				formats = []string{format}
			case "both":
				formats = plots.Formats
			default:
				return exitWith(exitUsage, fmt.Errorf("--format must be png, svg or both, got %q", format))
			}
			if trialID < 0 {
				return exitWith(exitUsage, fmt.Errorf("--trial must be a trial id, got %d", trialID))
			}
			sf.experiment = args[0]
			ctx := cmd.Context()
			st, exp, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			info := exp.Info()
			var figs []*plots.Figure
			if trialID > 0 {
				d, err := exp.Trial(ctx, trialID)
				if errors.Is(err, storage.ErrNotFound) {
					return exitWith(exitUsage, fmt.Errorf("experiment %s has no trial %d", info.ID, trialID))
				}
				if err != nil {
					return err
				}
				f, err := plots.Telemetry(d)
				if err != nil {
					return exitWith(exitFailed, err)
				}
				figs = append(figs, f)
			} else {
				trials, err := exp.Trials(ctx, storage.TrialFilter{})
				if err != nil {
					return err
				}
				opt, err := scale.options()
				if err != nil {
					return err
				}
				if err := scale.checkLogNames(info.ID, trials); err != nil {
					return err
				}
				fs, notes, err := plots.AllWith(info, trials, opt)
				if err != nil {
					return exitWith(exitFailed, err)
				}
				for _, n := range notes {
					fmt.Fprintf(cmd.ErrOrStderr(), "bench plot: %s\n", n)
				}
				figs = fs
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return exitWith(exitUsage, err)
			}
			for _, f := range figs {
				paths, err := f.Write(dir, formats)
				for _, p := range paths {
					fmt.Fprintln(cmd.OutOrStdout(), p)
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	sf.addStorageOnly(cmd)
	cmd.Flags().StringVarP(&dir, "output", "o", ".", "folder to write the files into (created if missing)")
	cmd.Flags().StringVar(&format, "format", "both", "png, svg or both")
	cmd.Flags().IntVar(&trialID, "trial", 0, "draw this trial's telemetry over time instead")
	scale.add(cmd)
	return cmd
}

func newReportCmd() *cobra.Command {
	var sf storageFlags
	var output string
	var scale plotScaleFlags
	cmd := &cobra.Command{
		Use:   "report EXPERIMENT -o report.html",
		Short: "Write an experiment's report: one self-contained HTML page",
		Long: `Write one HTML page with the experiment's summary (name, status, trial
counts, objectives), its best configuration, the plots of bench plot (and
the telemetry of the best trial when it has numeric telemetry) and the
table of trials. The page is self-contained: the plots are PNG data: URIs
inside it, and it loads no scripts, fonts, style sheets or images from
anywhere, so it opens from a file or an e-mail without a server or a
network. See docs/plots.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return exitWith(exitUsage, errors.New("give the page's file with -o FILE (- for stdout)"))
			}
			sf.experiment = args[0]
			ctx := cmd.Context()
			st, exp, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			info := exp.Info()
			trials, err := exp.Trials(ctx, storage.TrialFilter{})
			if err != nil {
				return err
			}
			counts, err := exp.Counts(ctx)
			if err != nil {
				return err
			}
			in := plots.ReportInput{Info: info, Counts: counts, Trials: trials, Generated: time.Now(), Version: version}
			opt, err := scale.options()
			if err != nil {
				return err
			}
			figs, notes, err := plots.AllWith(info, trials, opt)
			if err != nil {
				// The page still shows the summary and the trials.
				notes = append(notes, err.Error())
			}
			if best, ok := plots.BestTrial(info.Objectives, trials); ok {
				if d, err := exp.Trial(ctx, best); err == nil && len(d.Telemetry) > 0 {
					if f, err := plots.Telemetry(d); err == nil {
						figs = append(figs, f)
					} else {
						notes = append(notes, "telemetry: "+err.Error())
					}
				}
			}
			in.Figures, in.Notes = figs, notes
			for _, n := range notes {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench report: %s\n", n)
			}
			if output == "-" {
				return plots.WriteReport(cmd.OutOrStdout(), in)
			}
			if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
				return exitWith(exitUsage, err)
			}
			f, err := os.Create(output)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			err = plots.WriteReport(f, in)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), output)
			return nil
		},
	}
	sf.addStorageOnly(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "", "the HTML file to write, its folder created if missing (- for stdout)")
	scale.add(cmd)
	return cmd
}
