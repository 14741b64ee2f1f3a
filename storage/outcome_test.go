package storage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/trial"
)

func TestStoredOutcome(t *testing.T) {
	end := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tel := []Telemetry{{Ts: end, Metric: "cpu", Value: 0.5}}
	outp := []Output{{Phase: "run", Command: "x", Stdout: "hi"}}
	tests := []struct {
		name string
		got  trial.Outcome
		want trial.Outcome
	}{
		{"summary: no telemetry",
			Trial{Status: trial.SUCCEEDED, TsEnd: end, Results: Metrics{"score": 1.0}, Owner: "x"}.Outcome(),
			trial.Outcome{Status: trial.SUCCEEDED, Ts: end, Results: map[string]any{"score": 1.0}}},
		{"failed: the reason",
			Trial{Status: trial.FAILED, TsEnd: end, FailureReason: "boom"}.Outcome(),
			trial.Outcome{Status: trial.FAILED, Ts: end, FailureReason: "boom"}},
		{"detail: telemetry and output",
			TrialDetail{Trial: Trial{Status: trial.TIMED_OUT, TsEnd: end, FailureReason: "hung"}, Telemetry: tel, Output: outp}.Outcome(),
			trial.Outcome{Status: trial.TIMED_OUT, Ts: end, FailureReason: "hung", Telemetry: tel, Output: outp}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestProgressOf(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	step := func(n int64) *int64 { return &n }
	tel := []Telemetry{
		{Ts: t0, Metric: "rss_mb", Value: 10.0},
		{Ts: t0.Add(time.Second), Metric: "loss", Value: 0.9, Step: step(0)},
		{Ts: t0.Add(time.Second), Metric: "acc", Value: 0.1, Step: step(0)},
		{Ts: t0.Add(2 * time.Second), Metric: "loss", Value: 0.5, Step: step(1)},
		{Ts: t0.Add(3 * time.Second), Metric: "rss_mb", Value: 11.0},
	}
	got := ProgressOf(tel)
	if len(got) != 2 || got[0].Step != 0 || got[1].Step != 1 ||
		got[0].Values["loss"] != 0.9 || got[0].Values["acc"] != 0.1 || got[1].Values["loss"] != 0.5 || len(got[1].Values) != 1 {
		t.Fatalf("ProgressOf = %+v", got)
	}
	if ProgressOf(tel[:1]) != nil {
		t.Error("telemetry without a step is no progress")
	}
}
