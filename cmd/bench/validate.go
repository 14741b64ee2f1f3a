package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs/check"
	"github.com/benchtune/bench/schemas"
)

func newValidateCmd() *cobra.Command {
	var kind, format string
	var configPaths []string
	cmd := &cobra.Command{
		Use:   "validate [--kind KIND] PATH...",
		Short: "Check config files and folders (recursively)",
		Long: `Check config files and folders (recursively): JSON5 syntax, the schema of
each file's kind (detected from "$schema", the file name or the content,
or given with --kind), and what a schema cannot see: include files that do
not exist, cyclic includes, tunable groups referenced but not defined,
duplicate tunable names across groups and defaults outside their range.

Prints one line per problem (file:line:col: JSON path: message).
Exit code 0 when everything is valid, 1 otherwise, 2 on usage errors.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return exitWith(exitUsage, fmt.Errorf("--format must be text or json, got %q", format))
			}
			c := &check.Checker{ConfigPaths: configPaths}
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
			rep, err := c.Run(args)
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
				fmt.Fprintf(cmd.ErrOrStderr(), "bench: %d of %s valid, %s%s\n", valid, plural(len(rep.Files), "file"), plural(len(rep.Problems), "problem"), warnings)
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
	return cmd
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
