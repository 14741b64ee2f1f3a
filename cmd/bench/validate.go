package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchtune/bench/configs/check"
	"github.com/benchtune/bench/schemas"
)

func newValidateCmd() *cobra.Command {
	var kind, format string
	var configPaths, globals []string
	var schemaOnly bool
	cmd := &cobra.Command{
		Use:   "validate [--kind KIND] [--globals FILE...] [--config_path DIR...] [--schema-only] PATH...",
		Short: "Check config files and folders (recursively), as bench run would",
		Long: `Check config files and folders (recursively): JSON5 syntax, the schema of
each file's kind (detected from "$schema", the class, the structure or the
file name, or given with --kind), then everything bench run checks before
its first trial, with the same code: each class is built in validate-only
mode (nothing is started, created or connected to). So include files that
do not exist, cyclic includes, unknown classes and classes bench cannot
run (DuckDB storage, the LLAMATUNE space adapter), config values a class
rejects, results patterns with fewer than two groups, tunable groups
referenced but not defined, bad tunables, and required args without a
value are found here rather than when the run starts.

A CLI config is checked as bench run --config FILE: its globals are known,
so a required arg without a value is an error. An environment file alone
is checked as bench run --environment FILE: its required args that no
const_args or --globals file gives are a warning, naming them, since the
globals or the command line of a run may give them. --globals FILE... adds
globals files as bench run's --globals does.

--schema-only checks syntax and each file against its kind's schema and
follows no includes (for editors and pre-commit hooks, where include
paths resolve only at run time).

Files that are not bench configs (JSON Schema documents, Azure ARM
templates) are skipped, and counted.

Prints one line per problem (file:line:col: JSON path: message).
Exit code 0 when everything is valid, 1 otherwise, 2 on usage errors.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return exitWith(exitUsage, fmt.Errorf("--format must be text or json, got %q", format))
			}
			c := &check.Checker{ConfigPaths: configPaths, Globals: globals, SchemaOnly: schemaOnly}
			if kind != "" {
				found := false
				for _, k := range schemas.Kinds() {
					if string(k) == kind {
						found = true
					}
				}
				if !found {
					return exitWith(exitUsage, fmt.Errorf("unknown --kind %q: want one of %v", kind, schemas.Kinds()))
				}
				c.Kind = schemas.Kind(kind)
			}
			rep, err := c.RunContext(cmd.Context(), args)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			} else {
				for _, p := range rep.Problems {
					fmt.Fprintln(out, p.String())
				}
				for _, w := range rep.Warnings {
					fmt.Fprintln(out, w.String())
				}
				valid := 0
				for _, f := range rep.Files {
					if f.Valid {
						valid++
					}
				}
				warnings := ""
				if len(rep.Warnings) > 0 {
					warnings = ", " + plural(len(rep.Warnings), "warning")
				}
				skipped := ""
				if len(rep.Skipped) > 0 {
					skipped = fmt.Sprintf(", %s skipped (not bench configs: JSON Schema documents or ARM templates)", plural(len(rep.Skipped), "file"))
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "bench: %d of %s valid, %s%s%s\n", valid, plural(len(rep.Files), "file"), plural(len(rep.Problems), "problem"), warnings, skipped)
			}
			if !rep.OK() {
				return exitWith(exitFailed, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "check every file as this kind: cli, globals, environment, service, optimizer, scheduler, storage, tunable-params, tunable-values, unified")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	cmd.Flags().StringSliceVar(&configPaths, "config-path", nil, "folders to resolve includes in")
	cmd.Flags().StringSliceVar(&globals, "globals", nil, "globals files, as bench run's --globals (values for required args)")
	cmd.Flags().BoolVar(&schemaOnly, "schema-only", false, "only check each file against its kind's schema (no includes followed)")
	// As bench run (and mlos_bench) spell them: --config_path, --schema_only.
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	return cmd
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
