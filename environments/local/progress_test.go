package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/trial"
)

// progressSink collects reports and, on the first, creates the file the
// script waits for: proof that the report arrived while the script ran.
type progressSink struct {
	mu   sync.Mutex
	got  []trial.Progress
	gate string
}

func (s *progressSink) add(p trial.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Ts = p.Ts.UTC()
	s.got = append(s.got, p)
	if len(s.got) == 1 {
		_ = os.WriteFile(s.gate, nil, 0o644)
	}
}

// waitGate is a script line that waits (up to 10 minutes) for the gate.
const waitGate = `i=0; while [ ! -e "$GATE" ] && [ $i -lt 6000 ]; do sleep 0.1; i=$((i+1)); done; [ -e "$GATE" ] || { echo 'no progress seen while running' >&2; exit 9; }`

func runWithProgress(t *testing.T, cfg map[string]any) (environments.Result, *progressSink) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	cfg["shell_env_params"] = []string{"GATE"}
	cfg["const_args"] = map[string]any{"GATE": gate}
	cfg["bench_shell_lines"] = "verbatim"
	f := envtest.New(t, nil)
	env := localEnv(t, f, cfg, nil)
	envtest.Open(t, env)
	sink := &progressSink{gate: gate}
	ctx := environments.WithProgress(context.Background(), sink.add)
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	res := env.Run(ctx)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("run: %s %s", res.Status, res.Reason)
	}
	return res, sink
}

func TestProgressLines(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		lines   []string
		want    []trial.Progress
		note    string
	}{
		{
			name:    "default format",
			pattern: `^BENCH_PROGRESS\b`,
			lines: []string{
				"echo 'BENCH_PROGRESS step=1 latency_ms=12.5 phase=warm'",
				waitGate,
				"echo 'BENCH_PROGRESS latency_ms=11 ts=2026-01-02T03:04:05Z' >&2",
				"echo 'not progress step=9'",
				"echo 'BENCH_PROGRESS step=5 bad'",
				"echo 'BENCH_PROGRESS step=7 latency_ms=10'",
			},
			want: []trial.Progress{
				{Step: 1, Values: map[string]any{"latency_ms": 12.5, "phase": "warm"}},
				{Step: 2, Ts: mustTime(t, "2026-01-02T03:04:05Z"), Values: map[string]any{"latency_ms": int64(11)}},
				{Step: 7, Values: map[string]any{"latency_ms": int64(10)}},
			},
			note: `1 progress report(s) could not be read`,
		},
		{
			name:    "named groups",
			pattern: `^epoch (?P<step>\d+): loss (?P<loss>[0-9.]+)(?: acc (?P<acc>[0-9.]+))?$`,
			lines: []string{
				"echo 'epoch 0: loss 0.9 acc 0.1'",
				waitGate,
				"echo 'epoch 1: loss 0.5'",
				"echo 'epoch two: loss 0.4'",
			},
			want: []trial.Progress{
				{Step: 0, Values: map[string]any{"loss": 0.9, "acc": 0.1}},
				{Step: 1, Values: map[string]any{"loss": 0.5}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, sink := runWithProgress(t, map[string]any{"run": tc.lines, "progress_pattern": tc.pattern})
			if diff := cmp.Diff(tc.want, sink.got); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			if got := strings.Join(res.Notes, "\n"); (tc.note == "") != (got == "") || !strings.Contains(got, tc.note) {
				t.Errorf("notes %q, want one with %q", got, tc.note)
			}
		})
	}
}

func TestProgressFile(t *testing.T) {
	tests := []struct {
		name, file string
		lines      []string
		want       []trial.Progress
	}{
		{
			name: "csv",
			file: "progress.csv",
			lines: []string{
				"echo 'step,ts,loss,phase' > progress.csv",
				"echo '0,2026-01-02 03:04:05,0.9,warm' >> progress.csv",
				waitGate,
				"echo '1,,0.5,' >> progress.csv",
				"printf ',,0.25,hot' >> progress.csv", // no newline: read at the end
			},
			want: []trial.Progress{
				{Step: 0, Ts: mustLocal(t, "2026-01-02 03:04:05"), Values: map[string]any{"loss": 0.9, "phase": "warm"}},
				{Step: 1, Values: map[string]any{"loss": 0.5}},
				{Step: 2, Values: map[string]any{"loss": 0.25, "phase": "hot"}},
			},
		},
		{
			name: "json lines",
			file: "p.jsonl",
			lines: []string{
				`echo '{"step": 3, "values": {"loss": 0.9}}' > p.jsonl`,
				waitGate,
				`echo '{"loss": 0.5, "ok": true, "ts": "2026-01-02T03:04:05Z"}' >> p.jsonl`,
			},
			want: []trial.Progress{
				{Step: 3, Values: map[string]any{"loss": 0.9}},
				{Step: 4, Ts: mustTime(t, "2026-01-02T03:04:05Z"), Values: map[string]any{"loss": 0.5, "ok": true}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := map[string]any{"run": tc.lines, "progress_file": tc.file, "progress_poll_interval": "20ms"}
			res, sink := runWithProgress(t, cfg)
			if diff := cmp.Diff(tc.want, sink.got); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			if len(res.Notes) != 0 {
				t.Errorf("notes: %q", res.Notes)
			}
		})
	}
}

// Without a listener, or without the keys, nothing is read and the
// trial runs as before.
func TestProgressConfigErrors(t *testing.T) {
	f := envtest.New(t, nil)
	for cfg, want := range map[string]string{
		`{"run": ["true"], "progress_pattern": "("}`:                      "progress_pattern",
		`{"run": ["true"], "progress_pattern": ""}`:                       "at least 1 characters",
		`{"run": ["true"], "progress_poll_interval": "0s"}`:               "progress_poll_interval",
		`{"run": ["true"], "progress_file": "p.csv", "progress_poll": 1}`: "unknown property",
	} {
		_, err := f.TryBuild(`{"class": "mlos_bench.environments.LocalEnv", "name": "e", "config": `+cfg+`}`, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one with %q", cfg, err, want)
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UTC()
}

// mustLocal reads a time without a zone as local time (as progress rows are).
func mustLocal(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.ParseInLocation("2006-01-02 15:04:05", s, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UTC()
}
