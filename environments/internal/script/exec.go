package script

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/capture"
	"strings"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/services"
)

// MissingServiceError tells that an environment's service stack lacks a
// capability it needs.
type MissingServiceError struct {
	Env, Class string
	Capability string // e.g. "RemoteExec"
	Example    string // e.g. "SshHostService"
}

func (e *MissingServiceError) Error() string {
	return fmt.Sprintf("environment %q (class %s) needs a %s service (e.g. %s); add it to include_services",
		e.Env, e.Class, e.Capability, e.Example)
}

// Need finds the newest service of the stack implementing T, or returns a
// MissingServiceError.
func Need[T any](stack *services.Stack, env, class, capability, example string) (T, error) {
	v, ok := services.Find[T](stack)
	if !ok {
		return v, &MissingServiceError{Env: env, Class: class, Capability: capability, Example: example}
	}
	return v, nil
}

// StatusOf maps the error of a phase to a status: TIMED_OUT for a timeout,
// CANCELED for a cancellation, FAILED otherwise.
func StatusOf(err error) environments.Status {
	switch {
	case errors.Is(err, services.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return environments.TIMED_OUT
	case errors.Is(err, context.Canceled):
		return environments.CANCELED
	}
	return environments.FAILED
}

// WithTimeout bounds ctx by d when d > 0. A deadline reached this way is
// reported by the services as services.ErrTimeout.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// TimeoutError wraps services.ErrTimeout when ctx's deadline has passed
// and err does not say so already.
func TimeoutError(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, services.ErrTimeout) {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", services.ErrTimeout, err)
	}
	return err
}

// ExitReason describes a script that exited non-zero: the line (when
// known), the exit code and the tail of its error output (or of its
// output when it printed no errors).
func ExitReason(res services.ExecResult) string {
	var b strings.Builder
	stderr, stdout := res.Stderr, res.Stdout
	found := false
	for i := len(res.Lines) - 1; i >= 0 && !found; i-- {
		if l := res.Lines[i]; l.ExitCode != 0 {
			fmt.Fprintf(&b, "line %d (%s) exited with code %d", i+1, short(l.Line, 120), l.ExitCode)
			stderr, stdout, found = l.Stderr, l.Stdout, true
		}
	}
	if !found {
		fmt.Fprintf(&b, "the script exited with code %d", res.ExitCode)
	}
	if t := Tail(stderr, 5, 1000); t != "" {
		b.WriteString("; stderr: " + t)
	} else if t := Tail(stdout, 5, 1000); t != "" {
		b.WriteString("; output: " + t)
	}
	return b.String()
}

// Tail returns at most the last n lines and max bytes of s, trimmed.
func Tail(s string, n, max int) string {
	s = strings.TrimRight(s, "\n\r\t ")
	if s == "" {
		return ""
	}
	cut := false
	if len(s) > max {
		s = s[len(s)-max:]
		cut = true
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
		cut = true
	}
	out := strings.Join(lines, "\n")
	if cut {
		out = "…" + out
	}
	return out
}

func short(s string, max int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// Record keeps the output of each line of res with the trial (see
// environments.Recorder), each stream bounded to max bytes (head and tail)
// when max > 0.
func Record(ctx context.Context, env, phase string, res services.ExecResult, max int) {
	r := environments.RecorderFrom(ctx)
	if r == nil {
		return
	}
	lines := res.Lines
	if len(lines) == 0 && (res.Stdout != "" || res.Stderr != "" || res.ExitCode != 0) {
		// A remote script reports its output as a whole.
		lines = []services.LineResult{{Line: "<" + phase + " script>", ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}}
	}
	for i, l := range lines {
		out, tOut := Bound(l.Stdout, max)
		errs, tErr := Bound(l.Stderr, max)
		r.Add(environments.Output{Env: env, Phase: phase, Line: i, Command: l.Line, ExitCode: l.ExitCode,
			Stdout: out, Stderr: errs, Truncated: l.Truncated || tOut || tErr, TimedOut: l.TimedOut, Duration: l.Duration})
	}
}

// RecordTransfer keeps a file transfer (phase "upload" or "download") with
// the trial.
func RecordTransfer(ctx context.Context, env, phase, from, to string, d time.Duration, err error) {
	r := environments.RecorderFrom(ctx)
	if r == nil {
		return
	}
	o := environments.Output{Env: env, Phase: phase, Command: phase + " " + from + " -> " + to, Duration: d}
	if err != nil {
		o.ExitCode = 1
		o.Stderr = err.Error()
		o.TimedOut = errors.Is(err, services.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
	}
	r.Add(o)
}

// Bound keeps the head and the tail of s within max bytes (max <= 0: no
// limit) and tells whether it cut anything.
func Bound(s string, max int) (string, bool) { return capture.Bound(s, max) }
