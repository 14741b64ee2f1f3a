package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/runners/passive"
	"github.com/benchtune/bench/storage"
)

func newShowCmd() *cobra.Command {
	var sf storageFlags
	var format string
	cmd := &cobra.Command{
		Use:   "show TRIAL",
		Short: "Show one trial: parameters, results, telemetry, captured output, status history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.Atoi(args[0])
			if err != nil || id < 0 {
				return exitWith(exitUsage, fmt.Errorf("TRIAL must be a trial id (a number), got %q", args[0]))
			}
			if format != "text" && format != "json" {
				return exitWith(exitUsage, fmt.Errorf("--format must be text or json, got %q", format))
			}
			ctx := cmd.Context()
			st, exp, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			d, err := exp.Trial(ctx, id)
			if errors.Is(err, storage.ErrNotFound) {
				return exitWith(exitUsage, fmt.Errorf("experiment %s has no trial %d", exp.Info().ID, id))
			}
			if err != nil {
				return exitWith(exitUsage, fmt.Errorf("experiment %q: trial %d: %w", exp.Info().ID, id, err))
			}
			d = redactDetail(sf.secrets, d)
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), d)
			}
			for _, n := range exp.Info().Notes {
				fmt.Fprintf(cmd.OutOrStdout(), "Experiment note: %s\n", n)
			}
			writeTrialDetail(cmd.OutOrStdout(), exp.Info().ID, d)
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	return cmd
}

func writeTrialDetail(w io.Writer, expID string, d storage.TrialDetail) {
	fmt.Fprintf(w, "Trial %d of experiment %s: %s\n", d.ID, expID, d.Status)
	if d.FailureReason != "" {
		fmt.Fprintf(w, "Reason: %s\n", d.FailureReason)
	}
	fmt.Fprintf(w, "Config %d (%s)", d.ConfigID, short(d.ConfigHash))
	if d.TrialRunnerID > 0 {
		fmt.Fprintf(w, ", trial runner %d", d.TrialRunnerID)
	}
	fmt.Fprintln(w)
	if d.RetryOf > 0 {
		fmt.Fprintf(w, "Retry of trial %d\n", d.RetryOf)
	}
	if d.ReusedFrom != nil {
		fmt.Fprintf(w, "Reused the result of trial %d of experiment %s (an identical trial: same configuration and repeat)\n", d.ReusedFrom.TrialID, d.ReusedFrom.ExperimentID)
	}
	if line := setupReuseLine(d.Results); line != "" {
		fmt.Fprintln(w, line)
	}
	if d.Job != nil && d.Job.Engine == passive.Engine {
		fmt.Fprintln(w, "Run by hand (passive runner)")
		var req struct{ Command string }
		if json.Unmarshal([]byte(d.Job.Request), &req) == nil && req.Command != "" {
			fmt.Fprintf(w, "Command shown: %s\n", req.Command)
		}
	} else if d.Job != nil {
		times := "once"
		if d.Job.Submits != 1 {
			times = fmt.Sprintf("%d times (relaunched)", d.Job.Submits)
		}
		fmt.Fprintf(w, "Ran as a %s job, submitted %s: %s\n", d.Job.Engine, times, d.Job.Ref)
	}
	if !d.Finished() && d.Owner != "" {
		fmt.Fprintf(w, "Running in bench process %s (lease until %s)\n", d.Owner, d.LeaseUntil.Local().Format(time.RFC3339))
	}
	if d.StopRequested && !d.Finished() {
		fmt.Fprintln(w, "A stop was requested (bench stop)")
	}
	fmt.Fprintf(w, "Started %s", d.TsStart.Local().Format(time.RFC3339))
	if d.Finished() {
		fmt.Fprintf(w, ", ended %s (%s)", d.TsEnd.Local().Format(time.RFC3339), d.TsEnd.Sub(d.TsStart).Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	section(w, "Parameters", d.Params)
	section(w, "Metadata", d.Metadata)
	if len(d.Results) > 0 {
		res := map[string]string{}
		for _, k := range d.Results.Names() {
			res[k] = d.Results.Text(k)
		}
		section(w, "Results", res)
	}
	if plain := writeProgress(w, d.Telemetry); len(plain) > 0 {
		fmt.Fprintf(w, "\nTelemetry (%d readings):\n", len(plain))
		for _, t := range plain {
			fmt.Fprintf(w, "  %s  %s = %v\n", t.Ts.Local().Format(time.RFC3339Nano), t.Metric, t.Value)
		}
	}
	if len(d.History) > 0 {
		fmt.Fprintln(w, "\nStatus history:")
		for _, h := range d.History {
			fmt.Fprintf(w, "  %s  %s\n", h.Ts.Local().Format(time.RFC3339Nano), h.Status)
		}
	}
	if len(d.Output) > 0 {
		fmt.Fprintln(w, "\nCaptured output:")
		for _, o := range d.Output {
			fmt.Fprintf(w, "--- %s/%s #%d: %s  (exit %d, %s)\n", o.Env, o.Phase, o.Line, o.Command, o.ExitCode, o.Duration.Round(time.Millisecond))
			if o.Stdout != "" {
				fmt.Fprintf(w, "%s", indentBlock("stdout", o.Stdout))
			}
			if o.Stderr != "" {
				fmt.Fprintf(w, "%s", indentBlock("stderr", o.Stderr))
			}
			if o.Truncated {
				fmt.Fprintln(w, "    (output truncated: the middle was dropped)")
			}
		}
	}
}

// setupReuseLine says which environments skipped their setup
// (bench_reuse_setup: results bench.<env>.setup.reused) and which ran it;
// "" when no environment reports it.
func setupReuseLine(res storage.Metrics) string {
	var reused, ran []string
	for _, k := range res.Names() {
		env, ok := strings.CutPrefix(k, "bench.")
		if !ok {
			continue
		}
		if env, ok = strings.CutSuffix(env, ".setup.reused"); !ok {
			continue
		}
		if res.Text(k) == "1" {
			reused = append(reused, strconv.Quote(env))
		} else {
			ran = append(ran, strconv.Quote(env))
		}
	}
	if len(reused) == 0 && len(ran) == 0 {
		return ""
	}
	var parts []string
	if len(reused) > 0 {
		parts = append(parts, "setup reused (skipped) by "+strings.Join(reused, ", "))
	}
	if len(ran) > 0 {
		parts = append(parts, "setup run by "+strings.Join(ran, ", "))
	}
	return "bench_reuse_setup: " + strings.Join(parts, "; ")
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func section(w io.Writer, title string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s = %s\n", k, m[k])
	}
}

func indentBlock(label, s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		fmt.Fprintf(&b, "  %s| %s\n", label, line)
	}
	return b.String()
}

// redactDetail keeps secrets out of what bench show prints: metadata
// under a secret name, and secret values of the globals files given in
// the captured output and the failure reason. (bench run stores none;
// this covers databases written before it redacted, and secrets given
// to bench show with --globals.)
func redactDetail(s *configs.Secrets, d storage.TrialDetail) storage.TrialDetail {
	d.Metadata = s.RedactParams(d.Metadata)
	d.FailureReason = s.Redact(d.FailureReason)
	out := make([]storage.Output, len(d.Output))
	for i, o := range d.Output {
		o.Command, o.Stdout, o.Stderr = s.Redact(o.Command), s.Redact(o.Stdout), s.Redact(o.Stderr)
		out[i] = o
	}
	d.Output = out
	return d
}
