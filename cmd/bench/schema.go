package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/schemas"
)

func newSchemaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Work with bench's JSON schemas",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "export DIR",
		Short: "Write the JSON schemas (for editors such as VS Code) into DIR",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := schemas.Export(args[0]); err != nil {
				return exitWith(exitFailed, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "bench: schemas written to %s\n", args[0])
			return nil
		},
	})
	return cmd
}
