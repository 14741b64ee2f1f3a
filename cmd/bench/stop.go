package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func newStopCmd() *cobra.Command {
	var sf storageFlags
	cmd := &cobra.Command{
		Use:   "stop EXPERIMENT [TRIAL]",
		Short: "Stop a running experiment, or one of its trials (bench only)",
		Long: `Ask the bench processes running an experiment to stop it, or to stop one
of its trials. The request is recorded in storage; a running bench sees it
within a second, kills the trial's processes and stores the trial as
CANCELED (a stopped trial does not run again on resume). Stopping the whole
experiment cancels every running and queued trial and ends the run.

  bench stop myexp          stop experiment myexp
  bench stop myexp 17       stop trial 17 of myexp; the experiment goes on`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sf.experiment = args[0]
			trialID := 0
			if len(args) == 2 {
				id, err := strconv.Atoi(args[1])
				if err != nil || id < 1 {
					return exitWith(exitUsage, fmt.Errorf("TRIAL must be a trial id (a number >= 1), got %q", args[1]))
				}
				trialID = id
			}
			ctx := cmd.Context()
			st, exp, err := sf.openWritable(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := exp.RequestStop(ctx, trialID); err != nil {
				switch {
				case errors.Is(err, storage.ErrNotFound):
					return exitWith(exitUsage, fmt.Errorf("experiment %q: trial %d: %w", args[0], trialID, err))
				case errors.Is(err, storage.ErrFinished):
					return exitWith(exitFailed, fmt.Errorf("experiment %q: trial %d has already finished", args[0], trialID))
				}
				return err
			}
			if st := exp.Info().Status; st != trial.RUNNING {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench: note: experiment %s is %s, not running now; the next bench run of it clears the request\n", args[0], st)
			} else if trialID > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench: asked the running bench to stop trial %d of experiment %s\n", trialID, args[0])
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench: asked the running bench to stop experiment %s\n", args[0])
			}
			return nil
		},
	}
	sf.addStorageOnly(cmd)
	return cmd
}

func newWorkerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:                "worker --experiment ID [run options]",
		Short:              "Join an experiment that another bench process drives: claim and run its trials (bench only)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			connect, caFile := "", ""
			var rest []string
			for i := 0; i < len(args); i++ {
				switch a := args[i]; {
				case (a == "--connect" || a == "--tls-ca" || a == "--tls_ca") && i+1 < len(args):
					if a == "--connect" {
						connect = args[i+1]
					} else {
						caFile = args[i+1]
					}
					i++
				case strings.HasPrefix(a, "--connect="):
					connect = a[len("--connect="):]
				case strings.HasPrefix(a, "--tls-ca=") || strings.HasPrefix(a, "--tls_ca="):
					caFile = a[len("--tls-ca="):]
				default:
					rest = append(rest, a)
				}
			}
			args = rest
			for i := 0; i < len(args); i++ {
				switch {
				case args[i] == "--experiment":
					args[i] = "--experiment_id"
				case len(args[i]) > 13 && args[i][:13] == "--experiment=":
					args[i] = "--experiment_id=" + args[i][13:]
				case args[i] == "--help" || args[i] == "-h":
					fmt.Fprint(cmd.OutOrStdout(), workerHelp)
					return nil
				}
			}
			if connect != "" {
				return connectWorker(cmd.OutOrStdout(), cmd.ErrOrStderr(), connect, caFile, args)
			}
			return runExperiment(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, true)
		},
	}
	return cmd
}

const workerHelp = `Usage: bench worker --experiment ID [run options]
       bench worker --connect URL --token-file FILE [--tls-ca FILE] [run options]

Join an experiment that another bench process (bench run, the driver)
drives: the worker claims queued trials from the shared storage, runs them
on its own trial runners and stores their outcomes; it never suggests
configurations. It takes the same options as bench run (the environment,
services, storage and globals must match the driver's) and exits once the
driver has finished the experiment and no trial is left to run.

Workers share the experiment through its storage: SQLite for processes on
one machine, PostgreSQL or MySQL across machines. Each claimed trial is leased to
its process and the lease is renewed while it runs; the trials of a
process that dies are claimed again once their lease (trial_lease, default
30s) has expired. A worker registers itself with its number of trial
runners, and the driver keeps that many trials queued for the live workers
(plus queue_ahead, a global, for more look-ahead).

With --connect URL the worker needs no database: it pulls trials from a
bench serve (or a bench run --serve) over HTTP, presenting the access token
of --token-file (a file, or env:NAME for an environment variable), runs
them with its own configs (the environment and services of the run
options; --storage is not used) and pushes the outcomes back. It renews its leases while trials run, reconnects with
backoff when the server restarts, hands its unfinished trials back when
interrupted, and exits once the experiment is over. --tls-ca trusts the
certificate authority of a server with a self-signed certificate.
`

// openWritable opens the storage for writing and finds the experiment
// (the database must exist).
func (f *storageFlags) openWritable(ctx context.Context) (storage.Storage, storage.Experiment, error) {
	return f.openMode(ctx, true)
}
