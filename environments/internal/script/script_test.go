package script

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/services"
)

func TestParseTimestamp(t *testing.T) {
	loc := time.FixedZone("IST", 5*3600+1800)
	utc := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts.UTC()
	}
	tests := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: "2024-10-25T13:45:00Z", want: utc("2024-10-25T13:45:00Z")},
		{in: "2024-10-25T13:45:00.123456789Z", want: utc("2024-10-25T13:45:00.123456789Z")},
		{in: "2024-10-25T13:45:00+02:00", want: utc("2024-10-25T11:45:00Z")},
		{in: "2024-10-25 13:45:00.5 -0700", want: utc("2024-10-25T20:45:00.5Z")},
		{in: "2024-10-25 13:45:00.000001 +0000", want: utc("2024-10-25T13:45:00.000001Z")},
		{in: "2024-10-25 13:45:00+0530", want: utc("2024-10-25T08:15:00Z")},
		{in: "2024-10-25 13:45:00 UTC", want: utc("2024-10-25T13:45:00Z")},
		{in: "2024-10-25 13:45:00-07", want: utc("2024-10-25T20:45:00Z")},
		{in: "2024/10/25 13:45:00", want: utc("2024-10-25T08:15:00Z")},        // naive: IST
		{in: "2024-10-25 13:45:00.250", want: utc("2024-10-25T08:15:00.25Z")}, // naive: IST
		{in: " 2024-10-25T13:45 ", want: utc("2024-10-25T08:15:00Z")},
		{in: "2024-10-25", want: utc("2024-10-24T18:30:00Z")},
		{in: "1", err: true},
		{in: "ts", err: true},
		{in: "2024-13-01 00:00:00", err: true},
		{in: "", err: true},
	}
	for _, tc := range tests {
		got, err := ParseTimestamp(tc.in, loc)
		if tc.err {
			if err == nil {
				t.Errorf("%q: parsed as %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("%q: got %v (%v), want %v in UTC", tc.in, got, err, tc.want)
		}
	}
}

func TestParseResults(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]any
		wantErr string
		noData  bool
	}{
		{name: "long", in: "metric,value\nlatency,10\nscore,0.9\nname,fast\nok,True\n",
			want: map[string]any{"latency": int64(10), "score": 0.9, "name": "fast", "ok": true}},
		{name: "long with BOM and CRLF", in: "\xef\xbb\xbfmetric,value\r\nlatency,10\r\n",
			want: map[string]any{"latency": int64(10)}},
		{name: "long, later rows win", in: "metric,value\na,1\na,2\n", want: map[string]any{"a": int64(2)}},
		{name: "wide", in: "latency,throughput,score\n10,66,0.9\n",
			want: map[string]any{"latency": int64(10), "throughput": int64(66), "score": 0.9}},
		{name: "wide with empty and quoted cells", in: "a,b,c\n,\"x,y\",1e3\n",
			want: map[string]any{"a": nil, "b": "x,y", "c": 1000.0}},
		{name: "empty", in: "", wantErr: "empty", noData: true},
		{name: "blank line", in: "\n", wantErr: "empty", noData: true},
		{name: "header only", in: "a,b\n", wantErr: "no data rows", noData: true},
		{name: "no header", in: "latency,10\nthroughput,66\nscore,0.9\n", wantErr: "unknown layout"},
		{name: "long, bad row", in: "metric,value\na,1,2\n", wantErr: "line 2: long format"},
		{name: "wide, short row", in: "a,b\n1\n", wantErr: "header has 2 columns but the data row has 1"},
		{name: "wide, duplicate column", in: "a,a\n1,2\n", wantErr: `column "a" appears twice`},
		{name: "bad quoting", in: "a,b\n\"1,2\n", wantErr: "not a valid CSV file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResults([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if errors.Is(err, ErrNoResults) != tc.noData {
					t.Errorf("errors.Is(err, ErrNoResults) = %v", !tc.noData)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTelemetryValues(t *testing.T) {
	got, err := ParseTelemetry([]byte("2024-05-01T00:00:00Z,cpu,0.5\n2024-05-01T00:00:01Z,state,busy\n2024-05-01T00:00:02Z,nan_val,nan\n"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Value != 0.5 || got[1].Value != "busy" {
		t.Fatalf("got %+v", got)
	}
	if f, ok := got[2].Value.(float64); !ok || !math.IsNaN(f) {
		t.Errorf("nan read as %#v", got[2].Value)
	}
}

func TestEnvVars(t *testing.T) {
	params := map[string]any{
		"experiment_id": "E", "trial_id": int64(3), "flag": false, "none": nil,
		"x.y-z": 1.5, "list": []any{"a", int64(1)}, "src": "renamed",
	}
	got, err := EnvVars(params, []string{"experiment_id", "trial_id", "flag", "none", "x.y-z", "list"}, map[string]string{"DST": "src", "trial_id": "experiment_id"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"experiment_id": "E", "trial_id": "E", "flag": "False", "none": "None",
		"x_y_z": "1.5", "list": "['a', 1]", "DST": "renamed",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := EnvVars(params, []string{"missing"}, nil); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("err = %v", err)
	}
}

func TestParseStdout(t *testing.T) {
	re, err := CompilePattern(`^(?P<name>\w+)[ \t]*=[ \t]*(\S*)(x)?`)
	if err != nil {
		t.Fatal(err)
	}
	got := ParseStdout(re, "a = 1\nignored\nb=2.5\nc = text\nd =\na = 7\n")
	want := map[string]any{"a": int64(7), "b": 2.5, "c": "text", "d": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := ParseStdout(nil, "a=1"); len(got) != 0 {
		t.Errorf("nil pattern gave %v", got)
	}
}

func TestParseConfig(t *testing.T) {
	doc, err := source.Parse("env.jsonc", []byte(`{"config": {
		"setup": ["a"], "run": ["b", "c"], "teardown": ["d"],
		"shell_env_params": ["x"], "shell_env_params_rename": {"Y": "y"},
		"results_stdout_pattern": "(\\w+)=(\\d+)",
		"timeouts": {"setup": 1.5, "run": "2m", "line": "250ms"},
		"max_output_bytes": 2048, "wait_boot": true, "const_args": {"x": 1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := doc.Root.Get("config").Value().(map[string]any)
	c, err := Parse(cfg, doc.At("config"), "wait_boot")
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeouts.Phase("setup") != 1500*time.Millisecond || c.Timeouts.Phase("run") != 2*time.Minute ||
		c.Timeouts.Line.Std() != 250*time.Millisecond || c.Timeouts.Phase("teardown") != 0 || c.Timeouts.Phase("status") != 0 {
		t.Errorf("timeouts = %+v", c.Timeouts)
	}
	if diff := cmp.Diff([]string{"b", "c"}, c.Lines("run")); diff != "" {
		t.Error(diff)
	}
	if c.MaxOutputBytes != 2048 || c.Pattern == nil || c.ShellEnvRename["Y"] != "y" {
		t.Errorf("config = %+v", c)
	}
	if _, err := Parse(cfg, doc.At("config")); err == nil || !strings.Contains(err.Error(), `unknown config key "wait_boot"`) ||
		!strings.Contains(err.Error(), "env.jsonc:") {
		t.Errorf("err = %v", err)
	}
}

func TestExitReason(t *testing.T) {
	res := services.ExecResult{ExitCode: 2, Lines: []services.LineResult{
		{Line: "ok", ExitCode: 0, Stderr: "noise\n"},
		{Line: "make", ExitCode: 2, Stderr: strings.Repeat("line\n", 20) + "error: last\n"},
	}}
	got := ExitReason(res)
	if !strings.HasPrefix(got, "line 2 (make) exited with code 2; stderr: …line\n") || !strings.HasSuffix(got, "error: last") {
		t.Errorf("got %q", got)
	}
	if got := ExitReason(services.ExecResult{ExitCode: 1, Stdout: "only stdout"}); got != "the script exited with code 1; output: only stdout" {
		t.Errorf("got %q", got)
	}
}

func TestStatusOf(t *testing.T) {
	for err, want := range map[error]environments.Status{
		errors.New("x"):     environments.FAILED,
		services.ErrTimeout: environments.TIMED_OUT,
	} {
		if got := StatusOf(err); got != want {
			t.Errorf("StatusOf(%v) = %s", err, got)
		}
	}
}

func TestCommandNameAndBound(t *testing.T) {
	if got := CommandName("My App: run #1", "setup"); got != "bench-my-app-run-1-setup" {
		t.Errorf("got %q", got)
	}
	s, cut := Bound(strings.Repeat("a", 50)+strings.Repeat("b", 50), 20)
	if !cut || s != "aaaaaaaaaa\n[bench: 80 bytes of output omitted]\nbbbbbbbbbb" {
		t.Errorf("Bound = %q", s)
	}
	if s, cut := Bound("short", 20); cut || s != "short" {
		t.Errorf("Bound = %q %v", s, cut)
	}
}
