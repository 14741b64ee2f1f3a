package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

const confirmHelp = `Usage: bench confirm EXPERIMENT --config FILE [--top_k K] [--repeats M] [run options]

Confirm the winner of a finished experiment: re-run its K best
configurations (default 3; ranked by their aggregated repeats) and the
defaults M times each (default 5), interleaved (every round runs each of
them once, in a rotating order), then test each candidate against the
defaults: a two-sided Mann-Whitney U test on the first target,
Holm-corrected over the candidates at a family-wise level of 5%. The
winner is the significant candidate with the best median; the verdict
reads e.g. "best vs default: -23% [-27%, -19%], p < 0.001 (n=8+8)", or
says that no candidate beats the defaults. bench results, bench show, the
report and bench ci --best-of then use the confirmed winner.

The experiment's own configs run the trials: give the same --config (and
options) bench run was given. No new configuration is suggested. Rounds a
previous confirmation already ran are not run again.
`

func newConfirmCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:                "confirm EXPERIMENT --config FILE [--top_k K] [--repeats M] [run options]",
		Short:              "Re-run an experiment's best configurations against the defaults and keep a tested winner",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			argv, err := confirmArgs(args)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			if argv == nil {
				fmt.Fprint(cmd.OutOrStdout(), confirmHelp)
				return nil
			}
			return runExperiment(cmd.OutOrStdout(), cmd.ErrOrStderr(), argv, false)
		},
	}
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), confirmHelp) })
	return cmd
}

// confirmArgs turns bench confirm's arguments into bench run's (nil for
// --help).
func confirmArgs(args []string) ([]string, error) {
	var exp string
	topK, repeats := "3", "5"
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = strings.ReplaceAll(name, "-", "_")
		switch {
		case a == "-h" || a == "--help":
			return nil, nil
		case strings.HasPrefix(a, "-") && (name == "top_k" || name == "repeats"):
			if !hasVal {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("--%s needs a value", name)
				}
				i++
				val = args[i]
			}
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || (name == "repeats" && n < 2) {
				return nil, fmt.Errorf("--%s must be an integer >= %d, got %q", name, map[string]int{"top_k": 1, "repeats": 2}[name], val)
			}
			if name == "top_k" {
				topK = val
			} else {
				repeats = val
			}
		case !strings.HasPrefix(a, "-") && exp == "" && (i == 0 || !strings.HasPrefix(args[i-1], "-") || strings.Contains(args[i-1], "=")):
			exp = a
		default:
			rest = append(rest, a)
		}
	}
	if exp == "" {
		return nil, errors.New("name the experiment to confirm: bench confirm EXPERIMENT --config FILE (see bench confirm --help)")
	}
	return append(rest, "--experiment_id", exp, "--confirm_top_k", topK, "--confirm_repeats", repeats, "--confirm_now", "true"), nil
}
