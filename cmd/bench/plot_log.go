package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/plots"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/tunables"
)

// plotScaleFlags are bench plot's and bench report's choice of log axes
// (issue 24): --log NAME names a tunable, --tunables FILE reads a tunable
// params file (mlos_bench's JSONC) and takes its tunables with
// "log": true. A positive numeric tunable spanning three decades or more
// is on a log axis without either.
type plotScaleFlags struct {
	log      []string
	tunables []string
}

func (f *plotScaleFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.log, "log", nil, "draw these tunables on a log axis (NAME, repeatable or comma-separated)")
	cmd.Flags().StringArrayVar(&f.tunables, "tunables", nil, `read a tunable params file (JSONC, repeatable) and draw its tunables with "log": true on a log axis`)
}

func (f *plotScaleFlags) options() (plots.Options, error) {
	opt := plots.Options{LogX: map[string]bool{}}
	for _, n := range f.log {
		opt.LogX[n] = true
	}
	for _, path := range f.tunables {
		doc, err := source.ReadFile(path)
		if err != nil {
			return opt, exitWith(exitUsage, err)
		}
		g, err := tunables.ParseParams(doc.At())
		if err != nil {
			return opt, exitWith(exitUsage, fmt.Errorf("--tunables %s: %w", path, err))
		}
		for _, t := range g.Tunables() {
			if t.IsLog() {
				opt.LogX[t.Name()] = true
			}
		}
	}
	return opt, nil
}

// checkLogNames refuses a --log NAME that no trial of the experiment has
// as a tunable: a typo would otherwise leave the axis linear without a
// word.
func (f *plotScaleFlags) checkLogNames(exp string, trials []storage.Trial) error {
	if len(trials) == 0 {
		return nil
	}
	names := map[string]bool{}
	for _, t := range trials {
		for n := range t.Params {
			names[n] = true
		}
	}
	for _, n := range f.log {
		if !names[n] {
			return exitWith(exitUsage, fmt.Errorf("--log %q: experiment %s has no tunable %q (its tunables: %s)", n, exp, n, strings.Join(slices.Sorted(maps.Keys(names)), ", ")))
		}
	}
	return nil
}
