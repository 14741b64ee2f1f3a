package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	neturl "net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/serve"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

const serveHelp = `Usage: bench serve --listen ADDR --token-file FILE --experiment ID [run options]

Serve an experiment to network workers (bench worker --connect URL), which
then need no database credentials: they pull trials over HTTP with JSON,
run them with their own configs and push the outcomes back. bench serve
joins the experiment its driver (bench run) runs, as a bench worker process
does, and runs the trials it claims on its network workers only: give it
the same configs and storage as the driver. A driver can also serve its
own workers with bench run --serve ADDR.

  --listen ADDR        address to listen on, e.g. :7070 or 127.0.0.1:7070
  --token-file FILE    the access token every request must carry
  --tls-cert FILE      serve HTTPS with this certificate (PEM) ...
  --tls-key FILE       ... and its key
  --trial_lease D      how long a worker's claim on a trial lasts without
                       a heartbeat (default 30s)

Each trial slot of a connected worker is a trial runner of the serving
process: a trial runs there as on a local runner, and its outcome is
recorded as soon as the worker posts it. A worker that stops renewing its
leases (killed, disconnected) loses its trials when the lease runs out:
they end FAILED ("worker lost") and are retried within --max_retries, and
a result it posts later is rejected. A worker that stops heartbeating
stops counting after half the lease. Requests with a missing or wrong
token are refused and logged (the token never is).
Idle connections are closed after 60 s (10 s before a first request), at
most half the file descriptor limit of connections is kept open, and a
body over 64 MiB for a result, 1 MiB for progress or 64 KiB
otherwise is refused with 413. Plain HTTP
on an address other than loopback is warned about: use --tls-cert/--tls-key.
`

// serveConfig reads the serve settings from the launch's globals.
type serveConfig struct {
	listen, tokenFile, cert, key string
	lease                        time.Duration
}

func serveSettings(l *configs.Launch) (serveConfig, error) {
	str := func(k string) string {
		if v, ok := l.Globals[k]; ok && v != nil {
			return strings.TrimSpace(configs.PyStr(v))
		}
		return ""
	}
	c := serveConfig{listen: str("serve_listen"), tokenFile: str("serve_token_file"), cert: str("serve_tls_cert"), key: str("serve_tls_key")}
	if c.listen != "" && c.tokenFile == "" {
		return c, errors.New("serving needs --token-file FILE (the access token workers must present)")
	}
	if (c.cert == "") != (c.key == "") {
		return c, errors.New("TLS needs both --tls-cert and --tls-key")
	}
	// The converters' rule, as the scheduler config reads the same key
	// (30 and "30" are seconds, "90s" a duration).
	d, err := decode.DurationOf(l.Globals["trial_lease"])
	if err != nil {
		return c, fmt.Errorf("trial_lease: %w", err)
	}
	c.lease = d
	return c, nil
}

// startServer serves exp's trials in the background until ctx ends: those
// the scheduler runs on the pool's runners. It returns the address
// listened on.
func startServer(ctx context.Context, stderr io.Writer, c serveConfig, exp storage.Experiment, pool *serve.Pool) (string, <-chan error, error) {
	tok, err := readAccessToken(c.tokenFile)
	if err != nil {
		return "", nil, err
	}
	id := exp.Info().ID
	srv, err := serve.New(exp, serve.Config{Token: tok, Lease: c.lease, Pool: pool})
	if err != nil {
		return "", nil, err
	}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, c.listen, c.cert, c.key, ready) }()
	select {
	case addr := <-ready:
		scheme := "http"
		if c.cert != "" {
			scheme = "https"
		}
		fmt.Fprintf(stderr, "bench: serving experiment %s to workers at %s://%s\n", id, scheme, addr)
		if warn := serve.PlainHTTPWarning(c.listen, c.cert != ""); warn != "" {
			fmt.Fprintf(stderr, "bench: warning: %s\n", warn)
		}
		return addr, done, nil
	case err := <-done:
		return "", nil, err
	}
}

func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "serve --listen ADDR --token-file FILE --experiment ID [run options]",
		Short:              "Serve an experiment's trials to network workers over HTTP (bench only)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rest []string
			for i := 0; i < len(args); i++ {
				a := args[i]
				switch {
				case a == "--help" || a == "-h":
					fmt.Fprint(cmd.OutOrStdout(), serveHelp)
					return nil
				case a == "--listen":
					rest = append(rest, "--serve")
				case strings.HasPrefix(a, "--listen="):
					rest = append(rest, "--serve="+a[len("--listen="):])
				case a == "--experiment":
					rest = append(rest, "--experiment_id")
				case strings.HasPrefix(a, "--experiment="):
					rest = append(rest, "--experiment_id="+a[len("--experiment="):])
				default:
					rest = append(rest, a)
				}
			}
			return serveExperiment(cmd.OutOrStdout(), cmd.ErrOrStderr(), rest)
		},
	}
}

// serveExperiment runs bench serve: a bench worker process (it joins the
// experiment its driver runs, sharing its storage) whose trial runners are
// the network workers it serves; it runs no trial itself.
func serveExperiment(stdout, stderr io.Writer, argv []string) error {
	// The settings may come from a config file's globals: read as bench
	// run reads them (again when it runs).
	args, err := configs.ParseArgs(argv)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("%w (see bench serve --help)", err))
	}
	if !args.Help {
		l, err := configs.Prepare(args, validateFunc)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		c, err := serveSettings(l)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		if c.listen == "" {
			return exitWith(exitUsage, errors.New("bench serve needs --listen ADDR"))
		}
		if id, _ := l.Globals["experiment_id"].(string); id == "" {
			return exitWith(exitUsage, errors.New("bench serve needs --experiment ID"))
		}
	}
	return runExperiment(stdout, stderr, append(argv, "--no-local-trials"), true)
}

// serveDuringRun starts the run's server (bench run --serve, bench serve):
// the network workers' trial slots become the scheduler's runners. The
// returned function, called after the run, tells the workers that the
// experiment is over, waits for them to leave (at most 15 s), then stops
// serving.
func serveDuringRun(ctx context.Context, stderr io.Writer, l *configs.Launch, r *launcher.Run) (func(), error) {
	c, err := serveSettings(l)
	if err != nil || c.listen == "" {
		return func() {}, err
	}
	lease := c.lease
	if lease <= 0 {
		lease = r.SchedulerConfig.Lease
	}
	pool := serve.NewPool(lease, l.Globals, slog.Default())
	r.Scheduler.UseRemote(pool)
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	_, done, err := startServer(sctx, stderr, c, r.Experiment, pool)
	if err != nil {
		cancel()
		return nil, err
	}
	return func() {
		pool.Close()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil && pool.Workers() > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		<-done
	}, nil
}

// connectWorker runs bench worker --connect URL: the trials come from a
// bench serve over HTTP, the worker's own configs describe the
// environment.
func connectWorker(stdout, stderr io.Writer, url, caFile string, argv []string) error {
	l, closeLog, err := prepareCommand(stderr, argv, "worker")
	if err != nil {
		return err
	}
	defer closeLog()
	c, err := serveSettings(l)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if c.tokenFile == "" {
		return exitWith(exitUsage, errors.New("bench worker --connect needs --token-file FILE"))
	}
	tok, err := readAccessToken(c.tokenFile)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return exitWith(exitUsage, fmt.Errorf("--connect wants an http:// or https:// URL, got %q", serve.RedactURL(url)))
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	guard, kept := startGuard(), false
	defer func() { guard.Finish(kept) }()
	reapStale(stderr)
	run := &launcher.Run{Launch: l}
	defer run.Close()
	// The runner builder of every command that runs trials: cgroups,
	// device slots, trial_idle_timeout and telemetry_interval as the
	// configs ask.
	runners, err := run.TrialRunners(ctx, launcher.ForNetworkWorker, 0)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	cfg := run.SchedulerConfig
	kept = !cfg.Teardown
	printSecurityNotices(stderr, run.SecurityNotices)
	if run.CgroupNote != "" {
		fmt.Fprintf(stderr, "bench: per-runner cgroups: %s\n", run.CgroupNote)
	}
	if warn := workerPlainHTTPWarning(url); warn != "" {
		fmt.Fprintf(stderr, "bench: warning: %s\n", warn)
	}
	fmt.Fprintf(stderr, "bench: worker with %d trial runners connecting to %s\n", len(runners), serve.RedactURL(url))
	stats, err := serve.RunWorker(ctx, serve.WorkerConfig{
		URL: strings.TrimRight(url, "/"), Token: tok, CAFile: caFile, Runners: runners, Globals: l.Globals,
		Redact:            func(o trial.Outcome) trial.Outcome { return storage.RedactOutcome(o, l.Secrets) },
		TelemetryInterval: cfg.TelemetryInterval, Logger: slog.Default(),
		OnFinished: func(id int, out trial.Outcome, stored bool) {
			if stored {
				fmt.Fprintf(stderr, "bench: trial finished trial=%d status=%s\n", id, out.Status)
			} else {
				fmt.Fprintf(stderr, "bench: trial %d was taken over; its result was not stored\n", id)
			}
		},
	})
	fmt.Fprintf(stdout, "Worker: %d trials run, %d stored, %d rejected\n", stats.Run, stats.Stored, stats.Rejected)
	if ctx.Err() != nil {
		return exitWith(exitInterrupted, errors.New("interrupted: this worker's unfinished trials were handed back"))
	}
	if err != nil {
		if errors.Is(err, serve.ErrUnauthorized) {
			return exitWith(exitUsage, err)
		}
		return exitWith(exitFailed, err)
	}
	return nil
}

// prepareCommand parses a command's run options, reads the configs and
// sets up logging: the start of every command that takes run options.
// Errors are usage errors (exit 2).
func prepareCommand(stderr io.Writer, argv []string, name string) (*configs.Launch, func(), error) {
	args, err := configs.ParseArgs(argv)
	if err != nil {
		return nil, nil, exitWith(exitUsage, fmt.Errorf("%w (see bench %s --help)", err, name))
	}
	l, err := configs.Prepare(args, validateFunc)
	if err != nil {
		return nil, nil, exitWith(exitUsage, err)
	}
	closeLog, err := setupLogging(stderr, l)
	if err != nil {
		return nil, nil, exitWith(exitUsage, err)
	}
	warnConfigs(stderr, l)
	return l, closeLog, nil
}

// workerPlainHTTPWarning is serve.PlainHTTPWarning for a worker's
// --connect URL.
func workerPlainHTTPWarning(connect string) string {
	u, err := neturl.Parse(connect)
	if err != nil || u.Scheme != "http" {
		return ""
	}
	return serve.PlainHTTPWarning(u.Host, false)
}
