package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/stats"
	"github.com/benchtune/bench/plots"
)

func newCompareCmd() *cobra.Command {
	var sf storageFlags
	var f ciFlags
	var format, plotFile string
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two experiments or exported result files, benchstat style",
		Long: `Compare B with A (each a stored experiment id or a bench export file, CSV
or JSON): per configuration and metric, the median ± the 95% confidence
interval of the median of each side, the relative change of the medians
("~" when the two-sided Mann–Whitney U test finds no significant
difference, p >= alpha), its bootstrap 95% interval and the p-value.
Configurations are matched by their tunable values (config hash); one
configuration on each side is compared whatever its values.

With --thresholds, verdicts and exit codes follow bench ci: 0 pass, 1
regression, 2 error, missing data or too few samples (unless
--allow-insufficient). See docs/ci.md.

With --plot FILE (.png or .svg), also draw the comparison: per
configuration and metric, A's and B's samples side by side as dots over
a box plot (docs/plots.md).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "json", "markdown":
			default:
				return exitWith(exitUsage, fmt.Errorf("--format must be text, json or markdown, got %q", format))
			}
			if plotFile != "" && !plots.ImageFile(plotFile) {
				return exitWith(exitUsage, fmt.Errorf("--plot %s: the file name must end in .png or .svg", plotFile))
			}
			ctx := cmd.Context()
			l, err := configs.Prepare(&configs.Args{ConfigPaths: sf.configPaths, Globals: sf.globals}, validateFunc)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			var rules []ci.Rule
			alpha := ci.DefaultAlpha
			if f.thresholds != "" {
				th, err := ci.LoadThresholds(f.thresholds)
				if err != nil {
					return exitWith(exitUsage, err)
				}
				rules, alpha = th.Metrics, th.Alpha
			}
			if f.alpha != 0 {
				if !(f.alpha > 0 && f.alpha < 1) {
					return exitWith(exitUsage, fmt.Errorf("--alpha must be between 0 and 1, got %v", f.alpha))
				}
				alpha = f.alpha
			}
			a, err := ci.LoadSamples(ctx, l.Loader, sf.storage, l.Globals, args[0])
			if err != nil {
				return exitWith(exitUsage, err)
			}
			b, err := ci.LoadSamples(ctx, l.Loader, sf.storage, l.Globals, args[1])
			if err != nil {
				return exitWith(exitUsage, err)
			}
			if _, err := stats.ParseUTestMethod(f.uTest); err != nil {
				return exitWith(exitUsage, fmt.Errorf("--u-test: %w", err))
			}
			rep := ci.Compare(a, b, rules, f.compareOptions(alpha))
			if len(rep.Rows) == 0 {
				return exitWith(exitUsage, fmt.Errorf("nothing to compare: %s and %s have no configuration with a numeric metric in common", a.Name, b.Name))
			}
			if plotFile != "" {
				fig, err := plots.Compare(rep, a, b)
				if err == nil {
					err = fig.WriteFile(plotFile)
				}
				if err != nil {
					return exitWith(exitUsage, fmt.Errorf("--plot: %w", err))
				}
			}
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				if err := rep.WriteJSON(out); err != nil {
					return err
				}
			case "markdown":
				if err := rep.WriteMarkdown(out, "bench compare"); err != nil {
					return err
				}
			}
			if rules == nil {
				if format == "text" {
					return rep.WriteText(out, false)
				}
				return nil
			}
			if format != "text" {
				// The table went to stdout already; verdicts and exit code.
				return finishReport(discard{}, cmd.ErrOrStderr(), rep, f, "bench compare")
			}
			return finishReport(out, cmd.ErrOrStderr(), rep, f, "bench compare")
		},
	}
	sf.addStorageOnly(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "text, json or markdown")
	cmd.Flags().StringVar(&plotFile, "plot", "", "also draw the samples of A and B side by side into this file (.png or .svg)")
	cmd.Flags().StringVar(&f.thresholds, "thresholds", "", "thresholds file: give verdicts and exit codes as bench ci does")
	cmd.Flags().Float64Var(&f.alpha, "alpha", 0, "significance level (default: the thresholds file's, or 0.05)")
	cmd.Flags().StringVar(&f.uTest, "u-test", "benchstat", "Mann–Whitney p-value: benchstat (exact with ties) or r (R's wilcox.test)")
	cmd.Flags().BoolVar(&f.allowInsufficient, "allow-insufficient", false, "with --thresholds: too few samples passes (with a warning)")
	cmd.Flags().StringVar(&f.markdown, "markdown", "", "with --thresholds: append a Markdown summary to this file")
	cmd.Flags().StringVar(&f.junit, "junit", "", "with --thresholds: write JUnit XML to this file")
	cmd.Flags().StringVar(&f.json, "json", "", "with --thresholds: write the comparison as JSON to this file")
	return cmd
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
