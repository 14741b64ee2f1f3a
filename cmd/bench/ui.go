package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/ui"
)

// defaultUIListen is where bench ui listens unless told otherwise:
// loopback only.
const defaultUIListen = "127.0.0.1:8421"

func newUICmd() *cobra.Command {
	var sf storageFlags
	var scale plotScaleFlags
	var listen, tokenFile string
	var actions bool
	cmd := &cobra.Command{
		Use:   "ui [--listen 127.0.0.1:PORT] [--storage FILE]",
		Short: "Serve a dashboard of the experiments in a storage: live charts, trials, comparisons (bench only)",
		Long: `Serve a web dashboard over a bench storage (SQLite, PostgreSQL, MySQL, or
an mlos_bench database, read as it is): the experiments with their status,
progress and best so far; one experiment updating live while it runs
(optimization trace, parallel coordinates, parameter importance, slices,
a contour of a chosen pair, the Pareto front and its hypervolume, where
the trials ran, the trials table with filters and sorting); one trial
with its values, results, status history, telemetry and captured output;
and two experiments compared as bench compare does. Open the address it
prints in a browser; nothing is fetched from elsewhere.

The dashboard only reads unless --actions is given: then it can stop a
trial or a whole experiment (as bench stop does). On an address other
than loopback, actions need --token-file: the access token (bench serve's)
every stop request must carry. A running experiment can also show its own
dashboard: bench run ... --ui 127.0.0.1:8421. See docs/dashboard.md.

  bench ui                              the SQLite file bench.sqlite here
  bench ui --storage pg.jsonc --globals secrets.json --listen 127.0.0.1:9000
  bench ui --actions                    allow stopping trials (loopback)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := scale.options()
			if err != nil {
				return err
			}
			tok, err := uiToken(listen, tokenFile, actions)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			ctx, stop := interruptContextSaying(cmd.ErrOrStderr(), "\nbench: interrupted: stopping the dashboard")
			defer stop()
			l, err := configs.Prepare(&configs.Args{ConfigPaths: sf.configPaths, Globals: sf.globals}, validateFunc)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			var st storage.Storage
			if actions {
				st, err = launcher.OpenStorage(ctx, l.Loader, sf.storage, l.Globals, true)
			} else {
				st, err = launcher.OpenStorageForReading(ctx, l.Loader, sf.storage, l.Globals)
			}
			if err != nil {
				if errors.Is(err, storage.ErrNoDatabase) {
					return exitWith(exitUsage, fmt.Errorf("%w: no experiment has been run in this folder yet (or give --storage)", err))
				}
				return exitWith(exitUsage, err)
			}
			defer st.Close()
			if sf.experiment != "" {
				if _, err := st.LoadExperiment(ctx, sf.experiment); err != nil {
					return exitWith(exitUsage, fmt.Errorf("experiment %q: %w", sf.experiment, err))
				}
			}
			srv := ui.New(st, ui.Options{Experiment: sf.experiment, Actions: actions, Token: tok, LogX: opt.LogX, Redact: l.Secrets.Redact})
			return serveUI(ctx, cmd.ErrOrStderr(), srv, listen, st.Describe(), actions)
		},
	}
	sf.add(cmd)
	scale.add(cmd)
	cmd.Flags().Lookup("experiment").Usage = "show only this experiment (default: every experiment of the storage)"
	cmd.Flags().StringVar(&listen, "listen", defaultUIListen, "address to listen on (a port of 0 picks a free one)")
	cmd.Flags().BoolVar(&actions, "actions", false, "allow stopping trials and experiments from the dashboard (default: read-only)")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "access token file (bench serve's): every action must carry the token; required for --actions on an address other than loopback")
	return cmd
}

// uiToken reads the token actions need: required with --actions on an
// address other than loopback, optional on loopback.
func uiToken(listen, tokenFile string, actions bool) (string, error) {
	if tokenFile == "" {
		if actions && !isLoopback(listen) {
			return "", fmt.Errorf("--actions on %s (not loopback) needs --token-file FILE: the access token each stop request must carry", listen)
		}
		return "", nil
	}
	return readAccessToken(tokenFile) // a file, or env:NAME
}

// isLoopback reports whether a listen address is on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// serveUI serves the dashboard until ctx ends, after saying where.
func serveUI(ctx context.Context, stderr io.Writer, srv *ui.Server, listen, where string, actions bool) error {
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, listen, ready) }()
	select {
	case addr := <-ready:
		mode := "read-only"
		if actions {
			mode = "stop actions allowed"
		}
		fmt.Fprintf(stderr, "bench: dashboard of %s at http://%s/ (%s; Ctrl-C stops it)\n", where, addr, mode)
		if !isLoopback(listen) {
			fmt.Fprintf(stderr, "bench: warning: the dashboard listens on %s, not only loopback: anyone who can reach it sees the experiments (plain HTTP)\n", listen)
		}
	case err := <-done:
		return exitWith(exitUsage, err)
	}
	if err := <-done; err != nil {
		return exitWith(exitFailed, err)
	}
	return nil
}

// uiDuringRun starts the dashboard of the experiment being run (bench run
// --ui ADDR); the returned function stops it.
// uiActions reads the ui_actions global by the config converters' rule
// (true, "yes", "on", 1, ...); anything else leaves the actions off.
func uiActions(globals map[string]any) bool {
	on, ok := decode.Bool(globals["ui_actions"])
	return ok && on
}

func uiDuringRun(ctx context.Context, stderr io.Writer, l *configs.Launch, r *launcher.Run) (func(), error) {
	v, ok := l.Globals["ui_listen"]
	if !ok || v == nil || strings.TrimSpace(configs.PyStr(v)) == "" {
		return func() {}, nil
	}
	listen := strings.TrimSpace(configs.PyStr(v))
	actions := uiActions(l.Globals)
	tokenFile := ""
	if t, ok := l.Globals["serve_token_file"]; ok && t != nil {
		tokenFile = strings.TrimSpace(configs.PyStr(t))
	}
	tok, err := uiToken(listen, tokenFile, actions)
	if err != nil {
		return nil, err
	}
	id := r.ExperimentID
	kind := r.SchedulerConfig.RunnerKind()
	planned := r.Scheduler.Stats().Planned // set when the scheduler is built
	srv := ui.New(r.Storage, ui.Options{Experiment: id, Actions: actions, Token: tok, Redact: l.Secrets.Redact,
		Planned:    func(string) int { return planned },
		RunnerKind: func(string) string { return kind },
	})
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(sctx, listen, ready) }()
	select {
	case addr := <-ready:
		fmt.Fprintf(stderr, "bench: dashboard of experiment %s at http://%s/e/%s\n", id, addr, id)
	case err := <-done:
		cancel()
		return nil, err
	}
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}, nil
}
